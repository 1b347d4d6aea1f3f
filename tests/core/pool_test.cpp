#include "tenax/core/memory/pool_resource.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "core/fake_virtual_memory.hpp"
#include "tenax/core/error.hpp"

namespace tenax {
namespace {

using testing::FakeVirtualMemory;

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;
constexpr std::size_t GiB = 1024 * MiB;

struct Live {
  void* ptr;
  std::size_t bytes;
};

std::shared_ptr<FakeVirtualMemory> fake_arena(Device device = Device::cpu()) {
  return std::make_shared<FakeVirtualMemory>(std::size_t{1} << 30, device);
}

PoolOptions with_capacity(std::size_t capacity) {
  PoolOptions options;
  options.capacity = capacity;
  return options;
}

StreamRef stream(std::uintptr_t id) { return StreamRef{reinterpret_cast<CUstream_st*>(id)}; }

TEST(PoolResource, RoundsSmallTo512AndLargeTo64KiB) {
  EXPECT_EQ(PoolResource::rounded_size(1), 512u);
  EXPECT_EQ(PoolResource::rounded_size(512), 512u);
  EXPECT_EQ(PoolResource::rounded_size(513), 1024u);
  EXPECT_EQ(PoolResource::rounded_size(MiB - 1), MiB);
  EXPECT_EQ(PoolResource::rounded_size(MiB + 1), MiB + 64 * KiB);
}

TEST(PoolResource, SplitAndMergeKeepBlocksDisjointAlignedAndCoalesceToOneFreeBlock) {
  auto arena = fake_arena();
  PoolResource pool(arena, with_capacity(GiB));
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::size_t> size(1, 3 * MiB);
  std::vector<Live> live;
  for (int i = 0; i < 300; ++i) {
    const std::size_t bytes = size(rng);
    void* p = pool.allocate(bytes);
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % MemoryResource::kAlignment, 0u);
    std::memset(p, i & 0xff, bytes);
    live.push_back({p, bytes});
    if (i % 3 == 2) {  // free a random block now and then, so splits and merges interleave
      std::size_t victim = rng() % live.size();
      pool.deallocate(live[victim].ptr, live[victim].bytes);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
    }
  }
  std::vector<Live> sorted = live;
  std::sort(sorted.begin(), sorted.end(), [](auto a, auto b) { return a.ptr < b.ptr; });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    EXPECT_LE(static_cast<char*>(sorted[i - 1].ptr) + sorted[i - 1].bytes,
              static_cast<char*>(sorted[i].ptr))
        << "blocks overlap";
  }
  std::shuffle(live.begin(), live.end(), rng);
  for (const Live& l : live) pool.deallocate(l.ptr, l.bytes);
  const MemoryStats stats = pool.stats();
  EXPECT_EQ(stats.allocated_bytes.current, 0);
  EXPECT_EQ(stats.active_blocks.current, 0);
  EXPECT_EQ(stats.free_blocks, 1u) << "every free neighbour must merge";
  EXPECT_EQ(stats.fragmentation, 0.0);
  EXPECT_EQ(arena->errors, "");
}

TEST(PoolResource, EightBlocksOf16MiBFreedServeFourOf32MiBFromTheSamePages) {
  auto arena = fake_arena();
  PoolResource pool(arena, with_capacity(GiB));
  std::vector<void*> small;
  for (int i = 0; i < 8; ++i) small.push_back(pool.allocate(16 * MiB));
  for (void* p : small) pool.deallocate(p, 16 * MiB);
  const int maps_before = arena->map_calls;
  std::vector<void*> large;
  for (int i = 0; i < 4; ++i) large.push_back(pool.allocate(32 * MiB));
  EXPECT_EQ(arena->map_calls, maps_before) << "the 32 MiB blocks must reuse the freed pages";
  const MemoryStats stats = pool.stats();
  const double peak_live = 128.0 * MiB;
  EXPECT_LE(static_cast<double>(stats.reserved_bytes.peak), 1.10 * peak_live);
  EXPECT_EQ(stats.cache_hits, 4u);
  for (void* p : large) pool.deallocate(p, 32 * MiB);
  EXPECT_EQ(arena->errors, "");
}

