#include "tenax/core/memory/pool_resource.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory_resource>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tenax/core/error.hpp"

namespace tenax {
namespace {

thread_local const char* current_no_allocation_phase = nullptr;

// Tag of address space no stream has used since it was last synchronised: open to every stream.
constexpr std::uintptr_t kAnyStream = ~std::uintptr_t{0};
constexpr std::size_t kSmallSize = std::size_t{1} << 20;
constexpr std::size_t kSmallRound = 512;
constexpr std::size_t kLargeRound = std::size_t{64} << 10;

std::uintptr_t tag_of(StreamRef stream) noexcept {
  return reinterpret_cast<std::uintptr_t>(stream.handle);
}

// A block of the address range. Every block, free or live, is on the address-ordered list
// (prev/next), so a freed block finds its neighbours in O(1).
struct Block {
  std::uintptr_t addr = 0;
  std::size_t size = 0;
  std::uintptr_t tag = kAnyStream;
  bool free = true;
  Block* prev = nullptr;
  Block* next = nullptr;
};

struct FreeOrder {
  bool operator()(const Block* a, const Block* b) const noexcept {
    if (a->tag != b->tag) return a->tag < b->tag;
    if (a->size != b->size) return a->size < b->size;
    return a->addr < b->addr;
  }
};

// Merged tag of two free neighbours, or false when they must stay apart (different streams).
bool mergeable(std::uintptr_t a, std::uintptr_t b, std::uintptr_t& merged) noexcept {
  if (a == b || b == kAnyStream) {
    merged = a;
    return true;
  }
  if (a == kAnyStream) {
    merged = b;
    return true;
  }
  return false;
}

enum class Outcome { ok, no_space, over_capacity, arena_failed };

}  // namespace

struct PoolResource::State {
  std::shared_ptr<VirtualMemory> arena;
  Device device;
  std::size_t granule = 0;
  int granule_shift = 0;
  std::size_t capacity = 0;
  std::size_t address_space = 0;
  int upstream_retries = 0;
  std::uintptr_t base = 0;

  mutable std::mutex mutex;
  // Node storage for the containers below: after warm-up, allocate/free reuse nodes and never
  // call the system allocator.
  std::pmr::unsynchronized_pool_resource nodes;
  std::pmr::set<Block*, FreeOrder> free_blocks{&nodes};
  std::pmr::unordered_map<std::uintptr_t, Block*> live{&nodes};
  std::deque<Block> block_storage;
  std::vector<Block*> spare_blocks;

  std::vector<std::uint64_t> mapped;  // one bit per granule of the address range
  std::size_t mapped_bytes = 0;

  MemoryStats stats;
  std::string last_arena_error;

  Block* new_block() {
    if (!spare_blocks.empty()) {
      Block* b = spare_blocks.back();
      spare_blocks.pop_back();
      return b;
    }
    // Room for every record ever made, so that recycle() never allocates.
    spare_blocks.reserve(block_storage.size() + 1);
    return &block_storage.emplace_back();
  }
  void recycle(Block* b) noexcept { spare_blocks.push_back(b); }

  [[nodiscard]] bool is_mapped(std::size_t g) const noexcept {
    return (mapped[g >> 6] >> (g & 63)) & 1u;
  }
  void set_mapped(std::size_t g, bool on) noexcept {
    if (on) {
      mapped[g >> 6] |= std::uint64_t{1} << (g & 63);
    } else {
      mapped[g >> 6] &= ~(std::uint64_t{1} << (g & 63));
    }
  }
  [[nodiscard]] std::size_t first_granule(std::uintptr_t addr) const noexcept {
    return (addr - base) >> granule_shift;
  }

