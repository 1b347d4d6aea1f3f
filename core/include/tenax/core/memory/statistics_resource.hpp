/// StatisticsResource: counts what passes through it (bytes as requested, blocks) without changing
/// it. Thread-safe; the counters are read as one consistent snapshot. @file
#pragma once

#include <cstdint>
#include <mutex>

#include "tenax/core/memory/memory_stats.hpp"
#include "tenax/core/memory/resource_adaptor.hpp"

namespace tenax {

/// An adaptor that counts the bytes and blocks outstanding through it, and the failures, and
/// passes every request to its upstream unchanged. Thread-safe.
class StatisticsResource final : public ResourceAdaptor {
 public:
  /// What counters() returns. Bytes are counted as requested (not rounded).
  struct Counters {
    StatCounter bytes;           ///< bytes outstanding; total = bytes ever allocated
    StatCounter blocks;          ///< allocations outstanding; total = allocations ever served
    std::uint64_t failures = 0;  ///< allocations the upstream refused
  };

  /// Counts what passes to `upstream`; UsageError when it is null.
  explicit StatisticsResource(std::shared_ptr<MemoryResource> upstream);

  /// A consistent copy of the counters, taken under the lock.
  [[nodiscard]] Counters counters() const;
  /// Sets the peaks of `bytes` and `blocks` to their current values.
  void reset_peak() noexcept;

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept override;

  mutable std::mutex mutex_;
  Counters counters_;
};

}  // namespace tenax
