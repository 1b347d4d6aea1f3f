#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/linalg_test_helpers.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/host_resource.hpp"
#include "tenax/core/memory/limiting_resource.hpp"
#include "tenax/kernels/detail/cpu_simd.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace tenax {
namespace {

using ops::Transpose;
using testing::make_tensor;
using testing::naive_gemm;
using testing::random_integers;
using testing::random_reals;
using testing::values_of;

Shape stored_shape(std::int64_t rows, std::int64_t cols, bool transposed) {
  return transposed ? Shape{cols, rows} : Shape{rows, cols};
}

Transpose flag(bool t) { return t ? Transpose::yes : Transpose::no; }

// Per-element bound on the rounding error of a GEMM accumulated in a type with unit roundoff u:
// (k + 2) u (|alpha| sum_p |a_ip b_pj| + |beta c_ij|).
std::vector<double> error_bound(const std::vector<double>& a, const std::vector<double>& b,
                                const std::vector<double>& c, std::int64_t m, std::int64_t n,
                                std::int64_t k, bool ta, bool tb, double alpha, double beta,
                                double u) {
  std::vector<double> abs_a(a.size()), abs_b(b.size()), abs_c(c.size());
  for (std::size_t i = 0; i < a.size(); ++i) abs_a[i] = std::fabs(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) abs_b[i] = std::fabs(b[i]);
  for (std::size_t i = 0; i < c.size(); ++i) abs_c[i] = std::fabs(c[i]);
  std::vector<double> bound =
      naive_gemm(abs_a, abs_b, abs_c, m, n, k, ta, tb, std::fabs(alpha), std::fabs(beta));
  for (double& x : bound) x = x * static_cast<double>(k + 2) * u + 1e-30;
  return bound;
}

// (m, n, k): small, odd, and larger than one 128-row panel of the CPU backend.
const std::tuple<std::int64_t, std::int64_t, std::int64_t> kSizes[] = {
    {1, 1, 1}, {3, 5, 4}, {7, 2, 9}, {33, 17, 65}, {130, 21, 40}, {300, 70, 19}};

TEST(Gemm, F64IsExactOnSmallIntegerMatricesForEveryTransposeAlphaAndBeta) {
  std::uint32_t seed = 1;
  for (const auto& [m, n, k] : kSizes) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        for (const auto& [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{2.0, -3.0},
                                          std::pair{-1.0, 1.0}, std::pair{0.5, 0.25}}) {
          const auto a = random_integers(m * k, 4, seed++);
          const auto b = random_integers(k * n, 4, seed++);
          const auto c0 = random_integers(m * n, 8, seed++);
          const Tensor ta_t = make_tensor(stored_shape(m, k, ta), DType::f64, a);
          const Tensor tb_t = make_tensor(stored_shape(k, n, tb), DType::f64, b);
          const Tensor c = make_tensor({m, n}, DType::f64, c0);
          ops::gemm(ta_t, tb_t, c, alpha, beta, flag(ta), flag(tb));
          const auto want = naive_gemm(a, b, c0, m, n, k, ta, tb, alpha, beta);
          const auto got = values_of(c);
          for (std::size_t i = 0; i < want.size(); ++i) {
            ASSERT_EQ(got[i], want[i])
                << "m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb
                << " alpha=" << alpha << " beta=" << beta << " element " << i;
          }
        }
      }
    }
  }
}

TEST(Gemm, F32MatchesTheNaiveReferenceWithinTheRoundingBound) {
  std::uint32_t seed = 100;
  const double u = std::ldexp(1.0, -24);
  for (const auto& [m, n, k] : kSizes) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        const double alpha = 1.5;
        const double beta = -0.5;
        const auto a = random_reals(m * k, DType::f32, seed++);
        const auto b = random_reals(k * n, DType::f32, seed++);
        const auto c0 = random_reals(m * n, DType::f32, seed++);
        const Tensor c = make_tensor({m, n}, DType::f32, c0);
        ops::gemm(make_tensor(stored_shape(m, k, ta), DType::f32, a),
                  make_tensor(stored_shape(k, n, tb), DType::f32, b), c, alpha, beta, flag(ta),
                  flag(tb));
        const auto want = naive_gemm(a, b, c0, m, n, k, ta, tb, alpha, beta);
        const auto bound = error_bound(a, b, c0, m, n, k, ta, tb, alpha, beta, u);
        const auto got = values_of(c);
        for (std::size_t i = 0; i < want.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], bound[i])
              << "m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb;
        }
      }
    }
  }
}

