// CUDA library probes of `tenax doctor`.
#include <cublas_api.h>  // the version tenax was built with
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "doctor_probes.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/cublas_library.hpp"

namespace tenax::tools {

namespace {

std::string dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// The shared object that defines `symbol`: tells which of several installed copies was loaded.
std::string library_path(const void* symbol) {
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return {};
  return info.dli_fname;
}

void expect(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  const int code = static_cast<int>(status);
  cudaGetLastError();
  throw Error(cuda::classify_status(code),
              std::string(call) + " failed with " + cudaGetErrorName(status) + " (" +
                  cudaGetErrorString(status) + ")",
              "run nvidia-smi to check the device; rerun tenax doctor after fixing what it shows");
}

// Restores the calling thread's current device when the probe ends.
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal) {
    expect(cudaGetDevice(&previous_), "cudaGetDevice");
    expect(cudaSetDevice(ordinal), "cudaSetDevice");
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
struct PinnedFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};

std::unique_ptr<unsigned char, DeviceFree> device_buffer(std::size_t bytes) {
  void* p = nullptr;
  expect(cudaMalloc(&p, bytes), "cudaMalloc");
  return std::unique_ptr<unsigned char, DeviceFree>(static_cast<unsigned char*>(p));
}

std::unique_ptr<unsigned char, PinnedFree> pinned_buffer(std::size_t bytes) {
  void* p = nullptr;
  expect(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "cudaHostAlloc");
  return std::unique_ptr<unsigned char, PinnedFree>(static_cast<unsigned char*>(p));
}

// Best of a few timed copies after one warm-up: the rate the link can sustain.
double copy_rate(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  expect(cudaMemcpy(dst, src, bytes, kind), "cudaMemcpy");
  double best = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    const auto start = std::chrono::steady_clock::now();
    expect(cudaMemcpy(dst, src, bytes, kind), "cudaMemcpy");
    expect(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    best = std::max(best, static_cast<double>(bytes) / seconds.count() / 1e9);
  }
  return best;
}

}  // namespace

LibraryProbe probe_cuda_runtime() {
  LibraryProbe p;
  p.compiled = true;
  int version = 0;
  cudaRuntimeGetVersion(&version);
  p.version = cuda_version(version);
  p.header_version = cuda_version(CUDART_VERSION);
  p.version_code = version;
  p.header_version_code = CUDART_VERSION;
  p.path = library_path(reinterpret_cast<const void*>(&cudaRuntimeGetVersion));
  return p;
}

LibraryProbe probe_cublas() {
  LibraryProbe p;
  p.compiled = true;
  p.header_version = dotted(CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
  p.header_version_code = CUBLAS_VERSION;
  // The loader the GPU products use: a library query that needs neither a driver nor a device.
  const kernels::cuda::CublasLoadReport report = kernels::cuda::cublas_load_report();
  if (!report.cause.empty()) {
    p.load_cause = report.cause;
    p.load_fix = report.fix;
    return p;
  }
  p.version = dotted(report.major, report.minor, report.patch);
  p.version_code = report.major * 10000 + report.minor * 100 + report.patch;
  p.path = report.path;
  return p;
}

int nccl_build_version_code() { return NCCL_VERSION_CODE; }

std::size_t copy_round_trip_mismatches(int ordinal, std::size_t bytes) {
  DeviceGuard guard(ordinal);
  std::vector<unsigned char> sent(bytes);
  std::vector<unsigned char> received(bytes, 0);
  for (std::size_t i = 0; i < bytes; ++i) sent[i] = static_cast<unsigned char>((i * 131 + 7) % 251);
  auto device = device_buffer(bytes);
  expect(cudaMemcpy(device.get(), sent.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  expect(cudaMemcpy(received.data(), device.get(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < bytes; ++i) mismatches += sent[i] != received[i] ? 1 : 0;
  return mismatches;
}

Bandwidth measure_bandwidth(int ordinal, std::size_t bytes) {
  DeviceGuard guard(ordinal);
  auto device = device_buffer(bytes);
  std::vector<unsigned char> pageable(bytes, 1);
  auto pinned = pinned_buffer(bytes);
  std::memset(pinned.get(), 1, bytes);
  Bandwidth b;
  b.pageable_to_device = copy_rate(device.get(), pageable.data(), bytes, cudaMemcpyHostToDevice);
  b.pageable_to_host = copy_rate(pageable.data(), device.get(), bytes, cudaMemcpyDeviceToHost);
  b.pinned_to_device = copy_rate(device.get(), pinned.get(), bytes, cudaMemcpyHostToDevice);
  b.pinned_to_host = copy_rate(pinned.get(), device.get(), bytes, cudaMemcpyDeviceToHost);
  return b;
}

std::vector<std::vector<bool>> peer_access_matrix(int count) {
  std::vector<std::vector<bool>> matrix(static_cast<std::size_t>(count),
                                        std::vector<bool>(static_cast<std::size_t>(count), true));
  for (int from = 0; from < count; ++from) {
    for (int to = 0; to < count; ++to) {
      if (from == to) continue;
      int can = 0;
      expect(cudaDeviceCanAccessPeer(&can, from, to), "cudaDeviceCanAccessPeer");
      matrix[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)] = can != 0;
    }
  }
  return matrix;
}

}  // namespace tenax::tools
