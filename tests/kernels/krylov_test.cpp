// The fused Krylov kernels on the CPU backend: bit-for-bit agreement with the separate ops they
// replace (ops::axpby, ops::mul, ops::spmv, ops::laplacian_* + ops::scale, ops::dot), the
// documented reduction order, plain references, independence of the thread count, empty
// operands, and the validation of every operand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/documented_order.hpp"
#include "kernels/krylov_test_helpers.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/detail/krylov_kernels.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_krylov.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace tenax {
namespace {

using testing::bits;
using testing::documented_dot;
using testing::expect_contains;
using testing::five_point_csr;
using testing::get_value;
using testing::make_tensor;
using testing::random_tensor;
using testing::same_bytes;
using testing::usage_error;
using testing::values_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr DType kDtypes[] = {DType::f64, DType::f32};

// Lengths around the lane row (16) and the reduction block (4096), and some that split over
// several threads (the CPU hands out at least 8 blocks per thread).
const std::int64_t kLengths[] = {1,       15,     16, 17, 4095, 4096, 4097, 8191, 3 * 4096 + 1000,
                                 100'003, 300'001};

Tensor nan_tensor(const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  ops::fill(t, kNaN);
  return t;
}

// sum |a_i b_i| in long double, and the sum itself: the scale of a dot's rounding error.
struct LongDot {
  long double sum = 0;
  long double abs = 0;
};
LongDot long_dot(const std::vector<double>& a, const std::vector<double>& b) {
  LongDot d;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const long double t = static_cast<long double>(a[i]) * b[i];
    d.sum += t;
    d.abs += std::fabs(t);
  }
  return d;
}

// ---- cg_update ----

TEST(CgUpdate, MatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 1;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor p = random_tensor({n}, dtype, seed++);
      const Tensor q = random_tensor({n}, dtype, seed++);
      const Tensor x = random_tensor({n}, dtype, seed++);
      const Tensor r = random_tensor({n}, dtype, seed++);
      const Tensor x2 = x.clone();
      const Tensor r2 = r.clone();
      const double alpha = 0.7391;
      const double rr = ops::cg_update(alpha, p, q, x, r);
      ops::axpby(alpha, p, 1.0, x2);
      ops::axpby(-alpha, q, 1.0, r2);
      EXPECT_TRUE(same_bytes(x, x2)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same_bytes(r, r2)) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(rr), bits(ops::dot(r2, r2))) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(rr), bits(ops::dot(r, r))) << to_string(dtype) << " n=" << n;
    }
  }
}

template <class T>
void expect_cg_update_matches_plain_loops(DType dtype, std::int64_t n, std::uint32_t seed) {
  const auto p = testing::random_reals(n, dtype, seed);
  const auto q = testing::random_reals(n, dtype, seed + 1);
  auto x = testing::random_reals(n, dtype, seed + 2);
  auto r = testing::random_reals(n, dtype, seed + 3);
  const Tensor tp = make_tensor(p, dtype), tq = make_tensor(q, dtype);
  const Tensor tx = make_tensor(x, dtype), tr = make_tensor(r, dtype);
  const double alpha = -1.3;
  const double rr = ops::cg_update(alpha, tp, tq, tx, tr);
  const auto a = static_cast<T>(alpha);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<T>(static_cast<T>(x[i]) + static_cast<T>(a * static_cast<T>(p[i])));
    r[i] = static_cast<T>(static_cast<T>(r[i]) - static_cast<T>(a * static_cast<T>(q[i])));
  }
  EXPECT_EQ(values_of(tx), x) << to_string(dtype) << " n=" << n;
  EXPECT_EQ(values_of(tr), r) << to_string(dtype) << " n=" << n;
  EXPECT_EQ(bits(rr), bits(documented_dot(r, r))) << to_string(dtype) << " n=" << n;
  const LongDot exact = long_dot(r, r);
  EXPECT_NEAR(rr, static_cast<double>(exact.sum), 1e-14 * static_cast<double>(exact.abs));
}

TEST(CgUpdate, MatchesPlainLoopsAndTheDocumentedOrder) {
  std::uint32_t seed = 100;
  for (const std::int64_t n : kLengths) {
    expect_cg_update_matches_plain_loops<double>(DType::f64, n, seed += 4);
    expect_cg_update_matches_plain_loops<float>(DType::f32, n, seed += 4);
  }
}

TEST(CgUpdate, WorksOnGridShapedVectors) {
  // A CG on a stencil keeps its vectors in the grid's shape.
  const Tensor p = random_tensor({37, 129}, DType::f64, 1);
  const Tensor q = random_tensor({37, 129}, DType::f64, 2);
  const Tensor x = random_tensor({37, 129}, DType::f64, 3);
  const Tensor r = random_tensor({37, 129}, DType::f64, 4);
  const double rr = ops::cg_update(0.5, p, q, x, r);
  EXPECT_EQ(bits(rr), bits(ops::dot(r, r)));
}

// ---- pcg_jacobi_update ----

TEST(PcgJacobiUpdate, MatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 200;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor p = random_tensor({n}, dtype, seed++);
      const Tensor q = random_tensor({n}, dtype, seed++);
      const Tensor x = random_tensor({n}, dtype, seed++);
      const Tensor r = random_tensor({n}, dtype, seed++);
      const Tensor d = random_tensor({n}, dtype, seed++);
      const Tensor z = nan_tensor({n}, dtype);  // only written
      const Tensor x2 = x.clone();
      const Tensor r2 = r.clone();
      const Tensor z2 = Tensor::empty({n}, dtype);
      const double alpha = 0.41;
      const ops::PcgDots dots = ops::pcg_jacobi_update(alpha, p, q, x, r, d, z);
      ops::axpby(alpha, p, 1.0, x2);
      ops::axpby(-alpha, q, 1.0, r2);
      ops::binary_into(ops::BinaryOp::mul, d, r2, z2);
      EXPECT_TRUE(same_bytes(x, x2)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same_bytes(r, r2)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same_bytes(z, z2)) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(dots.rz), bits(ops::dot(r2, z2))) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(dots.rr), bits(ops::dot(r2, r2))) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(dots.rz), bits(documented_dot(values_of(r), values_of(z))));
    }
  }
}

TEST(PcgJacobiUpdate, WithAUnitDiagonalIsCgUpdate) {
  const std::int64_t n = 50'001;
  const Tensor p = random_tensor({n}, DType::f64, 1);
  const Tensor q = random_tensor({n}, DType::f64, 2);
  const Tensor x = random_tensor({n}, DType::f64, 3);
  const Tensor r = random_tensor({n}, DType::f64, 4);
  const Tensor x2 = x.clone();
  const Tensor r2 = r.clone();
  const Tensor ones = make_tensor(std::vector<double>(n, 1.0), DType::f64);
  const Tensor z = Tensor::empty({n}, DType::f64);
  const ops::PcgDots dots = ops::pcg_jacobi_update(2.5, p, q, x, r, ones, z);
  const double rr = ops::cg_update(2.5, p, q, x2, r2);
  EXPECT_EQ(bits(dots.rr), bits(rr));
  EXPECT_EQ(bits(dots.rz), bits(rr));
  EXPECT_TRUE(same_bytes(z, r2));
}

// ---- xpay ----

TEST(Xpay, MatchesAxpbyBitForBit) {
  std::uint32_t seed = 300;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      for (const double beta : {0.83, -2.0, 0.0}) {
        const Tensor z = random_tensor({n}, dtype, seed++);
        const Tensor p = random_tensor({n}, dtype, seed++);
        const Tensor p2 = p.clone();
        ops::xpay(z, beta, p);
        ops::axpby(1.0, z, beta, p2);
        EXPECT_TRUE(same_bytes(p, p2)) << to_string(dtype) << " n=" << n << " beta=" << beta;
      }
    }
  }
}

TEST(Xpay, PlainValuesAndBetaZeroDoesNotReadP) {
  const Tensor p = make_tensor({1, 2, 3}, DType::f32);
  ops::xpay(make_tensor({10, 20, 30}, DType::f32), 0.5, p);
  EXPECT_EQ(values_of(p), (std::vector<double>{10.5, 21, 31.5}));
  const Tensor z = random_tensor({5000}, DType::f64, 9);
  const Tensor nan = nan_tensor({5000}, DType::f64);
  ops::xpay(z, 0.0, nan);
  EXPECT_TRUE(same_bytes(nan, z));
}