  // Bytes of pages that using [addr, addr + size) would map.
  [[nodiscard]] std::size_t unmapped_bytes(std::uintptr_t addr, std::size_t size) const noexcept {
    const std::size_t g0 = first_granule(addr);
    const std::size_t g1 = first_granule(addr + size - 1);
    // Count mapped granules a word at a time: large blocks span many granules.
    std::size_t present = 0;
    for (std::size_t w = g0 >> 6; w <= (g1 >> 6); ++w) {
      std::uint64_t word = mapped[w];
      if (w == (g0 >> 6)) word &= ~std::uint64_t{0} << (g0 & 63);
      if (w == (g1 >> 6)) word &= ~std::uint64_t{0} >> (63 - (g1 & 63));
      present += static_cast<std::size_t>(std::popcount(word));
    }
    return (g1 - g0 + 1 - present) << granule_shift;
  }

  // Maps every unmapped granule under [addr, addr + size), a run at a time. On failure the runs
  // mapped so far stay mapped (and counted) and the arena's exception propagates.
  void map_range(std::uintptr_t addr, std::size_t size) {
    const std::size_t g1 = first_granule(addr + size - 1);
    std::size_t g = first_granule(addr);
    while (g <= g1) {
      if (is_mapped(g)) {
        ++g;
        continue;
      }
      std::size_t end = g;
      while (end <= g1 && !is_mapped(end)) ++end;
      const std::size_t bytes = (end - g) << granule_shift;
      arena->map(reinterpret_cast<void*>(base + (g << granule_shift)), bytes);
      for (std::size_t i = g; i < end; ++i) set_mapped(i, true);
      mapped_bytes += bytes;
      stats.reserved_bytes.increase(static_cast<std::int64_t>(bytes));
      g = end;
    }
  }

  // Unmaps the mapped granules wholly inside [addr, addr + size); returns the bytes unmapped.
  std::size_t unmap_inside(std::uintptr_t addr, std::size_t size) noexcept {
    const std::uintptr_t lo = align_up(addr - base, granule);
    const std::uintptr_t hi = (addr + size - base) & ~(granule - 1);
    if (hi <= lo) return 0;
    std::size_t released = 0;
    std::size_t g = lo >> granule_shift;
    const std::size_t g_end = hi >> granule_shift;
    while (g < g_end) {
      if (!is_mapped(g)) {
        ++g;
        continue;
      }
      std::size_t end = g;
      while (end < g_end && is_mapped(end)) ++end;
      const std::size_t bytes = (end - g) << granule_shift;
      arena->unmap(reinterpret_cast<void*>(base + (g << granule_shift)), bytes);
      for (std::size_t i = g; i < end; ++i) set_mapped(i, false);
      released += bytes;
      g = end;
    }
    mapped_bytes -= released;
    stats.reserved_bytes.decrease(static_cast<std::int64_t>(released));
    return released;
  }

  // Smallest free block of `tag` or of no stream that holds `size` bytes, or nullptr.
  [[nodiscard]] Block* best_fit(std::size_t size, std::uintptr_t tag) const {
    Block key;
    key.size = size;
    key.addr = 0;
    auto candidate = [&](std::uintptr_t t) -> Block* {
      key.tag = t;
      auto it = free_blocks.lower_bound(&key);
      return (it != free_blocks.end() && (*it)->tag == t) ? *it : nullptr;
    };
    Block* own = candidate(tag);
    Block* any = tag == kAnyStream ? nullptr : candidate(kAnyStream);
    if (own == nullptr) return any;
    if (any == nullptr) return own;
    // Prefer the stream's own block on a tie: its pages are mapped already.
    return any->size < own->size ? any : own;
  }

