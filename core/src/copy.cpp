#include "tenax/core/copy.hpp"

#include <cstring>

#include "tenax/core/cuda_runtime.hpp"

namespace tenax {

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memmove(dst, src, bytes);
    return;
  }
  cuda::copy_bytes(dst, dst_device, src, src_device, bytes);
}

}  // namespace tenax
