/// The CUDA runtime as the rest of tenax sees it, without CUDA headers. Implemented in
/// core/cuda/ when CUDA is compiled in, and by stubs in core/stub/ otherwise (there every call
/// that needs a device throws NotCompiledError; the queries answer "not compiled"). @file
#pragma once

#include <cstddef>
#include <string>

#include "tenax/core/device.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/stream.hpp"

namespace tenax::cuda {

/// True when this build contains the CUDA backend.
[[nodiscard]] bool compiled() noexcept;

/// Whether CUDA can be used on this machine, and if not, why and what to do. Never throws;
/// computed once per process.
struct Availability {
  bool usable = false;      ///< the runtime answered and found at least one device
  int device_count = 0;     ///< devices visible (after CUDA_VISIBLE_DEVICES); 0 unless usable
  int runtime_version = 0;  ///< e.g. 13000 for 13.0; 0 when not compiled
  int driver_version = 0;   ///< highest CUDA version the driver supports; 0 when no driver
  int status_code = 0;      ///< cudaError_t of the device query (0 = success)
  std::string status_name;  ///< e.g. "cudaErrorInsufficientDriver"
  std::string reason;       ///< why CUDA cannot be used; empty when usable
  std::string fix;          ///< what to do about it; empty when usable
};
/// This process's Availability, queried on the first call (which loads the CUDA runtime and
/// driver) and cached; the reference stays valid. In a build without CUDA, not usable with the
/// reason and fix saying so.
[[nodiscard]] const Availability& availability() noexcept;

/// Throws EnvironmentError (with reason and fix) unless `device` exists and is usable;
/// NotCompiledError in a build without CUDA.
void require_device(Device device);

/// Copies between host and CUDA memory or between CUDA devices and returns when the destination
/// holds the bytes; within one device it is enqueued on the context stream and returns at once
/// (later work on that stream sees the bytes). The copy is ordered after the work already queued on
/// the context streams of the devices involved. Pageable host memory of more than a few hundred KiB
/// moves through double-buffered pinned staging buffers, so host<->device copies run near pinned
/// speed.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                std::size_t bytes);

/// What `tenax doctor` and error messages report about one device. Memory sizes in bytes.
struct DeviceProperties {
  int ordinal = 0;               ///< the CUDA ordinal queried
  std::string name;              ///< the product name, e.g. "NVIDIA H200"
  int compute_major = 0;         ///< compute capability, e.g. 9.0 for H100/H200
  int compute_minor = 0;         ///< minor part of the compute capability (the 0 of 9.0)
  std::size_t total_memory = 0;  ///< bytes of device memory, as cudaMemGetInfo reports them
  std::size_t free_memory = 0;   ///< at the time of the query; other processes change it
  std::string pci_bus_id;        ///< e.g. "0000:3B:00.0", the key nvidia-smi and NVML use
  int multiprocessor_count = 0;  ///< streaming multiprocessors (SMs)
};
/// Queries device `ordinal` (creates its primary context to read free memory; the calling
/// thread's current device is left unchanged). Throws like require_device when the device does
/// not exist or CUDA is unusable, and the error of its fault class when a query fails.
[[nodiscard]] DeviceProperties device_properties(int ordinal);

/// @name Status classification
///@{

/// Classification of a CUDA runtime status (cudaError_t as int; 0 is success and is neither
/// sticky nor classified: classify_status(0) answers usage). is_sticky_status() tells whether a
/// status leaves the device unusable for the rest of the process (then it is a device fault);
/// classify_status() gives the FaultClass of the error to throw for it. Without CUDA compiled in
/// every non-zero status is not_compiled and none is sticky.
[[nodiscard]] bool is_sticky_status(int status) noexcept;
[[nodiscard]] FaultClass classify_status(int status) noexcept;
///@}
/// The enumerator name of a status, e.g. "cudaErrorIllegalAddress" ("not compiled" without CUDA).
[[nodiscard]] std::string status_name(int status);

}  // namespace tenax::cuda