  Outcome try_allocate(std::size_t size, std::uintptr_t tag, void*& out) {
    Block* b = best_fit(size, tag);
    if (b == nullptr) return Outcome::no_space;
    const std::size_t missing = unmapped_bytes(b->addr, size);
    if (missing > 0) {
      if (mapped_bytes + missing > capacity) return Outcome::over_capacity;
      try {
        map_range(b->addr, size);
      } catch (const OutOfMemoryError& e) {
        last_arena_error = e.cause();
        return Outcome::arena_failed;
      }
    } else {
      ++stats.cache_hits;
    }
    // Insert the live entry first: if that throws, nothing has changed yet.
    auto live_entry = live.emplace(b->addr, nullptr).first;
    auto node = free_blocks.extract(b);
    Block* result = b;
    if (b->size > size) {
      // Carve from the front; the rest keeps its record and its set node (no allocation).
      result = new_block();
      result->addr = b->addr;
      result->size = size;
      result->prev = b->prev;
      result->next = b;
      if (b->prev != nullptr) b->prev->next = result;
      b->prev = result;
      b->addr += size;
      b->size -= size;
      free_blocks.insert(std::move(node));
    }
    result->free = false;
    result->tag = tag;
    live_entry->second = result;
    stats.allocated_bytes.increase(static_cast<std::int64_t>(size));
    stats.active_blocks.increase(1);
    out = reinterpret_cast<void*>(result->addr);
    return Outcome::ok;
  }

  void free_block(Block* b, std::uintptr_t tag) noexcept {
    b->free = true;
    b->tag = tag;
    std::uintptr_t merged = tag;
    Block* next = b->next;
    Block* prev = b->prev;
    const bool with_next = next != nullptr && next->free && mergeable(tag, next->tag, merged);
    std::uintptr_t merged_all = merged;
    const bool with_prev =
        prev != nullptr && prev->free && mergeable(prev->tag, merged, merged_all);
    if (with_next) {
      // Grow the next block backwards over b, reusing its set node.
      auto node = free_blocks.extract(next);
      next->addr = b->addr;
      next->size += b->size;
      next->tag = merged;
      next->prev = prev;
      if (prev != nullptr) prev->next = next;
      recycle(b);
      if (with_prev) {
        auto prev_node = free_blocks.extract(prev);
        prev->size += next->size;
        prev->tag = merged_all;
        prev->next = next->next;
        if (next->next != nullptr) next->next->prev = prev;
        recycle(next);
        free_blocks.insert(std::move(prev_node));
      } else {
        free_blocks.insert(std::move(node));
      }
      return;
    }
    if (with_prev) {
      auto prev_node = free_blocks.extract(prev);
      prev->size += b->size;
      prev->tag = merged_all;
      prev->next = next;
      if (next != nullptr) next->prev = prev;
      recycle(b);
      free_blocks.insert(std::move(prev_node));
      return;
    }
    free_blocks.insert(b);
  }

  // Synchronises the arena, opens every free block to every stream, merges neighbours that
  // stream tags kept apart, and unmaps the granules wholly inside free blocks.
  std::size_t release() noexcept {
    arena->synchronize();
    std::vector<Block*> blocks(free_blocks.begin(), free_blocks.end());
    free_blocks.clear();
    std::sort(blocks.begin(), blocks.end(),
              [](const Block* a, const Block* b) { return a->addr < b->addr; });
    std::vector<Block*> kept;
    kept.reserve(blocks.size());
    for (Block* b : blocks) {
      b->tag = kAnyStream;
      if (!kept.empty() && b->prev == kept.back()) {
        Block* p = kept.back();
        p->size += b->size;
        p->next = b->next;
        if (b->next != nullptr) b->next->prev = p;
        recycle(b);
      } else {
        kept.push_back(b);
      }
    }
    std::size_t released = 0;
    for (Block* b : kept) {
      released += unmap_inside(b->addr, b->size);
      free_blocks.insert(b);
    }
    stats.released_bytes += released;
    return released;
  }

