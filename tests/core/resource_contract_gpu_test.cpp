// The memory resource contract (resource_contract.hpp) passed by the CUDA resources: the device
// pool over virtual memory (as current_resource builds it, and a fresh one), the stream-ordered
// allocator, pinned host memory and the pinned pool. Skipped, with the reason, where no GPU is
// usable.
#include <memory>

#include "core/resource_contract.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/memory/cuda_memory.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/pool_resource.hpp"

namespace tenax::testing {
namespace {

const Device kGpu = Device::cuda(0);

// CUDA resources exist only where a device is usable: say why not as the environment does.
void require_gpu() {
  if (!cuda::availability().usable) {
    throw EnvironmentError("no usable CUDA device: " + cuda::availability().reason, "none");
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, ResourceContract,
                         ::testing::Values(ResourceCase{"CurrentDeviceResource",
                                                        [] {
                                                          require_gpu();
                                                          return current_resource(kGpu);
                                                        }},
                                           ResourceCase{"FreshDevicePool",
                                                        [] {
                                                          require_gpu();
                                                          PoolOptions options;
                                                          options.capacity = std::size_t{1} << 30;
                                                          return std::shared_ptr<MemoryResource>(
                                                              std::make_shared<PoolResource>(
                                                                  cuda::make_virtual_memory(kGpu),
                                                                  options));
                                                        }},
                                           ResourceCase{"StreamOrderedAllocator",
                                                        [] {
                                                          require_gpu();
                                                          return cuda::make_device_resource(kGpu);
                                                        }},
                                           ResourceCase{"PinnedHost",
                                                        [] {
                                                          require_gpu();
                                                          return cuda::make_pinned_host_resource();
                                                        }},
                                           ResourceCase{"PinnedHostPool",
                                                        [] {
                                                          require_gpu();
                                                          return pinned_host_pool();
                                                        }}),
                         resource_case_name);

}  // namespace
}  // namespace tenax::testing
