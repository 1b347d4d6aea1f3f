// StatisticsResource: counts what passes through it (bytes as requested, blocks) without changing
// it. Thread-safe; the counters are read as one consistent snapshot.
#pragma once

#include <cstdint>
#include <mutex>

#include "tenax/core/memory/memory_stats.hpp"
#include "tenax/core/memory/resource_adaptor.hpp"

namespace tenax {

class StatisticsResource final : public ResourceAdaptor {
 public:
  struct Counters {
    StatCounter bytes;           // bytes outstanding; total = bytes ever allocated
    StatCounter blocks;          // allocations outstanding; total = allocations ever served
    std::uint64_t failures = 0;  // allocations the upstream refused
  };

  explicit StatisticsResource(std::shared_ptr<MemoryResource> upstream);

  [[nodiscard]] Counters counters() const;
  void reset_peak() noexcept;

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept override;

  mutable std::mutex mutex_;
  Counters counters_;
};

}  // namespace tenax
