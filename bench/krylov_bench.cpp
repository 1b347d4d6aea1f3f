// Memory bandwidth of the fused Krylov kernels (ops_krylov.hpp) against the separate ops they
// replace and against STREAM-like baselines, on the CPU backend, for f64 vectors of
// N = 2048 * 2048 elements (32 MiB each, beyond the last-level cache of small machines).
//
// Bytes models (what each benchmark must move between memory and the cores at least; a write
// counts once, as in STREAM, although a write-allocate cache also reads the line first):
//   Copy            std::memcpy y <- x                                    16 N
//   Triad           a = b + s c                                           24 N
//   CgVectors/separate  dot(p,q) 16N, axpby x 24N, axpby r 24N,
//                       dot(r,r) 8N (r read once), axpby p 24N            96 N
//   CgVectors/fused     cg_update (reads x p r q, writes x r) 48N,
//                       xpay (reads r p, writes p) 24N                    72 N
//   (the fused variant leaves p.q to spmv_dot / laplacian_*_dot, where it costs no bytes; the
//   separate variant without dot(p,q) would be 80 N)
//   CgUpdate 48 N, Xpay 24 N
//   Spmv, SpmvDot (2048^2 5-point matrix in CSR, i32 indices, nnz ~ 5 N):
//       values 8 nnz + col_idx 4 nnz + row_ptr 4 (N + 1) + p 8 N + q 8 N
//       (each p entry fetched from memory once: the grid's neighbouring rows stay in cache)
//   SpmvThenDot     the same plus dot(p, q)                               + 16 N
//   SpmvCompact, SpmvDotCompact: the same matrix compacted (CsrMatrix::compacted), its
//       product_bytes() + p 8 N + q 8 N
//   Laplacian5pt, Laplacian5ptDot  read p, write q                        16 N
//   Laplacian5ptThenScaleThenDot  laplacian 16N, scale 16N, dot 16N       48 N
// bytes_per_second is model bytes / wall time; the ratio of a kernel's rate to Triad's says how
// close it runs to the machine's streaming bandwidth.
//
//   bench_krylov --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tenax/core/context.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_krylov.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace {

using tenax::CsrMatrix;
using tenax::DType;
using tenax::Tensor;

constexpr std::int64_t kSide = 2048;
constexpr std::int64_t kN = kSide * kSide;
constexpr std::int64_t kMinChunk = std::int64_t{1} << 15;  // as the kernels use

// A vector of kN f64 values in [low, high), written once so that its pages are resident.
Tensor vector(std::uint64_t seed, double low = -1.0, double high = 1.0) {
  Tensor t = Tensor::empty({kN}, DType::f64);
  tenax::ops::random_uniform(t, seed, 0, low, high);
  return t;
}

void set_bytes(benchmark::State& state, double bytes_per_iteration) {
  state.SetBytesProcessed(
      static_cast<std::int64_t>(static_cast<double>(state.iterations()) * bytes_per_iteration));
}

// -L on the kSide x kSide grid (4 on the diagonal, -1 to each in-grid neighbour), i32 indices.
const CsrMatrix& five_point_matrix() {
  static const CsrMatrix matrix = [] {
    std::vector<std::int32_t> row_ptr{0};
    std::vector<std::int32_t> col_idx;
    std::vector<double> values;
    row_ptr.reserve(kN + 1);
    col_idx.reserve(5 * kN);
    values.reserve(5 * kN);
    auto add = [&](std::int64_t col, double v) {
      col_idx.push_back(static_cast<std::int32_t>(col));
      values.push_back(v);
    };
    for (std::int64_t y = 0; y < kSide; ++y) {
      for (std::int64_t x = 0; x < kSide; ++x) {
        const std::int64_t i = y * kSide + x;
        if (y > 0) add(i - kSide, -1.0);
        if (x > 0) add(i - 1, -1.0);
        add(i, 4.0);
        if (x + 1 < kSide) add(i + 1, -1.0);
        if (y + 1 < kSide) add(i + kSide, -1.0);
        row_ptr.push_back(static_cast<std::int32_t>(col_idx.size()));
      }
    }
    const auto nnz = static_cast<std::int64_t>(values.size());
    Tensor rp = Tensor::empty({kN + 1}, DType::i32);
    Tensor ci = Tensor::empty({nnz}, DType::i32);
    Tensor va = Tensor::empty({nnz}, DType::f64);
    std::memcpy(rp.data(), row_ptr.data(), rp.nbytes());
    std::memcpy(ci.data(), col_idx.data(), ci.nbytes());
    std::memcpy(va.data(), values.data(), va.nbytes());
    return CsrMatrix(kN, kN, rp, ci, va);
  }();
  return matrix;
}