// ---- cg_residual and cg_advance (the CG iteration's two vector passes) ----

TEST(CgResidual, MatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 250;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor q = random_tensor({n}, dtype, seed++);
      const Tensor d = random_tensor({n}, dtype, seed++);
      const Tensor r = random_tensor({n}, dtype, seed++);
      const Tensor r_jacobi = r.clone();
      const Tensor r_want = r.clone();
      const Tensor z = nan_tensor({n}, dtype);  // only written
      const double alpha = -0.6173;
      const ops::PcgDots plain = ops::cg_residual(alpha, q, r);
      const ops::PcgDots jacobi = ops::cg_residual(alpha, q, r_jacobi, d, z);
      ops::axpby(-alpha, q, 1.0, r_want);
      const Tensor z_want = ops::mul(d, r_want);
      const std::string where = std::string(to_string(dtype)) + " n=" + std::to_string(n);
      EXPECT_TRUE(same_bytes(r, r_want)) << where;
      EXPECT_TRUE(same_bytes(r_jacobi, r_want)) << where;
      EXPECT_TRUE(same_bytes(z, z_want)) << where;
      EXPECT_EQ(bits(plain.rr), bits(ops::dot(r_want, r_want))) << where;
      EXPECT_EQ(bits(plain.rz), bits(plain.rr)) << where << ": without inv_diag z is r";
      EXPECT_EQ(bits(jacobi.rr), bits(plain.rr)) << where;
      EXPECT_EQ(bits(jacobi.rz), bits(ops::dot(r_want, z_want))) << where;
      EXPECT_EQ(bits(jacobi.rz), bits(documented_dot(values_of(r_want), values_of(z_want))))
          << where;
    }
  }
}

TEST(CgResidual, IsTheResidualHalfOfPcgJacobiUpdate) {
  // cg_update + xpay and cg_residual + cg_advance split the same work at two places: x, r, z
  // and both dots agree bit for bit.
  const std::int64_t n = 70'001;
  for (const DType dtype : kDtypes) {
    const Tensor p = random_tensor({n}, dtype, 11), q = random_tensor({n}, dtype, 12);
    const Tensor d = random_tensor({n}, dtype, 13), x = random_tensor({n}, dtype, 14);
    const Tensor r = random_tensor({n}, dtype, 15), z = Tensor::empty({n}, dtype);
    const Tensor x2 = x.clone(), r2 = r.clone(), z2 = Tensor::empty({n}, dtype);
    const Tensor p2 = p.clone();
    const ops::PcgDots fused = ops::pcg_jacobi_update(0.37, p, q, x, r, d, z);
    ops::xpay(z, fused.rz / 3.5, p);
    const ops::PcgDots split = ops::cg_residual(0.37, q, r2, d, z2);
    ops::cg_advance(0.37, p2, split.rz / 3.5, z2, x2);
    EXPECT_EQ(bits(split.rz), bits(fused.rz)) << to_string(dtype);
    EXPECT_EQ(bits(split.rr), bits(fused.rr)) << to_string(dtype);
    for (const auto& [got, want] : {std::pair{x2, x}, {r2, r}, {z2, z}, {p2, p}}) {
      EXPECT_TRUE(same_bytes(got, want)) << to_string(dtype);
    }
  }
}

TEST(CgAdvance, MatchesAxpbyThenXpayBitForBit) {
  std::uint32_t seed = 270;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      for (const double beta : {0.83, -2.0, 0.0}) {
        const Tensor z = random_tensor({n}, dtype, seed++);
        const Tensor p = random_tensor({n}, dtype, seed++);
        const Tensor x = random_tensor({n}, dtype, seed++);
        const Tensor p2 = p.clone(), x2 = x.clone();
        ops::cg_advance(1.37, p, beta, z, x);
        ops::axpby(1.37, p2, 1.0, x2);
        ops::xpay(z, beta, p2);
        const std::string where = std::string(to_string(dtype)) + " n=" + std::to_string(n) +
                                  " beta=" + std::to_string(beta);
        EXPECT_TRUE(same_bytes(x, x2)) << where;
        EXPECT_TRUE(same_bytes(p, p2)) << where;
      }
    }
  }
}

TEST(CgAdvance, PlainValuesAndBetaZeroCopiesZ) {
  // x = x + 2 p = {3, 5, 7}; p = z + 0.5 p = {10.5, 21, 31.5}.
  const Tensor p = make_tensor({1, 2, 3}, DType::f32);
  const Tensor x = make_tensor({1, 1, 1}, DType::f32);
  ops::cg_advance(2.0, p, 0.5, make_tensor({10, 20, 30}, DType::f32), x);
  EXPECT_EQ(values_of(x), (std::vector<double>{3, 5, 7}));
  EXPECT_EQ(values_of(p), (std::vector<double>{10.5, 21, 31.5}));
  // beta == 0 stores z itself, -0.0 included (z + 0 * p would give +0.0).
  const Tensor z0 = make_tensor({-0.0, 4.0}, DType::f64);
  const Tensor p0 = make_tensor({1.0, 2.0}, DType::f64);
  const Tensor x0 = make_tensor({0.0, 0.0}, DType::f64);
  ops::cg_advance(1.0, p0, 0.0, z0, x0);
  EXPECT_TRUE(same_bytes(p0, z0));
  EXPECT_EQ(values_of(x0), (std::vector<double>{1.0, 2.0}));
}

// ---- spmv_dot ----

TEST(SpmvDot, MatchesSpmvAndDotBitForBit) {
  std::uint32_t seed = 400;
  // Grids from one row to several threads' worth of reduction blocks; nx = 1 and 2 give rows
  // of one to three entries.
  const std::int64_t grids[][2] = {{1, 1},   {1, 7},     {9, 1},    {33, 2},
                                   {64, 64}, {130, 129}, {301, 303}};
  for (const DType dtype : kDtypes) {
    for (const DType index : {DType::i32, DType::i64}) {
      for (const auto& g : grids) {
        const CsrMatrix a = five_point_csr(g[0], g[1], dtype, index, seed++);
        const std::int64_t n = a.rows();
        const Tensor p = random_tensor({n}, dtype, seed++);
        const Tensor q = nan_tensor({n}, dtype);  // only written
        const Tensor q2 = Tensor::empty({n}, dtype);
        const double pq = ops::spmv_dot(a, p, q);
        ops::spmv(a, p, q2);
        const std::string what = std::string(to_string(dtype)) + "/" +
                                 std::string(to_string(index)) + " " + std::to_string(g[0]) + "x" +
                                 std::to_string(g[1]);
        EXPECT_TRUE(same_bytes(q, q2)) << what;
        EXPECT_EQ(bits(pq), bits(ops::dot(p, q2))) << what;
        EXPECT_EQ(bits(pq), bits(documented_dot(values_of(p), values_of(q)))) << what;
      }
    }
  }
}

// A rank's rows of a distributed matrix read [ghosts below | local | ghosts above]: the dot pairs
// each row with the entry `pair` columns on, and equals ops::dot over that slice of p.
TEST(SpmvDot, PairsTheRowsWithTheEntriesFromItsOffset) {
  std::uint32_t seed = 450;
  for (const DType dtype : kDtypes) {
    // 70 x 90 rows of a 5-point matrix, read as a rank's rows with 20 columns below its own.
    const CsrMatrix whole = five_point_csr(90, 90, dtype, DType::i64, seed++);
    const std::int64_t rows = 70 * 90, below = 20 * 90, cols = whole.cols();
    const Tensor p = random_tensor({cols}, dtype, seed++);
    const Tensor q = Tensor::empty({cols}, dtype);
    ops::spmv(whole, p, q);
    // Rows [below, below + rows) of the whole matrix, with every column.
    const auto row_ptr = whole.row_ptr().data_as<const std::int64_t>();
    const std::int64_t first = row_ptr[below];
    const std::int64_t last = row_ptr[below + rows];
    Tensor rp = Tensor::empty({rows + 1}, DType::i64);
    for (std::int64_t r = 0; r <= rows; ++r) {
      rp.data_as<std::int64_t>()[r] = row_ptr[below + r] - first;
    }
    const CsrMatrix mine(rows, cols, rp, whole.col_idx().slice(first, last).clone(),
                         whole.values().slice(first, last).clone());
    const Tensor mine_q = nan_tensor({rows}, dtype);
    const double pq = ops::spmv_dot(mine, p, mine_q, below);
    EXPECT_TRUE(same_bytes(mine_q, q.slice(below, below + rows))) << to_string(dtype);
    EXPECT_EQ(bits(pq), bits(ops::dot(p.slice(below, below + rows), mine_q))) << to_string(dtype);
    expect_contains(usage_error([&] { (void)ops::spmv_dot(mine, p, mine_q, cols - rows + 1); }),
                    {"spmv_dot", "rows <= cols - pair"});
    expect_contains(usage_error([&] { (void)ops::spmv_dot(mine, p, mine_q, -1); }),
                    {"spmv_dot", "pair -1"});
  }
}

