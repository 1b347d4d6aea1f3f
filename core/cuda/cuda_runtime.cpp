// CUDA runtime hooks. The runtime library loads the driver itself, so a build with CUDA starts
// on a machine without an NVIDIA driver and reports why CUDA cannot be used.
#include "tenax/core/cuda_runtime.hpp"

#include <cuda_runtime.h>

#include <string>

#include "cuda_error.hpp"
#include "tenax/core/error.hpp"

namespace tenax::cuda {

bool compiled() noexcept { return true; }

namespace {

Availability query_availability() {
  Availability a;
  cudaRuntimeGetVersion(&a.runtime_version);
  cudaDriverGetVersion(&a.driver_version);  // 0 when no driver is installed
  cudaError_t status = cudaGetDeviceCount(&a.device_count);
  a.status_code = static_cast<int>(status);
  a.status_name = cudaGetErrorName(status);
  if (status == cudaSuccess && a.device_count > 0) {
    a.usable = true;
    return a;
  }
  cudaGetLastError();  // the failed query must not poison later calls
  a.device_count = 0;
  const Diagnosis d = diagnose_unavailable(status, a.runtime_version, a.driver_version);
  a.reason = d.reason;
  a.fix = d.fix;
  return a;
}

}  // namespace

const Availability& availability() noexcept {
  static const Availability info = query_availability();
  return info;
}

void require_device(Device device) {
  const Availability& a = availability();
  if (!a.usable) throw EnvironmentError("CUDA is not usable: " + a.reason, a.fix);
  if (device.index < 0 || device.index >= a.device_count) {
    throw EnvironmentError(to_string(device) + " does not exist: this machine has " +
                               std::to_string(a.device_count) + " CUDA device(s)",
                           "use an ordinal in [0, " + std::to_string(a.device_count) +
                               ") or check CUDA_VISIBLE_DEVICES");
  }
}

DeviceProperties device_properties(int ordinal) {
  require_device(Device::cuda(ordinal));
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
  DeviceProperties p;
  p.ordinal = ordinal;
  p.name = prop.name;
  p.compute_major = prop.major;
  p.compute_minor = prop.minor;
  p.total_memory = prop.totalGlobalMem;
  p.multiprocessor_count = prop.multiProcessorCount;
  char bus_id[32] = {};
  check(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal), "cudaDeviceGetPCIBusId");
  p.pci_bus_id = bus_id;
  // Free memory is per device, so switch to it and back; the caller's current device survives.
  int previous = 0;
  check(cudaGetDevice(&previous), "cudaGetDevice");
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  const cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  ignore(cudaSetDevice(previous));
  check(status, "cudaMemGetInfo");
  p.free_memory = free_bytes;
  p.total_memory = total_bytes;
  return p;
}

bool is_sticky_status(int status) noexcept { return is_sticky(static_cast<cudaError_t>(status)); }

FaultClass classify_status(int status) noexcept {
  if (status == 0) return FaultClass::usage;
  return classify(static_cast<cudaError_t>(status));
}

std::string status_name(int status) { return cudaGetErrorName(static_cast<cudaError_t>(status)); }

}  // namespace tenax::cuda