  // Fills the free-space snapshot of `s` (mapped pages only).
  void snapshot(MemoryStats& s) const {
    s.free_blocks = free_blocks.size();
    s.reserved_unallocated = mapped_bytes - static_cast<std::size_t>(stats.allocated_bytes.current);
    std::size_t largest = 0;
    for (const Block* b : free_blocks) {
      // Longest run of mapped bytes inside b.
      std::size_t run = 0;
      const std::uintptr_t end = b->addr + b->size;
      std::size_t g = first_granule(b->addr);
      const std::size_t g_last = first_granule(end - 1);
      while (g <= g_last) {
        // Skip whole unmapped words at once: the never-used tail of the range is long.
        if ((g & 63) == 0 && g + 63 <= g_last && mapped[g >> 6] == 0) {
          run = 0;
          g += 64;
          continue;
        }
        if (!is_mapped(g)) {
          run = 0;
          ++g;
          continue;
        }
        const std::uintptr_t lo = std::max(b->addr, base + (g << granule_shift));
        const std::uintptr_t hi = std::min(end, base + ((g + 1) << granule_shift));
        run += hi - lo;
        largest = std::max(largest, run);
        ++g;
      }
    }
    s.largest_free_block = largest;
    s.fragmentation =
        s.reserved_unallocated == 0
            ? 0.0
            : 1.0 - static_cast<double>(largest) / static_cast<double>(s.reserved_unallocated);
  }