TEST(SpmvDot, MatchesTheDenseProduct) {
  std::uint32_t seed = 500;
  const std::int64_t n = 150;
  for (const DType dtype : kDtypes) {
    for (const DType index : {DType::i32, DType::i64}) {
      // Small integers and about a third of the entries nonzero (some rows empty): every sum is
      // exact, in f32 too.
      auto dense = testing::random_integers(static_cast<std::size_t>(n * n), 3, seed++);
      for (std::size_t i = 0; i < dense.size(); ++i) {
        if ((i * 2654435761u) % 3 != 0 || (i / n) % 17 == 5) dense[i] = 0.0;
      }
      const CsrMatrix a = CsrMatrix::from_dense(make_tensor({n, n}, dtype, dense), index);
      const auto p = testing::random_integers(static_cast<std::size_t>(n), 4, seed++);
      const Tensor q = Tensor::empty({n}, dtype);
      const double pq = ops::spmv_dot(a, make_tensor(p, dtype), q);
      std::vector<double> want(static_cast<std::size_t>(n), 0.0);
      double want_pq = 0.0;
      for (std::int64_t i = 0; i < n; ++i) {
        for (std::int64_t j = 0; j < n; ++j) want[i] += dense[i * n + j] * p[j];
        want_pq += p[i] * want[i];
      }
      EXPECT_EQ(values_of(q), want) << to_string(dtype) << "/" << to_string(index);
      EXPECT_EQ(pq, want_pq) << to_string(dtype) << "/" << to_string(index);
    }
  }
}

// ---- Laplacian stencils ----

const std::int64_t kGrids2d[][2] = {{1, 1},   {1, 5},     {4, 1},   {2, 2},   {3, 3},
                                    {2, 20},  {3, 18},    {5, 33},  {17, 33}, {64, 70},
                                    {64, 64}, {300, 301}, {1, 9000}};
const std::int64_t kGrids3d[][3] = {{1, 1, 1},   {2, 2, 2},   {3, 4, 5},    {1, 3, 40},  {4, 3, 18},
                                    {5, 17, 19}, {6, 20, 33}, {40, 41, 43}, {3, 3, 4096}};
const double kScales[] = {-1.0, 1.0, 0.37};

TEST(Laplacian5ptDot, MatchesLaplacianThenScaleThenDotBitForBit) {
  std::uint32_t seed = 600;
  for (const DType dtype : kDtypes) {
    for (const auto& g : kGrids2d) {
      for (const double scale : kScales) {
        for (const auto& [hy, hx] : {std::pair{1.0, 1.0}, std::pair{0.5, 0.3}}) {
          const Tensor p = random_tensor({g[0], g[1]}, dtype, seed++);
          const Tensor q = nan_tensor({g[0], g[1]}, dtype);
          const Tensor q2 = Tensor::empty({g[0], g[1]}, dtype);
          const double pq = ops::laplacian_5pt_dot(p, q, hy, hx, scale);
          ops::laplacian_5pt(p, q2, hy, hx);
          ops::scale(scale, q2);
          const std::string what = std::string(to_string(dtype)) + " " + std::to_string(g[0]) +
                                   "x" + std::to_string(g[1]) + " scale " + std::to_string(scale);
          EXPECT_TRUE(same_bytes(q, q2)) << what;
          EXPECT_EQ(bits(pq), bits(ops::dot(p, q2))) << what;
          EXPECT_EQ(bits(pq), bits(documented_dot(values_of(p), values_of(q)))) << what;
        }
      }
    }
  }
}

TEST(Laplacian7ptDot, MatchesLaplacianThenScaleThenDotBitForBit) {
  std::uint32_t seed = 700;
  for (const DType dtype : kDtypes) {
    for (const auto& g : kGrids3d) {
      for (const double scale : kScales) {
        const Tensor p = random_tensor({g[0], g[1], g[2]}, dtype, seed++);
        const Tensor q = nan_tensor({g[0], g[1], g[2]}, dtype);
        const Tensor q2 = Tensor::empty({g[0], g[1], g[2]}, dtype);
        const double pq = ops::laplacian_7pt_dot(p, q, 0.5, 0.7, 1.1, scale);
        ops::laplacian_7pt(p, q2, 0.5, 0.7, 1.1);
        ops::scale(scale, q2);
        const std::string what = std::string(to_string(dtype)) + " " + std::to_string(g[0]) + "x" +
                                 std::to_string(g[1]) + "x" + std::to_string(g[2]) + " scale " +
                                 std::to_string(scale);
        EXPECT_TRUE(same_bytes(q, q2)) << what;
        EXPECT_EQ(bits(pq), bits(ops::dot(p, q2))) << what;
        EXPECT_EQ(bits(pq), bits(documented_dot(values_of(p), values_of(q)))) << what;
      }
    }
  }
}

TEST(LaplacianDot, HandComputedGrids) {
  // The 3x4 grid of the stencil tests: L u is known, and -L u . u by hand.
  const std::vector<double> u = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<double> lu = {3, 2, 1, -5, -4, 0, 0, -9, -21, -14, -15, -29};
  for (const DType dtype : kDtypes) {
    const Tensor q = Tensor::empty({3, 4}, dtype);
    const double pq = ops::laplacian_5pt_dot(make_tensor({3, 4}, dtype, u), q, 1.0, 1.0, -1.0);
    double want = 0.0;
    std::vector<double> neg(lu.size());
    for (std::size_t i = 0; i < u.size(); ++i) {
      neg[i] = -lu[i];
      want += u[i] * neg[i];
    }
    EXPECT_EQ(values_of(q), neg) << to_string(dtype);
    EXPECT_EQ(pq, want) << to_string(dtype);
  }
  const Tensor q = Tensor::empty({2, 2, 2}, DType::f32);
  const double pq = ops::laplacian_7pt_dot(
      make_tensor({2, 2, 2}, DType::f32, {1, 2, 3, 4, 5, 6, 7, 8}), q, 1.0, 1.0, 1.0, 2.0);
  EXPECT_EQ(values_of(q), (std::vector<double>{8, -2, -12, -22, -32, -42, -52, -62}));
  EXPECT_EQ(pq, 8 - 4 - 36 - 88 - 160 - 252 - 364 - 496);
}

// ---- BiCGSTAB ----

TEST(BicgstabDirection, MatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 500;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor r = random_tensor({n}, dtype, seed++);
      const Tensor v = random_tensor({n}, dtype, seed++);
      const Tensor d = random_tensor({n}, dtype, seed++);
      const Tensor p = random_tensor({n}, dtype, seed++);
      const Tensor p2 = p.clone();
      const Tensor p3 = p.clone();
      const Tensor p_hat = nan_tensor({n}, dtype);  // only written
      const double beta = 1.37;
      const double omega = -0.611;
      ops::bicgstab_direction(beta, omega, r, v, p);
      ops::bicgstab_direction(beta, omega, r, v, p3, d, p_hat);
      ops::axpby(-omega, v, 1.0, p2);
      ops::axpby(1.0, r, beta, p2);
      EXPECT_TRUE(same_bytes(p, p2)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same_bytes(p3, p2)) << to_string(dtype) << " n=" << n;
      const Tensor want_hat = ops::mul(d, p2);
      EXPECT_TRUE(same_bytes(p_hat, want_hat)) << to_string(dtype) << " n=" << n;
    }
  }
}