// f16/bf16 inputs accumulate in f32: the reference multiplies the rounded inputs exactly.
void check_half_inputs(DType dtype, DType out_dtype, double out_unit_roundoff) {
  std::uint32_t seed = 200;
  const double u32 = std::ldexp(1.0, -24);
  for (const auto& [m, n, k] : kSizes) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        const double alpha = 2.0;
        const double beta = 0.5;
        const auto a = random_reals(m * k, dtype, seed++);
        const auto b = random_reals(k * n, dtype, seed++);
        const auto c0 = random_reals(m * n, out_dtype, seed++);
        const Tensor c = make_tensor({m, n}, out_dtype, c0);
        ops::gemm(make_tensor(stored_shape(m, k, ta), dtype, a),
                  make_tensor(stored_shape(k, n, tb), dtype, b), c, alpha, beta, flag(ta),
                  flag(tb));
        const auto want = naive_gemm(a, b, c0, m, n, k, ta, tb, alpha, beta);
        const auto bound = error_bound(a, b, c0, m, n, k, ta, tb, alpha, beta, u32);
        const auto got = values_of(c);
        for (std::size_t i = 0; i < want.size(); ++i) {
          const double tol = bound[i] + std::fabs(want[i]) * out_unit_roundoff * 1.01;
          ASSERT_NEAR(got[i], want[i], tol)
              << to_string(dtype) << " -> " << to_string(out_dtype) << " m=" << m << " n=" << n
              << " k=" << k << " ta=" << ta << " tb=" << tb;
        }
      }
    }
  }
}

TEST(Gemm, F16InputsAccumulateInF32) {
  check_half_inputs(DType::f16, DType::f32, 0.0);
  check_half_inputs(DType::f16, DType::f16, std::ldexp(1.0, -11));
}

TEST(Gemm, Bf16InputsAccumulateInF32) {
  check_half_inputs(DType::bf16, DType::f32, 0.0);
  check_half_inputs(DType::bf16, DType::bf16, std::ldexp(1.0, -8));
}

// Sizes that hold whole 32 x 32 blocks and 32-deep k blocks as well as every kind of edge (of
// the AMX path's tiles where the CPU has them, of Eigen's panels otherwise), past one worker.
const std::tuple<std::int64_t, std::int64_t, std::int64_t> kBlockSizes[] = {
    {64, 48, 96}, {37, 50, 70}, {96, 16, 32}, {200, 33, 1}, {15, 64, 64}};

// Small integers are exact in bf16 and their sums exact in f32: every path must give the naive
// product's value, so any misplaced element of a packed tile shows.
TEST(Gemm, Bf16IsExactOnSmallIntegerMatricesForEveryTranspose) {
  std::uint32_t seed = 300;
  for (const auto& [m, n, k] : kBlockSizes) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        for (const DType out : {DType::f32, DType::bf16}) {
          for (const auto& [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{2.0, -1.0}}) {
            const auto a = random_integers(m * k, 4, seed++);
            const auto b = random_integers(k * n, 4, seed++);
            // |C| stays below 256 for a bf16 C, so that it is exact there too.
            const auto c0 = random_integers(m * n, 8, seed++);
            const Tensor c = make_tensor({m, n}, out, c0);
            const double scale = out == DType::bf16 ? 1.0 / 128.0 : 1.0;
            ops::gemm(make_tensor(stored_shape(m, k, ta), DType::bf16, a),
                      make_tensor(stored_shape(k, n, tb), DType::bf16, b), c, alpha * scale, beta,
                      flag(ta), flag(tb));
            const auto want = naive_gemm(a, b, c0, m, n, k, ta, tb, alpha * scale, beta);
            const auto got = values_of(c);
            for (std::size_t i = 0; i < want.size(); ++i) {
              const double tol = out == DType::bf16 ? std::fabs(want[i]) * std::ldexp(1.0, -8) : 0;
              ASSERT_NEAR(got[i], want[i], tol)
                  << to_string(out) << " m=" << m << " n=" << n << " k=" << k << " ta=" << ta
                  << " tb=" << tb << " alpha=" << alpha << " element " << i;
            }
          }
        }
      }
    }
  }
}