  [[nodiscard]] MemoryStats full_stats() const {
    MemoryStats s = stats;
    snapshot(s);
    return s;
  }
};

namespace {

std::string out_of_memory_cause(const MemoryStats& s, std::size_t requested, std::size_t rounded,
                                const std::string& reason, const std::string& steps) {
  char fragmentation[32];
  std::snprintf(fragmentation, sizeof fragmentation, "%.3f", s.fragmentation);
  return "cannot allocate " + format_bytes(requested) + " (requested " + std::to_string(requested) +
         " B, rounded to " + std::to_string(rounded) + " B) on " + to_string(s.device) + ": " +
         reason + "; capacity " + format_bytes(s.capacity) + ", allocated " +
         format_bytes(static_cast<std::size_t>(s.allocated_bytes.current)) + ", reserved " +
         format_bytes(static_cast<std::size_t>(s.reserved_bytes.current)) +
         ", reserved but unallocated " + format_bytes(s.reserved_unallocated) +
         ", largest free block " + format_bytes(s.largest_free_block) + ", fragmentation " +
         fragmentation + ", free blocks " + std::to_string(s.free_blocks) +
         "; recovery steps run: " + steps;
}

std::string out_of_memory_fix(const MemoryStats& s) {
  std::string fix =
      "lower the problem size (the batch, micro-batch or grid), free tensors that are no longer "
      "needed, or raise "
      "TENAX_MEMORY_LIMIT if it is set below the memory this device really has";
  if (s.fragmentation > 0.5) {
    fix +=
        "; the free memory is fragmented: call tenax::empty_cache() between phases that use "
        "very different sizes";
  }
  return fix;
}

}  // namespace

PoolResource::PoolResource(std::shared_ptr<VirtualMemory> arena, PoolOptions options)
    : state_(std::make_unique<State>()) {
  TENAX_EXPECTS(arena != nullptr, UsageError, "PoolResource was given a null virtual memory arena",
                "pass an arena such as std::make_shared<HostVirtualMemory>()");
  TENAX_EXPECTS(
      std::has_single_bit(options.map_granule), UsageError,
      "PoolOptions::map_granule is " + std::to_string(options.map_granule) + ", not a power of two",
      "use a power of two such as 2 MiB");
  TENAX_EXPECTS(options.upstream_retries >= 0, UsageError,
                "PoolOptions::upstream_retries is negative", "use 0 or more");
  State& s = *state_;
  s.arena = std::move(arena);
  s.device = s.arena->device();
  s.granule = std::max({options.map_granule, s.arena->granularity(), kLargeRound});
  s.granule_shift = std::countr_zero(s.granule);
  // Under an address-space limit (ulimit -v) a pool sized by the memory behind it could never
  // be reserved: the default capacity is then half of what the limit leaves.
  const std::size_t headroom = s.arena->reservable_bytes();
  s.capacity = options.capacity != 0  ? options.capacity
               : headroom != SIZE_MAX ? std::min(s.arena->physical_bytes(), headroom / 2)
                                      : s.arena->physical_bytes();
  TENAX_EXPECTS(s.capacity > 0, UsageError, "PoolResource capacity is zero",
                "set PoolOptions::capacity or TENAX_MEMORY_LIMIT to a positive size");
  std::size_t wanted = options.address_space != 0 ? options.address_space : 4 * s.capacity;
  if (options.address_space == 0) {
    // Under an address-space limit (ulimit -v) the reservation leaves half of what remains to
    // the process's own mappings (thread stacks, libraries, another pool), down to the capacity.
    if (headroom != SIZE_MAX) wanted = std::min(wanted, std::max(s.capacity, headroom / 2));
  }
  s.address_space = align_up(std::max(wanted, s.granule), s.granule);
  s.upstream_retries = options.upstream_retries;
  // The default reservation (4 x the capacity: 560 GB of addresses on a 140 GB GPU) may be
  // more than a driver or an address-space limit grants: halve it down to the capacity before
  // giving up (a smaller space only fragments sooner). An explicit address_space is not cut.
  const std::size_t smallest = align_up(std::max(s.capacity, s.granule), s.granule);
  while (true) {
    try {
      s.base = reinterpret_cast<std::uintptr_t>(s.arena->reserve(s.address_space));
      break;
    } catch (const Error&) {
      if (options.address_space != 0 || s.address_space <= smallest) throw;
      s.address_space = std::max(smallest, align_up(s.address_space / 2, s.granule));
    }
  }
  s.mapped.assign(((s.address_space >> s.granule_shift) + 63) / 64, 0);
  s.stats.device = s.device;
  s.stats.capacity = s.capacity;
  s.stats.address_space = s.address_space;
  s.stats.map_granule = s.granule;
  s.live.reserve(1024);
  Block* whole = s.new_block();
  whole->addr = s.base;
  whole->size = s.address_space;
  s.free_blocks.insert(whole);
}

PoolResource::~PoolResource() {
  State& s = *state_;
  s.arena->synchronize();
  // Live blocks left behind are leaks of the caller; their pages go back with the rest.
  const std::size_t granules = s.address_space >> s.granule_shift;
  std::size_t g = 0;
  while (g < granules) {
    if (!s.is_mapped(g)) {
      ++g;
      continue;
    }
    std::size_t end = g;
    while (end < granules && s.is_mapped(end)) ++end;
    s.arena->unmap(reinterpret_cast<void*>(s.base + (g << s.granule_shift)),
                   (end - g) << s.granule_shift);
    g = end;
  }
  s.arena->release(reinterpret_cast<void*>(s.base), s.address_space);
}

std::size_t PoolResource::rounded_size(std::size_t bytes) noexcept {
  return bytes < kSmallSize ? align_up(bytes, kSmallRound) : align_up(bytes, kLargeRound);
}

std::size_t PoolResource::capacity() const noexcept { return state_->capacity; }

Device PoolResource::do_device() const noexcept { return state_->device; }

NoAllocationScope::NoAllocationScope(const char* phase) noexcept
    : previous_(current_no_allocation_phase) {
  current_no_allocation_phase = phase;
}

NoAllocationScope::~NoAllocationScope() { current_no_allocation_phase = previous_; }

const char* no_allocation_phase() noexcept { return current_no_allocation_phase; }

void* PoolResource::do_allocate(std::size_t bytes, StreamRef stream) {
  if (const char* phase = current_no_allocation_phase; phase != nullptr) [[unlikely]] {
    throw UsageError(std::string(phase) + " asked the memory pool for " + format_bytes(bytes) +
                         ", but it runs after every rank agreed to take the step and must not "
                         "acquire memory (an out-of-memory error there could not be retried)",
                     "acquire what the step needs in Workload::step() and keep it staged for "
                     "the later phase");
  }
  State& s = *state_;
  const std::size_t rounded = rounded_size(bytes);
  const std::uintptr_t tag = tag_of(stream);
  std::lock_guard lock(s.mutex);
  void* out = nullptr;
  if (rounded <= s.capacity && rounded <= s.address_space) [[likely]] {
    Outcome outcome = s.try_allocate(rounded, tag, out);
    if (outcome == Outcome::ok) [[likely]] {
      s.stats.requested_bytes.increase(static_cast<std::int64_t>(bytes));
      return out;
    }
    // The ladder: release cached pages and retry; after an arena failure retry a few more
    // times, since what failed may have been transient.
    std::string steps;
    std::size_t released_total = 0;
    int retries = 0;
    const int max_retries = 1 + s.upstream_retries;
    while (retries < max_retries) {
      if (retries > 0 && outcome != Outcome::arena_failed) break;
      released_total += s.release();
      ++retries;
      ++s.stats.retries;
      outcome = s.try_allocate(rounded, tag, out);
      if (outcome == Outcome::ok) {
        s.stats.requested_bytes.increase(static_cast<std::int64_t>(bytes));
        return out;
      }
    }
    steps = "synchronised and released " + format_bytes(released_total) +
            " of cached pages, then retried " + std::to_string(retries) + " time(s)";
    std::string reason;
    switch (outcome) {
      case Outcome::over_capacity:
        reason = "mapping more pages would exceed the capacity";
        break;
      case Outcome::arena_failed:
        reason = "the " + to_string(s.device) + " arena could not map pages (" +
                 s.last_arena_error + ")";
        break;
      default:
        reason = "no free range of the pool's " + format_bytes(s.address_space) +
                 " address space is large enough";
        break;
    }
    ++s.stats.ooms;
    const MemoryStats snap = s.full_stats();
    throw OutOfMemoryError(out_of_memory_cause(snap, bytes, rounded, reason, steps),
                           out_of_memory_fix(snap));
  }
  ++s.stats.ooms;
  const MemoryStats snap = s.full_stats();
  throw OutOfMemoryError(
      out_of_memory_cause(snap, bytes, rounded, "the request is larger than the capacity",
                          "none (no amount of freeing can serve it)"),
      "lower the problem size (the batch, micro-batch or grid) so that one tensor fits, or raise "
      "TENAX_MEMORY_LIMIT if it is set below the memory this device really has");
}

void PoolResource::do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  auto it = s.live.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == s.live.end()) return;  // not ours: ignoring beats corrupting the pool
  Block* b = it->second;
  s.live.erase(it);
  s.stats.allocated_bytes.decrease(static_cast<std::int64_t>(b->size));
  s.stats.requested_bytes.decrease(static_cast<std::int64_t>(bytes));
  s.stats.active_blocks.decrease(1);
  s.free_block(b, tag_of(stream));
}

