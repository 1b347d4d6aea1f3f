/// LimitingResource: a byte cap on the bytes outstanding through it (each request counted rounded
/// up to MemoryResource::kAlignment). Simulates a small GPU on the CPU. A request that would take
/// the total over the limit throws OutOfMemoryError naming the request, the limit and the current
/// use, without calling the upstream. Thread-safe. @file
#pragma once

#include <atomic>
#include <cstddef>

#include "tenax/core/memory/resource_adaptor.hpp"

namespace tenax {

/// An adaptor that refuses requests beyond a byte limit (see limiting_resource.hpp) and passes
/// the rest to its upstream. Thread-safe: concurrent requests cannot overshoot the limit.
class LimitingResource final : public ResourceAdaptor {
 public:
  /// Caps what is outstanding through this resource at `limit_bytes` bytes; UsageError when
  /// `upstream` is null. A limit of 0 refuses every request of more than 0 bytes.
  LimitingResource(std::shared_ptr<MemoryResource> upstream, std::size_t limit_bytes);

  /// The cap, in bytes, as given to the constructor.
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }
  /// Bytes outstanding now, each allocation counted rounded up to MemoryResource::kAlignment.
  [[nodiscard]] std::size_t used() const noexcept { return used_.load(); }

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept override;

  std::size_t limit_;
  std::atomic<std::size_t> used_{0};
};

}  // namespace tenax
