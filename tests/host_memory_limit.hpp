// A scoped memory limit on the CPU's pool for tests: the CPU's resource is replaced by a fresh
// pool of `capacity` bytes for the scope and restored afterwards, as TENAX_MEMORY_LIMIT would set
// it for a whole process. Tensors allocated in the scope must be freed in it.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/host_virtual_memory.hpp"
#include "tenax/core/memory/pool_resource.hpp"

namespace tenax::testing {

class HostMemoryLimit {
 public:
  explicit HostMemoryLimit(std::size_t capacity) {
    PoolOptions options;
    options.capacity = capacity;
    options.map_granule = std::size_t{64} << 10;
    previous_ = current_resource(Device::cpu());  // built now if nothing allocated yet
    (void)set_current_resource(Device::cpu(), std::make_shared<PoolResource>(
                                                  std::make_shared<HostVirtualMemory>(), options));
  }
  ~HostMemoryLimit() { set_current_resource(Device::cpu(), std::move(previous_)); }
  HostMemoryLimit(const HostMemoryLimit&) = delete;
  HostMemoryLimit& operator=(const HostMemoryLimit&) = delete;

 private:
  std::shared_ptr<MemoryResource> previous_;
};

}  // namespace tenax::testing
