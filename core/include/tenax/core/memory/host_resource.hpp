// Pageable host memory from the C library, aligned to MemoryResource::kAlignment.
#pragma once

#include "tenax/core/memory_resource.hpp"

namespace tenax {

class HostResource final : public MemoryResource {
 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept override;
  [[nodiscard]] Device do_device() const noexcept override { return Device::cpu(); }
};

}  // namespace tenax
