// Cost of a cached allocate+free pair through PoolResource against the system allocator, and
// what the HistoryResource on top of every default stack adds to it.
//
// The system pair is malloc + free with a touch of every 4 KiB page of the block, because a
// program uses the memory it allocates. Two variants:
//  - SystemPair: glibc as configured by default. Its mmap threshold rises after the first free of
//    a large block (up to 32 MiB), so from then on blocks up to that size come from the heap with
//    their pages already resident: the touch is warm and costs no page faults. Above 32 MiB
//    every block is a fresh mmap whose pages fault in on first touch.
//  - SystemPairFreshPages: the mmap threshold pinned at 128 KiB (which also turns the dynamic
//    raise off), so every block from 128 KiB up is a fresh mapping and every page faults in: the
//    cost a device allocator without a cache (cudaMalloc/cudaFree) has in kind. It runs last,
//    since mallopt changes the process for good.
// The pool keeps its pages mapped and touched, so a cached pair costs only its bookkeeping.
#include <benchmark/benchmark.h>

#include <malloc.h>

#include <cstdlib>
#include <memory>

#include "tenax/core/memory/history_resource.hpp"
#include "tenax/core/memory/host_virtual_memory.hpp"
#include "tenax/core/memory/pool_resource.hpp"

namespace {

constexpr std::size_t kPage = 4096;

void touch_pages(void* ptr, std::size_t bytes) {
  auto* p = static_cast<volatile unsigned char*>(ptr);
  for (std::size_t off = 0; off < bytes; off += kPage) p[off] = 1;
}

tenax::PoolResource& pool() {
  static tenax::PoolResource instance = [] {
    tenax::PoolOptions options;
    options.capacity = std::size_t{1} << 30;
    return tenax::PoolResource(std::make_shared<tenax::HostVirtualMemory>(), options);
  }();
  return instance;
}

// Cached allocate+free pairs through `resource`: the block's pages are mapped and touched once,
// outside the timing.
void cached_pairs(benchmark::State& state, tenax::MemoryResource& resource, const char* label) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  void* warm = resource.allocate(bytes);
  touch_pages(warm, bytes);
  resource.deallocate(warm, bytes);
  for (auto _ : state) {
    void* ptr = resource.allocate(bytes);
    benchmark::DoNotOptimize(ptr);
    resource.deallocate(ptr, bytes);
  }
  state.SetLabel(label);
}

void BM_PoolCachedPair(benchmark::State& state) { cached_pairs(state, pool(), "pool"); }

// The pool under the HistoryResource that every default stack has on top: the pair's cost with
// both records (allocate, free) written.
tenax::HistoryResource& recorded_pool() {
  static tenax::HistoryResource instance(
      std::shared_ptr<tenax::MemoryResource>(&pool(), [](tenax::MemoryResource*) {}));
  return instance;
}

void BM_PoolCachedPairRecorded(benchmark::State& state) {
  cached_pairs(state, recorded_pool(), "pool + history");
}

void BM_PoolCachedPairTouched(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  tenax::PoolResource& p = pool();
  for (auto _ : state) {
    void* ptr = p.allocate(bytes);
    touch_pages(ptr, bytes);
    p.deallocate(ptr, bytes);
  }
  state.SetLabel("pool, every page touched");
}

void system_pair(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* ptr = std::malloc(bytes);
    touch_pages(ptr, bytes);
    benchmark::DoNotOptimize(ptr);
    std::free(ptr);
  }
}

void BM_SystemPair(benchmark::State& state) {
  system_pair(state);
  state.SetLabel("malloc + touch + free, glibc defaults");
}

void BM_SystemPairFreshPages(benchmark::State& state) {
  // Large requests are served from the heap's free top before mmap is considered, so the heap
  // grown by SystemPair is trimmed back first and kept from growing again.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  malloc_trim(0);
  system_pair(state);
  state.SetLabel("malloc + first touch + free, fresh pages");
}

void sizes(benchmark::internal::Benchmark* b) {
  for (long kib : {4L, 64L, 1024L, 16L * 1024, 64L * 1024}) b->Arg(kib * 1024);
}

}  // namespace

BENCHMARK(BM_PoolCachedPair)->Apply(sizes);
BENCHMARK(BM_PoolCachedPairRecorded)->Apply(sizes);
BENCHMARK(BM_PoolCachedPairTouched)->Apply(sizes);
BENCHMARK(BM_SystemPair)->Apply(sizes);
BENCHMARK(BM_SystemPairFreshPages)->Apply(sizes);

BENCHMARK_MAIN();
