// CPU GEMM: OpenBLAS (through CBLAS) where the build found it, else Eigen's blocked kernels, on
// the raw buffers as row-major matrices.
//
// Rows of C are split into one contiguous range per worker of the CpuContext, each computed by
// one single-threaded product (OpenBLAS is told to use one thread: tenax's workers are the
// threads; Eigen is built without OpenMP); with one thread this is exactly one call on the whole
// matrices. Results are bit-for-bit independent of the thread count and of the number of rows
// (the micro-batch): both libraries block the depth by k and the cache sizes only and run every
// row through register-blocked micro-kernels that accumulate over k in the same order, provided
// the ranges start at multiples of the kernels' row blocking and the last range keeps the
// remainder rows (so no range is a tiny or one-row product that Eigen would route to its
// coefficient-wise or matrix-vector code). gemm_test checks both for several shapes. For
// OpenBLAS, whose kernels depend on the CPU it finds at run time (some have small-matrix paths),
// the first product of each dtype is preceded by a probe that compares every row of a product
// computed whole with the same rows computed one at a time and in odd-sized groups, for tile
// heights that divide the workers' alignment (rows that do not fill a tile are computed in a
// zero-padded tile): where no height gives the same bits, GEMM uses Eigen for that dtype.
//
// f16/bf16 inputs are widened to f32 exactly (half_arrays.hpp), multiplied as f32 and, when C is
// f16 or bf16, rounded once at the end: f32 accumulation, as cuBLAS does with CUBLAS_COMPUTE_32F.
// (Debian's OpenBLAS 0.3.21 is built without BUILD_BFLOAT16, so there is no sbgemm to call.)
// Where the CPU has AMX-BF16, bf16 products run on its tiles instead (gemm_amx.hpp): the same
// independence of the row count and thread count, other bits.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#if TENAX_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "gemm_amx.hpp"
#include "gemm_eigen.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/half.hpp"
#include "tenax/kernels/detail/cpu_simd.hpp"
#include "tenax/kernels/detail/half_arrays.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"