// On AMX tiles the rows of a bf16 product have the same bits whether computed whole or in
// groups of any size, one row included: the f32 sums of a row depend on that row of op(A) and on
// op(B) only (gemm_amx.hpp). (Eigen's path gives that for groups of its row blocking only, a
// one-row product being a matrix-vector one: gemm.cpp's workers split at such multiples.)
// The promise callers rely on to multiply several batches' rows at once (autodiff's Linear):
// made for bf16 on AMX alone, and the test below checks it holds there.
TEST(Gemm, RowsAreIndependentOnlyWhereTheAmxPathRuns) {
  EXPECT_EQ(ops::gemm_rows_independent(DType::bf16, Device::cpu()),
            kernels::cpu::cpu_simd().amx_bf16);
  for (DType dtype : {DType::f64, DType::f32, DType::f16}) {
    EXPECT_FALSE(ops::gemm_rows_independent(dtype, Device::cpu())) << to_string(dtype);
  }
  EXPECT_FALSE(ops::gemm_rows_independent(DType::bf16, Device::cuda(0)));
}

TEST(Gemm, Bf16RowsOnAmxDoNotDependOnHowManyRowsAProductHas) {
  if (!kernels::cpu::cpu_simd().amx_bf16) {
    GTEST_SKIP() << "this CPU (or TENAX_CPU_SIMD) runs bf16 products without AMX tiles";
  }
  constexpr std::int64_t m = 101, n = 45, k = 77;
  std::uint32_t seed = 400;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const auto a = random_reals(m * k, DType::bf16, seed++);
      const Tensor b = make_tensor(stored_shape(k, n, tb), DType::bf16,
                                   random_reals(k * n, DType::bf16, seed++));
      const Tensor a_whole = make_tensor(stored_shape(m, k, ta), DType::bf16, a);
      const Tensor whole = Tensor::empty({m, n}, DType::f32);
      ops::gemm(a_whole, b, whole, 1.0, 0.0, flag(ta), flag(tb));
      for (const std::int64_t group : {1, 5, 7, 16, 33}) {
        for (std::int64_t r0 = 0; r0 < m; r0 += group) {
          const std::int64_t rows = std::min(group, m - r0);
          // op(A)'s rows r0.. as a matrix of their own (stored transposed where A is).
          std::vector<double> part(static_cast<std::size_t>(rows * k));
          for (std::int64_t i = 0; i < rows; ++i) {
            for (std::int64_t j = 0; j < k; ++j) {
              part[ta ? j * rows + i : i * k + j] = a[ta ? j * m + r0 + i : (r0 + i) * k + j];
            }
          }
          const Tensor c = Tensor::empty({rows, n}, DType::f32);
          ops::gemm(make_tensor(stored_shape(rows, k, ta), DType::bf16, part), b, c, 1.0, 0.0,
                    flag(ta), flag(tb));
          ASSERT_EQ(std::memcmp(c.data(), whole.slice(r0, r0 + rows).data(), c.nbytes()), 0)
              << "rows " << r0 << ".." << r0 + rows << " ta=" << ta << " tb=" << tb;
        }
      }
    }
  }
}

// Non-finite values reach the result on every path (the tiles included): a NaN of A spoils its
// row, an infinity times zero is NaN, a sum past the f32 range is infinite, and the other rows
// stay finite. The NaN rollback and the bad-data policy rely on it.
TEST(Gemm, Bf16NonFiniteValuesPropagate) {
  constexpr std::int64_t m = 40, n = 40, k = 64;
  std::vector<double> a(m * k, 0.5), b(k * n, 0.25);
  a[3 * k + 5] = std::numeric_limits<double>::quiet_NaN();
  a[7 * k + 9] = std::numeric_limits<double>::infinity();
  b[9 * n + 11] = 0.0;
  for (std::int64_t j = 0; j < k; ++j) a[30 * k + j] = 3e38;  // row 30: 64 * 3e38 * 0.25
  const Tensor c = Tensor::empty({m, n}, DType::f32);
  ops::gemm(make_tensor({m, k}, DType::bf16, a), make_tensor({k, n}, DType::bf16, b), c);
  const std::vector<double> v = values_of(c);
  for (std::int64_t j = 0; j < n; ++j) {
    EXPECT_TRUE(std::isnan(v[3 * n + j])) << "column " << j;
    EXPECT_EQ(v[30 * n + j], std::numeric_limits<double>::infinity()) << "column " << j;
    // 64 * 0.5 * 0.25, exact (63 terms in column 11, whose B has a zero in row 9).
    EXPECT_EQ(v[j], j == 11 ? 7.875 : 8.0) << "column " << j;
  }
  EXPECT_EQ(v[7 * n], std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(v[7 * n + 11])) << "infinity times zero";
}

