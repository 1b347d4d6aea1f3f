// Memory resources, in the manner of RMM: a public non-virtual interface over private virtuals,
// so that every resource (system upstreams and the adaptors that wrap them: pool, limiting,
// statistics, fault-injecting) is used the same way and adaptors stack freely.
//
// Contract of every resource:
//  - allocate(bytes, stream) returns storage of at least `bytes` bytes aligned to kAlignment on
//    device(), usable in order on `stream`; allocate(0) returns nullptr. On failure it throws
//    OutOfMemoryError (never returns nullptr for bytes > 0).
//  - deallocate(ptr, bytes, stream) takes back what allocate returned, with the same size and
//    stream; it never throws. nullptr is ignored.
//  - Resources are thread-safe unless their own header says otherwise.
#pragma once

#include <cstddef>

#include "tenax/core/device.hpp"
#include "tenax/core/stream.hpp"

namespace tenax {

class MemoryResource {
 public:
  static constexpr std::size_t kAlignment = 256;

  MemoryResource() = default;
  MemoryResource(const MemoryResource&) = delete;
  MemoryResource& operator=(const MemoryResource&) = delete;
  virtual ~MemoryResource() = default;

  [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream = {}) {
    if (bytes == 0) return nullptr;
    return do_allocate(bytes, stream);
  }
  void deallocate(void* ptr, std::size_t bytes, StreamRef stream = {}) noexcept {
    if (ptr != nullptr) do_deallocate(ptr, bytes, stream);
  }
  [[nodiscard]] Device device() const noexcept { return do_device(); }

  // Returns cached but unused memory to the system; the first rung of the out-of-memory ladder.
  // Adaptors forward to their upstream. Returns the number of bytes released.
  std::size_t release_cache() noexcept { return do_release_cache(); }

 private:
  virtual void* do_allocate(std::size_t bytes, StreamRef stream) = 0;
  virtual void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept = 0;
  [[nodiscard]] virtual Device do_device() const noexcept = 0;
  virtual std::size_t do_release_cache() noexcept { return 0; }
};

// Rounds `bytes` up to a multiple of `alignment` (a power of two).
[[nodiscard]] constexpr std::size_t align_up(std::size_t bytes, std::size_t alignment) noexcept {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

}  // namespace tenax
