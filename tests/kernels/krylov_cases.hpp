// The fused Krylov kernels' test bodies, written once and instantiated for every backend
// (krylov_test.cpp: the CPU, the reference; krylov_gpu_test.cpp: CUDA, skipped with the reason
// where no GPU is usable): on its backend each fused kernel gives the bits of the separate ops
// it replaces (ops::axpby, ops::mul, ops::spmv, ops::laplacian_* + ops::scale, ops::dot), of
// the documented reduction order and of hand-computed values, and handles empty operands. The
// operands are made on the CPU and moved to the backend's device; results are compared there.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend_test.hpp"
#include "kernels/documented_order.hpp"
#include "kernels/krylov_test_helpers.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_krylov.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace tenax::krylov_cases {

using testing::bits;
using testing::documented_dot;
using testing::five_point_csr;
using testing::make_tensor;
using testing::random_tensor;
using testing::values_of;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr DType kDtypes[] = {DType::f64, DType::f32};

// Lengths around the lane row (16) and the reduction block (4096), and some that split over
// several threads (the CPU hands out at least 8 blocks per thread).
inline const std::int64_t kLengths[] = {
    1, 15, 16, 17, 4095, 4096, 4097, 8191, 3 * 4096 + 1000, 100'003, 300'001};

inline const std::int64_t kGrids2d[][2] = {{1, 1},   {1, 5},     {4, 1},   {2, 2},   {3, 3},
                                           {2, 20},  {3, 18},    {5, 33},  {17, 33}, {64, 70},
                                           {64, 64}, {300, 301}, {1, 9000}};
inline const std::int64_t kGrids3d[][3] = {{1, 1, 1},   {2, 2, 2},    {3, 4, 5},
                                           {1, 3, 40},  {4, 3, 18},   {5, 17, 19},
                                           {6, 20, 33}, {40, 41, 43}, {3, 3, 4096}};
inline const double kScales[] = {-1.0, 1.0, 0.37};

// The fused Krylov kernels on the backend of the parameter (backend_test.hpp).
class KrylovKernels : public testing::BackendTest {};

TEST_P(KrylovKernels, CgUpdateMatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 1;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor p = random({n}, dtype, seed++);
      const Tensor q = random({n}, dtype, seed++);
      const Tensor x = random({n}, dtype, seed++);
      const Tensor r = random({n}, dtype, seed++);
      const Tensor x2 = x.clone();
      const Tensor r2 = r.clone();
      const double alpha = 0.7391;
      const double rr = ops::cg_update(alpha, p, q, x, r);
      ops::axpby(alpha, p, 1.0, x2);
      ops::axpby(-alpha, q, 1.0, r2);
      EXPECT_TRUE(same(x, x2)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same(r, r2)) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(rr), bits(ops::dot(r2, r2))) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(rr), bits(ops::dot(r, r))) << to_string(dtype) << " n=" << n;
    }
  }
}

TEST_P(KrylovKernels, CgUpdateWorksOnGridShapedVectors) {
  // A CG on a stencil keeps its vectors in the grid's shape.
  const Tensor p = random({37, 129}, DType::f64, 1);
  const Tensor q = random({37, 129}, DType::f64, 2);
  const Tensor x = random({37, 129}, DType::f64, 3);
  const Tensor r = random({37, 129}, DType::f64, 4);
  const double rr = ops::cg_update(0.5, p, q, x, r);
  EXPECT_EQ(bits(rr), bits(ops::dot(r, r)));
}

