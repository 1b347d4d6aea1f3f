/// Pageable host memory from the C library, aligned to MemoryResource::kAlignment. @file
#pragma once

#include "tenax/core/memory_resource.hpp"

namespace tenax {

/// Host memory from std::aligned_alloc and std::free: no caching, the stream is ignored, device()
/// is the CPU. Throws OutOfMemoryError when the C library has no memory. Thread-safe.
class HostResource final : public MemoryResource {
 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept override;
  [[nodiscard]] Device do_device() const noexcept override { return Device::cpu(); }
};

}  // namespace tenax
