/// Execution contexts: where kernels run. The CPU context is a pool of worker threads sized to
/// the machine (TENAX_NUM_THREADS overrides); the CUDA context of a device owns its stream and
/// knows whether the device has suffered a sticky fault (then every later use raises
/// DeviceFaultError: the process must exit with the restart code). @file
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "tenax/core/device.hpp"
#include "tenax/core/stream.hpp"

namespace tenax {

/// A persistent pool of num_threads() - 1 worker threads plus the calling thread, for the CPU
/// kernels. Non-copyable; the workers are joined on destruction.
class CpuContext {
 public:
  /// The process-wide CPU context, created on first use with TENAX_NUM_THREADS threads, or the
  /// hardware's thread count when the variable is unset. Throws UsageError when the variable is
  /// not a whole number in [1, 4096] (and tries again at the next call).
  [[nodiscard]] static CpuContext& instance();

  /// A pool of `num_threads` threads in all (the caller counts as one); UsageError unless
  /// `num_threads` is in [1, 4096].
  explicit CpuContext(int num_threads);
  CpuContext(const CpuContext&) = delete;
  CpuContext& operator=(const CpuContext&) = delete;
  ~CpuContext();  ///< stops and joins the workers; no parallel_for may be running

  /// Threads that run chunks of a parallel_for(), the calling thread included.
  [[nodiscard]] int num_threads() const noexcept;

  /// Splits [begin, end) into at most num_threads() contiguous chunks of at least `min_chunk`
  /// indices (one chunk when the range is shorter; `min_chunk` < 1 counts as 1) and runs
  /// body(chunk_begin, chunk_end) on each, in parallel; returns when all are done. Nothing runs
  /// when end <= begin. The split, and which thread runs which chunk, depend only on the range,
  /// min_chunk and num_threads(), never on timing. When chunks throw, the exception of the
  /// lowest-numbered failing chunk is rethrown here once all chunks have finished. Calls from
  /// inside a body run the same split serially on the calling thread; calls from other threads
  /// wait for the pool, one parallel_for at a time.
  void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t min_chunk,
                    const std::function<void(std::int64_t, std::int64_t)>& body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Chooses the device for a job from `"auto"`, `"cpu"`, `"cuda"` or `"cuda:N"`.
///  - `"auto"`: the first CUDA device when CUDA is usable; otherwise the CPU, after printing one
///    line to stderr saying why CUDA was not used.
///  - `"cuda[:N]"`: that device, or EnvironmentError saying why CUDA is unusable or that there
///    is no device N, and what to do (NotCompiledError in a build without CUDA).
///  - anything else: UsageError.
[[nodiscard]] Device select_device(std::string_view request);

namespace cuda {

/// Per-device CUDA state. Obtain with context(device); lives until the process ends (never
/// destroyed, so references stay valid). Thread-safe.
class Context {
 public:
  virtual ~Context() = default;  ///< contexts are not destroyed while the process runs
  /// The CUDA device this context belongs to.
  [[nodiscard]] virtual Device device() const noexcept = 0;
  /// The context's own non-blocking stream, created with the context and never destroyed: the
  /// stream tenax's kernels and copies on this device are ordered on.
  [[nodiscard]] virtual StreamRef stream() const noexcept = 0;
  /// Makes this device current on the calling thread; throws DeviceFaultError when poisoned.
  virtual void activate() = 0;
  /// Activates the device and waits until the work queued on stream() is done. Throws
  /// DeviceFaultError when poisoned, or the error of the failure's fault class (poisoning the
  /// context when it is sticky).
  virtual void synchronize() = 0;
  /// Whether a sticky error has been seen on this device: every later activate(), check() and
  /// synchronize() throws DeviceFaultError.
  [[nodiscard]] virtual bool poisoned() const noexcept = 0;
  /// Why the context was poisoned (empty when it is not).
  [[nodiscard]] virtual std::string poison_reason() const = 0;
  /// Translates a CUDA runtime status (cudaError_t as int) into an exception of its fault class
  /// and poisons the context when the error is sticky. For 0 (cudaSuccess) it does nothing,
  /// unless the context is already poisoned: then every check raises DeviceFaultError.
  virtual void check(int status, const char* call) = 0;
};

/// The context of CUDA device `device`, created on first use (which activates the device and
/// creates its stream). Throws UsageError for a non-CUDA device, EnvironmentError when CUDA is
/// not usable or the device does not exist, NotCompiledError in a build without CUDA.
[[nodiscard]] Context& context(Device device);

}  // namespace cuda
}  // namespace tenax