TEST_P(KrylovKernels, PcgJacobiUpdateMatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 200;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor p = random({n}, dtype, seed++);
      const Tensor q = random({n}, dtype, seed++);
      const Tensor x = random({n}, dtype, seed++);
      const Tensor r = random({n}, dtype, seed++);
      const Tensor d = random({n}, dtype, seed++);
      const Tensor z = nans({n}, dtype);  // only written
      const Tensor x2 = x.clone();
      const Tensor r2 = r.clone();
      const Tensor z2 = Tensor::empty({n}, dtype, device());
      const double alpha = 0.41;
      const ops::PcgDots dots = ops::pcg_jacobi_update(alpha, p, q, x, r, d, z);
      ops::axpby(alpha, p, 1.0, x2);
      ops::axpby(-alpha, q, 1.0, r2);
      ops::binary_into(ops::BinaryOp::mul, d, r2, z2);
      EXPECT_TRUE(same(x, x2)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same(r, r2)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same(z, z2)) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(dots.rz), bits(ops::dot(r2, z2))) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(dots.rr), bits(ops::dot(r2, r2))) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(dots.rz), bits(documented_dot(values_of(r), values_of(z))));
    }
  }
}

TEST_P(KrylovKernels, PcgJacobiUpdateWithAUnitDiagonalIsCgUpdate) {
  const std::int64_t n = 50'001;
  const Tensor p = random({n}, DType::f64, 1);
  const Tensor q = random({n}, DType::f64, 2);
  const Tensor x = random({n}, DType::f64, 3);
  const Tensor r = random({n}, DType::f64, 4);
  const Tensor x2 = x.clone();
  const Tensor r2 = r.clone();
  const Tensor ones = put(make_tensor(std::vector<double>(n, 1.0), DType::f64));
  const Tensor z = Tensor::empty({n}, DType::f64, device());
  const ops::PcgDots dots = ops::pcg_jacobi_update(2.5, p, q, x, r, ones, z);
  const double rr = ops::cg_update(2.5, p, q, x2, r2);
  EXPECT_EQ(bits(dots.rr), bits(rr));
  EXPECT_EQ(bits(dots.rz), bits(rr));
  EXPECT_TRUE(same(z, r2));
}

TEST_P(KrylovKernels, XpayMatchesAxpbyBitForBit) {
  std::uint32_t seed = 300;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      for (const double beta : {0.83, -2.0, 0.0}) {
        const Tensor z = random({n}, dtype, seed++);
        const Tensor p = random({n}, dtype, seed++);
        const Tensor p2 = p.clone();
        ops::xpay(z, beta, p);
        ops::axpby(1.0, z, beta, p2);
        EXPECT_TRUE(same(p, p2)) << to_string(dtype) << " n=" << n << " beta=" << beta;
      }
    }
  }
}

TEST_P(KrylovKernels, XpayPlainValuesAndBetaZeroDoesNotReadP) {
  const Tensor p = put(make_tensor({1, 2, 3}, DType::f32));
  ops::xpay(put(make_tensor({10, 20, 30}, DType::f32)), 0.5, p);
  EXPECT_EQ(values_of(p), (std::vector<double>{10.5, 21, 31.5}));
  const Tensor z = random({5000}, DType::f64, 9);
  const Tensor nan = nans({5000}, DType::f64);
  ops::xpay(z, 0.0, nan);
  EXPECT_TRUE(same(nan, z));
}

TEST_P(KrylovKernels, CgResidualMatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 250;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor q = random({n}, dtype, seed++);
      const Tensor d = random({n}, dtype, seed++);
      const Tensor r = random({n}, dtype, seed++);
      const Tensor r_jacobi = r.clone();
      const Tensor r_want = r.clone();
      const Tensor z = nans({n}, dtype);  // only written
      const double alpha = -0.6173;
      const ops::PcgDots plain = ops::cg_residual(alpha, q, r);
      const ops::PcgDots jacobi = ops::cg_residual(alpha, q, r_jacobi, d, z);
      ops::axpby(-alpha, q, 1.0, r_want);
      const Tensor z_want = ops::mul(d, r_want);
      const std::string where = std::string(to_string(dtype)) + " n=" + std::to_string(n);
      EXPECT_TRUE(same(r, r_want)) << where;
      EXPECT_TRUE(same(r_jacobi, r_want)) << where;
      EXPECT_TRUE(same(z, z_want)) << where;
      EXPECT_EQ(bits(plain.rr), bits(ops::dot(r_want, r_want))) << where;
      EXPECT_EQ(bits(plain.rz), bits(plain.rr)) << where << ": without inv_diag z is r";
      EXPECT_EQ(bits(jacobi.rr), bits(plain.rr)) << where;
      EXPECT_EQ(bits(jacobi.rz), bits(ops::dot(r_want, z_want))) << where;
      EXPECT_EQ(bits(jacobi.rz), bits(documented_dot(values_of(r_want), values_of(z_want))))
          << where;
    }
  }
}

