/// Base of the adaptors that wrap an upstream resource (limiting, statistics, fault-injecting,
/// history): they serve the upstream's device, forward release_cache, and expose the upstream so
/// that tools can walk a resource stack (e.g. to find the pool under it). @file
#pragma once

#include <memory>

#include "tenax/core/memory_resource.hpp"

namespace tenax {

/// A MemoryResource that wraps another (its upstream), which it owns a share of. device() is the
/// upstream's and release_cache() forwards to it; a subclass overrides do_allocate() and
/// do_deallocate() and calls upstream_resource() from them.
class ResourceAdaptor : public MemoryResource {
 public:
  /// Throws UsageError when `upstream` is null.
  explicit ResourceAdaptor(std::shared_ptr<MemoryResource> upstream);

  /// The wrapped resource (never null), for walking a stack (find_in_stack()).
  [[nodiscard]] const std::shared_ptr<MemoryResource>& upstream() const noexcept {
    return upstream_;
  }

 protected:
  /// The wrapped resource, for a subclass's do_allocate() and do_deallocate().
  [[nodiscard]] MemoryResource& upstream_resource() const noexcept { return *upstream_; }

 private:
  [[nodiscard]] Device do_device() const noexcept override { return device_; }
  std::size_t do_release_cache() noexcept override { return upstream_->release_cache(); }

  std::shared_ptr<MemoryResource> upstream_;
  Device device_;
};

/// The first resource in the stack starting at `resource` (following ResourceAdaptor::upstream)
/// that is a T, or nullptr.
template <class T>
[[nodiscard]] T* find_in_stack(MemoryResource* resource) noexcept {
  while (resource != nullptr) {
    if (auto* found = dynamic_cast<T*>(resource)) return found;
    auto* adaptor = dynamic_cast<ResourceAdaptor*>(resource);
    resource = adaptor != nullptr ? adaptor->upstream().get() : nullptr;
  }
  return nullptr;
}

}  // namespace tenax