// A bf16 product whose working memory does not fit the pool's limit throws OutOfMemoryError
// (what a training step backs off from), on every path, and leaves C as it was.
TEST(Gemm, Bf16ProductBeyondTheMemoryLimitThrowsOutOfMemory) {
  constexpr std::int64_t m = 64, n = 2048, k = 1024;  // B, packed or widened: 4 MiB at least
  const Tensor a = make_tensor({k, m}, DType::bf16, random_reals(m * k, DType::bf16, 700));
  const Tensor b = make_tensor({k, n}, DType::bf16, random_reals(k * n, DType::bf16, 701));
  const Tensor c = make_tensor({m, n}, DType::f32, std::vector<double>(m * n, 3.0));
  const auto previous = set_current_resource(
      Device::cpu(),
      std::make_shared<LimitingResource>(std::make_shared<HostResource>(), std::size_t{1} << 20));
  EXPECT_THROW(ops::gemm(a, b, c, 1.0, 0.0, Transpose::yes), OutOfMemoryError);
  set_current_resource(Device::cpu(), previous);
  const std::vector<double> v = values_of(c);
  EXPECT_EQ(v.front(), 3.0);
  EXPECT_EQ(v.back(), 3.0);
}

TEST(Gemm, F16AccumulationIsNotF16) {
  // A sum of 4096 ones: an f16 accumulator would stall at 2048 (2049 is not an f16).
  const std::int64_t k = 4096;
  const Tensor a = make_tensor({1, k}, DType::f16, std::vector<double>(k, 1.0));
  const Tensor b = make_tensor({k, 1}, DType::f16, std::vector<double>(k, 1.0));
  const Tensor c = Tensor::empty({1, 1}, DType::f32);
  ops::gemm(a, b, c);
  EXPECT_EQ(values_of(c)[0], 4096.0);
}

// k == 0 gives C = beta * C on every path (f64 through Eigen, bf16 through AMX included): a -0 in
// C or in addmm's bias stays -0, beta == 0 writes zeros over NaN, beta == 2 doubles.
TEST(Gemm, AnEmptyInnerDimensionScalesCAndKeepsItsSigns) {
  for (DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    for (DType c_dtype : {dtype, DType::f32}) {
      if (c_dtype == DType::f32 && dtype == DType::f64) continue;
      const std::string what =
          std::string(to_string(dtype)) + " into " + std::string(to_string(c_dtype));
      const Tensor a = Tensor::empty(Shape{3, 0}, dtype), b = Tensor::empty(Shape{0, 2}, dtype);
      const std::vector<double> c0 = {-0.0, 1.5, -2.0, std::numeric_limits<double>::quiet_NaN(),
                                      0.0,  -0.0};
      for (const double beta : {1.0, 2.0, 0.0}) {
        const Tensor c = make_tensor(Shape{3, 2}, c_dtype, c0);
        ops::gemm(a, b, c, 1.0, beta);
        const std::vector<double> got = values_of(c);
        for (std::size_t i = 0; i < c0.size(); ++i) {
          const double want = beta == 0.0 ? 0.0 : beta * c0[i];
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got[i])) << what << " beta " << beta << " element " << i;
          } else {
            EXPECT_EQ(got[i], want) << what << " beta " << beta << " element " << i;
            EXPECT_EQ(std::signbit(got[i]), std::signbit(want))
                << what << " beta " << beta << " element " << i;
          }
        }
      }
      const Tensor bias = make_tensor(Shape{2}, c_dtype, {-0.0, 3.0});
      const Tensor c = make_tensor(Shape{3, 2}, c_dtype, c0);
      ops::addmm(bias, a, b, c, 0.5);
      const std::vector<double> got = values_of(c);
      for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(got[2 * i] == 0.0 && std::signbit(got[2 * i])) << what << " row " << i;
        EXPECT_EQ(got[2 * i + 1], 3.0) << what << " row " << i;
      }
      const Tensor batch = make_tensor(Shape{1, 3, 2}, c_dtype, c0);
      ops::gemm_batched(Tensor::empty(Shape{1, 3, 0}, dtype), Tensor::empty(Shape{1, 0, 2}, dtype),
                        batch, 1.0, 1.0);
      EXPECT_TRUE(std::signbit(values_of(batch)[0])) << what << " gemm_batched";
    }
  }
}