TEST_P(KrylovKernels, CgResidualIsTheResidualHalfOfPcgJacobiUpdate) {
  // cg_update + xpay and cg_residual + cg_advance split the same work at two places: x, r, z
  // and both dots agree bit for bit.
  const std::int64_t n = 70'001;
  for (const DType dtype : kDtypes) {
    const Tensor p = random({n}, dtype, 11), q = random({n}, dtype, 12);
    const Tensor d = random({n}, dtype, 13), x = random({n}, dtype, 14);
    const Tensor r = random({n}, dtype, 15), z = Tensor::empty({n}, dtype, device());
    const Tensor x2 = x.clone(), r2 = r.clone(), z2 = Tensor::empty({n}, dtype, device());
    const Tensor p2 = p.clone();
    const ops::PcgDots fused = ops::pcg_jacobi_update(0.37, p, q, x, r, d, z);
    ops::xpay(z, fused.rz / 3.5, p);
    const ops::PcgDots split = ops::cg_residual(0.37, q, r2, d, z2);
    ops::cg_advance(0.37, p2, split.rz / 3.5, z2, x2);
    EXPECT_EQ(bits(split.rz), bits(fused.rz)) << to_string(dtype);
    EXPECT_EQ(bits(split.rr), bits(fused.rr)) << to_string(dtype);
    for (const auto& [got, want] : {std::pair{x2, x}, {r2, r}, {z2, z}, {p2, p}}) {
      EXPECT_TRUE(same(got, want)) << to_string(dtype);
    }
  }
}

TEST_P(KrylovKernels, CgAdvanceMatchesAxpbyThenXpayBitForBit) {
  std::uint32_t seed = 270;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      for (const double beta : {0.83, -2.0, 0.0}) {
        const Tensor z = random({n}, dtype, seed++);
        const Tensor p = random({n}, dtype, seed++);
        const Tensor x = random({n}, dtype, seed++);
        const Tensor p2 = p.clone(), x2 = x.clone();
        ops::cg_advance(1.37, p, beta, z, x);
        ops::axpby(1.37, p2, 1.0, x2);
        ops::xpay(z, beta, p2);
        const std::string where = std::string(to_string(dtype)) + " n=" + std::to_string(n) +
                                  " beta=" + std::to_string(beta);
        EXPECT_TRUE(same(x, x2)) << where;
        EXPECT_TRUE(same(p, p2)) << where;
      }
    }
  }
}

TEST_P(KrylovKernels, CgAdvancePlainValuesAndBetaZeroCopiesZ) {
  // x = x + 2 p = {3, 5, 7}; p = z + 0.5 p = {10.5, 21, 31.5}.
  const Tensor p = put(make_tensor({1, 2, 3}, DType::f32));
  const Tensor x = put(make_tensor({1, 1, 1}, DType::f32));
  ops::cg_advance(2.0, p, 0.5, put(make_tensor({10, 20, 30}, DType::f32)), x);
  EXPECT_EQ(values_of(x), (std::vector<double>{3, 5, 7}));
  EXPECT_EQ(values_of(p), (std::vector<double>{10.5, 21, 31.5}));
  // beta == 0 stores z itself, -0.0 included (z + 0 * p would give +0.0).
  const Tensor z0 = put(make_tensor({-0.0, 4.0}, DType::f64));
  const Tensor p0 = put(make_tensor({1.0, 2.0}, DType::f64));
  const Tensor x0 = put(make_tensor({0.0, 0.0}, DType::f64));
  ops::cg_advance(1.0, p0, 0.0, z0, x0);
  EXPECT_TRUE(same(p0, z0));
  EXPECT_EQ(values_of(x0), (std::vector<double>{1.0, 2.0}));
}

