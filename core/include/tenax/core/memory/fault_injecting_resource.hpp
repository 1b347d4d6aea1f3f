// FaultInjectingResource: makes chosen allocations fail, to test the out-of-memory paths. The
// n-th allocation through this resource (counted from 1, thread-safe) throws an
// OutOfMemoryError that says it was injected when the plan has `oom@alloc` firing at n (see
// fault_injection.hpp); every other allocation goes to the upstream unchanged.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "tenax/core/fault_injection.hpp"
#include "tenax/core/memory/resource_adaptor.hpp"

namespace tenax {

class FaultInjectingResource final : public ResourceAdaptor {
 public:
  // Throws UsageError when `plan` is null.
  FaultInjectingResource(std::shared_ptr<MemoryResource> upstream,
                         std::shared_ptr<const FaultPlan> plan);

  [[nodiscard]] std::uint64_t allocations() const noexcept { return allocations_.load(); }
  [[nodiscard]] std::uint64_t injected() const noexcept { return injected_.load(); }

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept override;

  std::shared_ptr<const FaultPlan> plan_;
  std::atomic<std::uint64_t> allocations_{0};
  std::atomic<std::uint64_t> injected_{0};
};

}  // namespace tenax
