/// PoolResource: a caching, best-fit, low-fragmentation memory resource over one virtual memory
/// arena (host or CUDA), in the manner of PyTorch's expandable segments.
/// @file
/// Design:
///  - One reservation of address space per pool (address_space bytes, by default four times the
///    capacity). Every block lives in it, so freed neighbours always merge: allocating 8 blocks
///    of 16 MiB, freeing them and allocating 4 of 32 MiB reuses the same pages.
///  - Blocks are carved best-fit (smallest free block that fits, lowest address on ties) from
///    the front of a free block, found in O(log n) through a set ordered by (stream, size,
///    address); the rest of the free block stays free. Freed blocks merge with free neighbours.
///  - Pages are mapped on demand, map_granule bytes at a time, when a block needs them, as long as
///    the mapped total stays within `capacity`; empty_cache() unmaps every granule that lies
///    wholly inside free blocks.
///  - Sizes are rounded up to 512 B below 1 MiB and to 64 KiB from 1 MiB on (fewer distinct sizes,
///    fewer slivers); every block is aligned to at least MemoryResource::kAlignment.
///
/// Streams: a freed block remembers the stream it was freed on and is reused only by
/// allocations on that same stream, because work queued on that stream may still be reading it.
/// (The default StreamRef{} is one stream like any other; on the CPU every allocation uses it.)
/// Never-used address space belongs to no stream and merges into its freed neighbours. Handing a
/// block to another stream needs the device to have finished with it: empty_cache() and the
/// out-of-memory ladder synchronise the arena first, after which every free block is open to every
/// stream again. A caller that wants cross-stream reuse without that synchronisation must record an
/// event on the freeing stream and make the allocating stream wait on it before use, and then free
/// and allocate on one stream.
///
/// Out-of-memory ladder: when a request cannot be served (no free block fits, mapping would exceed
/// the capacity, or the arena fails to map with OutOfMemoryError) the pool synchronises, releases
/// its cached pages and retries; after an arena failure it retries up to `upstream_retries` more
/// times; then it throws OutOfMemoryError whose cause lists the requested and rounded size, the
/// device, capacity, allocated, reserved, reserved-but-unallocated, largest free block,
/// fragmentation index, number of free blocks and the recovery steps taken. A request larger than
/// the capacity fails at once without touching the arena.
///
/// Thread-safe: one mutex guards the pool.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tenax/core/memory/memory_stats.hpp"
#include "tenax/core/memory/virtual_memory.hpp"
#include "tenax/core/memory_resource.hpp"

namespace tenax {

/// One block of a pool's address range (PoolResource::block_map).
struct PoolBlock {
  std::size_t offset = 0;  ///< from the start of the pool's address range
  std::size_t size = 0;    ///< bytes (a rounded size for a live block)
  bool free = true;        ///< false for a live (allocated) block
};

/// Settings of a PoolResource; the defaults suit a pool over a whole device.
struct PoolOptions {
  /// Most bytes the pool maps at once; 0 means arena->physical_bytes() (on a GPU, the memory
  /// free when the pool is made).
  std::size_t capacity = 0;
  /// Bytes of address space to reserve; 0 means 4 * capacity, halved down to the capacity
  /// while the arena refuses it (a driver or an address-space limit granting less). Rounded up
  /// to map_granule; an explicit size is reserved as given or the constructor throws.
  std::size_t address_space = 0;
  /// Pages are mapped and unmapped in units of this many bytes (a power of two, else UsageError;
  /// raised to the arena's granularity and to at least 64 KiB).
  std::size_t map_granule = std::size_t{2} << 20;
  /// Extra retries of the ladder after the arena failed to map (a transient failure, e.g. memory
  /// freed by another process meanwhile). At least 0, else UsageError.
  int upstream_retries = 2;
};

/// The caching pool described in pool_resource.hpp, over one VirtualMemory arena that it shares
/// and owns the reservation of. Non-copyable. Thread-safe (one mutex).
class PoolResource final : public MemoryResource {
 public:
  /// Throws UsageError for a null arena or inconsistent options, OutOfMemoryError when the
  /// address space cannot be reserved.
  explicit PoolResource(std::shared_ptr<VirtualMemory> arena, PoolOptions options = {});
  /// Waits for the arena (synchronize()), unmaps every page and releases the address range.
  /// Blocks still allocated (leaks of the caller; a Buffer keeps its resource alive) lose their
  /// memory with the range.
  ~PoolResource() override;

  /// Bytes a request of `bytes` occupies in the pool: rounded up to 512 B below 1 MiB, to 64 KiB
  /// from 1 MiB on.
  [[nodiscard]] static std::size_t rounded_size(std::size_t bytes) noexcept;

  /// Most bytes the pool maps at once: PoolOptions::capacity, or the arena's physical_bytes()
  /// when that was 0.
  [[nodiscard]] std::size_t capacity() const noexcept;
  /// A consistent snapshot of the counters and the free space, taken under the pool's lock (it
  /// walks the free blocks: cheap, but not for every allocation).
  [[nodiscard]] MemoryStats stats() const;
  /// format_memory_summary(stats()).
  [[nodiscard]] std::string memory_summary() const;
  /// Unmaps the cached pages (granules wholly inside free blocks); returns the bytes unmapped.
  std::size_t empty_cache() noexcept { return release_cache(); }
  /// Sets every peak to its current value.
  void reset_peak_stats() noexcept;
  /// The blocks of the address range in address order, free and live (the first `max_blocks`;
  /// the last block is usually the never-used rest of the range): where fragmentation lies.
  [[nodiscard]] std::vector<PoolBlock> block_map(std::size_t max_blocks = 4096) const;

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept override;
  [[nodiscard]] Device do_device() const noexcept override;
  std::size_t do_release_cache() noexcept override;

  struct State;
  std::unique_ptr<State> state_;
};

/// While alive, every PoolResource refuses the allocations requested on the calling thread: a
/// UsageError that names `phase` and the bytes asked for. The Runner holds one around the phase
/// of a step that must not fail for a retryable reason (Workload::commit_step): an allocation
/// there could run out of memory after the ranks agreed to commit, so the rule is checked, not
/// trusted. Scopes nest; the innermost phase is named. Destroy on the thread that made it.
class NoAllocationScope {
 public:
  /// `phase` (a string literal: only the pointer is kept) names the phase in the refusal, e.g.
  /// "Workload::commit_step()".
  explicit NoAllocationScope(const char* phase) noexcept;
  ~NoAllocationScope();  ///< allows allocations again (or the enclosing scope's rule)
  NoAllocationScope(const NoAllocationScope&) = delete;
  NoAllocationScope& operator=(const NoAllocationScope&) = delete;

 private:
  const char* previous_;
};

/// The phase of the innermost NoAllocationScope on the calling thread, or nullptr.
[[nodiscard]] const char* no_allocation_phase() noexcept;

}  // namespace tenax