TEST(BicgstabDirection, FirstIterationIsR) {
  // p and v start at 0 and beta = rho: p = r + rho (0 - 1 * 0) = r.
  const Tensor r = make_tensor({1.5, -2.0, 0.25}, DType::f64);
  const Tensor v = make_tensor({0, 0, 0}, DType::f64);
  const Tensor p = make_tensor({0, 0, 0}, DType::f64);
  ops::bicgstab_direction(7.0, 1.0, r, v, p);
  EXPECT_EQ(values_of(p), values_of(r));
  // A hand-computed case: 1 + 2 (3 - 0.5 * 4) = 3.
  const Tensor p1 = make_tensor({3.0}, DType::f64);
  ops::bicgstab_direction(2.0, 0.5, make_tensor({1.0}, DType::f64), make_tensor({4.0}, DType::f64),
                          p1);
  EXPECT_EQ(values_of(p1), std::vector<double>{3.0});
}

TEST(BicgstabResidual, MatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 600;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor v = random_tensor({n}, dtype, seed++);
      const Tensor d = random_tensor({n}, dtype, seed++);
      const Tensor r = random_tensor({n}, dtype, seed++);
      const Tensor r2 = r.clone();
      const Tensor r3 = r.clone();
      const Tensor s_hat = nan_tensor({n}, dtype);
      const double alpha = 0.8123;
      const double ss = ops::bicgstab_residual(alpha, v, r);
      const double ss3 = ops::bicgstab_residual(alpha, v, r3, d, s_hat);
      ops::axpby(-alpha, v, 1.0, r2);
      EXPECT_TRUE(same_bytes(r, r2)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same_bytes(r3, r2)) << to_string(dtype) << " n=" << n;
      const double nrm = ops::nrm2(r2);
      EXPECT_EQ(bits(std::sqrt(ss)), bits(nrm)) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(ss), bits(ops::dot(r2, r2))) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(ss3), bits(ss)) << to_string(dtype) << " n=" << n;
      const Tensor want_hat = ops::mul(d, r2);
      EXPECT_TRUE(same_bytes(s_hat, want_hat)) << to_string(dtype) << " n=" << n;
    }
  }
}

TEST(BicgstabUpdate, MatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 700;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      for (const bool separate_s_hat : {true, false}) {
        const Tensor p_hat = random_tensor({n}, dtype, seed++);
        const Tensor s_hat = random_tensor({n}, dtype, seed++);
        const Tensor t = random_tensor({n}, dtype, seed++);
        const Tensor r_hat = random_tensor({n}, dtype, seed++);
        const Tensor x = random_tensor({n}, dtype, seed++);
        const Tensor r = random_tensor({n}, dtype, seed++);  // holds s
        const Tensor x2 = x.clone();
        const Tensor r2 = r.clone();
        const double alpha = 0.45;
        const double omega = -1.21;
        const ops::BicgstabDots got = ops::bicgstab_update(
            alpha, p_hat, omega, separate_s_hat ? s_hat : Tensor{}, t, r_hat, x, r);
        ops::axpby(alpha, p_hat, 1.0, x2);
        ops::axpby(omega, separate_s_hat ? s_hat : r2, 1.0, x2);
        ops::axpby(-omega, t, 1.0, r2);
        const std::string what = std::string(to_string(dtype)) + " n=" + std::to_string(n) +
                                 (separate_s_hat ? " s_hat" : " s_hat = s");
        EXPECT_TRUE(same_bytes(x, x2)) << what;
        EXPECT_TRUE(same_bytes(r, r2)) << what;
        EXPECT_EQ(bits(got.rr), bits(ops::dot(r2, r2))) << what;
        EXPECT_EQ(bits(got.r_hat_r), bits(ops::dot(r_hat, r2))) << what;
      }
    }
  }
}

TEST(BicgstabUpdate, MatchesPlainLoopsAndTheDocumentedOrder) {
  const std::int64_t n = 3 * 4096 + 77;
  const auto p_hat = testing::random_reals(n, DType::f64, 801);
  const auto s_hat = testing::random_reals(n, DType::f64, 802);
  const auto t = testing::random_reals(n, DType::f64, 803);
  const auto r_hat = testing::random_reals(n, DType::f64, 804);
  auto x = testing::random_reals(n, DType::f64, 805);
  auto r = testing::random_reals(n, DType::f64, 806);
  const Tensor tx = make_tensor(x, DType::f64), tr = make_tensor(r, DType::f64);
  const ops::BicgstabDots got =
      ops::bicgstab_update(0.3, make_tensor(p_hat, DType::f64), 0.7, make_tensor(s_hat, DType::f64),
                           make_tensor(t, DType::f64), make_tensor(r_hat, DType::f64), tx, tr);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = (x[i] + 0.3 * p_hat[i]) + 0.7 * s_hat[i];
    r[i] = r[i] - 0.7 * t[i];
  }
  EXPECT_EQ(values_of(tx), x);
  EXPECT_EQ(values_of(tr), r);
  EXPECT_EQ(bits(got.rr), bits(documented_dot(r, r)));
  EXPECT_EQ(bits(got.r_hat_r), bits(documented_dot(r_hat, r)));
  const LongDot exact = long_dot(r_hat, r);
  EXPECT_NEAR(got.r_hat_r, static_cast<double>(exact.sum), 1e-14 * static_cast<double>(exact.abs));
}

TEST(SpmvDots, MatchesSpmvAndDotsBitForBit) {
  std::uint32_t seed = 900;
  for (const DType dtype : kDtypes) {
    for (const DType index : {DType::i32, DType::i64}) {
      for (const auto [ny, nx] :
           {std::pair<std::int64_t, std::int64_t>{1, 1}, {3, 5}, {64, 64}, {77, 129}, {301, 333}}) {
        const CsrMatrix a = five_point_csr(ny, nx, dtype, index, seed++);
        const Tensor p = random_tensor({a.cols()}, dtype, seed++);
        const Tensor w = random_tensor({a.rows()}, dtype, seed++);
        const Tensor q = nan_tensor({a.rows()}, dtype);
        const Tensor q2 = Tensor::empty({a.rows()}, dtype);
        const ops::SpmvDots got = ops::spmv_dots(a, p, q, w);
        ops::spmv(a, p, q2);
        const std::string what = std::string(to_string(dtype)) + "/" +
                                 std::string(to_string(index)) + " " + std::to_string(ny) + "x" +
                                 std::to_string(nx);
        EXPECT_TRUE(same_bytes(q, q2)) << what;
        EXPECT_EQ(bits(got.wq), bits(ops::dot(w, q2))) << what;
        EXPECT_EQ(bits(got.qq), bits(ops::dot(q2, q2))) << what;
        // w may be p itself: then wq is spmv_dot's p.(A p).
        const ops::SpmvDots self = ops::spmv_dots(a, p, q, p);
        EXPECT_EQ(bits(self.wq), bits(ops::spmv_dot(a, p, q2))) << what;
      }
    }
  }
}

TEST(SpmvDots, RectangularMatricesOfEitherShape) {
  // Tall: q = [1, 2, 3] (p = [1, 7]); w = [1, 1, 2]: w.q = 9, q.q = 14.
  const CsrMatrix tall = CsrMatrix::from_dense(make_tensor({3, 2}, DType::f64, {1, 0, 2, 0, 3, 0}));
  const Tensor q3 = Tensor::empty({3}, DType::f64);
  const ops::SpmvDots t =
      ops::spmv_dots(tall, make_tensor({1, 7}, DType::f64), q3, make_tensor({1, 1, 2}, DType::f64));
  EXPECT_EQ(t.wq, 9.0);
  EXPECT_EQ(t.qq, 14.0);
  // Wide: q = [1 + 2 * 5, 3 * 4] = [11, 12]; w = [2, -1]: w.q = 10, q.q = 265.
  const CsrMatrix wide = CsrMatrix::from_dense(make_tensor({2, 3}, DType::f64, {1, 0, 2, 0, 3, 0}));
  const Tensor q2 = Tensor::empty({2}, DType::f64);
  const ops::SpmvDots u = ops::spmv_dots(wide, make_tensor({1, 4, 5}, DType::f64), q2,
                                         make_tensor({2, -1}, DType::f64));
  EXPECT_EQ(u.wq, 10.0);
  EXPECT_EQ(u.qq, 265.0);
}

