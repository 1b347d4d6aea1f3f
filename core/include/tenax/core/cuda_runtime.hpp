// The CUDA runtime as the rest of tenax sees it, without CUDA headers. Implemented in
// core/cuda/ when CUDA is compiled in, and by stubs in core/stub/ otherwise (there every call
// that needs a device throws NotCompiledError; the queries answer "not compiled").
#pragma once

#include <cstddef>
#include <string>

#include "tenax/core/device.hpp"
#include "tenax/core/stream.hpp"

namespace tenax::cuda {

// True when this build contains the CUDA backend.
[[nodiscard]] bool compiled() noexcept;

// Whether CUDA can be used on this machine, and if not, why and what to do. Never throws;
// computed once per process.
struct Availability {
  bool usable = false;
  int device_count = 0;
  int runtime_version = 0;  // e.g. 13000 for 13.0; 0 when not compiled
  int driver_version = 0;   // highest CUDA version the driver supports; 0 when no driver
  int status_code = 0;      // cudaError_t of the device query (0 = success)
  std::string status_name;  // e.g. "cudaErrorInsufficientDriver"
  std::string reason;       // empty when usable
  std::string fix;          // empty when usable
};
[[nodiscard]] const Availability& availability() noexcept;

// Throws EnvironmentError (with reason and fix) unless `device` exists and is usable;
// NotCompiledError in a build without CUDA.
void require_device(Device device);

// Copies between host and CUDA memory or between CUDA devices, synchronously.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                std::size_t bytes);

}  // namespace tenax::cuda