TEST(PoolResource, GrowShrinkCyclesOfMixedSizesKeepReservedNearPeakLive) {
  auto arena = fake_arena();
  PoolResource pool(arena, with_capacity(8 * GiB));
  std::mt19937_64 rng(2024);
  std::uniform_int_distribution<std::size_t> size(512, 8 * MiB);
  std::vector<Live> live;
  std::size_t live_bytes = 0;
  std::size_t peak_live = 0;
  for (int cycle = 0; cycle < 100; ++cycle) {
    const int grow = 40 + static_cast<int>(rng() % 40);
    for (int i = 0; i < grow; ++i) {
      const std::size_t bytes = size(rng);
      live.push_back({pool.allocate(bytes), bytes});
      live_bytes += bytes;
      peak_live = std::max(peak_live, live_bytes);
    }
    std::shuffle(live.begin(), live.end(), rng);
    const std::size_t keep = live.size() / 5;  // free most, in random order
    while (live.size() > keep) {
      pool.deallocate(live.back().ptr, live.back().bytes);
      live_bytes -= live.back().bytes;
      live.pop_back();
    }
  }
  const MemoryStats stats = pool.stats();
  EXPECT_LE(static_cast<double>(stats.reserved_bytes.peak), 1.25 * static_cast<double>(peak_live))
      << pool.memory_summary();
  for (const Live& l : live) pool.deallocate(l.ptr, l.bytes);
  EXPECT_EQ(pool.stats().free_blocks, 1u);
  EXPECT_EQ(arena->errors, "");
}

TEST(PoolResource, RequestAtCapacityMinusOneSucceedsAndAboveFailsWithoutTouchingTheArena) {
  auto arena = fake_arena();
  const std::size_t limit = 64 * MiB;
  PoolResource pool(arena, with_capacity(limit));
  void* p = pool.allocate(limit - 1);
  ASSERT_NE(p, nullptr);
  pool.deallocate(p, limit - 1);
  const int maps = arena->map_calls;
  const int syncs = arena->synchronize_calls;
  EXPECT_THROW((void)pool.allocate(limit + 1), OutOfMemoryError);
  EXPECT_EQ(arena->map_calls, maps);
  EXPECT_EQ(arena->synchronize_calls, syncs) << "no ladder for a request beyond the capacity";
  EXPECT_EQ(pool.stats().ooms, 1u);
}

// A driver that grants fewer addresses than the default 4 x capacity (or an address-space limit
// the pool cannot see): the reservation is halved down to the capacity, and the pool serves the
// whole capacity; below the capacity the reservation's error is the pool's.
TEST(PoolResource, AReservationRefusedIsHalvedDownToTheCapacity) {
  auto arena = fake_arena();
  const std::size_t capacity = 64 * MiB;
  arena->largest_reservation = 3 * capacity;  // 4x refused, 2x granted
  PoolResource pool(arena, with_capacity(capacity));
  EXPECT_EQ(arena->reserve_calls, 2);
  EXPECT_EQ(pool.stats().address_space, 2 * capacity);
  void* p = pool.allocate(capacity);
  ASSERT_NE(p, nullptr);
  pool.deallocate(p, capacity);

  auto stingy = fake_arena();
  stingy->largest_reservation = capacity / 2;
  EXPECT_THROW(PoolResource(stingy, with_capacity(capacity)), OutOfMemoryError);
  EXPECT_EQ(stingy->reserve_calls, 3) << "4x, 2x, then the capacity itself";

  // An explicit address space is the caller's: not cut.
  auto fixed = fake_arena();
  fixed->largest_reservation = 3 * capacity;
  PoolOptions options = with_capacity(capacity);
  options.address_space = 4 * capacity;
  EXPECT_THROW(PoolResource(fixed, options), OutOfMemoryError);
  EXPECT_EQ(fixed->reserve_calls, 1);
}

