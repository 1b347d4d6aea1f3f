// The memory resource that tensors on each device allocate from.
//
// Built on first use per device: the pool over the device's upstream, capped by
// TENAX_MEMORY_LIMIT, with allocation faults injected when TENAX_FAULTS asks for them.
// Thread-safe.
#pragma once

#include <memory>

#include "tenax/core/device.hpp"
#include "tenax/core/memory_resource.hpp"

namespace tenax {

[[nodiscard]] std::shared_ptr<MemoryResource> current_resource(Device device);

// Replaces the resource of `device` (tests, users bringing their own allocator) and returns the
// previous one. Tensors allocated earlier keep the resource they came from.
std::shared_ptr<MemoryResource> set_current_resource(Device device,
                                                     std::shared_ptr<MemoryResource> resource);

}  // namespace tenax
