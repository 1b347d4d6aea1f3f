#include "tenax/core/memory/host_resource.hpp"

#include <cstdlib>
#include <string>

#include "tenax/core/error.hpp"

namespace tenax {

void* HostResource::do_allocate(std::size_t bytes, StreamRef /*stream*/) {
  void* ptr = std::aligned_alloc(kAlignment, align_up(bytes, kAlignment));
  if (ptr == nullptr) {
    throw OutOfMemoryError("host allocation of " + std::to_string(bytes) + " bytes failed",
                           "free host memory, lower the batch size, or run on a larger machine");
  }
  return ptr;
}

void HostResource::do_deallocate(void* ptr, std::size_t /*bytes*/, StreamRef /*stream*/) noexcept {
  std::free(ptr);
}

}  // namespace tenax