TEST(PoolResource, RequestsNearSizeMaxAreOutOfMemoryNotWrappedToSmallBlocks) {
  auto arena = fake_arena();
  PoolResource pool(arena, with_capacity(64 * MiB));
  for (const std::size_t bytes : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 64 * KiB + 2}) {
    EXPECT_EQ(PoolResource::rounded_size(bytes), SIZE_MAX) << bytes;
    EXPECT_THROW((void)pool.allocate(bytes), OutOfMemoryError) << bytes;
  }
  EXPECT_EQ(pool.stats().ooms, 3u);
}

TEST(PoolResource, LadderRecoversFromAnArenaThatFailsAFewTimes) {
  for (int failures = 1; failures <= 3; ++failures) {
    auto arena = fake_arena();
    PoolResource pool(arena, with_capacity(GiB));
    arena->fail_next_maps = failures;
    void* p = pool.allocate(4 * MiB);
    EXPECT_NE(p, nullptr);
    EXPECT_EQ(pool.stats().retries, static_cast<std::uint64_t>(failures));
    EXPECT_EQ(pool.stats().ooms, 0u);
    pool.deallocate(p, 4 * MiB);
    EXPECT_EQ(arena->errors, "");
  }
}

TEST(PoolResource, ArenaThatAlwaysFailsEndsInAnOutOfMemoryErrorThatExplains) {
  auto arena = fake_arena();
  PoolResource pool(arena, with_capacity(GiB));
  void* kept = pool.allocate(3 * MiB);  // something allocated and cached to report
  void* freed = pool.allocate(MiB);
  pool.deallocate(freed, MiB);
  arena->fail_always = true;
  try {
    (void)pool.allocate(100 * MiB + 5);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string cause = e.cause();
    for (const char* field :
         {"requested 104857605 B", "rounded to 104923136 B", "cpu", "capacity 1.00 GiB",
          "allocated 3.00 MiB", "reserved ", "reserved but unallocated", "largest free block",
          "fragmentation", "free blocks", "recovery steps run", "retried 3 time(s)",
          "fake arena refused"}) {
      EXPECT_NE(cause.find(field), std::string::npos) << "missing '" << field << "' in " << cause;
    }
    EXPECT_NE(e.fix().find("batch"), std::string::npos);
    EXPECT_NE(e.fix().find("TENAX_MEMORY_LIMIT"), std::string::npos);
    EXPECT_EQ(e.fault_class(), FaultClass::out_of_memory);
  }
  EXPECT_EQ(pool.stats().ooms, 1u);
  EXPECT_EQ(pool.stats().retries, 3u);
  arena->fail_always = false;
  pool.deallocate(kept, 3 * MiB);
  EXPECT_EQ(arena->errors, "");
}

TEST(PoolResource, CapacityReachedReleasesCachedPagesThenSucceeds) {
  auto arena = fake_arena(Device::cuda(0));
  PoolResource pool(arena, with_capacity(8 * MiB));
  // A block freed on stream 1 is cached for stream 1 only; stream 2 can have its pages after
  // the ladder synchronised and released them.
  void* a = pool.allocate(6 * MiB, stream(1));
  pool.deallocate(a, 6 * MiB, stream(1));
  EXPECT_EQ(pool.stats().reserved_bytes.current, static_cast<std::int64_t>(6 * MiB));
  void* b = pool.allocate(8 * MiB, stream(2));
  ASSERT_NE(b, nullptr);
  const MemoryStats stats = pool.stats();
  EXPECT_EQ(stats.retries, 1u);
  EXPECT_GT(stats.released_bytes, 0u);
  EXPECT_LE(stats.reserved_bytes.current, static_cast<std::int64_t>(8 * MiB));
  EXPECT_GE(arena->synchronize_calls, 1);
  pool.deallocate(b, 8 * MiB, stream(2));
  EXPECT_EQ(arena->errors, "");
}

TEST(PoolResource, CapacityExhaustedByLiveBlocksThrowsAfterTheLadder) {
  auto arena = fake_arena();
  PoolResource pool(arena, with_capacity(8 * MiB));
  void* a = pool.allocate(6 * MiB);
  EXPECT_THROW((void)pool.allocate(4 * MiB), OutOfMemoryError);
  EXPECT_EQ(pool.stats().retries, 1u);
  pool.deallocate(a, 6 * MiB);
  void* b = pool.allocate(4 * MiB);  // fits again once the first block is gone
  pool.deallocate(b, 4 * MiB);
  EXPECT_EQ(arena->errors, "");
}