// addmm has the bits of filling c's rows with the bias and then gemm with beta = 1, for every
// dtype (bf16 through the AMX epilogue where the CPU has it), c of the inputs' dtype or f32,
// every transpose, alpha != 1, k = 0 (a -0 bias stays -0) and NaN in the bias; bad biases are
// refused.
TEST(Gemm, AddmmHasTheBitsOfBiasRowsThenGemm) {
  const std::tuple<std::int64_t, std::int64_t, std::int64_t> sizes[] = {
      {3, 5, 4}, {33, 17, 65}, {130, 40, 64}, {64, 48, 0}};
  for (DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    for (DType c_dtype : {dtype, DType::f32}) {
      if (c_dtype == DType::f32 && dtype == DType::f64) continue;  // f64 products stay f64
      for (auto [m, n, k] : sizes) {
        for (int t = 0; t < 4; ++t) {
          const bool ta = (t & 1) != 0;
          const bool tb = (t & 2) != 0;
          const std::string what = std::string(to_string(dtype)) + " into " +
                                   std::string(to_string(c_dtype)) + " " + std::to_string(m) + "x" +
                                   std::to_string(n) + "x" + std::to_string(k) + (ta ? " ta" : "") +
                                   (tb ? " tb" : "");
          const auto seed = static_cast<std::uint32_t>(m * 7 + n * 3 + k + t);
          const Tensor a = make_tensor(stored_shape(m, k, ta), dtype,
                                       random_reals(static_cast<std::size_t>(m * k), dtype, seed));
          const Tensor b =
              make_tensor(stored_shape(k, n, tb), dtype,
                          random_reals(static_cast<std::size_t>(k * n), dtype, seed + 1));
          std::vector<double> bias_values =
              random_reals(static_cast<std::size_t>(n), c_dtype, seed + 2);
          bias_values[0] = -0.0;
          if (n > 2) bias_values[2] = std::numeric_limits<double>::quiet_NaN();
          const Tensor bias = make_tensor(Shape{n}, c_dtype, bias_values);
          Tensor want = Tensor::empty(Shape{m, n}, c_dtype);
          for (std::int64_t i = 0; i < m; ++i) {
            std::memcpy(static_cast<std::byte*>(want.data()) + i * bias.nbytes(), bias.data(),
                        bias.nbytes());
          }
          ops::gemm(a, b, want, 0.5, 1.0, flag(ta), flag(tb));
          Tensor got = Tensor::empty(Shape{m, n}, c_dtype);
          ops::addmm(bias, a, b, got, 0.5, flag(ta), flag(tb));
          ASSERT_EQ(std::memcmp(want.data(), got.data(), want.nbytes()), 0) << what;
        }
      }
    }
  }
  const Tensor a = make_tensor(Shape{2, 3}, DType::f32, {1, 2, 3, 4, 5, 6});
  const Tensor b = make_tensor(Shape{3, 2}, DType::f32, {1, 0, 0, 1, 1, 1});
  Tensor c = Tensor::empty(Shape{2, 2}, DType::f32);
  EXPECT_THROW(ops::addmm(Tensor(), a, b, c), UsageError);
  EXPECT_THROW(ops::addmm(make_tensor(Shape{3}, DType::f32, {1, 2, 3}), a, b, c), UsageError);
  EXPECT_THROW(ops::addmm(make_tensor(Shape{2}, DType::f64, {1, 2}), a, b, c), UsageError);
  EXPECT_THROW(ops::addmm(make_tensor(Shape{1, 2}, DType::f32, {1, 2}), a, b, c), UsageError);
  EXPECT_THROW(ops::addmm(c.reshape(Shape{4}).slice(0, 2), a, b, c), UsageError);
  ops::addmm(make_tensor(Shape{2}, DType::f32, {10, 20}), a, b, c);
  EXPECT_EQ(values_of(c), (std::vector<double>{14, 25, 20, 31}));
}

