// CUDA memory of a build without CUDA.
#include "tenax/core/error.hpp"
#include "tenax/core/memory/cuda_memory.hpp"

namespace tenax::cuda {

std::shared_ptr<VirtualMemory> make_virtual_memory(Device /*device*/) {
  throw_not_compiled("CUDA device memory", "TENAX_WITH_CUDA");
}

bool supports_virtual_memory(Device /*device*/) {
  throw_not_compiled("CUDA device memory", "TENAX_WITH_CUDA");
}

std::shared_ptr<MemoryResource> make_device_resource(Device /*device*/) {
  throw_not_compiled("CUDA device memory", "TENAX_WITH_CUDA");
}

std::shared_ptr<MemoryResource> make_pinned_host_resource() {
  throw_not_compiled("pinned host memory", "TENAX_WITH_CUDA");
}

std::shared_ptr<VirtualMemory> make_pinned_virtual_memory() {
  throw_not_compiled("pinned host memory", "TENAX_WITH_CUDA");
}

}  // namespace tenax::cuda
