// Per-device scratch of the synchronous CUDA kernels (see launch.cuh).
#include <array>
#include <memory>
#include <mutex>
#include <string>

#include "launch.cuh"
#include "tenax/core/error.hpp"

namespace tenax::kernels::cuda::detail {
namespace {
// The first allocation's size: 1 MiB of doubles covers every reduction of K values over n
// elements with K * n <= 2^28 (two doubles per 4096-element block and value), so a solver's
// first reduction (in its start, before any commit) sizes it for all later ones.
constexpr std::size_t kMinimumDoubles = std::size_t{1} << 17;
constexpr int kMaxDevices = 64;
}  // namespace

SyncScratch& SyncScratch::of(Device device) {
  static std::mutex creating;
  // Never destroyed, like the contexts: the CUDA runtime may unload before static destructors.
  static auto* const all = new std::array<SyncScratch*, kMaxDevices>{};
  TENAX_EXPECTS(device.index >= 0 && device.index < kMaxDevices, UsageError,
                "CUDA device " + std::to_string(device.index) + " is out of tenax's range",
                "use a device index below " + std::to_string(kMaxDevices));
  const std::lock_guard<std::mutex> hold(creating);
  SyncScratch*& slot = (*all)[static_cast<std::size_t>(device.index)];
  if (slot == nullptr) slot = new SyncScratch();
  return *slot;
}

double* SyncScratch::device_doubles(const Launch& launch, std::size_t count) {
  if (count > capacity_) {
    std::size_t grown = std::max(kMinimumDoubles, capacity_);
    while (grown < count) grown *= 2;
    if (device_ != nullptr) {
      // Earlier calls waited for their stream before releasing the lock: nothing uses it.
      launch.check(cudaFree(device_), "cudaFree");
      device_ = nullptr;
      capacity_ = 0;
    }
    void* ptr = nullptr;
    launch.check(cudaMalloc(&ptr, grown * sizeof(double)), "cudaMalloc (reduction scratch)");
    device_ = static_cast<double*>(ptr);
    capacity_ = grown;
  }
  return device_;
}

double* SyncScratch::host_slot(const Launch& launch) {
  if (host_ == nullptr) {
    void* ptr = nullptr;
    launch.check(cudaHostAlloc(&ptr, kHostSlotDoubles * sizeof(double), cudaHostAllocDefault),
                 "cudaHostAlloc (reduction result)");
    host_ = static_cast<double*>(ptr);
  }
  return host_;
}

}  // namespace tenax::kernels::cuda::detail