// The same matrix with its compact index (CsrMatrix::compacted), as CsrOperator uses it.
const CsrMatrix& compact_five_point_matrix() {
  static const CsrMatrix matrix = five_point_matrix().compacted();
  return matrix;
}

double spmv_bytes() {
  const auto nnz = static_cast<double>(five_point_matrix().nnz());
  return 12.0 * nnz + 4.0 * static_cast<double>(kN + 1) + 16.0 * static_cast<double>(kN);
}

// ---- baselines ----

void BM_Copy(benchmark::State& state) {
  const Tensor x = vector(1);
  const Tensor y = vector(2);
  const double* src = x.data_as<const double>();
  double* dst = y.data_as<double>();
  tenax::CpuContext& context = tenax::CpuContext::instance();
  for (auto _ : state) {
    context.parallel_for(0, kN, kMinChunk, [src, dst](std::int64_t begin, std::int64_t end) {
      std::memcpy(dst + begin, src + begin, static_cast<std::size_t>(end - begin) * sizeof(double));
    });
    benchmark::ClobberMemory();
  }
  set_bytes(state, 16.0 * kN);
}

void triad(double* __restrict a, const double* __restrict b, const double* __restrict c, double s,
           std::int64_t begin, std::int64_t end) {
  for (std::int64_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

void BM_Triad(benchmark::State& state) {
  const Tensor a = vector(1);
  const Tensor b = vector(2);
  const Tensor c = vector(3);
  double* pa = a.data_as<double>();
  const double* pb = b.data_as<const double>();
  const double* pc = c.data_as<const double>();
  tenax::CpuContext& context = tenax::CpuContext::instance();
  for (auto _ : state) {
    context.parallel_for(0, kN, kMinChunk, [=](std::int64_t begin, std::int64_t end) {
      triad(pa, pb, pc, 0.5, begin, end);
    });
    benchmark::ClobberMemory();
  }
  set_bytes(state, 24.0 * kN);
}

// ---- the vector work of one CG iteration ----

// alpha and beta keep every vector bounded over millions of iterations (r drifts by 1e-6 q per
// call, p stays within twice r's range).
constexpr double kAlpha = 1e-6;
constexpr double kBeta = 0.5;

void BM_CgVectorsSeparate(benchmark::State& state) {
  const Tensor p = vector(1), q = vector(2), x = vector(3), r = vector(4);
  for (auto _ : state) {
    benchmark::DoNotOptimize(tenax::ops::dot(p, q));
    tenax::ops::axpby(kAlpha, p, 1.0, x);
    tenax::ops::axpby(-kAlpha, q, 1.0, r);
    benchmark::DoNotOptimize(tenax::ops::dot(r, r));
    tenax::ops::axpby(1.0, r, kBeta, p);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 96.0 * kN);
}

void BM_CgVectorsFused(benchmark::State& state) {
  const Tensor p = vector(1), q = vector(2), x = vector(3), r = vector(4);
  for (auto _ : state) {
    benchmark::DoNotOptimize(tenax::ops::cg_update(kAlpha, p, q, x, r));
    tenax::ops::xpay(r, kBeta, p);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 72.0 * kN);
}

void BM_CgUpdate(benchmark::State& state) {
  const Tensor p = vector(1), q = vector(2), x = vector(3), r = vector(4);
  for (auto _ : state) {
    benchmark::DoNotOptimize(tenax::ops::cg_update(kAlpha, p, q, x, r));
    benchmark::ClobberMemory();
  }
  set_bytes(state, 48.0 * kN);
}

void BM_Xpay(benchmark::State& state) {
  const Tensor r = vector(1), p = vector(2);
  for (auto _ : state) {
    tenax::ops::xpay(r, kBeta, p);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 24.0 * kN);
}

// ---- operator application with p.q ----

// q = A p, and q = A p with p.q, of matrix `a`, counted as `bytes` per product.
void spmv_loop(benchmark::State& state, const CsrMatrix& a, double bytes) {
  const Tensor p = vector(1), q = vector(2);
  for (auto _ : state) {
    tenax::ops::spmv(a, p, q);
    benchmark::ClobberMemory();
  }
  set_bytes(state, bytes);
}

void spmv_dot_loop(benchmark::State& state, const CsrMatrix& a, double bytes) {
  const Tensor p = vector(1), q = vector(2);
  for (auto _ : state) {
    benchmark::DoNotOptimize(tenax::ops::spmv_dot(a, p, q));
    benchmark::ClobberMemory();
  }
  set_bytes(state, bytes);
}

void BM_Spmv(benchmark::State& state) { spmv_loop(state, five_point_matrix(), spmv_bytes()); }

void BM_SpmvThenDot(benchmark::State& state) {
  const CsrMatrix& a = five_point_matrix();
  const Tensor p = vector(1), q = vector(2);
  for (auto _ : state) {
    tenax::ops::spmv(a, p, q);
    benchmark::DoNotOptimize(tenax::ops::dot(p, q));
    benchmark::ClobberMemory();
  }
  set_bytes(state, spmv_bytes() + 16.0 * kN);
}

void BM_SpmvDot(benchmark::State& state) {
  spmv_dot_loop(state, five_point_matrix(), spmv_bytes());
}

void BM_SpmvCompact(benchmark::State& state) {
  const CsrMatrix& a = compact_five_point_matrix();
  spmv_loop(state, a, static_cast<double>(a.product_bytes()) + 16.0 * kN);
}

void BM_SpmvDotCompact(benchmark::State& state) {
  const CsrMatrix& a = compact_five_point_matrix();
  spmv_dot_loop(state, a, static_cast<double>(a.product_bytes()) + 16.0 * kN);
}

void BM_Laplacian5pt(benchmark::State& state) {
  const Tensor p = vector(1).reshape({kSide, kSide});
  const Tensor q = vector(2).reshape({kSide, kSide});
  for (auto _ : state) {
    tenax::ops::laplacian_5pt(p, q);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 16.0 * kN);
}

void BM_Laplacian5ptThenScaleThenDot(benchmark::State& state) {
  const Tensor p = vector(1).reshape({kSide, kSide});
  const Tensor q = vector(2).reshape({kSide, kSide});
  for (auto _ : state) {
    tenax::ops::laplacian_5pt(p, q);
    tenax::ops::scale(-1.0, q);
    benchmark::DoNotOptimize(tenax::ops::dot(p, q));
    benchmark::ClobberMemory();
  }
  set_bytes(state, 48.0 * kN);
}

void BM_Laplacian5ptDot(benchmark::State& state) {
  const Tensor p = vector(1).reshape({kSide, kSide});
  const Tensor q = vector(2).reshape({kSide, kSide});
  for (auto _ : state) {
    benchmark::DoNotOptimize(tenax::ops::laplacian_5pt_dot(p, q, 1.0, 1.0, -1.0));
    benchmark::ClobberMemory();
  }
  set_bytes(state, 16.0 * kN);
}

#define TENAX_KRYLOV_BENCH(name) \
  BENCHMARK(name)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.5)
TENAX_KRYLOV_BENCH(BM_Copy);
TENAX_KRYLOV_BENCH(BM_Triad);
TENAX_KRYLOV_BENCH(BM_CgVectorsSeparate);
TENAX_KRYLOV_BENCH(BM_CgVectorsFused);
TENAX_KRYLOV_BENCH(BM_CgUpdate);
TENAX_KRYLOV_BENCH(BM_Xpay);
TENAX_KRYLOV_BENCH(BM_Spmv);
TENAX_KRYLOV_BENCH(BM_SpmvThenDot);
TENAX_KRYLOV_BENCH(BM_SpmvDot);
TENAX_KRYLOV_BENCH(BM_SpmvCompact);
TENAX_KRYLOV_BENCH(BM_SpmvDotCompact);
TENAX_KRYLOV_BENCH(BM_Laplacian5pt);
TENAX_KRYLOV_BENCH(BM_Laplacian5ptThenScaleThenDot);
TENAX_KRYLOV_BENCH(BM_Laplacian5ptDot);

}  // namespace

BENCHMARK_MAIN();
