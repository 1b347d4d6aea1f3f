// GPU benchmarks, run by scripts/gpu-check.sh on a machine with an NVIDIA GPU: bandwidth of the
// streaming kernels against a device-to-device copy in the same run, CG's three kernels one by
// one at poisson's 4096^2 size (where a CG iteration's time goes), GEMM through tenax::ops
// (cuBLAS) in f32 and f16, host<->device transfers from pageable vs pinned memory, and the
// cached allocate+free pair of the device pool. Every benchmark reports an error and skips,
// saying why, where CUDA is not usable.
//
//   bench_gpu --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/memory/cuda_memory.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/solvers/poisson.hpp"

namespace {

using tenax::Device;
using tenax::DType;
using tenax::Tensor;

const Device kGpu = Device::cuda(0);

bool cuda_usable(benchmark::State& state) {
  const auto& cuda = tenax::cuda::availability();
  if (cuda.usable) return true;
  state.SkipWithError(("CUDA is not usable: " + cuda.reason).c_str());
  return false;
}

void synchronize() { tenax::cuda::context(kGpu).synchronize(); }

Tensor filled(std::int64_t n, double value, DType dtype = DType::f32) {
  Tensor t = Tensor::empty({n}, dtype, kGpu);
  tenax::ops::fill(t, value);
  return t;
}

// Bytes moved per element: copy reads x and writes y (2), axpby reads x, y and writes y (3),
// dot reads x and y (2), unscale_and_check reads and writes t (2); f32 elements.
template <class Kernel>
void streaming(benchmark::State& state, int streams, Kernel kernel) {
  if (!cuda_usable(state)) return;
  const std::int64_t n = state.range(0);
  const Tensor x = filled(n, 1.0);
  const Tensor y = filled(n, 0.5);
  kernel(x, y);  // warm up: first launch, module load
  synchronize();
  for (auto _ : state) {
    kernel(x, y);
    synchronize();
  }
  state.SetBytesProcessed(state.iterations() * n * streams * 4);
}

void BM_CudaCopy(benchmark::State& state) {
  streaming(state, 2, [](const Tensor& x, const Tensor& y) { tenax::ops::copy(y, x); });
}
void BM_CudaAxpby(benchmark::State& state) {
  streaming(state, 3, [](const Tensor& x, const Tensor& y) { tenax::ops::axpby(0.5, x, 0.5, y); });
}
void BM_CudaDot(benchmark::State& state) {
  streaming(state, 2, [](const Tensor& x, const Tensor& y) {
    benchmark::DoNotOptimize(tenax::ops::dot(x, y));
  });
}
void BM_CudaUnscaleAndCheck(benchmark::State& state) {
  streaming(state, 2, [](const Tensor& /*x*/, const Tensor& y) {
    benchmark::DoNotOptimize(tenax::ops::unscale_and_check(y, 1.0));
  });
}

// CG's iteration on the 2-D Poisson problem of side n (poisson --n N), kernel by kernel, f64: q = A
// p with p.q (the assembled CSR matrix, i64 indices, or the matrix-free 5-point stencil), then x +=
// alpha p, r -= alpha q with r.r (cg_update), then p = r + beta p (xpay). Each reports the bytes it
// must move at the least -- every array read or written once -- so its bytes per second read
// directly against BM_CudaCopy's: CSR 5 values + 5 column indices + 1 row offset read, p read and q
// written per row (104 bytes; 5 per row is the interior's count, the boundary rows hold fewer); the
// stencil p read and q written (16); cg_update p, q, x, r read and x, r written (48); xpay r, p
// read and p written (24).
void cg_kernel(benchmark::State& state, bool assembled, double bytes_per_row,
               void (*kernel)(const tenax::CsrMatrix&, const Tensor&, const Tensor&, const Tensor&,
                              const Tensor&, std::int64_t)) {
  if (!cuda_usable(state)) return;
  const std::int64_t n = state.range(0);
  const tenax::CsrMatrix a =
      assembled ? tenax::solvers::poisson_2d_csr(n, n, 1.0, 1.0, DType::f64, DType::i64, kGpu)
                : tenax::CsrMatrix();
  const Tensor p = filled(n * n, 1.0, DType::f64), q = filled(n * n, 0.5, DType::f64);
  const Tensor x = filled(n * n, 0.25, DType::f64), r = filled(n * n, 0.125, DType::f64);
  kernel(a, p, q, x, r, n);
  synchronize();
  for (auto _ : state) {
    kernel(a, p, q, x, r, n);
    synchronize();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(static_cast<double>(state.iterations()) *
                                                    static_cast<double>(n * n) * bytes_per_row));
}
void BM_CudaCgSpmvDot(benchmark::State& state) {
  cg_kernel(
      state, true, 104,
      [](const tenax::CsrMatrix& a, const Tensor& p, const Tensor& q, const Tensor&, const Tensor&,
         std::int64_t) { benchmark::DoNotOptimize(tenax::ops::spmv_dot(a, p, q)); });
}
void BM_CudaCgStencilDot(benchmark::State& state) {
  cg_kernel(state, false, 16,
            [](const tenax::CsrMatrix&, const Tensor& p, const Tensor& q, const Tensor&,
               const Tensor&, std::int64_t n) {
              benchmark::DoNotOptimize(tenax::ops::laplacian_5pt_dot(
                  p.reshape({n, n}), q.reshape({n, n}), 1.0, 1.0, -1.0));
            });
}
void BM_CudaCgUpdate(benchmark::State& state) {
  cg_kernel(state, false, 48,
            [](const tenax::CsrMatrix&, const Tensor& p, const Tensor& q, const Tensor& x,
               const Tensor& r, std::int64_t) {
              benchmark::DoNotOptimize(tenax::ops::cg_update(1e-3, p, q, x, r));
            });
}
void BM_CudaCgXpay(benchmark::State& state) {
  cg_kernel(state, false, 24,
            [](const tenax::CsrMatrix&, const Tensor& p, const Tensor&, const Tensor&,
               const Tensor& r, std::int64_t) { tenax::ops::xpay(r, 0.5, p); });
}

void gemm(benchmark::State& state, DType dtype) {
  if (!cuda_usable(state)) return;
  const std::int64_t n = state.range(0);
  Tensor a = Tensor::empty({n, n}, dtype, kGpu);
  Tensor b = Tensor::empty({n, n}, dtype, kGpu);
  Tensor c = Tensor::empty({n, n}, DType::f32, kGpu);
  tenax::ops::random_uniform(a, 1, 0);
  tenax::ops::random_uniform(b, 2, 0);
  tenax::ops::gemm(a, b, c);
  synchronize();
  for (auto _ : state) {
    tenax::ops::gemm(a, b, c);
    synchronize();
  }
  state.counters["TFLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(n) * n * n * static_cast<double>(state.iterations()) * 1e-12,
      benchmark::Counter::kIsRate);
}
void BM_CudaGemmF32(benchmark::State& state) { gemm(state, DType::f32); }
void BM_CudaGemmF16(benchmark::State& state) { gemm(state, DType::f16); }

// Host -> device and back through Tensor::to, from pageable or pinned host memory.
void transfer(benchmark::State& state, bool pinned) {
  if (!cuda_usable(state)) return;
  const std::int64_t bytes = state.range(0);
  const Tensor host =
      pinned ? Tensor::empty({bytes}, DType::u8, tenax::cuda::make_pinned_host_resource())
             : Tensor::empty({bytes}, DType::u8, Device::cpu());
  tenax::ops::fill(host, 1.0);
  for (auto _ : state) {
    Tensor on_device = host.to(kGpu);
    benchmark::DoNotOptimize(on_device.data());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}
void BM_CudaHostToDevicePageable(benchmark::State& state) { transfer(state, false); }
void BM_CudaHostToDevicePinned(benchmark::State& state) { transfer(state, true); }

// An allocate + deallocate pair of a cached block: tenax's device pool, and the driver's
// stream-ordered allocator (cudaMallocAsync / cudaFreeAsync, with its own cache) as the peer.
void cached_pair(benchmark::State& state, const std::shared_ptr<tenax::MemoryResource>& resource) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  resource->deallocate(resource->allocate(bytes), bytes);  // map the pages once
  for (auto _ : state) {
    void* ptr = resource->allocate(bytes);
    benchmark::DoNotOptimize(ptr);
    resource->deallocate(ptr, bytes);
  }
}
void BM_CudaPoolCachedPair(benchmark::State& state) {
  if (!cuda_usable(state)) return;
  cached_pair(state, tenax::current_resource(kGpu));
}
void BM_CudaMallocAsyncPair(benchmark::State& state) {
  if (!cuda_usable(state)) return;
  cached_pair(state, tenax::cuda::make_device_resource(kGpu));
}

}  // namespace