namespace tenax::kernels::cpu {
namespace {

// Row ranges handed to workers start at multiples of kRowAlign, a multiple of the row blocking
// of Eigen's kernels for every SIMD width (12, 24 and 48 f32 rows for SSE, AVX and AVX-512; 8
// for its matrix-vector kernels). See the comment at the top of the file.
constexpr std::int64_t kRowAlign = 48;
// Floating-point operations below which a row range is not worth a worker thread.
constexpr double kMinFlopsPerChunk = 4.0e6;

// Eigen's rows for the CPU found at run time: the AVX-512 build (gemm_eigen_avx512.cpp) where the
// CPU has it and FMA, the AVX2/FMA build (gemm_eigen_avx2.cpp) where it has both, the baseline
// x86-64 build otherwise.
template <class T>
void eigen_panel(const T* a, const T* b, T* c_panel, const GemmArgs& g, T alpha, T beta,
                 std::int64_t r0, std::int64_t r1) {
#if TENAX_HAVE_EIGEN_AVX512
  if (cpu_simd().avx512 && cpu_simd().fma) {
    return eigen_gemm_rows_avx512(a, b, c_panel, g, alpha, beta, r0, r1);
  }
#endif
#if TENAX_HAVE_EIGEN_AVX2
  if (cpu_simd().fma) return eigen_gemm_rows_avx2(a, b, c_panel, g, alpha, beta, r0, r1);
#endif
  eigen_gemm_rows_baseline(a, b, c_panel, g, alpha, beta, r0, r1);
}

#if TENAX_HAVE_OPENBLAS
template <class T>
void cblas_gemm(CBLAS_TRANSPOSE op_a, CBLAS_TRANSPOSE op_b, std::int64_t m, std::int64_t n,
                std::int64_t k, T alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb,
                T beta, T* c, std::int64_t ldc) {
  const auto i = [](std::int64_t v) { return static_cast<blasint>(v); };
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, op_a, op_b, i(m), i(n), i(k), alpha, a, i(lda), b, i(ldb), beta, c,
                i(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, op_a, op_b, i(m), i(n), i(k), alpha, a, i(lda), b, i(ldb), beta, c,
                i(ldc));
  }
}

// The same rows with OpenBLAS, single-threaded, in whole tiles of `unit` rows: OpenBLAS computes
// a row with a full-tile micro-kernel or, in the last rows of a call, with a tail kernel that
// sums in another order, so a row's bits would depend on how many rows the call has. Here every
// row goes through a full tile: the rows that do not fill one are copied into a zero-padded tile
// of `unit` rows (op(A) gathered row-major), computed, and copied back.
template <class T>
void blas_panel(const T* a, const T* b, T* c_panel, const GemmArgs& g, T alpha, T beta,
                std::int64_t r0, std::int64_t r1, std::int64_t unit) {
  const std::int64_t rows = r1 - r0;
  if (rows <= 0 || g.n == 0) return;
  const CBLAS_TRANSPOSE op_b = g.transpose_b ? CblasTrans : CblasNoTrans;
  const std::int64_t ldb = g.transpose_b ? g.k : g.n;
  const std::int64_t whole = rows / unit * unit;
  if (whole > 0) {
    // Stored A is [k, m] when transposed (rows of op(A) are its columns), else [m, k].
    cblas_gemm<T>(g.transpose_a ? CblasTrans : CblasNoTrans, op_b, whole, g.n, g.k, alpha,
                  g.transpose_a ? a + r0 : a + r0 * g.k, g.transpose_a ? g.m : g.k, b, ldb, beta,
                  c_panel, g.n);
  }
  const std::int64_t tail = rows - whole;
  if (tail == 0) return;
  std::vector<T> a_tile(static_cast<std::size_t>(unit * g.k), T(0));
  std::vector<T> c_tile(static_cast<std::size_t>(unit * g.n), T(0));
  for (std::int64_t i = 0; i < tail; ++i) {
    const std::int64_t row = r0 + whole + i;
    for (std::int64_t j = 0; j < g.k; ++j) {
      a_tile[i * g.k + j] = g.transpose_a ? a[j * g.m + row] : a[row * g.k + j];
    }
  }
  T* const c_tail = c_panel + whole * g.n;
  if (beta != T(0)) std::copy(c_tail, c_tail + tail * g.n, c_tile.begin());
  cblas_gemm<T>(CblasNoTrans, op_b, unit, g.n, g.k, alpha, a_tile.data(), g.k, b, ldb, beta,
                c_tile.data(), g.n);
  std::copy(c_tile.begin(), c_tile.begin() + tail * g.n, c_tail);
}

// The tile height (in rows) at which OpenBLAS's rows are independent of how a product is split,
// on this CPU, or 0 when there is none: for each candidate, a product of 101 rows computed whole
// must have the bits of the same rows computed in groups of 1, 5, 7, 48 and 49 rows (widths of
// micro-batches and of the workers' ranges), with and without transposes.
template <class T>
std::int64_t blas_tile_rows() {
  constexpr std::int64_t m = 101, n = 37, k = 77;
  std::vector<T> a(m * k), b(k * n), whole(m * n), parts(m * n);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = T(static_cast<int>(i * 7919 % 1009) - 504) / T(97);
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    b[i] = T(static_cast<int>(i * 104729 % 1013) - 506) / T(89);
  }
  const auto independent = [&](std::int64_t unit) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        GemmArgs g;
        g.m = m;
        g.n = n;
        g.k = k;
        g.transpose_a = ta;
        g.transpose_b = tb;
        blas_panel<T>(a.data(), b.data(), whole.data(), g, T(1), T(0), 0, m, unit);
        for (const std::int64_t group : {1, 5, 7, 48, 49}) {
          for (std::int64_t r0 = 0; r0 < m; r0 += group) {
            const std::int64_t r1 = std::min(m, r0 + group);
            blas_panel<T>(a.data(), b.data(), parts.data() + r0 * n, g, T(1), T(0), r0, r1, unit);
          }
          if (std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(T)) != 0) return false;
        }
      }
    }
    return true;
  };
  // Divisors of kRowAlign, so that the workers' ranges are made of whole tiles.
  for (const std::int64_t unit : {1, 2, 4, 6, 8, 12, 16, 24, 48}) {
    if (independent(unit)) return unit;
  }
  return 0;
}

// OpenBLAS's tile height for T, or 0 to use Eigen. Thread-safe. (On the AMD EPYC of the CI
// machine, Haswell kernels: f64 passes the probe; f32 does not, its rows' bits depend on their
// position in the kernel's 24-row tile, so f32 stays with Eigen there.)
template <class T>
std::int64_t blas_tile() {
  // One thread per call: tenax's workers are the threads (a static's initialisation runs once).
  static const std::int64_t tile = (openblas_set_num_threads(1), blas_tile_rows<T>());
  return tile;
}
#endif

// Rows [r0, r1) of C = alpha op(A) op(B) + beta C; c_panel points at row r0 of C.
template <class T>
void gemm_panel(const T* a, const T* b, T* c_panel, const GemmArgs& g, T alpha, T beta,
                std::int64_t r0, std::int64_t r1) {
#if TENAX_HAVE_OPENBLAS
  if (const std::int64_t tile = blas_tile<T>(); tile > 0) {
    return blas_panel(a, b, c_panel, g, alpha, beta, r0, r1, tile);
  }
#endif
  eigen_panel(a, b, c_panel, g, alpha, beta, r0, r1);
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

// Elements per worker chunk of the conversions (memory bound; smaller chunks cost more in
// wake-ups than they save).
constexpr std::int64_t kConvertChunk = std::int64_t{1} << 16;

// `t` widened to f32 in a tensor from the memory pool (no zero fill, and after the first step no
// fresh pages to fault in).
template <class S>
Tensor widen(CpuContext& context, const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), DType::f32, t.device());
  const S* in = t.data_as<const S>();
  float* wide = out.data_as<float>();
  context.parallel_for(0, t.numel(), kConvertChunk, [&](std::int64_t begin, std::int64_t end) {
    widen_to_float(in + begin, wide + begin, end - begin);
  });
  return out;
}

