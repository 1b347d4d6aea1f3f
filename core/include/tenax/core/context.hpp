// Execution contexts: where kernels run. The CPU context is a pool of worker threads sized to
// the machine (TENAX_NUM_THREADS overrides); the CUDA context of a device owns its stream and
// knows whether the device has suffered a sticky fault (then every later use raises
// DeviceFaultError: the process must exit with the restart code).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "tenax/core/device.hpp"
#include "tenax/core/stream.hpp"

namespace tenax {

class CpuContext {
 public:
  // The process-wide CPU context.
  [[nodiscard]] static CpuContext& instance();

  explicit CpuContext(int num_threads);
  CpuContext(const CpuContext&) = delete;
  CpuContext& operator=(const CpuContext&) = delete;
  ~CpuContext();

  [[nodiscard]] int num_threads() const noexcept;

  // Splits [begin, end) into at most num_threads() contiguous chunks of at least `min_chunk`
  // indices and runs body(chunk_begin, chunk_end) on each, in parallel; returns when all are
  // done. The split depends only on the range, min_chunk and num_threads(), never on timing.
  // The first exception thrown by a chunk is rethrown here. Calls from inside a body run
  // serially on the calling thread.
  void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t min_chunk,
                    const std::function<void(std::int64_t, std::int64_t)>& body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Chooses the device for a job from "auto", "cpu", "cuda" or "cuda:N".
//  - "auto": the first CUDA device when CUDA is usable; otherwise the CPU, after printing one
//    line to stderr saying why CUDA was not used.
//  - "cuda[:N]": that device, or EnvironmentError saying why CUDA is unusable and what to do
//    (NotCompiledError in a build without CUDA).
[[nodiscard]] Device select_device(std::string_view request);

namespace cuda {

// Per-device CUDA state. Obtain with context(device); lives until the process ends.
class Context {
 public:
  virtual ~Context() = default;
  [[nodiscard]] virtual Device device() const noexcept = 0;
  [[nodiscard]] virtual StreamRef stream() const noexcept = 0;
  // Makes this device current on the calling thread; throws DeviceFaultError when poisoned.
  virtual void activate() = 0;
  virtual void synchronize() = 0;
  [[nodiscard]] virtual bool poisoned() const noexcept = 0;
  // Why the context was poisoned (empty when it is not).
  [[nodiscard]] virtual std::string poison_reason() const = 0;
  // Translates a CUDA runtime status (cudaError_t as int) into an exception of its fault class
  // and poisons the context when the error is sticky. For 0 (cudaSuccess) it does nothing,
  // unless the context is already poisoned: then every check raises DeviceFaultError.
  virtual void check(int status, const char* call) = 0;
};

// Throws EnvironmentError when CUDA is not usable or the device does not exist, NotCompiledError
// in a build without CUDA.
[[nodiscard]] Context& context(Device device);

}  // namespace cuda
}  // namespace tenax