BENCHMARK(BM_CudaCopy)->Arg(1 << 20)->Arg(1 << 26)->UseRealTime();
BENCHMARK(BM_CudaAxpby)->Arg(1 << 26)->UseRealTime();
// Reductions at 2^20 and 2^22 too: the fixed order gives one 16-lane group per 4096-element
// block, so small vectors run on few threads (and a call waits for its result).
BENCHMARK(BM_CudaDot)->Arg(1 << 20)->Arg(1 << 22)->Arg(1 << 26)->UseRealTime();
BENCHMARK(BM_CudaUnscaleAndCheck)->Arg(1 << 26)->UseRealTime();
BENCHMARK(BM_CudaCgSpmvDot)->Arg(4096)->UseRealTime();
BENCHMARK(BM_CudaCgStencilDot)->Arg(4096)->UseRealTime();
BENCHMARK(BM_CudaCgUpdate)->Arg(4096)->UseRealTime();
BENCHMARK(BM_CudaCgXpay)->Arg(4096)->UseRealTime();
BENCHMARK(BM_CudaGemmF32)->Arg(4096)->UseRealTime();
BENCHMARK(BM_CudaGemmF16)->Arg(4096)->UseRealTime();
BENCHMARK(BM_CudaHostToDevicePageable)->Arg(256 << 20)->UseRealTime();
BENCHMARK(BM_CudaHostToDevicePinned)->Arg(256 << 20)->UseRealTime();
BENCHMARK(BM_CudaPoolCachedPair)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_CudaMallocAsyncPair)->Arg(1 << 20)->Arg(64 << 20);

BENCHMARK_MAIN();
