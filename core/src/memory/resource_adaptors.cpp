// The adaptors of resource_adaptor.hpp: limiting, statistics and fault-injecting resources.
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/memory/fault_injecting_resource.hpp"
#include "tenax/core/memory/limiting_resource.hpp"
#include "tenax/core/memory/memory_stats.hpp"
#include "tenax/core/memory/resource_adaptor.hpp"
#include "tenax/core/memory/statistics_resource.hpp"

namespace tenax {
namespace {

std::shared_ptr<MemoryResource> checked(std::shared_ptr<MemoryResource> upstream) {
  TENAX_EXPECTS(upstream != nullptr, UsageError,
                "a memory resource adaptor was given a null "
                "upstream",
                "pass the resource to wrap, e.g. tenax::current_resource(device)");
  return upstream;
}

}  // namespace

ResourceAdaptor::ResourceAdaptor(std::shared_ptr<MemoryResource> upstream)
    : upstream_(checked(std::move(upstream))), device_(upstream_->device()) {}

// ---- LimitingResource -------------------------------------------------------------------------

LimitingResource::LimitingResource(std::shared_ptr<MemoryResource> upstream,
                                   std::size_t limit_bytes)
    : ResourceAdaptor(std::move(upstream)), limit_(limit_bytes) {}

void* LimitingResource::do_allocate(std::size_t bytes, StreamRef stream) {
  const std::size_t charged = align_up(bytes, kAlignment);
  std::size_t used = used_.load();
  // Claim the bytes first so that concurrent requests cannot overshoot the limit together.
  do {
    if (charged > limit_ || used > limit_ - charged) {
      throw OutOfMemoryError(
          "allocating " + format_bytes(bytes) + " (" + std::to_string(bytes) + " B) on " +
              to_string(device()) + " would exceed the memory limit of " + format_bytes(limit_) +
              " (" + std::to_string(limit_) + " B): " + format_bytes(used) + " (" +
              std::to_string(used) + " B) already in use",
          "lower the problem size (the batch, micro-batch or grid), free tensors that are no "
          "longer needed, or "
          "raise the limit (TENAX_MEMORY_LIMIT)");
    }
  } while (!used_.compare_exchange_weak(used, used + charged));
  try {
    return upstream_resource().allocate(bytes, stream);
  } catch (...) {
    used_.fetch_sub(charged);
    throw;
  }
}

void LimitingResource::do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept {
  upstream_resource().deallocate(ptr, bytes, stream);
  used_.fetch_sub(align_up(bytes, kAlignment));
}

// ---- StatisticsResource -----------------------------------------------------------------------

StatisticsResource::StatisticsResource(std::shared_ptr<MemoryResource> upstream)
    : ResourceAdaptor(std::move(upstream)) {}

StatisticsResource::Counters StatisticsResource::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

void StatisticsResource::reset_peak() noexcept {
  std::lock_guard lock(mutex_);
  counters_.bytes.reset_peak();
  counters_.blocks.reset_peak();
}

void* StatisticsResource::do_allocate(std::size_t bytes, StreamRef stream) {
  void* ptr = nullptr;
  try {
    ptr = upstream_resource().allocate(bytes, stream);
  } catch (...) {
    std::lock_guard lock(mutex_);
    ++counters_.failures;
    throw;
  }
  std::lock_guard lock(mutex_);
  counters_.bytes.increase(static_cast<std::int64_t>(bytes));
  counters_.blocks.increase(1);
  return ptr;
}

void StatisticsResource::do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept {
  upstream_resource().deallocate(ptr, bytes, stream);
  std::lock_guard lock(mutex_);
  counters_.bytes.decrease(static_cast<std::int64_t>(bytes));
  counters_.blocks.decrease(1);
}

// ---- FaultInjectingResource -------------------------------------------------------------------

FaultInjectingResource::FaultInjectingResource(std::shared_ptr<MemoryResource> upstream,
                                               std::shared_ptr<const FaultPlan> plan)
    : ResourceAdaptor(std::move(upstream)), plan_(std::move(plan)) {
  TENAX_EXPECTS(plan_ != nullptr, UsageError, "FaultInjectingResource was given a null plan",
                "pass a FaultPlan, e.g. FaultPlan::parse(\"oom@alloc=3\")");
}

void* FaultInjectingResource::do_allocate(std::size_t bytes, StreamRef stream) {
  const std::uint64_t n = allocations_.fetch_add(1) + 1;
  if (plan_->should_fire(FaultKind::oom, FaultPoint::alloc, n)) {
    injected_.fetch_add(1);
    throw OutOfMemoryError("injected out-of-memory fault: allocation " + std::to_string(n) +
                               " of " + format_bytes(bytes) + " on " + to_string(device()) +
                               " failed as the fault plan '" + plan_->to_string() + "' asked",
                           "this failure was injected on purpose (TENAX_FAULTS); unset "
                           "TENAX_FAULTS to run without injected faults");
  }
  return upstream_resource().allocate(bytes, stream);
}

void FaultInjectingResource::do_deallocate(void* ptr, std::size_t bytes,
                                           StreamRef stream) noexcept {
  upstream_resource().deallocate(ptr, bytes, stream);
}

}  // namespace tenax
