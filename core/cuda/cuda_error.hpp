// Translation of CUDA runtime status codes into tenax fault classes (private to core/cuda).
#pragma once

#include <cuda_runtime.h>

#include <source_location>
#include <string>

#include "tenax/core/error.hpp"

namespace tenax::cuda {

// Fault class of a CUDA runtime status. Sticky errors (illegal address, launch failure,
// ECC, ...) are device faults: the context is unusable afterwards.
[[nodiscard]] FaultClass classify(cudaError_t status) noexcept;
[[nodiscard]] bool is_sticky(cudaError_t status) noexcept;

// Throws the tenax::Error subclass for `status` (cause names the call and the CUDA error, fix
// says what to do). Does nothing on cudaSuccess.
void check(cudaError_t status, const char* call,
           std::source_location where = std::source_location::current());

// For a call whose failure does not matter where it is made (cleanup, a best-effort query):
// clears its non-sticky status, so that the next checked call or kernel launch is not blamed for
// it. A sticky status cannot be cleared; the next checked call reports it.
inline void ignore(cudaError_t status) noexcept {
  if (status != cudaSuccess && !is_sticky(status)) (void)cudaGetLastError();
}

struct Diagnosis {
  std::string reason;
  std::string fix;
};
// Why CUDA cannot be used, given the status of cudaGetDeviceCount and the versions.
[[nodiscard]] Diagnosis diagnose_unavailable(cudaError_t status, int runtime_version,
                                             int driver_version);

[[nodiscard]] std::string version_string(int cuda_version);  // 13000 -> "13.0"

}  // namespace tenax::cuda