TEST(BicgstabChecks, OperandsAreValidatedBeforeAnythingIsWritten) {
  const Tensor a = make_tensor({1, 2, 3, 4}, DType::f64);
  const Tensor b = make_tensor({1, 1, 1, 1}, DType::f64);
  const Tensor c = make_tensor({2, 2, 2, 2}, DType::f64);
  const Tensor f = Tensor::empty({4}, DType::f32);
  const Tensor a5 = Tensor::empty({5}, DType::f64);
  expect_contains(usage_error([&] { ops::bicgstab_direction(1, 1, a, f, c); }),
                  {"bicgstab_direction", "r is f64", "v is f32"});
  expect_contains(usage_error([&] { ops::bicgstab_direction(1, 1, a, b, a); }),
                  {"bicgstab_direction", "p overlaps r"});
  expect_contains(usage_error([&] { ops::bicgstab_direction(1, 1, a, b, c, a5, a5.clone()); }),
                  {"bicgstab_direction", "inv_diag has shape [5]"});
  expect_contains(usage_error([&] { ops::bicgstab_direction(1, 1, a, b, c, a.clone()); }),
                  {"bicgstab_direction", "inv_diag and p_hat", "together"});
  expect_contains(usage_error([&] { ops::bicgstab_direction(1, 1, a, b, c, b.clone(), c); }),
                  {"bicgstab_direction", "p_hat overlaps p"});
  expect_contains(usage_error([&] { (void)ops::bicgstab_residual(1, a, a); }),
                  {"bicgstab_residual", "r overlaps v"});
  expect_contains(usage_error([&] { (void)ops::bicgstab_residual(1, a, c, b, b); }),
                  {"bicgstab_residual", "s_hat overlaps inv_diag"});
  expect_contains(usage_error([&] { (void)ops::bicgstab_residual(1, a, c, Tensor{}, b); }),
                  {"bicgstab_residual", "together"});
  expect_contains(
      usage_error([&] { (void)ops::bicgstab_update(1, a, 1, Tensor{}, b, a5, c.clone(), c); }),
      {"bicgstab_update", "r_hat has shape [5]"});
  expect_contains(
      usage_error([&] { (void)ops::bicgstab_update(1, a, 1, Tensor{}, b, a.clone(), c, c); }),
      {"bicgstab_update", "x overlaps r"});
  expect_contains(
      usage_error([&] { (void)ops::bicgstab_update(1, a, 1, c, b, a.clone(), b.clone(), c); }),
      {"bicgstab_update", "r overlaps s_hat"});
  const CsrMatrix m = five_point_csr(2, 2, DType::f64, DType::i32, 1);  // 4 x 4
  expect_contains(usage_error([&] { (void)ops::spmv_dots(m, a, b, a5); }),
                  {"spmv_dots", "w has shape [5]"});
  expect_contains(usage_error([&] { (void)ops::spmv_dots(m, a, b, b); }),
                  {"spmv_dots", "q overlaps w"});
  expect_contains(usage_error([&] { (void)ops::spmv_dots(m, a, b, f); }),
                  {"spmv_dots", "w is f32"});
  EXPECT_EQ(values_of(a), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(values_of(b), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(values_of(c), (std::vector<double>{2, 2, 2, 2}));
}

TEST(Bicgstab, SameBitsForAnyThreadCountAndEmptyOperands) {
  CpuContext one(1);
  CpuContext three(3);
  const std::int64_t n = 1'000'003;
  for (const DType dtype : kDtypes) {
    const Tensor v = random_tensor({n}, dtype, 1), d = random_tensor({n}, dtype, 2);
    const Tensor t = random_tensor({n}, dtype, 3), h = random_tensor({n}, dtype, 4);
    const Tensor r0 = random_tensor({n}, dtype, 5), x0 = random_tensor({n}, dtype, 6);
    const CsrMatrix a = five_point_csr(601, 733, dtype, DType::i32, 7);
    const Tensor pa = random_tensor({a.cols()}, dtype, 8);
    auto run = [&](CpuContext& context) {
      std::vector<double> values;
      std::vector<Tensor> outs;
      const Tensor p = r0.clone(), p_hat = Tensor::empty({n}, dtype);
      kernels::cpu::bicgstab_direction(context, {0.9, 0.4, r0, v, p, d, p_hat});
      const Tensor r = r0.clone(), s_hat = Tensor::empty({n}, dtype), x = x0.clone();
      values.push_back(kernels::cpu::residual_update(context, {0.3, v, r, d, s_hat}).rr);
      const Tensor r_plain = r0.clone();
      const ops::PcgDots plain = kernels::cpu::residual_update(context, {0.3, v, r_plain});
      values.push_back(plain.rr);
      values.push_back(plain.rz);
      const Tensor p_next = r0.clone(), x_next = x0.clone();
      kernels::cpu::cg_advance(context, {0.3, p_next, 0.7, h, x_next});
      const ops::BicgstabDots u =
          kernels::cpu::bicgstab_update(context, {0.3, 0.6, p_hat, s_hat, t, h, x, r});
      values.push_back(u.rr);
      values.push_back(u.r_hat_r);
      const Tensor qa = Tensor::empty({a.rows()}, dtype);
      const ops::SpmvDots sd = kernels::cpu::spmv_dots(context, {a, pa, qa, pa.slice(0, a.rows())});
      values.push_back(sd.wq);
      values.push_back(sd.qq);
      outs = {p, p_hat, r, s_hat, x, qa, r_plain, p_next, x_next};
      return std::pair{values, outs};
    };
    const auto want = run(one);
    const auto got = run(three);
    for (std::size_t k = 0; k < want.first.size(); ++k) {
      EXPECT_EQ(bits(got.first[k]), bits(want.first[k])) << to_string(dtype) << " result " << k;
    }
    for (std::size_t k = 0; k < want.second.size(); ++k) {
      EXPECT_TRUE(same_bytes(got.second[k], want.second[k])) << to_string(dtype) << " output " << k;
    }
    const Tensor e = Tensor::empty({0}, dtype);
    ops::bicgstab_direction(1, 1, e, Tensor::empty({0}, dtype), Tensor::empty({0}, dtype));
    EXPECT_EQ(ops::bicgstab_residual(1, e, Tensor::empty({0}, dtype)), 0.0);
    const ops::PcgDots cg_none = ops::cg_residual(
        1, e, Tensor::empty({0}, dtype), Tensor::empty({0}, dtype), Tensor::empty({0}, dtype));
    EXPECT_EQ(cg_none.rr, 0.0);
    EXPECT_EQ(cg_none.rz, 0.0);
    ops::cg_advance(1, e, 1, Tensor::empty({0}, dtype), Tensor::empty({0}, dtype));
    const ops::BicgstabDots none = ops::bicgstab_update(
        1, e, 1, Tensor{}, Tensor::empty({0}, dtype), Tensor::empty({0}, dtype),
        Tensor::empty({0}, dtype), Tensor::empty({0}, dtype));
    EXPECT_EQ(none.rr, 0.0);
    EXPECT_EQ(none.r_hat_r, 0.0);
  }
}

// ---- classical Gram-Schmidt against a basis ----

TEST(BasisDotsAndSubtract, MatchTheSeparateOpsBitForBit) {
  std::uint32_t seed = 1000;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : {std::int64_t{1}, std::int64_t{17}, std::int64_t{4097},
                                 std::int64_t{3 * 4096 + 1000}, std::int64_t{100'003}}) {
      for (const std::int64_t rows : {1, 2, 7, 31}) {
        const std::string what = std::string(to_string(dtype)) + " n=" + std::to_string(n) +
                                 " rows=" + std::to_string(rows);
        const Tensor basis = random_tensor({rows + 2, n}, dtype, seed++).slice(1, rows + 1);
        const Tensor w = random_tensor({n}, dtype, seed++);
        std::vector<double> h(static_cast<std::size_t>(rows));
        ops::basis_dots(basis, w, h);
        const Tensor w2 = w.clone();
        for (std::int64_t k = 0; k < rows; ++k) {
          const Tensor vk = basis.slice(k, k + 1).reshape({n});
          EXPECT_EQ(bits(h[static_cast<std::size_t>(k)]), bits(ops::dot(w, vk))) << what;
        }
        const double ww = ops::basis_subtract(basis, h, w);
        for (std::int64_t k = 0; k < rows; ++k) {
          ops::axpby(-h[static_cast<std::size_t>(k)], basis.slice(k, k + 1).reshape({n}), 1.0, w2);
        }
        EXPECT_TRUE(same_bytes(w, w2)) << what;
        EXPECT_EQ(bits(ww), bits(ops::dot(w2, w2))) << what;
        EXPECT_EQ(bits(std::sqrt(ww)), bits(ops::nrm2(w2))) << what;
      }
    }
  }
}

TEST(BasisDotsAndSubtract, SameBitsForAnyThreadCountAndHandValues) {
  const std::int64_t n = 700'001;
  const Tensor basis = random_tensor({9, n}, DType::f64, 1);
  const Tensor w0 = random_tensor({n}, DType::f64, 2);
  auto run = [&](int threads) {
    CpuContext context(threads);
    std::vector<double> h(9);
    kernels::cpu::basis_dots(context, {basis, w0}, h);
    const Tensor w = w0.clone();
    h.push_back(
        kernels::cpu::basis_subtract(context, {basis, w}, std::span<const double>(h).first(9)));
    return std::pair{h, w};
  };
  const auto want = run(1);
  for (const int threads : {2, 5}) {
    const auto got = run(threads);
    for (std::size_t k = 0; k < want.first.size(); ++k) {
      EXPECT_EQ(bits(got.first[k]), bits(want.first[k])) << k << " with " << threads;
    }
    EXPECT_TRUE(same_bytes(got.second, want.second)) << threads;
  }
  // [1 2; 0 1] rows against w = [3, 4]: dots 11 and 4; w - 11 v0 - 4 v1 = [-8, -22 + 4 - 4].
  const Tensor v = make_tensor({2, 2}, DType::f64, {1, 2, 0, 1});
  const Tensor w = make_tensor({3, 4}, DType::f64);
  double h[2];
  ops::basis_dots(v, w, h);
  EXPECT_EQ(h[0], 11.0);
  EXPECT_EQ(h[1], 4.0);
  EXPECT_EQ(ops::basis_subtract(v, h, w), 64.0 + 484.0);
  EXPECT_EQ(values_of(w), (std::vector<double>{-8, -22}));
}

TEST(BasisDotsAndSubtract, OperandsAreValidated) {
  const Tensor basis = Tensor::empty({3, 8}, DType::f64);
  const Tensor w = Tensor::empty({8}, DType::f64);
  std::vector<double> three(3), two(2);
  expect_contains(usage_error([&] { ops::basis_dots(basis, w, two); }),
                  {"basis_dots", "out has 2 entries", "3 rows"});
  expect_contains(usage_error([&] { (void)ops::basis_subtract(basis, two, w); }),
                  {"basis_subtract", "h has 2 entries"});
  expect_contains(
      usage_error([&] { ops::basis_dots(basis, Tensor::empty({7}, DType::f64), three); }),
      {"basis_dots", "w has shape [7]", "[8]"});
  expect_contains(usage_error([&] { ops::basis_dots(w, w.clone(), three); }),
                  {"basis_dots", "[K, n]"});
  expect_contains(
      usage_error([&] { ops::basis_dots(basis, Tensor::empty({8}, DType::f32), three); }),
      {"basis_dots", "w is f32"});
  expect_contains(
      usage_error([&] { (void)ops::basis_subtract(basis, three, basis.slice(1, 2).reshape({8})); }),
      {"basis_subtract", "w overlaps basis"});
  expect_contains(
      usage_error([&] {
        ops::basis_dots(Tensor::empty({3, 8}, DType::i32), Tensor::empty({8}, DType::i32), three);
      }),
      {"basis_dots", "f64 and f32"});
  // No rows: no dots, and the subtraction is w.w alone.
  const Tensor none = Tensor::empty({0, 2}, DType::f64);
  const Tensor w2 = make_tensor({3, 4}, DType::f64);
  ops::basis_dots(none, w2, std::span<double>());
  EXPECT_EQ(ops::basis_subtract(none, std::span<const double>(), w2), 25.0);
}

// ---- every kernel: thread count, empty operands ----

TEST(Krylov, SameBitsForAnyThreadCount) {
  CpuContext one(1);
  CpuContext two(2);
  CpuContext five(5);
  const std::int64_t n = 2'000'017;
  for (const DType dtype : kDtypes) {
    const Tensor p = random_tensor({n}, dtype, 1);
    const Tensor q = random_tensor({n}, dtype, 2);
    const Tensor x = random_tensor({n}, dtype, 3);
    const Tensor r = random_tensor({n}, dtype, 4);
    const Tensor d = random_tensor({n}, dtype, 5);
    const Tensor grid2 = random_tensor({701, 733}, dtype, 6);
    const Tensor grid3 = random_tensor({61, 70, 83}, dtype, 7);
    const CsrMatrix a = five_point_csr(701, 733, dtype, DType::i32, 8);
    const Tensor pa = random_tensor({a.cols()}, dtype, 9);

    struct Outcome {
      double value[6];
      Tensor out[8];
    };
    auto run = [&](CpuContext& context) {
      Outcome o;
      const Tensor xc = x.clone(), rc = r.clone(), x2 = x.clone(), r2 = r.clone();
      const Tensor z = Tensor::empty({n}, dtype), pc = p.clone();
      const Tensor q2 = Tensor::empty_like(grid2), q3 = Tensor::empty_like(grid3);
      const Tensor qa = Tensor::empty({a.rows()}, dtype);
      o.value[0] = kernels::cpu::cg_update(context, {0.3, p, q, xc, rc});
      const ops::PcgDots dots = kernels::cpu::pcg_jacobi_update(context, {0.3, p, q, x2, r2, d, z});
      o.value[1] = dots.rz;
      o.value[2] = dots.rr;
      o.value[3] = kernels::cpu::laplacian_5pt_dot(
          context, {{grid2, q2, 1, 701, 733, 1.0, 0.5, 0.25}, -1.0});
      o.value[4] =
          kernels::cpu::laplacian_7pt_dot(context, {{grid3, q3, 61, 70, 83, 0.3, 0.5, 0.25}, -1.0});
      o.value[5] = kernels::cpu::spmv_dot(context, {a, pa, qa});
      kernels::cpu::xpay(context, {r, 0.7, pc});
      o.out[0] = xc;
      o.out[1] = rc;
      o.out[2] = x2;
      o.out[3] = z;
      o.out[4] = q2;
      o.out[5] = q3;
      o.out[6] = qa;
      o.out[7] = pc;
      return o;
    };
    const Outcome want = run(one);
    for (CpuContext* context : {&two, &five}) {
      const Outcome got = run(*context);
      for (int k = 0; k < 6; ++k) {
        EXPECT_EQ(bits(got.value[k]), bits(want.value[k]))
            << to_string(dtype) << " result " << k << " with " << context->num_threads();
      }
      for (int k = 0; k < 8; ++k) {
        EXPECT_TRUE(same_bytes(got.out[k], want.out[k]))
            << to_string(dtype) << " output " << k << " with " << context->num_threads();
      }
    }
    EXPECT_EQ(bits(want.value[5]), bits(ops::dot(pa, want.out[6])));
  }
}

TEST(Krylov, EmptyOperandsReturnZero) {
  for (const DType dtype : kDtypes) {
    const Tensor e = Tensor::empty({0}, dtype);
    const Tensor f = Tensor::empty({0}, dtype);
    const Tensor g = Tensor::empty({0}, dtype);
    const Tensor h = Tensor::empty({0}, dtype);
    EXPECT_EQ(ops::cg_update(1.0, e, f, g, h), 0.0);
    const Tensor d = Tensor::empty({0}, dtype);
    const Tensor z = Tensor::empty({0}, dtype);
    const ops::PcgDots dots = ops::pcg_jacobi_update(1.0, e, f, g, h, d, z);
    EXPECT_EQ(dots.rz, 0.0);
    EXPECT_EQ(dots.rr, 0.0);
    ops::xpay(e, 2.0, f);
    EXPECT_EQ(ops::laplacian_5pt_dot(Tensor::empty({0, 5}, dtype), Tensor::empty({0, 5}, dtype),
                                     1.0, 1.0, -1.0),
              0.0);
    EXPECT_EQ(ops::laplacian_7pt_dot(Tensor::empty({3, 0, 4}, dtype),
                                     Tensor::empty({3, 0, 4}, dtype), 1.0, 1.0, 1.0, -1.0),
              0.0);
    const CsrMatrix a(0, 0, make_tensor({0}, DType::i32), Tensor::empty({0}, DType::i32),
                      Tensor::empty({0}, dtype));
    EXPECT_EQ(ops::spmv_dot(a, e, f), 0.0);
  }
}

// ---- validation ----

TEST(KrylovChecks, WrongDtypes) {
  const Tensor h = Tensor::empty({4}, DType::f16);
  const Tensor i = Tensor::empty({4}, DType::i32);
  const Tensor d = Tensor::empty({4}, DType::f64);
  const Tensor d2 = Tensor::empty({4}, DType::f64);
  const Tensor d3 = Tensor::empty({4}, DType::f64);
  const Tensor f = Tensor::empty({4}, DType::f32);
  expect_contains(
      usage_error([&] { (void)ops::cg_update(1.0, h, h.clone(), h.clone(), h.clone()); }),
      {"cg_update", "p is f16[4] on cpu", "f64 and f32", "ops::cast"});
  expect_contains(usage_error([&] { (void)ops::cg_update(1.0, d, d2, d3, f); }),
                  {"cg_update", "p is f64", "r is f32", "ops::cast"});
  expect_contains(
      usage_error([&] { (void)ops::pcg_jacobi_update(1.0, d, d2, d3, d.clone(), f, d.clone()); }),
      {"pcg_jacobi_update", "inv_diag is f32"});
  expect_contains(usage_error([&] { ops::xpay(i, 1.0, i.clone()); }), {"xpay", "z is i32[4]"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, d, f); }),
                  {"cg_residual", "v is f64", "r is f32", "ops::cast"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, d, d2, f, d3); }),
                  {"cg_residual", "inv_diag is f32"});
  expect_contains(usage_error([&] { ops::cg_advance(1.0, h, 1.0, h.clone(), h.clone()); }),
                  {"cg_advance", "p is f16[4] on cpu", "f64 and f32"});
  expect_contains(usage_error([&] { ops::cg_advance(1.0, d, 1.0, d2, f); }),
                  {"cg_advance", "p is f64", "x is f32"});
  expect_contains(usage_error([&] { ops::xpay(d, 1.0, f); }), {"xpay", "z is f64", "p is f32"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_5pt_dot(Tensor::empty({2, 2}, DType::bf16),
                                                 Tensor::empty({2, 2}, DType::bf16), 1, 1, 1);
                  }),
                  {"laplacian_5pt_dot", "p is bf16[2, 2]", "f64 and f32"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_7pt_dot(Tensor::empty({2, 2, 2}, DType::f64),
                                                 Tensor::empty({2, 2, 2}, DType::f32), 1, 1, 1, 1);
                  }),
                  {"laplacian_7pt_dot", "p is f64", "q is f32"});
  const CsrMatrix a = five_point_csr(2, 2, DType::f64, DType::i32, 1);
  expect_contains(usage_error([&] { (void)ops::spmv_dot(a, f, f.clone()); }),
                  {"spmv_dot", "a is f64", "p is f32", "q is f32", "ops::cast"});
}