template <class S>
void gemm_half(CpuContext& context, const GemmArgs& g) {
  const Tensor a = widen<S>(context, g.a);
  const Tensor b = widen<S>(context, g.b);
  const float* a_data = a.data_as<const float>();
  const float* b_data = b.data_as<const float>();
  const auto alpha = static_cast<float>(g.alpha);
  const auto beta = static_cast<float>(g.beta);
  if (g.c.dtype() == DType::f32) {
    float* c = g.c.data_as<float>();
    for_each_panel(context, g, [&](std::int64_t r0, std::int64_t r1) {
      gemm_panel(a_data, b_data, c + r0 * g.n, g, alpha, beta, r0, r1);
    });
    return;
  }
  // A 16-bit C is accumulated in f32 and rounded once, panel by panel.
  S* c = g.c.data_as<S>();
  const Tensor wide_c =
      beta != 0.0f ? widen<S>(context, g.c) : Tensor::empty(g.c.shape(), DType::f32, g.c.device());
  float* wide = wide_c.data_as<float>();
  for_each_panel(context, g, [&](std::int64_t r0, std::int64_t r1) {
    gemm_panel(a_data, b_data, wide + r0 * g.n, g, alpha, beta, r0, r1);
    narrow_from_float(wide + r0 * g.n, c + r0 * g.n, (r1 - r0) * g.n);
  });
}

}  // namespace

void gemm(CpuContext& context, const GemmArgs& args) {
  if (args.bias.defined()) {
#if TENAX_HAVE_AMX
    // The AMX epilogue adds the bias as it writes C (alpha * sum + bias: the two steps' alpha *
    // sum + 1 * bias); k == 0 leaves the sums out, and so the two steps' -0 bias kept as -0.
    if (args.a.dtype() == DType::bf16 && cpu_simd().amx_bf16 && args.k > 0) {
      return amx_gemm_bf16(context, args);
    }
#endif
    // Elsewhere the two steps: C's rows filled with the bias (exactly what a product of a ones
    // column and the bias row gives), then the product added with beta = 1.
    const auto row_bytes = static_cast<std::size_t>(args.n) * size_of(args.c.dtype());
    auto* rows = static_cast<std::byte*>(args.c.data());
    const auto* bias = static_cast<const std::byte*>(args.bias.data());
    context.parallel_for(0, args.m, 256, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t i = first; i < last; ++i) {
        std::memcpy(rows + static_cast<std::size_t>(i) * row_bytes, bias, row_bytes);
      }
    });
    GemmArgs product = args;
    product.bias = Tensor();
    product.beta = 1.0;
    return gemm(context, product);
  }
  switch (args.a.dtype()) {
    case DType::f64:
      return gemm_native<double>(context, args);
    case DType::f32:
      return gemm_native<float>(context, args);
    case DType::f16:
      return gemm_half<Half>(context, args);
    case DType::bf16:
#if TENAX_HAVE_AMX
      if (cpu_simd().amx_bf16) return amx_gemm_bf16(context, args);
#endif
      return gemm_half<BFloat16>(context, args);
    default:
      throw UsageError("gemm: dtype " + std::string(to_string(args.a.dtype())) +
                           " is not supported by the CPU backend",
                       "use f64, f32, f16 or bf16 matrices");
  }
}

void gemm(const GemmArgs& args) { gemm(CpuContext::instance(), args); }

bool gemm_rows_independent(DType dtype) {
#if TENAX_HAVE_AMX
  // The dispatch of gemm above: bf16 on AMX tiles (Eigen's panels choose their k blocking from
  // the product's sizes, so its other paths give no such promise).
  return dtype == DType::bf16 && cpu_simd().amx_bf16;
#else
  (void)dtype;
  return false;
#endif
}

void gemm_batched(CpuContext& context, const std::vector<GemmArgs>& products) {
  const GemmArgs& first = products.front();
  const double flops = 2.0 * static_cast<double>(first.m) * static_cast<double>(first.n) *
                       static_cast<double>(std::max<std::int64_t>(first.k, 1));
  // Products that gemm itself would split over the threads run in turn; smaller ones (gemm
  // would keep each on one thread) run side by side, each on one thread (a parallel_for inside
  // a chunk of another runs its chunks in order). Bits as gemm's either way: they never depend
  // on the thread count.
  if (context.num_threads() == 1 || products.size() == 1 ||
      flops >= kMinFlopsPerChunk * context.num_threads()) {
    for (const GemmArgs& product : products) gemm(context, product);
    return;
  }
  const auto per_product = static_cast<std::int64_t>(kMinFlopsPerChunk / flops);
  context.parallel_for(0, static_cast<std::int64_t>(products.size()),
                       std::max<std::int64_t>(1, per_product),
                       [&](std::int64_t i0, std::int64_t i1) {
                         for (std::int64_t i = i0; i < i1; ++i) {
                           gemm(context, products[static_cast<std::size_t>(i)]);
                         }
                       });
}

void gemm_batched(const std::vector<GemmArgs>& products) {
  gemm_batched(CpuContext::instance(), products);
}

}  // namespace tenax::kernels::cpu
