// Memory bandwidth of the streaming kernels against a STREAM-like copy.
//
// All kernels run on f32 arrays larger than the caches through tenax::ops on the CPU backend;
// the copy reference is std::memcpy split over the same CpuContext (the same threads and the same
// chunking as the kernels), so the ratios compare like with like; BM_CopyKernel is the same copy
// through the kernels' own loop (cast_into f32 -> f32). Bytes per element count what
// each kernel really moves: copy reads x and writes y (8 B), axpby reads x and y and writes y
// (12 B), dot reads x and y (8 B), unscale_and_check reads and writes t (8 B).
//
//   bench_bandwidth --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>

#include "tenax/core/context.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace {

using tenax::DType;
using tenax::Tensor;

constexpr std::int64_t kMinChunk = std::int64_t{1} << 15;  // as the kernels use

Tensor filled(std::int64_t n, double value) {
  Tensor t = Tensor::empty({n}, DType::f32);
  tenax::ops::fill(t, value);  // also faults the pages in, outside the timed loop
  return t;
}

void set_bytes(benchmark::State& state, std::int64_t bytes_per_element) {
  state.SetBytesProcessed(state.iterations() * state.range(0) * bytes_per_element);
}

void BM_Copy(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const Tensor x = filled(n, 1.0);
  const Tensor y = filled(n, 0.0);
  const float* src = x.data_as<const float>();
  float* dst = y.data_as<float>();
  tenax::CpuContext& context = tenax::CpuContext::instance();
  for (auto _ : state) {
    context.parallel_for(0, n, kMinChunk, [src, dst](std::int64_t begin, std::int64_t end) {
      std::memcpy(dst + begin, src + begin, static_cast<std::size_t>(end - begin) * sizeof(float));
    });
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * sizeof(float));
}

// The same copy through the kernels' own loop: cast_into between two f32 tensors.
void BM_CopyKernel(benchmark::State& state) {
  const Tensor x = filled(state.range(0), 1.0);
  const Tensor y = filled(state.range(0), 0.0);
  for (auto _ : state) {
    tenax::ops::cast_into(y, x);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * sizeof(float));
}

void BM_Axpby(benchmark::State& state) {
  const Tensor x = filled(state.range(0), 1.0);
  const Tensor y = filled(state.range(0), 2.0);
  for (auto _ : state) {
    tenax::ops::axpby(1.0, x, 0.5, y);  // y converges to 2: no denormals, no overflow
    benchmark::ClobberMemory();
  }
  set_bytes(state, 3 * sizeof(float));
}

void BM_Dot(benchmark::State& state) {
  const Tensor x = filled(state.range(0), 1.0);
  const Tensor y = filled(state.range(0), 2.0);
  for (auto _ : state) benchmark::DoNotOptimize(tenax::ops::dot(x, y));
  set_bytes(state, 2 * sizeof(float));
}

void BM_UnscaleAndCheck(benchmark::State& state) {
  const Tensor t = filled(state.range(0), 3.0);
  for (auto _ : state) {
    // scale 1 keeps the values; the kernel multiplies and checks every element regardless.
    benchmark::DoNotOptimize(tenax::ops::unscale_and_check(t, 1.0));
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * sizeof(float));
}

// 2^24 and 2^25 elements: 64 and 128 MiB per array, well beyond the last-level cache.
#define TENAX_BANDWIDTH_BENCH(name) \
  BENCHMARK(name)->Arg(1 << 24)->Arg(1 << 25)->UseRealTime()->Unit(benchmark::kMillisecond)
TENAX_BANDWIDTH_BENCH(BM_Copy);
TENAX_BANDWIDTH_BENCH(BM_CopyKernel);
TENAX_BANDWIDTH_BENCH(BM_Axpby);
TENAX_BANDWIDTH_BENCH(BM_Dot);
TENAX_BANDWIDTH_BENCH(BM_UnscaleAndCheck);

}  // namespace

BENCHMARK_MAIN();
