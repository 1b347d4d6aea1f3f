/// Memory resources, in the manner of RMM: a public non-virtual interface over private virtuals,
/// so that every resource (system upstreams, the pool, and the adaptors that wrap another
/// resource: limiting, statistics, fault-injecting, history) is used the same way and adaptors
/// stack freely.
/// @file
/// Contract of every resource:
///  - allocate(bytes, stream) returns storage of at least `bytes` bytes aligned to kAlignment on
///    device(), usable in order on `stream`; allocate(0) returns nullptr. On failure it throws
///    OutOfMemoryError (never returns nullptr for bytes > 0).
///  - deallocate(ptr, bytes, stream) takes back what allocate returned, with the same size and
///    stream; it never throws. nullptr is ignored.
///  - Resources are thread-safe unless their own header says otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tenax/core/device.hpp"
#include "tenax/core/stream.hpp"

namespace tenax {

/// The interface every allocator implements (see the contract in memory_resource.hpp). Callers
/// use the public non-virtual functions; an implementation overrides the private hooks
/// do_allocate(), do_deallocate() and do_device(), and do_release_cache() when it caches.
/// Non-copyable; shared as `std::shared_ptr<MemoryResource>`.
class MemoryResource {
 public:
  static constexpr std::size_t kAlignment = 256;  ///< bytes every allocation is aligned to

  MemoryResource() = default;
  MemoryResource(const MemoryResource&) = delete;
  MemoryResource& operator=(const MemoryResource&) = delete;
  virtual ~MemoryResource() = default;

  /// At least `bytes` bytes aligned to kAlignment on device(), usable in order on `stream`;
  /// nullptr for 0 bytes (the implementation is not called). Throws OutOfMemoryError when the
  /// memory cannot be had (a CUDA resource may also throw the error of a failed runtime call);
  /// never returns nullptr for bytes > 0.
  [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream = {}) {
    if (bytes == 0) return nullptr;
    return do_allocate(bytes, stream);
  }
  /// Returns `ptr`, which allocate() gave with the same `bytes` and `stream`; the memory may be
  /// reused by allocations ordered after the work queued on `stream`. A null `ptr` is ignored.
  /// Never throws.
  void deallocate(void* ptr, std::size_t bytes, StreamRef stream = {}) noexcept {
    if (ptr != nullptr) do_deallocate(ptr, bytes, stream);
  }
  /// The device the memory lives on (the CPU for host and pinned host memory).
  [[nodiscard]] Device device() const noexcept { return do_device(); }

  /// Returns cached but unused memory to the system; the first rung of the out-of-memory ladder.
  /// Adaptors forward to their upstream. Returns the number of bytes released.
  std::size_t release_cache() noexcept { return do_release_cache(); }

 private:
  virtual void* do_allocate(std::size_t bytes, StreamRef stream) = 0;
  virtual void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept = 0;
  [[nodiscard]] virtual Device do_device() const noexcept = 0;
  virtual std::size_t do_release_cache() noexcept { return 0; }
};

/// Rounds `bytes` up to a multiple of `alignment` (a power of two). A request within alignment - 1
/// of SIZE_MAX has no such multiple: it gives SIZE_MAX, which every capacity and limit check
/// refuses, instead of wrapping to a small size that would be allocated.
[[nodiscard]] constexpr std::size_t align_up(std::size_t bytes, std::size_t alignment) noexcept {
  if (bytes > SIZE_MAX - (alignment - 1)) return SIZE_MAX;
  return (bytes + alignment - 1) & ~(alignment - 1);
}

}  // namespace tenax