TEST(KrylovChecks, MismatchedLengthsAndShapes) {
  const Tensor a4 = Tensor::empty({4}, DType::f64);
  const Tensor b4 = Tensor::empty({4}, DType::f64);
  const Tensor c4 = Tensor::empty({4}, DType::f64);
  const Tensor a5 = Tensor::empty({5}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::cg_update(1.0, a4, b4, a5, c4); }),
                  {"cg_update", "p has shape [4]", "x has shape [5]"});
  expect_contains(usage_error([&] {
                    (void)ops::pcg_jacobi_update(1.0, a4, b4, c4, a4.clone(), a4.clone(), a5);
                  }),
                  {"pcg_jacobi_update", "z has shape [5]"});
  expect_contains(usage_error([&] { ops::xpay(a4, 1.0, a5); }),
                  {"xpay", "z has shape [4]", "p has shape [5]"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_5pt_dot(Tensor::empty({2, 3}, DType::f32),
                                                 Tensor::empty({3, 2}, DType::f32), 1, 1, -1);
                  }),
                  {"laplacian_5pt_dot", "p has shape [2, 3]", "q has shape [3, 2]"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_5pt_dot(Tensor::empty({6}, DType::f32),
                                                 Tensor::empty({6}, DType::f32), 1, 1, -1);
                  }),
                  {"laplacian_5pt_dot", "p has shape [6]", "2-D grid"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_7pt_dot(Tensor::empty({2, 3}, DType::f32),
                                                 Tensor::empty({2, 3}, DType::f32), 1, 1, 1, -1);
                  }),
                  {"laplacian_7pt_dot", "3-D grid"});
  const CsrMatrix a = five_point_csr(2, 2, DType::f64, DType::i64, 1);  // 4 x 4
  expect_contains(usage_error([&] { (void)ops::spmv_dot(a, a5, a4); }),
                  {"spmv_dot", "p has shape [5]", "[4]"});
  expect_contains(usage_error([&] { (void)ops::spmv_dot(a, a4, a5); }),
                  {"spmv_dot", "q has shape [5]", "[4]"});
  // More rows than columns: p has no entry to pair with the last rows.
  const CsrMatrix tall = CsrMatrix::from_dense(make_tensor({3, 2}, DType::f64, {1, 0, 2, 0, 3, 0}));
  expect_contains(usage_error([&] {
                    (void)ops::spmv_dot(tall, Tensor::empty({2}, DType::f64),
                                        Tensor::empty({3}, DType::f64));
                  }),
                  {"spmv_dot", "[3, 2]", "rows <= cols"});
  // More columns than rows (a rank's [local | ghost] columns): the dot pairs q with p's first
  // entries. q = [1*1 + 2*5, 3*4] = [11, 12]; p.q = 1*11 + 4*12 = 59.
  const CsrMatrix wide = CsrMatrix::from_dense(make_tensor({2, 3}, DType::f64, {1, 0, 2, 0, 3, 0}));
  const Tensor p3 = make_tensor({3}, DType::f64, {1, 4, 5});
  Tensor q2 = Tensor::empty({2}, DType::f64);
  EXPECT_EQ(ops::spmv_dot(wide, p3, q2), 59.0);
  EXPECT_EQ(q2.data_as<double>()[0], 11.0);
  EXPECT_EQ(q2.data_as<double>()[1], 12.0);
}