TEST(Gemm, BetaZeroDoesNotReadC) {
  const Tensor a = make_tensor({2, 2}, DType::f32, {1, 2, 3, 4});
  const Tensor b = make_tensor({2, 2}, DType::f32, {1, 0, 0, 1});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor c = make_tensor({2, 2}, DType::f32, {nan, nan, nan, nan});
  ops::gemm(a, b, c);
  EXPECT_EQ(values_of(c), (std::vector<double>{1, 2, 3, 4}));
}

TEST(Gemm, EmptyInnerDimensionScalesC) {
  const Tensor a = Tensor::empty({2, 0}, DType::f64);
  const Tensor b = Tensor::empty({0, 3}, DType::f64);
  const Tensor c = make_tensor({2, 3}, DType::f64, {1, 2, 3, 4, 5, 6});
  ops::gemm(a, b, c, 1.0, 2.0);
  EXPECT_EQ(values_of(c), (std::vector<double>{2, 4, 6, 8, 10, 12}));
  ops::gemm(a, b, c);
  EXPECT_EQ(values_of(c), (std::vector<double>(6, 0.0)));
  const Tensor empty_c = Tensor::empty({0, 3}, DType::f64);
  ops::gemm(Tensor::empty({0, 4}, DType::f64), Tensor::empty({4, 3}, DType::f64), empty_c);
}

TEST(Gemm, ResultDoesNotDependOnTheThreadCount) {
  struct Case {
    std::int64_t m, n, k;
    bool ta, tb;
  };
  // Tails of every size, a matrix-vector shape (n = 1), depth blocking (large k), transposes.
  const Case cases[] = {{523, 97, 301, false, true},   {200, 1, 50, false, false},
                        {49, 5, 4, true, false},       {1, 64, 64, false, false},
                        {611, 33, 1000, true, true},   {1024, 64, 96, false, false},
                        {3000, 1, 1500, false, false}, {3000, 2, 1500, true, false}};
  std::uint32_t seed = 7;
  for (const Case& cs : cases) {
    for (const DType dtype : {DType::f64, DType::f32, DType::bf16}) {
      const Tensor a = make_tensor(stored_shape(cs.m, cs.k, cs.ta), dtype,
                                   random_reals(cs.m * cs.k, dtype, seed++));
      const Tensor b = make_tensor(stored_shape(cs.k, cs.n, cs.tb), dtype,
                                   random_reals(cs.n * cs.k, dtype, seed++));
      const DType out = dtype == DType::bf16 ? DType::f32 : dtype;
      const Tensor c0 = make_tensor({cs.m, cs.n}, out, random_reals(cs.m * cs.n, out, seed++));
      std::vector<Tensor> results;
      for (const int threads : {1, 2, 3, 5, 8}) {
        CpuContext context(threads);
        const Tensor c = c0.clone();
        kernels::cpu::gemm(context, {a, b, c, cs.m, cs.n, cs.k, cs.ta, cs.tb, 1.25, -0.75});
        results.push_back(c);
      }
      for (std::size_t i = 1; i < results.size(); ++i) {
        EXPECT_EQ(std::memcmp(results[i].data(), results[0].data(), results[0].nbytes()), 0)
            << to_string(dtype) << " m=" << cs.m << " n=" << cs.n << " k=" << cs.k << " result "
            << i;
      }
    }
  }
}

