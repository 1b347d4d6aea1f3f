// Per-device CUDA contexts. A sticky error (illegal address, launch failure, ECC, ...) corrupts
// the device's CUDA context for the rest of the process, so the first one poisons the tenax
// context: every later activate() and check() raises DeviceFaultError with the original reason,
// and the runtime exits with the restart code instead of computing on a broken device.
#include <cuda_runtime.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_error.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"

namespace tenax::cuda {

namespace {

constexpr const char* kPoisonedFix =
    "the device cannot be used again in this process: exit with the restart code and resume from "
    "the last checkpoint (on another device if this one keeps failing; check nvidia-smi -q for "
    "ECC and Xid errors)";

class DeviceContext final : public Context {
 public:
  explicit DeviceContext(int ordinal) : device_(Device::cuda(ordinal)) {
    // The stream is created here, on first use of the device, so stream() cannot fail.
    // Non-blocking: it never synchronises with work other libraries put on the legacy stream.
    activate();
    cudaStream_t stream = nullptr;
    check(static_cast<int>(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)),
          "cudaStreamCreateWithFlags");
    stream_ = stream;
  }

  // The stream is never destroyed: contexts live until the process ends, and destroying a
  // stream during static destruction may run after the CUDA runtime has shut down.
  ~DeviceContext() override = default;

  [[nodiscard]] Device device() const noexcept override { return device_; }
  [[nodiscard]] StreamRef stream() const noexcept override { return StreamRef{stream_}; }

  void activate() override {
    throw_if_poisoned();
    check(static_cast<int>(cudaSetDevice(device_.index)), "cudaSetDevice");
  }

  void synchronize() override {
    activate();
    check(static_cast<int>(cudaStreamSynchronize(stream_)), "cudaStreamSynchronize");
  }

  [[nodiscard]] bool poisoned() const noexcept override {
    return poisoned_.load(std::memory_order_acquire);
  }

  [[nodiscard]] std::string poison_reason() const override {
    std::lock_guard lock(mutex_);
    return poison_reason_;
  }

  void check(int status, const char* call) override {
    throw_if_poisoned();  // even a success: nothing on a poisoned device is trustworthy
    if (status == 0) return;
    const auto error = static_cast<cudaError_t>(status);
    if (is_sticky(error)) {
      std::lock_guard lock(mutex_);
      if (poison_reason_.empty()) {
        poison_reason_ = std::string(call) + " on " + to_string(device_) + " failed with " +
                         cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")";
      }
      poisoned_.store(true, std::memory_order_release);
    }
    cuda::check(error, call);
  }

 private:
  void throw_if_poisoned() const {
    if (!poisoned()) return;
    throw DeviceFaultError(
        to_string(device_) + " suffered a sticky CUDA error earlier: " + poison_reason(),
        kPoisonedFix);
  }

  const Device device_;
  CUstream_st* stream_ = nullptr;
  std::atomic<bool> poisoned_{false};
  mutable std::mutex mutex_;  // guards poison_reason_
  std::string poison_reason_;
};

}  // namespace

Context& context(Device device) {
  TENAX_EXPECTS(device.is_cuda(), UsageError,
                "cuda::context was asked for " + to_string(device) + ", which is not a CUDA device",
                "pass Device::cuda(N); the CPU has CpuContext::instance()");
  const Availability& cuda = availability();
  if (!cuda.usable) throw EnvironmentError("CUDA is not usable: " + cuda.reason, cuda.fix);
  if (device.index < 0 || device.index >= cuda.device_count) {
    throw EnvironmentError(to_string(device) + " does not exist: this machine has " +
                               std::to_string(cuda.device_count) + " usable CUDA device(s)",
                           "use an ordinal in [0, " + std::to_string(cuda.device_count) +
                               ") or check CUDA_VISIBLE_DEVICES");
  }
  // Leaked on purpose: contexts outlive every static that might still use them at exit.
  static auto* const contexts =
      new std::vector<std::unique_ptr<DeviceContext>>(static_cast<std::size_t>(cuda.device_count));
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  auto& slot = (*contexts)[static_cast<std::size_t>(device.index)];
  if (!slot) slot = std::make_unique<DeviceContext>(device.index);
  return *slot;
}

}  // namespace tenax::cuda
