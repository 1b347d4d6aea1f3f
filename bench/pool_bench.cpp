// Cost of a cached allocate+free pair through PoolResource against the system allocator.
//
// The system pair is malloc + free with a first touch of every 4 KiB page of the block, because
// that is what a fresh allocation costs a program that then uses its memory: glibc returns large
// blocks to the kernel (or takes them from fresh mmap) and each page faults in again. The pool
// keeps its pages mapped and already touched, so a cached pair costs only its bookkeeping.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>

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

void BM_PoolCachedPair(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  tenax::PoolResource& p = pool();
  // Warm the cache: the pages of the block are mapped and touched once, outside the timing.
  void* warm = p.allocate(bytes);
  touch_pages(warm, bytes);
  p.deallocate(warm, bytes);
  for (auto _ : state) {
    void* ptr = p.allocate(bytes);
    benchmark::DoNotOptimize(ptr);
    p.deallocate(ptr, bytes);
  }
  state.SetLabel("pool");
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

void BM_SystemPairFirstTouch(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* ptr = std::malloc(bytes);
    touch_pages(ptr, bytes);
    benchmark::DoNotOptimize(ptr);
    std::free(ptr);
  }
  state.SetLabel("malloc + first touch + free");
}

void sizes(benchmark::internal::Benchmark* b) {
  for (long kib : {4L, 64L, 1024L, 16L * 1024, 64L * 1024}) b->Arg(kib * 1024);
}

}  // namespace

BENCHMARK(BM_PoolCachedPair)->Apply(sizes);
BENCHMARK(BM_PoolCachedPairTouched)->Apply(sizes);
BENCHMARK(BM_SystemPairFirstTouch)->Apply(sizes);

BENCHMARK_MAIN();
