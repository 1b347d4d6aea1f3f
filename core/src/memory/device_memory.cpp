#include "tenax/core/memory/device_memory.hpp"

#include <map>
#include <mutex>

#include "tenax/core/error.hpp"
#include "tenax/core/memory/host_resource.hpp"

namespace tenax {
namespace {

std::mutex registry_mutex;
std::map<Device, std::shared_ptr<MemoryResource>>& registry() {
  static std::map<Device, std::shared_ptr<MemoryResource>> resources;
  return resources;
}

std::shared_ptr<MemoryResource> make_default_resource(Device device) {
  if (device.is_cpu()) return std::make_shared<HostResource>();
  throw_not_compiled("CUDA device memory", "TENAX_WITH_CUDA");
}

}  // namespace

std::shared_ptr<MemoryResource> current_resource(Device device) {
  std::lock_guard lock(registry_mutex);
  auto& slot = registry()[device];
  if (!slot) slot = make_default_resource(device);
  return slot;
}

std::shared_ptr<MemoryResource> set_current_resource(Device device,
                                                     std::shared_ptr<MemoryResource> resource) {
  TENAX_EXPECTS(resource != nullptr, UsageError, "set_current_resource was given a null resource",
                "pass a constructed MemoryResource");
  TENAX_EXPECTS(resource->device() == device, UsageError,
                "set_current_resource: the resource serves " + to_string(resource->device()) +
                    " but was installed for " + to_string(device),
                "install a resource for the device it allocates on");
  std::lock_guard lock(registry_mutex);
  auto& slot = registry()[device];
  std::swap(slot, resource);
  return resource;
}

}  // namespace tenax