TEST(PoolResource, FreedBlocksAreReusedOnlyOnTheirOwnStream) {
  auto arena = fake_arena(Device::cuda(0));
  PoolResource pool(arena, with_capacity(GiB));
  void* a = pool.allocate(MiB, stream(1));
  void* spacer = pool.allocate(MiB, stream(1));  // keeps a's block away from unused space
  pool.deallocate(a, MiB, stream(1));
  void* other = pool.allocate(MiB, stream(2));
  EXPECT_NE(other, a) << "stream 2 must not reuse a block stream 1 may still be using";
  void* same = pool.allocate(MiB, stream(1));
  EXPECT_EQ(same, a);
  pool.deallocate(same, MiB, stream(1));
  // After empty_cache (which synchronises) every stream may use it.
  (void)pool.empty_cache();
  void* later = pool.allocate(MiB, stream(3));
  EXPECT_EQ(later, a);
  pool.deallocate(later, MiB, stream(3));
  pool.deallocate(other, MiB, stream(2));
  pool.deallocate(spacer, MiB, stream(1));
  (void)pool.empty_cache();
  EXPECT_EQ(pool.stats().free_blocks, 1u);
  EXPECT_EQ(arena->errors, "");
}

TEST(PoolResource, EmptyCacheUnmapsEveryWhollyFreeGranule) {
  auto arena = fake_arena();
  PoolResource pool(arena, with_capacity(GiB));
  void* keep = pool.allocate(512);
  void* big = pool.allocate(64 * MiB);
  pool.deallocate(big, 64 * MiB);
  EXPECT_GE(arena->mapped_bytes, 64 * MiB);
  const std::size_t released = pool.empty_cache();
  EXPECT_GE(released, 62 * MiB);
  EXPECT_EQ(arena->mapped_bytes, 2 * MiB) << "only the granule holding the live block stays";
  EXPECT_EQ(pool.stats().reserved_bytes.current, static_cast<std::int64_t>(2 * MiB));
  std::memset(keep, 1, 512);
  pool.deallocate(keep, 512);
  (void)pool.empty_cache();
  EXPECT_EQ(arena->mapped_bytes, 0u);
  EXPECT_EQ(arena->errors, "");
}

TEST(PoolResource, StatsTrackPeaksTotalsAndCacheHits) {
  auto arena = fake_arena();
  PoolResource pool(arena, with_capacity(GiB));
  void* a = pool.allocate(MiB);
  void* b = pool.allocate(3 * MiB);
  pool.deallocate(a, MiB);
  void* c = pool.allocate(MiB);  // served from a's pages
  MemoryStats s = pool.stats();
  EXPECT_EQ(s.allocated_bytes.current, static_cast<std::int64_t>(4 * MiB));
  EXPECT_EQ(s.allocated_bytes.peak, static_cast<std::int64_t>(4 * MiB));
  EXPECT_EQ(s.allocated_bytes.total, static_cast<std::int64_t>(5 * MiB));
  EXPECT_EQ(s.active_blocks.current, 2);
  EXPECT_EQ(s.active_blocks.total, 3);
  EXPECT_GE(s.cache_hits, 1u);
  pool.deallocate(b, 3 * MiB);
  pool.reset_peak_stats();
  s = pool.stats();
  EXPECT_EQ(s.allocated_bytes.peak, static_cast<std::int64_t>(MiB));
  EXPECT_EQ(s.reserved_unallocated,
            static_cast<std::size_t>(s.reserved_bytes.current - s.allocated_bytes.current));
  EXPECT_GT(s.largest_free_block, 0u);
  pool.deallocate(c, MiB);
}

TEST(PoolResource, MemorySummaryIsATableOfTheStatistics) {
  PoolResource pool(fake_arena(), with_capacity(GiB));
  void* p = pool.allocate(5 * MiB);
  const std::string summary = pool.memory_summary();
  for (const char* row :
       {"Allocated memory", "Reserved memory", "Active blocks", "Free blocks", "Largest free block",
        "Fragmentation", "Current", "Peak", "Total", "5.00 MiB", "capacity 1.00 GiB"}) {
    EXPECT_NE(summary.find(row), std::string::npos) << row << " missing from\n" << summary;
  }
  pool.deallocate(p, 5 * MiB);
}

