// Statistics of a pooled memory resource, in the manner of torch.cuda.memory_stats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tenax/core/device.hpp"

namespace tenax {

// One quantity tracked over time: its value now, its highest value since the last
// reset_peak_stats(), and the sum of every increase since the resource was made.
struct StatCounter {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t total = 0;

  void increase(std::int64_t amount) noexcept {
    current += amount;
    total += amount;
    if (current > peak) peak = current;
  }
  void decrease(std::int64_t amount) noexcept { current -= amount; }
  void reset_peak() noexcept { peak = current; }
};

struct MemoryStats {
  Device device;
  std::size_t capacity = 0;       // bytes the pool may map (TENAX_MEMORY_LIMIT or physical)
  std::size_t address_space = 0;  // bytes of reserved virtual addresses

  StatCounter allocated_bytes;  // bytes in live blocks (after rounding)
  StatCounter requested_bytes;  // bytes callers asked for (before rounding)
  StatCounter reserved_bytes;   // bytes of mapped pages (allocated or cached)
  StatCounter active_blocks;    // live blocks; total = allocations served

  // Snapshot of the free space, over mapped pages only.
  std::size_t reserved_unallocated = 0;  // reserved_bytes.current - allocated_bytes.current
  std::size_t largest_free_block = 0;    // largest contiguous mapped free range
  std::size_t free_blocks = 0;           // free blocks of the address range (mapped or not)
  double fragmentation = 0.0;            // 1 - largest free / reserved_unallocated; 0 if none

  std::uint64_t cache_hits = 0;      // allocations served without mapping new pages
  std::uint64_t retries = 0;         // retries made by the out-of-memory ladder
  std::uint64_t ooms = 0;            // OutOfMemoryErrors thrown
  std::uint64_t released_bytes = 0;  // bytes unmapped by empty_cache and the ladder, in total
};

// A multi-line table of `stats` in the manner of torch.cuda.memory_summary: one row per
// quantity (allocated, requested, reserved, active blocks, free blocks, largest free block,
// fragmentation) with columns current, peak and total, then the event counters.
[[nodiscard]] std::string format_memory_summary(const MemoryStats& stats);

// "1.50 GiB", "512 B": binary units, two decimals above bytes.
[[nodiscard]] std::string format_bytes(std::size_t bytes);

}  // namespace tenax