TEST(KrylovChecks, DifferentDevices) {
  const Tensor c = Tensor::empty({4}, DType::f64);
  const Tensor c2 = Tensor::empty({4}, DType::f64);
  const Tensor c3 = Tensor::empty({4}, DType::f64);
  const Tensor g = testing::fake_cuda_tensor({4}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::cg_update(1.0, c, g, c2, c3); }),
                  {"cg_update", "p is on cpu", "q is on cuda:0", "to(device)"});
  expect_contains(
      usage_error([&] { (void)ops::pcg_jacobi_update(1.0, c, c2, c3, c.clone(), c.clone(), g); }),
      {"pcg_jacobi_update", "z is on cuda:0"});
  expect_contains(usage_error([&] { ops::xpay(g, 1.0, c); }),
                  {"xpay", "z is on cuda:0", "p is on cpu"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_5pt_dot(Tensor::empty({2, 2}, DType::f64),
                                                 testing::fake_cuda_tensor({2, 2}, DType::f64), 1,
                                                 1, -1);
                  }),
                  {"laplacian_5pt_dot", "q is on cuda:0"});
  const CsrMatrix a = five_point_csr(2, 2, DType::f64, DType::i32, 1);
  expect_contains(usage_error([&] { (void)ops::spmv_dot(a, c, g); }),
                  {"spmv_dot", "a is on cpu", "q is on cuda:0"});
}