TEST(PoolResource, ManyThreadsAllocateAndFreeConcurrently) {
  auto arena = fake_arena();
  PoolResource pool(arena, with_capacity(4 * GiB));
  std::atomic<int> corrupt{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&pool, &corrupt, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<Live> mine;
      for (int i = 0; i < 3000; ++i) {
        if (mine.size() < 16 && (rng() % 3 != 0 || mine.empty())) {
          const std::size_t bytes = 1 + rng() % (256 * KiB);
          auto* p = static_cast<unsigned char*>(pool.allocate(bytes));
          p[0] = static_cast<unsigned char>(t);
          p[bytes - 1] = static_cast<unsigned char>(t);
          mine.push_back({p, bytes});
        } else {
          const std::size_t k = rng() % mine.size();
          auto* p = static_cast<unsigned char*>(mine[k].ptr);
          if (p[0] != t || p[mine[k].bytes - 1] != t) ++corrupt;
          pool.deallocate(p, mine[k].bytes);
          mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(k));
        }
      }
      for (const Live& l : mine) pool.deallocate(l.ptr, l.bytes);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(corrupt.load(), 0);
  const MemoryStats s = pool.stats();
  EXPECT_EQ(s.allocated_bytes.current, 0);
  EXPECT_EQ(s.free_blocks, 1u);
  EXPECT_EQ(arena->errors, "");
}

TEST(PoolResource, RejectsBadOptions) {
  EXPECT_THROW(PoolResource(nullptr), UsageError);
  PoolOptions options;
  options.map_granule = 3 * MiB;
  EXPECT_THROW(PoolResource(fake_arena(), options), UsageError);
}

TEST(PoolResource, DestructionReturnsEveryPageAndTheAddressRange) {
  auto arena = fake_arena();
  {
    PoolResource pool(arena, with_capacity(GiB));
    void* p = pool.allocate(10 * MiB);
    pool.deallocate(p, 10 * MiB);
    (void)pool.allocate(MiB);  // leaked on purpose: the pool still unmaps it
  }
  EXPECT_EQ(arena->mapped_bytes, 0u);
  EXPECT_EQ(arena->errors, "");
}

}  // namespace
}  // namespace tenax

namespace tenax {
namespace {

TEST(PoolResource, TheBlockMapTilesTheAddressRangeInOrder) {
  auto arena = std::make_shared<testing::FakeVirtualMemory>(std::size_t{1} << 30, Device::cpu());
  PoolOptions options;
  options.capacity = std::size_t{256} << 20;
  PoolResource pool(arena, options);
  EXPECT_EQ(pool.block_map().size(), 1u) << "one free block: the whole range";
  void* a = pool.allocate(std::size_t{1} << 20);
  void* b = pool.allocate(std::size_t{2} << 20);
  void* c = pool.allocate(std::size_t{1} << 20);
  pool.deallocate(b, std::size_t{2} << 20);  // a hole between two live blocks
  const std::vector<PoolBlock> map = pool.block_map();
  ASSERT_EQ(map.size(), 4u);
  EXPECT_FALSE(map[0].free);
  EXPECT_TRUE(map[1].free);
  EXPECT_EQ(map[1].size, std::size_t{2} << 20);
  EXPECT_FALSE(map[2].free);
  EXPECT_TRUE(map[3].free);
  std::size_t offset = 0;
  for (const PoolBlock& block : map) {
    EXPECT_EQ(block.offset, offset) << "blocks tile the range without gaps";
    offset += block.size;
  }
  EXPECT_EQ(pool.block_map(2).size(), 2u) << "the first max_blocks only";
  pool.deallocate(a, std::size_t{1} << 20);
  pool.deallocate(c, std::size_t{1} << 20);
  EXPECT_EQ(pool.block_map().size(), 1u) << "freed neighbours merge back";
}

}  // namespace
}  // namespace tenax
