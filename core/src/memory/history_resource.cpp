#include "tenax/core/memory/history_resource.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>

#include "tenax/core/error.hpp"

namespace tenax {
namespace {

std::atomic<std::int64_t> current_step{-1};
thread_local const char* current_tag = "";

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const char* to_string(AllocationRecord::Kind kind) noexcept {
  switch (kind) {
    case AllocationRecord::Kind::allocate:
      return "allocate";
    case AllocationRecord::Kind::free:
      return "free";
    case AllocationRecord::Kind::failed:
      return "failed";
  }
  return "unknown";
}

HistoryResource::HistoryResource(std::shared_ptr<MemoryResource> upstream, std::size_t capacity)
    : ResourceAdaptor(std::move(upstream)), origin_ns_(now_ns()) {
  TENAX_EXPECTS(capacity >= 1, UsageError, "a HistoryResource keeping 0 records",
                "keep at least 1 record");
  ring_.resize(capacity);
}

std::vector<AllocationRecord> HistoryResource::records() const {
  std::lock_guard lock(mutex_);
  const std::size_t n = ring_.size();
  const std::size_t kept = next_ < n ? static_cast<std::size_t>(next_) : n;
  std::vector<AllocationRecord> out;
  out.reserve(kept);
  for (std::uint64_t i = next_ - kept; i < next_; ++i) out.push_back(ring_[i % n]);
  return out;
}

std::uint64_t HistoryResource::total() const {
  std::lock_guard lock(mutex_);
  return next_;
}

void HistoryResource::record(AllocationRecord::Kind kind, std::size_t bytes,
                             std::uintptr_t address) noexcept {
  const std::int64_t now = now_ns();
  std::lock_guard lock(mutex_);
  if (kind == AllocationRecord::Kind::allocate) outstanding_ += bytes;
  if (kind == AllocationRecord::Kind::free) outstanding_ -= std::min(outstanding_, bytes);
  AllocationRecord& r = ring_[next_ % ring_.size()];
  r.kind = kind;
  r.bytes = bytes;
  r.address = address;
  r.step = current_step.load(std::memory_order_relaxed);
  r.tag = current_tag;
  r.seconds = static_cast<double>(now - origin_ns_) * 1e-9;
  r.outstanding = outstanding_;
  ++next_;
}

void* HistoryResource::do_allocate(std::size_t bytes, StreamRef stream) {
  void* p = nullptr;
  try {
    p = upstream_resource().allocate(bytes, stream);
  } catch (...) {
    record(AllocationRecord::Kind::failed, bytes, 0);
    throw;
  }
  record(AllocationRecord::Kind::allocate, bytes, reinterpret_cast<std::uintptr_t>(p));
  return p;
}

void HistoryResource::do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept {
  upstream_resource().deallocate(ptr, bytes, stream);
  record(AllocationRecord::Kind::free, bytes, reinterpret_cast<std::uintptr_t>(ptr));
}

void set_allocation_step(std::int64_t step) noexcept {
  current_step.store(step, std::memory_order_relaxed);
}

AllocationTag::AllocationTag(const char* tag) noexcept : previous_(current_tag) {
  current_tag = tag;
}

AllocationTag::~AllocationTag() { current_tag = previous_; }

}  // namespace tenax