TEST(KrylovChecks, OverlappingOutputs) {
  const Tensor p = Tensor::empty({8}, DType::f64);
  const Tensor q = Tensor::empty({8}, DType::f64);
  const Tensor x = Tensor::empty({8}, DType::f64);
  const Tensor r = Tensor::empty({8}, DType::f64);
  const Tensor d = Tensor::empty({8}, DType::f64);
  const Tensor z = Tensor::empty({8}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::cg_update(1.0, p, q, x, x); }),
                  {"cg_update", "x overlaps r", "separate tensors"});
  expect_contains(usage_error([&] { (void)ops::cg_update(1.0, p, q, p, r); }),
                  {"cg_update", "x overlaps p"});
  // Views that share part of their storage overlap too.
  const Tensor big = Tensor::empty({12}, DType::f64);
  expect_contains(
      usage_error([&] { (void)ops::cg_update(1.0, p, big.slice(4, 12), x, big.slice(0, 8)); }),
      {"cg_update", "r overlaps q"});
  expect_contains(usage_error([&] { (void)ops::pcg_jacobi_update(1.0, p, q, x, r, d, r); }),
                  {"pcg_jacobi_update", "r overlaps z"});
  expect_contains(usage_error([&] { (void)ops::pcg_jacobi_update(1.0, p, q, x, r, d, d); }),
                  {"pcg_jacobi_update", "z overlaps inv_diag"});
  expect_contains(usage_error([&] { ops::xpay(p, 0.5, p); }), {"xpay", "p overlaps z"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, r, r); }),
                  {"cg_residual", "r overlaps v"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, q, r, d, d); }),
                  {"cg_residual", "z overlaps inv_diag"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, q, r, d, r); }),
                  {"cg_residual", "z overlaps"});
  expect_contains(usage_error([&] { (void)ops::cg_residual(1.0, q, r, d, Tensor{}); }),
                  {"cg_residual", "inv_diag and z must be given together"});
  expect_contains(usage_error([&] { ops::cg_advance(1.0, p, 0.5, z, p); }),
                  {"cg_advance", "x overlaps p"});
  expect_contains(usage_error([&] { ops::cg_advance(1.0, p, 0.5, p, x); }),
                  {"cg_advance", "overlaps"});
  const Tensor grid = Tensor::empty({3, 3}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::laplacian_5pt_dot(grid, grid, 1, 1, -1); }),
                  {"laplacian_5pt_dot", "q overlaps p"});
  const Tensor cube = Tensor::empty({2, 2, 2}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::laplacian_7pt_dot(cube, cube, 1, 1, 1, -1); }),
                  {"laplacian_7pt_dot", "q overlaps p"});
  const CsrMatrix a = five_point_csr(2, 2, DType::f64, DType::i64, 1);  // 4 x 4, nnz 12
  expect_contains(usage_error([&] {
                    (void)ops::spmv_dot(a, Tensor::empty({4}, DType::f64), a.values().slice(0, 4));
                  }),
                  {"spmv_dot", "q overlaps a.values"});
  const Tensor v = Tensor::empty({4}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::spmv_dot(a, v, v); }), {"spmv_dot", "q overlaps p"});
}

TEST(KrylovChecks, BadScalarsAndUndefinedOperands) {
  const Tensor grid = Tensor::empty({3, 3}, DType::f64);
  const Tensor out = Tensor::empty({3, 3}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::laplacian_5pt_dot(grid, out, 0.0, 1, -1); }),
                  {"laplacian_5pt_dot", "hy", "positive"});
  expect_contains(usage_error([&] { (void)ops::laplacian_5pt_dot(grid, out, 1, 1, kNaN); }),
                  {"laplacian_5pt_dot", "scale is nan"});
  const Tensor cube = Tensor::empty({2, 2, 2}, DType::f64);
  const Tensor cube_out = Tensor::empty({2, 2, 2}, DType::f64);
  expect_contains(
      usage_error([&] { (void)ops::laplacian_7pt_dot(cube, cube_out, 1, 1, -2.0, -1); }),
      {"laplacian_7pt_dot", "hx", "positive"});
  expect_contains(usage_error([&] {
                    (void)ops::laplacian_7pt_dot(cube, cube_out, 1, 1, 1,
                                                 std::numeric_limits<double>::infinity());
                  }),
                  {"laplacian_7pt_dot", "scale is inf"});
  const Tensor v = Tensor::empty({4}, DType::f64);
  expect_contains(
      usage_error([&] { (void)ops::cg_update(1.0, v, v.clone(), Tensor(), v.clone()); }),
      {"cg_update", "x is an undefined tensor"});
  expect_contains(usage_error([&] { ops::xpay(Tensor(), 1.0, v); }),
                  {"xpay", "z is an undefined tensor"});
  expect_contains(usage_error([&] { (void)ops::spmv_dot(CsrMatrix(), v, v.clone()); }),
                  {"spmv_dot", "empty CsrMatrix"});
}

TEST(KrylovChecks, CheckedBeforeAnythingIsWritten) {
  // A failed check leaves every operand as it was.
  const Tensor p = make_tensor({1, 2, 3, 4}, DType::f64);
  const Tensor x = make_tensor({1, 1, 1, 1}, DType::f64);
  const Tensor r = make_tensor({2, 2, 2, 2}, DType::f64);
  EXPECT_THROW((void)ops::cg_update(1.0, p, Tensor::empty({4}, DType::f32), x, r), UsageError);
  EXPECT_THROW((void)ops::cg_residual(1.0, p, r, p.clone(), Tensor::empty({4}, DType::f32)),
               UsageError);
  EXPECT_THROW(ops::cg_advance(1.0, p, 1.0, Tensor::empty({5}, DType::f64), x), UsageError);
  EXPECT_EQ(values_of(p), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(values_of(x), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(values_of(r), (std::vector<double>{2, 2, 2, 2}));
}

TEST(KrylovDispatch, CudaTensorsInABuildWithoutCudaThrowNotCompiled) {
  if (tenax::cuda::compiled()) GTEST_SKIP() << "this build has the CUDA backend";
  auto g = [] { return testing::fake_cuda_tensor({4}, DType::f64); };
  const Tensor p = g(), q = g(), x = g(), r = g(), d = g(), z = g();
  try {
    (void)ops::cg_update(1.0, p, q, x, r);
    FAIL() << "cg_update of CUDA tensors must throw in a build without CUDA";
  } catch (const NotCompiledError& e) {
    expect_contains(e.what(), {"cg_update", "TENAX_WITH_CUDA"});
  }
  EXPECT_THROW((void)ops::pcg_jacobi_update(1.0, p, q, x, r, d, z), NotCompiledError);
  EXPECT_THROW(ops::xpay(p, 1.0, q), NotCompiledError);
  EXPECT_THROW((void)ops::cg_residual(1.0, q, r, d, z), NotCompiledError);
  EXPECT_THROW(ops::cg_advance(1.0, p, 1.0, z, x), NotCompiledError);
  const Tensor g2 = testing::fake_cuda_tensor({2, 2}, DType::f64);
  const Tensor g2b = testing::fake_cuda_tensor({2, 2}, DType::f64);
  EXPECT_THROW((void)ops::laplacian_5pt_dot(g2, g2b, 1, 1, -1), NotCompiledError);
  const Tensor g3 = testing::fake_cuda_tensor({2, 2, 2}, DType::f64);
  const Tensor g3b = testing::fake_cuda_tensor({2, 2, 2}, DType::f64);
  EXPECT_THROW((void)ops::laplacian_7pt_dot(g3, g3b, 1, 1, 1, -1), NotCompiledError);
  const CsrMatrix a = five_point_csr(2, 2, DType::f64, DType::i32, 1);
  EXPECT_THROW((void)kernels::cuda::spmv_dot(
                   {a, Tensor::empty({4}, DType::f64), Tensor::empty({4}, DType::f64)}),
               NotCompiledError);
}

}  // namespace
}  // namespace tenax