TEST(Matmul, ReturnsANewTensorOfTheInputDtypeOrTheRequestedOne) {
  const Tensor a = make_tensor({2, 3}, DType::f64, {1, 2, 3, 4, 5, 6});
  const Tensor b = make_tensor({3, 2}, DType::f64, {7, 8, 9, 10, 11, 12});
  const Tensor c = ops::matmul(a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  EXPECT_EQ(c.dtype(), DType::f64);
  EXPECT_EQ(values_of(c), (std::vector<double>{58, 64, 139, 154}));

  const Tensor h = ops::matmul(make_tensor({2, 3}, DType::bf16, {1, 2, 3, 4, 5, 6}),
                               make_tensor({3, 2}, DType::bf16, {7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(h.dtype(), DType::bf16);
  EXPECT_EQ(values_of(h), (std::vector<double>{58, 64, 139, 154}));
  const Tensor f = ops::matmul(make_tensor({2, 3}, DType::f16, {1, 2, 3, 4, 5, 6}),
                               make_tensor({3, 2}, DType::f16, {7, 8, 9, 10, 11, 12}), DType::f32);
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(values_of(f), (std::vector<double>{58, 64, 139, 154}));
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    EXPECT_EQ(e.fault_class(), FaultClass::usage);
    EXPECT_FALSE(e.fix().empty());
    return e.cause() + " -- fix: " + e.fix();
  }
  ADD_FAILURE() << "expected a UsageError";
  return {};
}

// gemm_batched gives each product the bits gemm gives it, for small products (spread over the
// threads, one each) and large ones (one after the other on every thread), every transpose, f64,
// f32 and bf16, on 1, 2 and 5 threads.
TEST(GemmBatched, EachProductHasTheBitsOfGemm) {
  struct Case {
    std::int64_t count, m, n, k;
  };
  std::uint32_t seed = 600;
  for (const Case& cs : {Case{7, 13, 9, 11}, Case{3, 160, 130, 140}, Case{1, 5, 4, 3}}) {
    for (const DType dtype : {DType::f64, DType::f32, DType::bf16}) {
      for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
          const Shape sa = ta ? Shape{cs.count, cs.k, cs.m} : Shape{cs.count, cs.m, cs.k};
          const Shape sb = tb ? Shape{cs.count, cs.n, cs.k} : Shape{cs.count, cs.k, cs.n};
          const Tensor a = make_tensor(sa, dtype, random_reals(sa.numel(), dtype, seed++));
          const Tensor b = make_tensor(sb, dtype, random_reals(sb.numel(), dtype, seed++));
          const DType out = dtype == DType::bf16 ? DType::f32 : dtype;
          const Tensor c0 = make_tensor({cs.count, cs.m, cs.n}, out,
                                        random_reals(cs.count * cs.m * cs.n, out, seed++));
          const Tensor want = c0.clone();
          for (std::int64_t i = 0; i < cs.count; ++i) {
            const auto item = [i](const Tensor& t) {
              return t.slice(i, i + 1).reshape(Shape{t.shape()[1], t.shape()[2]});
            };
            ops::gemm(item(a), item(b), item(want), 1.5, 0.5, flag(ta), flag(tb));
          }
          for (const int threads : {1, 2, 5}) {
            CpuContext context(threads);
            const Tensor c = c0.clone();
            std::vector<kernels::GemmArgs> products;
            for (std::int64_t i = 0; i < cs.count; ++i) {
              const auto item = [i](const Tensor& t) {
                return t.slice(i, i + 1).reshape(Shape{t.shape()[1], t.shape()[2]});
              };
              products.push_back({item(a), item(b), item(c), cs.m, cs.n, cs.k, ta, tb, 1.5, 0.5});
            }
            kernels::cpu::gemm_batched(context, products);
            EXPECT_EQ(std::memcmp(c.data(), want.data(), c.nbytes()), 0)
                << to_string(dtype) << " count " << cs.count << " ta=" << ta << " tb=" << tb
                << " threads " << threads;
          }
          const Tensor c = c0.clone();
          ops::gemm_batched(a, b, c, 1.5, 0.5, flag(ta), flag(tb));
          EXPECT_EQ(std::memcmp(c.data(), want.data(), c.nbytes()), 0)
              << to_string(dtype) << " count " << cs.count << " ta=" << ta << " tb=" << tb;
        }
      }
    }
  }
}

TEST(GemmBatched, ErrorsNameTheOperandsAndTheFix) {
  const Tensor a = Tensor::empty({2, 3, 4}, DType::f32);
  const Tensor b = Tensor::empty({2, 4, 5}, DType::f32);
  std::string m = message_of([&] {
    ops::gemm_batched(a, b, Tensor::empty({3, 3, 5}, DType::f32));
  });
  EXPECT_NE(m.find("gemm_batched: a holds 2 matrices, b 2 and c 3"), std::string::npos) << m;
  m = message_of([&] {
    ops::gemm_batched(Tensor::empty({3, 4}, DType::f32), b, Tensor::empty({2, 3, 5}, DType::f32));
  });
  EXPECT_NE(m.find("gemm_batched"), std::string::npos) << m;
  EXPECT_NE(m.find("[count, rows, cols]"), std::string::npos) << m;
  m = message_of([&] {
    ops::gemm_batched(a, Tensor::empty({2, 5, 4}, DType::f32),
                      Tensor::empty({2, 3, 4}, DType::f32));
  });
  EXPECT_NE(m.find("gemm_batched: a has shape [3, 4] but b has shape [5, 4]"), std::string::npos)
      << m;
  const Tensor c = Tensor::empty({2, 3, 5}, DType::f32);
  m = message_of([&] { ops::gemm_batched(c, b, c); });
  EXPECT_NE(m.find("overlaps"), std::string::npos) << m;
  ops::gemm_batched(Tensor::empty({0, 3, 4}, DType::f32), Tensor::empty({0, 4, 5}, DType::f32),
                    Tensor::empty({0, 3, 5}, DType::f32));  // no products: nothing to do
}

TEST(Gemm, ErrorsNameTheOperandsAndTheFix) {
  const Tensor a = Tensor::empty({3, 4}, DType::f32);
  const Tensor b = Tensor::empty({5, 2}, DType::f32);
  const Tensor c = Tensor::empty({3, 2}, DType::f32);
  std::string m = message_of([&] { ops::gemm(a, b, c); });
  EXPECT_NE(m.find("gemm: a has shape [3, 4] but b has shape [5, 2]; inner dimensions 4 and 5 "
                   "must match"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("Transpose::yes"), std::string::npos) << m;

  m = message_of([&] {
    ops::gemm(a, Tensor::empty({2, 5}, DType::f32), c, 1.0, 0.0, Transpose::yes, Transpose::yes);
  });
  EXPECT_NE(m.find("a^T has shape [4, 3] (a is [3, 4]) but b^T has shape [5, 2]"),
            std::string::npos)
      << m;

  m = message_of([&] {
    ops::gemm(a, Tensor::empty({4, 2}, DType::f32), Tensor::empty({2, 3}, DType::f32));
  });
  EXPECT_NE(m.find("c has shape [2, 3] but op(a) * op(b) has shape [3, 2]"), std::string::npos)
      << m;
  EXPECT_NE(m.find("allocate c as [3, 2]"), std::string::npos) << m;

  m = message_of([&] { ops::gemm(a, Tensor::empty({4, 2}, DType::f64), c); });
  EXPECT_NE(m.find("gemm: a is f32 but b is f64"), std::string::npos) << m;

  m = message_of([&] {
    ops::gemm(a, Tensor::empty({4, 2}, DType::f32), Tensor::empty({3, 2}, DType::f64));
  });
  EXPECT_NE(m.find("gemm: a and b are f32 but c is f64"), std::string::npos) << m;

  m = message_of([&] {
    ops::gemm(Tensor::empty({3, 4}, DType::f16), Tensor::empty({4, 2}, DType::f16),
              Tensor::empty({3, 2}, DType::bf16));
  });
  EXPECT_NE(m.find("make c f16 or f32"), std::string::npos) << m;

  m = message_of([&] { ops::gemm(Tensor::empty({12}, DType::f32), b, c); });
  EXPECT_NE(m.find("gemm: a has shape [12] but must be a 2-D matrix"), std::string::npos) << m;

  m = message_of([&] {
    ops::gemm(Tensor::empty({3, 4}, DType::i32), Tensor::empty({4, 2}, DType::i32),
              Tensor::empty({3, 2}, DType::i32));
  });
  EXPECT_NE(m.find("floating-point"), std::string::npos) << m;

  m = message_of([&] { ops::gemm(Tensor(), b, c); });
  EXPECT_NE(m.find("gemm: a is an undefined tensor"), std::string::npos) << m;

  const Tensor square = Tensor::empty({4, 4}, DType::f32);
  m = message_of([&] { ops::gemm(square, Tensor::empty({4, 4}, DType::f32), square); });
  EXPECT_NE(m.find("gemm: c overlaps a"), std::string::npos) << m;

  m = message_of([&] { (void)ops::matmul(a, b); });
  EXPECT_NE(m.find("matmul: a has shape [3, 4] but b has shape [5, 2]; inner dimensions 4 and 5 "
                   "must match"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace tenax