TEST_P(KrylovKernels, SpmvDotMatchesSpmvAndDotBitForBit) {
  std::uint32_t seed = 400;
  // Grids from one row to several threads' worth of reduction blocks; nx = 1 and 2 give rows
  // of one to three entries.
  const std::int64_t grids[][2] = {{1, 1},   {1, 7},     {9, 1},    {33, 2},
                                   {64, 64}, {130, 129}, {301, 303}};
  for (const DType dtype : kDtypes) {
    for (const DType index : {DType::i32, DType::i64}) {
      for (const auto& g : grids) {
        const CsrMatrix a = put(five_point_csr(g[0], g[1], dtype, index, seed++));
        const std::int64_t n = a.rows();
        const Tensor p = random({n}, dtype, seed++);
        const Tensor q = nans({n}, dtype);  // only written
        const Tensor q2 = Tensor::empty({n}, dtype, device());
        const double pq = ops::spmv_dot(a, p, q);
        ops::spmv(a, p, q2);
        const std::string what = std::string(to_string(dtype)) + "/" +
                                 std::string(to_string(index)) + " " + std::to_string(g[0]) + "x" +
                                 std::to_string(g[1]);
        EXPECT_TRUE(same(q, q2)) << what;
        EXPECT_EQ(bits(pq), bits(ops::dot(p, q2))) << what;
        EXPECT_EQ(bits(pq), bits(documented_dot(values_of(p), values_of(q)))) << what;
      }
    }
  }
}

