/// Statistics of a pooled memory resource, in the manner of torch.cuda.memory_stats. @file
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tenax/core/device.hpp"

namespace tenax {

/// One quantity tracked over time: its value now, its highest value since the last
/// reset_peak_stats(), and the sum of every increase since the resource was made. A plain value:
/// the resource that owns one updates it under its own lock.
struct StatCounter {
  std::int64_t current = 0;  ///< the value now
  std::int64_t peak = 0;     ///< the highest `current` since construction or the last reset_peak()
  std::int64_t total = 0;    ///< the sum of every increase() (never decreases)

  /// Adds `amount` (>= 0) to current and total, raising peak when current passes it.
  void increase(std::int64_t amount) noexcept {
    current += amount;
    total += amount;
    if (current > peak) peak = current;
  }
  /// Subtracts `amount` from current; peak and total are unchanged.
  void decrease(std::int64_t amount) noexcept { current -= amount; }
  /// Sets peak to current, so that the next peak is measured from now.
  void reset_peak() noexcept { peak = current; }
};

/// A snapshot of a PoolResource's statistics (PoolResource::stats(), memory_stats(Device)). Sizes
/// in bytes; the StatCounters count since the pool was made (peaks since reset_peak_stats()).
struct MemoryStats {
  Device device;                  ///< the device of the pool
  std::size_t capacity = 0;       ///< bytes the pool may map (PoolResource::capacity())
  std::size_t address_space = 0;  ///< bytes of reserved virtual addresses
  std::size_t map_granule = 0;    ///< bytes the pool maps at a time (PoolOptions::map_granule)

  StatCounter allocated_bytes;  ///< bytes in live blocks (after rounding)
  StatCounter requested_bytes;  ///< bytes callers asked for (before rounding)
  StatCounter reserved_bytes;   ///< bytes of mapped pages (allocated or cached)
  StatCounter active_blocks;    ///< live blocks; total = allocations served

  /// @name Free space
  /// Taken when the statistics are read; the byte counts cover mapped pages only.
  ///@{
  std::size_t reserved_unallocated = 0;  ///< reserved_bytes.current - allocated_bytes.current
  std::size_t largest_free_block = 0;    ///< largest contiguous mapped free range
  std::size_t free_blocks = 0;           ///< free blocks of the address range (mapped or not)
  double fragmentation = 0.0;            ///< 1 - largest free / reserved_unallocated; 0 if none
  ///@}

  std::uint64_t cache_hits = 0;      ///< allocations served without mapping new pages
  std::uint64_t retries = 0;         ///< retries made by the out-of-memory ladder
  std::uint64_t ooms = 0;            ///< OutOfMemoryErrors thrown
  std::uint64_t released_bytes = 0;  ///< bytes unmapped by empty_cache and the ladder, in total
};

/// A multi-line table of `stats` in the manner of torch.cuda.memory_summary: one row per
/// quantity (allocated, requested, reserved, active blocks, free blocks, largest free block,
/// fragmentation) with columns current, peak and total, then the event counters.
[[nodiscard]] std::string format_memory_summary(const MemoryStats& stats);

/// `"1.50 GiB"`, `"512 B"`: binary units (B, KiB, MiB, GiB, TiB, PiB), two decimals above
/// bytes.
[[nodiscard]] std::string format_bytes(std::size_t bytes);

}  // namespace tenax