std::size_t PoolResource::do_release_cache() noexcept {
  std::lock_guard lock(state_->mutex);
  return state_->release();
}

MemoryStats PoolResource::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->full_stats();
}

std::string PoolResource::memory_summary() const { return format_memory_summary(stats()); }

std::vector<PoolBlock> PoolResource::block_map(std::size_t max_blocks) const {
  const State& s = *state_;
  std::lock_guard lock(s.mutex);
  const Block* any = !s.free_blocks.empty() ? *s.free_blocks.begin()
                     : !s.live.empty()      ? s.live.begin()->second
                                            : nullptr;
  std::vector<PoolBlock> out;
  if (any == nullptr) return out;
  while (any->prev != nullptr) any = any->prev;
  for (const Block* b = any; b != nullptr && out.size() < max_blocks; b = b->next) {
    out.push_back({static_cast<std::size_t>(b->addr - s.base), b->size, b->free});
  }
  return out;
}

void PoolResource::reset_peak_stats() noexcept {
  std::lock_guard lock(state_->mutex);
  MemoryStats& s = state_->stats;
  s.allocated_bytes.reset_peak();
  s.requested_bytes.reset_peak();
  s.reserved_bytes.reset_peak();
  s.active_blocks.reset_peak();
}

}  // namespace tenax