TEST_P(KrylovKernels, SpmvDotMatchesTheDenseProduct) {
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
      const CsrMatrix a = put(CsrMatrix::from_dense(make_tensor({n, n}, dtype, dense), index));
      const auto p = testing::random_integers(static_cast<std::size_t>(n), 4, seed++);
      const Tensor q = Tensor::empty({n}, dtype, device());
      const double pq = ops::spmv_dot(a, put(make_tensor(p, dtype)), q);
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

TEST_P(KrylovKernels, Laplacian5ptDotMatchesLaplacianThenScaleThenDotBitForBit) {
  std::uint32_t seed = 600;
  for (const DType dtype : kDtypes) {
    for (const auto& g : kGrids2d) {
      for (const double scale : kScales) {
        for (const auto& [hy, hx] : {std::pair{1.0, 1.0}, std::pair{0.5, 0.3}}) {
          const Tensor p = random({g[0], g[1]}, dtype, seed++);
          const Tensor q = nans({g[0], g[1]}, dtype);
          const Tensor q2 = Tensor::empty({g[0], g[1]}, dtype, device());
          const double pq = ops::laplacian_5pt_dot(p, q, hy, hx, scale);
          ops::laplacian_5pt(p, q2, hy, hx);
          ops::scale(scale, q2);
          const std::string what = std::string(to_string(dtype)) + " " + std::to_string(g[0]) +
                                   "x" + std::to_string(g[1]) + " scale " + std::to_string(scale);
          EXPECT_TRUE(same(q, q2)) << what;
          EXPECT_EQ(bits(pq), bits(ops::dot(p, q2))) << what;
          EXPECT_EQ(bits(pq), bits(documented_dot(values_of(p), values_of(q)))) << what;
        }
      }
    }
  }
}

TEST_P(KrylovKernels, Laplacian7ptDotMatchesLaplacianThenScaleThenDotBitForBit) {
  std::uint32_t seed = 700;
  for (const DType dtype : kDtypes) {
    for (const auto& g : kGrids3d) {
      for (const double scale : kScales) {
        const Tensor p = random({g[0], g[1], g[2]}, dtype, seed++);
        const Tensor q = nans({g[0], g[1], g[2]}, dtype);
        const Tensor q2 = Tensor::empty({g[0], g[1], g[2]}, dtype, device());
        const double pq = ops::laplacian_7pt_dot(p, q, 0.5, 0.7, 1.1, scale);
        ops::laplacian_7pt(p, q2, 0.5, 0.7, 1.1);
        ops::scale(scale, q2);
        const std::string what = std::string(to_string(dtype)) + " " + std::to_string(g[0]) + "x" +
                                 std::to_string(g[1]) + "x" + std::to_string(g[2]) + " scale " +
                                 std::to_string(scale);
        EXPECT_TRUE(same(q, q2)) << what;
        EXPECT_EQ(bits(pq), bits(ops::dot(p, q2))) << what;
        EXPECT_EQ(bits(pq), bits(documented_dot(values_of(p), values_of(q)))) << what;
      }
    }
  }
}

TEST_P(KrylovKernels, LaplacianDotHandComputedGrids) {
  // The 3x4 grid of the stencil tests: L u is known, and -L u . u by hand.
  const std::vector<double> u = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<double> lu = {3, 2, 1, -5, -4, 0, 0, -9, -21, -14, -15, -29};
  for (const DType dtype : kDtypes) {
    const Tensor q = Tensor::empty({3, 4}, dtype, device());
    const double pq = ops::laplacian_5pt_dot(put(make_tensor({3, 4}, dtype, u)), q, 1.0, 1.0, -1.0);
    double want = 0.0;
    std::vector<double> neg(lu.size());
    for (std::size_t i = 0; i < u.size(); ++i) {
      neg[i] = -lu[i];
      want += u[i] * neg[i];
    }
    EXPECT_EQ(values_of(q), neg) << to_string(dtype);
    EXPECT_EQ(pq, want) << to_string(dtype);
  }
  const Tensor q = Tensor::empty({2, 2, 2}, DType::f32, device());
  const double pq = ops::laplacian_7pt_dot(
      put(make_tensor({2, 2, 2}, DType::f32, {1, 2, 3, 4, 5, 6, 7, 8})), q, 1.0, 1.0, 1.0, 2.0);
  EXPECT_EQ(values_of(q), (std::vector<double>{8, -2, -12, -22, -32, -42, -52, -62}));
  EXPECT_EQ(pq, 8 - 4 - 36 - 88 - 160 - 252 - 364 - 496);
}

TEST_P(KrylovKernels, BicgstabDirectionMatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 500;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor r = random({n}, dtype, seed++);
      const Tensor v = random({n}, dtype, seed++);
      const Tensor d = random({n}, dtype, seed++);
      const Tensor p = random({n}, dtype, seed++);
      const Tensor p2 = p.clone();
      const Tensor p3 = p.clone();
      const Tensor p_hat = nans({n}, dtype);  // only written
      const double beta = 1.37;
      const double omega = -0.611;
      ops::bicgstab_direction(beta, omega, r, v, p);
      ops::bicgstab_direction(beta, omega, r, v, p3, d, p_hat);
      ops::axpby(-omega, v, 1.0, p2);
      ops::axpby(1.0, r, beta, p2);
      EXPECT_TRUE(same(p, p2)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same(p3, p2)) << to_string(dtype) << " n=" << n;
      const Tensor want_hat = ops::mul(d, p2);
      EXPECT_TRUE(same(p_hat, want_hat)) << to_string(dtype) << " n=" << n;
    }
  }
}

TEST_P(KrylovKernels, BicgstabDirectionFirstIterationIsR) {
  // p and v start at 0 and beta = rho: p = r + rho (0 - 1 * 0) = r.
  const Tensor r = put(make_tensor({1.5, -2.0, 0.25}, DType::f64));
  const Tensor v = put(make_tensor({0, 0, 0}, DType::f64));
  const Tensor p = put(make_tensor({0, 0, 0}, DType::f64));
  ops::bicgstab_direction(7.0, 1.0, r, v, p);
  EXPECT_EQ(values_of(p), values_of(r));
  // A hand-computed case: 1 + 2 (3 - 0.5 * 4) = 3.
  const Tensor p1 = put(make_tensor({3.0}, DType::f64));
  ops::bicgstab_direction(2.0, 0.5, put(make_tensor({1.0}, DType::f64)),
                          put(make_tensor({4.0}, DType::f64)), p1);
  EXPECT_EQ(values_of(p1), std::vector<double>{3.0});
}

