/// FaultInjectingResource: makes chosen allocations fail, to test the out-of-memory paths. The
/// n-th allocation through this resource (counted from 1, thread-safe) throws an
/// OutOfMemoryError that says it was injected when the plan has `oom@alloc` firing at n (see
/// fault_injection.hpp); every other allocation goes to the upstream unchanged. @file
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "tenax/core/fault_injection.hpp"
#include "tenax/core/memory/resource_adaptor.hpp"

namespace tenax {

/// An adaptor that fails the allocations `plan` names (`oom@alloc` items) with
/// OutOfMemoryError and passes everything else to the upstream. It counts its own allocations;
/// the plan's counters are not used. Thread-safe.
class FaultInjectingResource final : public ResourceAdaptor {
 public:
  /// Wraps `upstream` (UsageError when null) with `plan`, which it shares and only reads. Throws
  /// UsageError when `plan` is null.
  FaultInjectingResource(std::shared_ptr<MemoryResource> upstream,
                         std::shared_ptr<const FaultPlan> plan);

  /// Allocation requests (of more than 0 bytes) seen so far, injected failures included.
  [[nodiscard]] std::uint64_t allocations() const noexcept { return allocations_.load(); }
  /// Allocations failed on purpose so far.
  [[nodiscard]] std::uint64_t injected() const noexcept { return injected_.load(); }

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept override;

  std::shared_ptr<const FaultPlan> plan_;
  std::atomic<std::uint64_t> allocations_{0};
  std::atomic<std::uint64_t> injected_{0};
};

}  // namespace tenax
