// Cost of one profiling::Span (core/profiler.hpp): without a profile (one atomic load) and while
// one records (two clock reads and an append under a mutex). A run's overhead is this cost times
// its spans per step (about 7 for heat2d, 7 + 2 per micro-batch for train_mlp) over its step
// time; bench/RESULTS.md gives the figures.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "tenax/core/profiler.hpp"

namespace {

void BM_SpanWithoutProfile(benchmark::State& state) {
  tenax::profiling::discard();
  std::int64_t i = 0;
  for (auto _ : state) {
    const tenax::profiling::Span span("bench", i++);
    benchmark::ClobberMemory();
  }
}

void BM_SpanRecorded(benchmark::State& state) {
  constexpr std::int64_t kPerProfile = 500'000;  // well under the bound: every span is kept
  tenax::profiling::start(kPerProfile + 1);
  std::int64_t i = 0;
  for (auto _ : state) {
    if (++i % kPerProfile == 0) {
      state.PauseTiming();
      tenax::profiling::discard();
      tenax::profiling::start(kPerProfile + 1);
      state.ResumeTiming();
    }
    const tenax::profiling::Span span("bench", i);
    benchmark::ClobberMemory();
  }
  tenax::profiling::discard();
}

}  // namespace

BENCHMARK(BM_SpanWithoutProfile);
BENCHMARK(BM_SpanRecorded);
BENCHMARK_MAIN();