TEST_P(KrylovKernels, BicgstabResidualMatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 600;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor v = random({n}, dtype, seed++);
      const Tensor d = random({n}, dtype, seed++);
      const Tensor r = random({n}, dtype, seed++);
      const Tensor r2 = r.clone();
      const Tensor r3 = r.clone();
      const Tensor s_hat = nans({n}, dtype);
      const double alpha = 0.8123;
      const double ss = ops::bicgstab_residual(alpha, v, r);
      const double ss3 = ops::bicgstab_residual(alpha, v, r3, d, s_hat);
      ops::axpby(-alpha, v, 1.0, r2);
      EXPECT_TRUE(same(r, r2)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same(r3, r2)) << to_string(dtype) << " n=" << n;
      const double nrm = ops::nrm2(r2);
      EXPECT_EQ(bits(std::sqrt(ss)), bits(nrm)) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(ss), bits(ops::dot(r2, r2))) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(ss3), bits(ss)) << to_string(dtype) << " n=" << n;
      const Tensor want_hat = ops::mul(d, r2);
      EXPECT_TRUE(same(s_hat, want_hat)) << to_string(dtype) << " n=" << n;
    }
  }
}

TEST_P(KrylovKernels, BicgstabUpdateMatchesTheSeparateOpsBitForBit) {
  std::uint32_t seed = 700;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      for (const bool separate_s_hat : {true, false}) {
        const Tensor p_hat = random({n}, dtype, seed++);
        const Tensor s_hat = random({n}, dtype, seed++);
        const Tensor t = random({n}, dtype, seed++);
        const Tensor r_hat = random({n}, dtype, seed++);
        const Tensor x = random({n}, dtype, seed++);
        const Tensor r = random({n}, dtype, seed++);  // holds s
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
        EXPECT_TRUE(same(x, x2)) << what;
        EXPECT_TRUE(same(r, r2)) << what;
        EXPECT_EQ(bits(got.rr), bits(ops::dot(r2, r2))) << what;
        EXPECT_EQ(bits(got.r_hat_r), bits(ops::dot(r_hat, r2))) << what;
      }
    }
  }
}

TEST_P(KrylovKernels, SpmvDotsMatchesSpmvAndDotsBitForBit) {
  std::uint32_t seed = 900;
  for (const DType dtype : kDtypes) {
    for (const DType index : {DType::i32, DType::i64}) {
      for (const auto [ny, nx] :
           {std::pair<std::int64_t, std::int64_t>{1, 1}, {3, 5}, {64, 64}, {77, 129}, {301, 333}}) {
        const CsrMatrix a = put(five_point_csr(ny, nx, dtype, index, seed++));
        const Tensor p = random({a.cols()}, dtype, seed++);
        const Tensor w = random({a.rows()}, dtype, seed++);
        const Tensor q = nans({a.rows()}, dtype);
        const Tensor q2 = Tensor::empty({a.rows()}, dtype, device());
        const ops::SpmvDots got = ops::spmv_dots(a, p, q, w);
        ops::spmv(a, p, q2);
        const std::string what = std::string(to_string(dtype)) + "/" +
                                 std::string(to_string(index)) + " " + std::to_string(ny) + "x" +
                                 std::to_string(nx);
        EXPECT_TRUE(same(q, q2)) << what;
        EXPECT_EQ(bits(got.wq), bits(ops::dot(w, q2))) << what;
        EXPECT_EQ(bits(got.qq), bits(ops::dot(q2, q2))) << what;
        // w may be p itself: then wq is spmv_dot's p.(A p).
        const ops::SpmvDots self = ops::spmv_dots(a, p, q, p);
        EXPECT_EQ(bits(self.wq), bits(ops::spmv_dot(a, p, q2))) << what;
      }
    }
  }
}

