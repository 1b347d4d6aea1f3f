// CPU GEMM: Eigen's blocked kernels on the raw buffers, mapped as row-major matrices.
//
// Rows of C are split into one contiguous range per worker of the CpuContext, each computed by
// one single-threaded Eigen product (tenax does not build Eigen with OpenMP); with one thread
// this is exactly one Eigen call on the whole matrices. Results are bit-for-bit independent of
// the thread count: Eigen's depth blocking depends only on k and the cache sizes, and every row
// goes through the same register-blocked micro-kernel as in a single call provided that the
// ranges start at multiples of the kernels' row blocking and the last range keeps the
// remainder rows (so no range is a tiny or one-row product that Eigen would route to its
// coefficient-wise or matrix-vector code). gemm_test checks this for several shapes.
//
// f16/bf16 inputs are widened to f32 exactly (half.hpp), multiplied as f32 and, when C is f16 or
// bf16, rounded once at the end: f32 accumulation, as cuBLAS does with CUBLAS_COMPUTE_32F.
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "tenax/core/context.hpp"
#include "tenax/core/half.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"

namespace tenax::kernels::cpu {
namespace {

// Row ranges handed to workers start at multiples of kRowAlign, a multiple of the row blocking
// of Eigen's kernels for every SIMD width (12, 24 and 48 f32 rows for SSE, AVX and AVX-512; 8
// for its matrix-vector kernels). See the comment at the top of the file.
constexpr std::int64_t kRowAlign = 48;
// Floating-point operations below which a row range is not worth a worker thread.
constexpr double kMinFlopsPerChunk = 4.0e6;

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstMap = Eigen::Map<const RowMatrix<T>>;
template <class T>
using Map = Eigen::Map<RowMatrix<T>>;

template <class C, class A, class B, class T>
void product(C&& c, const A& a, const B& b, T alpha, T beta) {
  if (beta == T(0)) {
    c.noalias() = alpha * a * b;
  } else {
    if (beta != T(1)) c *= beta;
    c.noalias() += alpha * a * b;
  }
}

// Rows [r0, r1) of C = alpha op(A) op(B) + beta C; c_panel points at row r0 of C.
template <class T>
void gemm_panel(const T* a, const T* b, T* c_panel, const GemmArgs& g, T alpha, T beta,
                std::int64_t r0, std::int64_t r1) {
  const std::int64_t rows = r1 - r0;
  Map<T> c(c_panel, rows, g.n);
  const ConstMap<T> b_stored(b, g.transpose_b ? g.n : g.k, g.transpose_b ? g.k : g.n);
  auto with_a = [&](const auto& op_a) {
    if (g.transpose_b) {
      product(c, op_a, b_stored.transpose(), alpha, beta);
    } else {
      product(c, op_a, b_stored, alpha, beta);
    }
  };
  if (g.transpose_a) {
    const ConstMap<T> a_stored(a, g.k, g.m);
    with_a(a_stored.middleCols(r0, rows).transpose());
  } else {
    with_a(ConstMap<T>(a + r0 * g.k, rows, g.k));
  }
}

// Calls panel(r0, r1) on consecutive row ranges covering C, one per worker: every boundary
// is a multiple of kRowAlign and the last range takes the remainder.
template <class Panel>
void for_each_panel(CpuContext& context, const GemmArgs& g, const Panel& panel) {
  const std::int64_t units = std::max<std::int64_t>(1, g.m / kRowAlign);
  const double flops_per_unit = 2.0 * static_cast<double>(kRowAlign) * static_cast<double>(g.n) *
                                static_cast<double>(std::max<std::int64_t>(g.k, 1));
  const auto min_chunk =
      static_cast<std::int64_t>(std::max(1.0, kMinFlopsPerChunk / flops_per_unit));
  auto row = [&](std::int64_t unit) { return unit >= units ? g.m : unit * kRowAlign; };
  if (units <= min_chunk || context.num_threads() == 1) {
    panel(std::int64_t{0}, g.m);
    return;
  }
  context.parallel_for(0, units, min_chunk,
                       [&](std::int64_t u0, std::int64_t u1) { panel(row(u0), row(u1)); });
}

template <class T>
void gemm_native(CpuContext& context, const GemmArgs& g) {
  const T* a = g.a.data_as<const T>();
  const T* b = g.b.data_as<const T>();
  T* c = g.c.data_as<T>();
  const T alpha = static_cast<T>(g.alpha);
  const T beta = static_cast<T>(g.beta);
  for_each_panel(context, g, [&](std::int64_t r0, std::int64_t r1) {
    gemm_panel(a, b, c + r0 * g.n, g, alpha, beta, r0, r1);
  });
}

template <class S>
std::vector<float> widen(CpuContext& context, const Tensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  const S* in = t.data_as<const S>();
  context.parallel_for(0, t.numel(), std::int64_t{1} << 16,
                       [&](std::int64_t begin, std::int64_t end) {
                         for (std::int64_t i = begin; i < end; ++i) out[i] = to_float(in[i]);
                       });
  return out;
}

template <class S>
S narrow(float x) {
  if constexpr (std::is_same_v<S, Half>) {
    return to_half(x);
  } else {
    return to_bfloat16(x);
  }
}

template <class S>
void gemm_half(CpuContext& context, const GemmArgs& g) {
  const std::vector<float> a = widen<S>(context, g.a);
  const std::vector<float> b = widen<S>(context, g.b);
  const auto alpha = static_cast<float>(g.alpha);
  const auto beta = static_cast<float>(g.beta);
  if (g.c.dtype() == DType::f32) {
    float* c = g.c.data_as<float>();
    for_each_panel(context, g, [&](std::int64_t r0, std::int64_t r1) {
      gemm_panel(a.data(), b.data(), c + r0 * g.n, g, alpha, beta, r0, r1);
    });
    return;
  }
  S* c = g.c.data_as<S>();
  for_each_panel(context, g, [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t count = (r1 - r0) * g.n;
    S* c_panel = c + r0 * g.n;
    std::vector<float> wide(static_cast<std::size_t>(count));
    if (beta != 0.0f) {
      for (std::int64_t i = 0; i < count; ++i) wide[i] = to_float(c_panel[i]);
    }
    gemm_panel(a.data(), b.data(), wide.data(), g, alpha, beta, r0, r1);
    for (std::int64_t i = 0; i < count; ++i) c_panel[i] = narrow<S>(wide[i]);
  });
}

}  // namespace

void gemm(CpuContext& context, const GemmArgs& args) {
  switch (args.a.dtype()) {
    case DType::f64:
      return gemm_native<double>(context, args);
    case DType::f32:
      return gemm_native<float>(context, args);
    case DType::f16:
      return gemm_half<Half>(context, args);
    case DType::bf16:
      return gemm_half<BFloat16>(context, args);
    default:
      throw UsageError("gemm: dtype " + std::string(to_string(args.a.dtype())) +
                           " is not supported by the CPU backend",
                       "use f64, f32, f16 or bf16 matrices");
  }
}

void gemm(const GemmArgs& args) { gemm(CpuContext::instance(), args); }

}  // namespace tenax::kernels::cpu
