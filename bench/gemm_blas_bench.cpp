// GEMM through tenax::ops against OpenBLAS (CBLAS) on the same row-major buffers, f32 and f64,
// square sizes 256 to 2048, in one run. Single-threaded rows (TENAX_NUM_THREADS=1, OpenBLAS set
// to one thread) compare the kernels like for like; the *_Threads rows use every hardware
// thread on both sides (tenax's workers, OpenBLAS's own threads). Speed target of the CPU GEMM:
// tenax >= 0.9x OpenBLAS at every size and dtype (bench/RESULTS.md).
//
//   bench_gemm_blas --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
//       --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <thread>

#include "tenax/core/context.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"

#if TENAX_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

int hardware_threads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

template <class T>
struct Operands {
  explicit Operands(std::int64_t n)
      : a(tenax::Tensor::empty({n, n}, tenax::dtype_of<T>)),
        b(tenax::Tensor::empty({n, n}, tenax::dtype_of<T>)),
        c(tenax::Tensor::empty({n, n}, tenax::dtype_of<T>)) {
    T* pa = a.data_as<T>();
    T* pb = b.data_as<T>();
    for (std::int64_t i = 0; i < n * n; ++i) {
      pa[i] = static_cast<T>((i * 7919) % 1000) / T(1000) - T(0.5);
      pb[i] = static_cast<T>((i * 104729) % 1000) / T(1000) - T(0.5);
    }
  }
  tenax::Tensor a, b, c;
};

void set_flops(benchmark::State& state, std::int64_t n) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n * n * n) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

template <class T>
void run_tenax(benchmark::State& state, int threads) {
  const std::int64_t n = state.range(0);
  Operands<T> o(n);
  tenax::CpuContext context(threads);
  const tenax::kernels::GemmArgs args{o.a, o.b, o.c, n, n, n, false, false, 1.0, 0.0};
  tenax::kernels::cpu::gemm(context, args);  // warm-up (and the backend's first-use probe)
  for (auto _ : state) {
    tenax::kernels::cpu::gemm(context, args);
    benchmark::ClobberMemory();
  }
  set_flops(state, n);
}

template <class T>
void Tenax_Gemm(benchmark::State& state) {
  run_tenax<T>(state, 1);
}
template <class T>
void Tenax_Gemm_Threads(benchmark::State& state) {
  run_tenax<T>(state, hardware_threads());
}

#if TENAX_HAVE_OPENBLAS
template <class T>
void run_blas(benchmark::State& state, int threads) {
  const std::int64_t n = state.range(0);
  Operands<T> o(n);
  openblas_set_num_threads(threads);
  const auto call = [&] {
    const auto i = static_cast<blasint>(n);
    if constexpr (sizeof(T) == 4) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i, i, i, 1.0f,
                  o.a.template data_as<float>(), i, o.b.template data_as<float>(), i, 0.0f,
                  o.c.template data_as<float>(), i);
    } else {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i, i, i, 1.0,
                  o.a.template data_as<double>(), i, o.b.template data_as<double>(), i, 0.0,
                  o.c.template data_as<double>(), i);
    }
  };
  call();
  for (auto _ : state) {
    call();
    benchmark::ClobberMemory();
  }
  openblas_set_num_threads(1);  // as tenax leaves it
  set_flops(state, n);
}
template <class T>
void OpenBlas_Gemm(benchmark::State& state) {
  run_blas<T>(state, 1);
}
template <class T>
void OpenBlas_Gemm_Threads(benchmark::State& state) {
  run_blas<T>(state, hardware_threads());
}
#endif

#define TENAX_GEMM_SIZES \
  ->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime()
BENCHMARK_TEMPLATE(Tenax_Gemm, float) TENAX_GEMM_SIZES;
BENCHMARK_TEMPLATE(Tenax_Gemm, double) TENAX_GEMM_SIZES;
BENCHMARK_TEMPLATE(Tenax_Gemm_Threads, float) TENAX_GEMM_SIZES;
BENCHMARK_TEMPLATE(Tenax_Gemm_Threads, double) TENAX_GEMM_SIZES;
#if TENAX_HAVE_OPENBLAS
BENCHMARK_TEMPLATE(OpenBlas_Gemm, float) TENAX_GEMM_SIZES;
BENCHMARK_TEMPLATE(OpenBlas_Gemm, double) TENAX_GEMM_SIZES;
BENCHMARK_TEMPLATE(OpenBlas_Gemm_Threads, float) TENAX_GEMM_SIZES;
BENCHMARK_TEMPLATE(OpenBlas_Gemm_Threads, double) TENAX_GEMM_SIZES;
#endif

}  // namespace

BENCHMARK_MAIN();