TEST_P(KrylovKernels, SpmvDotsRectangularMatricesOfEitherShape) {
  // Tall: q = [1, 2, 3] (p = [1, 7]); w = [1, 1, 2]: w.q = 9, q.q = 14.
  const CsrMatrix tall =
      put(CsrMatrix::from_dense(make_tensor({3, 2}, DType::f64, {1, 0, 2, 0, 3, 0})));
  const Tensor q3 = Tensor::empty({3}, DType::f64, device());
  const ops::SpmvDots t = ops::spmv_dots(tall, put(make_tensor({1, 7}, DType::f64)), q3,
                                         put(make_tensor({1, 1, 2}, DType::f64)));
  EXPECT_EQ(t.wq, 9.0);
  EXPECT_EQ(t.qq, 14.0);
  // Wide: q = [1 + 2 * 5, 3 * 4] = [11, 12]; w = [2, -1]: w.q = 10, q.q = 265.
  const CsrMatrix wide =
      put(CsrMatrix::from_dense(make_tensor({2, 3}, DType::f64, {1, 0, 2, 0, 3, 0})));
  const Tensor q2 = Tensor::empty({2}, DType::f64, device());
  const ops::SpmvDots u = ops::spmv_dots(wide, put(make_tensor({1, 4, 5}, DType::f64)), q2,
                                         put(make_tensor({2, -1}, DType::f64)));
  EXPECT_EQ(u.wq, 10.0);
  EXPECT_EQ(u.qq, 265.0);
}

TEST_P(KrylovKernels, BasisDotsAndSubtractMatchTheSeparateOpsBitForBit) {
  std::uint32_t seed = 1000;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : {std::int64_t{1}, std::int64_t{17}, std::int64_t{4097},
                                 std::int64_t{3 * 4096 + 1000}, std::int64_t{100'003}}) {
      for (const std::int64_t rows : {1, 2, 7, 31}) {
        const std::string what = std::string(to_string(dtype)) + " n=" + std::to_string(n) +
                                 " rows=" + std::to_string(rows);
        const Tensor basis = random({rows + 2, n}, dtype, seed++).slice(1, rows + 1);
        const Tensor w = random({n}, dtype, seed++);
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
        EXPECT_TRUE(same(w, w2)) << what;
        EXPECT_EQ(bits(ww), bits(ops::dot(w2, w2))) << what;
        EXPECT_EQ(bits(std::sqrt(ww)), bits(ops::nrm2(w2))) << what;
      }
    }
  }
}

TEST_P(KrylovKernels, KrylovEmptyOperandsReturnZero) {
  for (const DType dtype : kDtypes) {
    const Tensor e = Tensor::empty({0}, dtype, device());
    const Tensor f = Tensor::empty({0}, dtype, device());
    const Tensor g = Tensor::empty({0}, dtype, device());
    const Tensor h = Tensor::empty({0}, dtype, device());
    EXPECT_EQ(ops::cg_update(1.0, e, f, g, h), 0.0);
    const Tensor d = Tensor::empty({0}, dtype, device());
    const Tensor z = Tensor::empty({0}, dtype, device());
    const ops::PcgDots dots = ops::pcg_jacobi_update(1.0, e, f, g, h, d, z);
    EXPECT_EQ(dots.rz, 0.0);
    EXPECT_EQ(dots.rr, 0.0);
    ops::xpay(e, 2.0, f);
    EXPECT_EQ(ops::laplacian_5pt_dot(Tensor::empty({0, 5}, dtype, device()),
                                     Tensor::empty({0, 5}, dtype, device()), 1.0, 1.0, -1.0),
              0.0);
    EXPECT_EQ(
        ops::laplacian_7pt_dot(Tensor::empty({3, 0, 4}, dtype, device()),
                               Tensor::empty({3, 0, 4}, dtype, device()), 1.0, 1.0, 1.0, -1.0),
        0.0);
    const CsrMatrix a(0, 0, put(make_tensor({0}, DType::i32)),
                      Tensor::empty({0}, DType::i32, device()),
                      Tensor::empty({0}, dtype, device()));
    EXPECT_EQ(ops::spmv_dot(a, e, f), 0.0);
  }
}

}  // namespace tenax::krylov_cases
