// The CUDA fused Krylov kernels: the bodies shared with the CPU backend (krylov_cases.hpp) on
// CUDA, and against the CPU backend, the reference: both run the bodies of krylov_bodies.hpp (no
// FMA contraction on either side) and fold the dot products in the fixed order of
// reduce_bodies.hpp, so vectors and dot products agree bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "kernels/krylov_cases.hpp"
#include "kernels/krylov_test_helpers.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_krylov.hpp"

namespace tenax {
namespace {

using testing::bits;
using testing::five_point_csr;
using testing::random_tensor;
using testing::same_bytes;

constexpr DType kDtypes[] = {DType::f64, DType::f32};
const std::int64_t kLengths[] = {1, 17, 4095, 4096, 4097, 3 * 4096 + 1000, 1'000'003};

// Every test body the CPU backend runs (krylov_cases.hpp), on CUDA.
using krylov_cases::KrylovKernels;
INSTANTIATE_TEST_SUITE_P(Cuda, KrylovKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);

class KrylovGpu : public testing::GpuTest {
 protected:
  // t (on the GPU) copied back to the CPU once the device's queued work is done.
  static Tensor fetch(const Tensor& t) {
    tenax::cuda::context(t.device()).synchronize();
    return t.to(Device::cpu());
  }
};

TEST_F(KrylovGpu, CgUpdateMatchesTheCpuBackendBitForBit) {
  std::uint32_t seed = 1;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor p = random_tensor({n}, dtype, seed++);
      const Tensor q = random_tensor({n}, dtype, seed++);
      const Tensor x = random_tensor({n}, dtype, seed++);
      const Tensor r = random_tensor({n}, dtype, seed++);
      const Tensor xg = x.to(gpu()), rg = r.to(gpu());
      const double want = ops::cg_update(-0.61, p, q, x, r);
      const double got = ops::cg_update(-0.61, p.to(gpu()), q.to(gpu()), xg, rg);
      EXPECT_EQ(bits(got), bits(want)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same_bytes(fetch(xg), x)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same_bytes(fetch(rg), r)) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(ops::dot(rg, rg)), bits(want)) << to_string(dtype) << " n=" << n;
    }
  }
}

TEST_F(KrylovGpu, PcgJacobiUpdateMatchesTheCpuBackendBitForBit) {
  std::uint32_t seed = 100;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      const Tensor p = random_tensor({n}, dtype, seed++);
      const Tensor q = random_tensor({n}, dtype, seed++);
      const Tensor x = random_tensor({n}, dtype, seed++);
      const Tensor r = random_tensor({n}, dtype, seed++);
      const Tensor d = random_tensor({n}, dtype, seed++);
      const Tensor z = Tensor::empty({n}, dtype);
      const Tensor xg = x.to(gpu()), rg = r.to(gpu()), zg = z.to(gpu());
      const ops::PcgDots want = ops::pcg_jacobi_update(0.37, p, q, x, r, d, z);
      const ops::PcgDots got =
          ops::pcg_jacobi_update(0.37, p.to(gpu()), q.to(gpu()), xg, rg, d.to(gpu()), zg);
      EXPECT_EQ(bits(got.rz), bits(want.rz)) << to_string(dtype) << " n=" << n;
      EXPECT_EQ(bits(got.rr), bits(want.rr)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same_bytes(fetch(xg), x)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same_bytes(fetch(rg), r)) << to_string(dtype) << " n=" << n;
      EXPECT_TRUE(same_bytes(fetch(zg), z)) << to_string(dtype) << " n=" << n;
    }
  }
}

TEST_F(KrylovGpu, XpayMatchesTheCpuBackendBitForBit) {
  std::uint32_t seed = 200;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      for (const double beta : {0.83, 0.0}) {
        const Tensor z = random_tensor({n}, dtype, seed++);
        const Tensor p = random_tensor({n}, dtype, seed++);
        const Tensor pg = p.to(gpu());
        ops::xpay(z, beta, p);
        ops::xpay(z.to(gpu()), beta, pg);
        EXPECT_TRUE(same_bytes(fetch(pg), p)) << to_string(dtype) << " n=" << n << " " << beta;
      }
    }
  }
}

TEST_F(KrylovGpu, CgResidualAndCgAdvanceMatchTheCpuBackendBitForBit) {
  std::uint32_t seed = 250;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      for (const bool jacobi : {false, true}) {
        const std::string what =
            std::string(to_string(dtype)) + " n=" + std::to_string(n) + (jacobi ? " jacobi" : "");
        const Tensor q = random_tensor({n}, dtype, seed++);
        const Tensor r = random_tensor({n}, dtype, seed++);
        const Tensor d = random_tensor({n}, dtype, seed++);
        const Tensor p = random_tensor({n}, dtype, seed++);
        const Tensor x = random_tensor({n}, dtype, seed++);
        const Tensor z = Tensor::empty({n}, dtype);
        const Tensor rg = r.to(gpu()), zg = z.to(gpu()), pg = p.to(gpu()), xg = x.to(gpu());
        const Tensor none;
        const ops::PcgDots want =
            ops::cg_residual(0.37, q, r, jacobi ? d : none, jacobi ? z : none);
        const ops::PcgDots got = ops::cg_residual(0.37, q.to(gpu()), rg,
                                                  jacobi ? d.to(gpu()) : none, jacobi ? zg : none);
        EXPECT_EQ(bits(got.rz), bits(want.rz)) << what;
        EXPECT_EQ(bits(got.rr), bits(want.rr)) << what;
        EXPECT_TRUE(same_bytes(fetch(rg), r)) << what;
        if (jacobi) EXPECT_TRUE(same_bytes(fetch(zg), z)) << what;
        for (const double beta : {0.83, 0.0}) {
          ops::cg_advance(0.37, p, beta, jacobi ? z : r, x);
          ops::cg_advance(0.37, pg, beta, jacobi ? zg : rg, xg);
          EXPECT_TRUE(same_bytes(fetch(pg), p)) << what << " beta=" << beta;
          EXPECT_TRUE(same_bytes(fetch(xg), x)) << what << " beta=" << beta;
        }
      }
    }
  }
}

TEST_F(KrylovGpu, SpmvDotMatchesTheCpuBackendBitForBit) {
  std::uint32_t seed = 300;
  const std::int64_t grids[][2] = {{1, 1}, {9, 1}, {64, 64}, {130, 129}, {700, 701}};
  for (const DType dtype : kDtypes) {
    for (const DType index : {DType::i32, DType::i64}) {
      for (const auto& g : grids) {
        const CsrMatrix a = five_point_csr(g[0], g[1], dtype, index, seed++);
        const Tensor p = random_tensor({a.rows()}, dtype, seed++);
        const Tensor q = Tensor::empty({a.rows()}, dtype);
        const Tensor qg = q.to(gpu());
        const double want = ops::spmv_dot(a, p, q);
        const double got = ops::spmv_dot(a.to(gpu()), p.to(gpu()), qg);
        const std::string what = std::string(to_string(dtype)) + "/" +
                                 std::string(to_string(index)) + " " + std::to_string(g[0]) + "x" +
                                 std::to_string(g[1]);
        EXPECT_EQ(bits(got), bits(want)) << what;
        EXPECT_TRUE(same_bytes(fetch(qg), q)) << what;
      }
    }
  }
}

TEST_F(KrylovGpu, SpmvDotsMatchTheCpuBackendBitForBit) {
  std::uint32_t seed = 350;
  const std::int64_t grids[][2] = {{1, 1}, {9, 1}, {130, 129}, {700, 701}};
  for (const DType dtype : kDtypes) {
    for (const DType index : {DType::i32, DType::i64}) {
      for (const auto& g : grids) {
        const CsrMatrix a = five_point_csr(g[0], g[1], dtype, index, seed++);
        const Tensor p = random_tensor({a.rows()}, dtype, seed++);
        const Tensor w = random_tensor({a.rows()}, dtype, seed++);
        const Tensor q = Tensor::empty({a.rows()}, dtype);
        const Tensor qg = q.to(gpu());
        const ops::SpmvDots want = ops::spmv_dots(a, p, q, w);
        const ops::SpmvDots got = ops::spmv_dots(a.to(gpu()), p.to(gpu()), qg, w.to(gpu()));
        const std::string what = std::string(to_string(dtype)) + "/" +
                                 std::string(to_string(index)) + " " + std::to_string(g[0]) + "x" +
                                 std::to_string(g[1]);
        EXPECT_EQ(bits(got.wq), bits(want.wq)) << what;
        EXPECT_EQ(bits(got.qq), bits(want.qq)) << what;
        EXPECT_TRUE(same_bytes(fetch(qg), q)) << what;
      }
    }
  }
}

TEST_F(KrylovGpu, BicgstabKernelsMatchTheCpuBackendBitForBit) {
  std::uint32_t seed = 380;
  for (const DType dtype : kDtypes) {
    for (const std::int64_t n : kLengths) {
      for (const bool jacobi : {true, false}) {
        const std::string what = std::string(to_string(dtype)) + " n=" + std::to_string(n) +
                                 (jacobi ? " jacobi" : " none");
        const Tensor r = random_tensor({n}, dtype, seed++);
        const Tensor v = random_tensor({n}, dtype, seed++);
        const Tensor d = random_tensor({n}, dtype, seed++);
        const Tensor p = random_tensor({n}, dtype, seed++);
        const Tensor t = random_tensor({n}, dtype, seed++);
        const Tensor h = random_tensor({n}, dtype, seed++);
        const Tensor x = random_tensor({n}, dtype, seed++);
        const Tensor p_hat = Tensor::empty({n}, dtype), s_hat = Tensor::empty({n}, dtype);
        const Tensor pg = p.to(gpu()), rg = r.to(gpu()), xg = x.to(gpu());
        const Tensor p_hat_g = p_hat.to(gpu()), s_hat_g = s_hat.to(gpu());
        const Tensor dg = d.to(gpu());
        const Tensor none;
        ops::bicgstab_direction(1.3, 0.4, r, v, p, jacobi ? d : none, jacobi ? p_hat : none);
        ops::bicgstab_direction(1.3, 0.4, rg, v.to(gpu()), pg, jacobi ? dg : none,
                                jacobi ? p_hat_g : none);
        EXPECT_TRUE(same_bytes(fetch(pg), p)) << what;
        const double want_ss =
            ops::bicgstab_residual(0.7, v, r, jacobi ? d : none, jacobi ? s_hat : none);
        const double got_ss = ops::bicgstab_residual(0.7, v.to(gpu()), rg, jacobi ? dg : none,
                                                     jacobi ? s_hat_g : none);
        EXPECT_EQ(bits(got_ss), bits(want_ss)) << what;
        EXPECT_TRUE(same_bytes(fetch(rg), r)) << what;
        const Tensor& ph = jacobi ? p_hat : p;
        const Tensor& ph_g = jacobi ? p_hat_g : pg;
        const ops::BicgstabDots want =
            ops::bicgstab_update(0.7, ph, -0.9, jacobi ? s_hat : none, t, h, x, r);
        const ops::BicgstabDots got = ops::bicgstab_update(0.7, ph_g, -0.9, jacobi ? s_hat_g : none,
                                                           t.to(gpu()), h.to(gpu()), xg, rg);
        EXPECT_EQ(bits(got.rr), bits(want.rr)) << what;
        EXPECT_EQ(bits(got.r_hat_r), bits(want.r_hat_r)) << what;
        EXPECT_TRUE(same_bytes(fetch(xg), x)) << what;
        EXPECT_TRUE(same_bytes(fetch(rg), r)) << what;
        if (jacobi) {
          EXPECT_TRUE(same_bytes(fetch(p_hat_g), p_hat)) << what;
          EXPECT_TRUE(same_bytes(fetch(s_hat_g), s_hat)) << what;
        }
      }
    }
  }
}

TEST_F(KrylovGpu, LaplacianDotsMatchTheCpuBackendBitForBit) {
  std::uint32_t seed = 400;
  const std::int64_t grids2[][2] = {{1, 1}, {3, 18}, {17, 33}, {300, 301}, {1024, 1030}};
  const std::int64_t grids3[][3] = {{1, 1, 1}, {3, 4, 5}, {6, 20, 33}, {70, 71, 73}};
  for (const DType dtype : kDtypes) {
    for (const double scale : {-1.0, 0.37}) {
      for (const auto& g : grids2) {
        const Tensor p = random_tensor({g[0], g[1]}, dtype, seed++);
        const Tensor q = Tensor::empty({g[0], g[1]}, dtype);
        const Tensor qg = q.to(gpu());
        const double want = ops::laplacian_5pt_dot(p, q, 0.5, 0.3, scale);
        const double got = ops::laplacian_5pt_dot(p.to(gpu()), qg, 0.5, 0.3, scale);
        EXPECT_EQ(bits(got), bits(want)) << to_string(dtype) << " " << g[0] << "x" << g[1];
        EXPECT_TRUE(same_bytes(fetch(qg), q)) << to_string(dtype) << " " << g[0] << "x" << g[1];
      }
      for (const auto& g : grids3) {
        const Tensor p = random_tensor({g[0], g[1], g[2]}, dtype, seed++);
        const Tensor q = Tensor::empty({g[0], g[1], g[2]}, dtype);
        const Tensor qg = q.to(gpu());
        const double want = ops::laplacian_7pt_dot(p, q, 0.5, 0.7, 1.1, scale);
        const double got = ops::laplacian_7pt_dot(p.to(gpu()), qg, 0.5, 0.7, 1.1, scale);
        EXPECT_EQ(bits(got), bits(want)) << to_string(dtype) << " " << g[0] << "x" << g[1];
        EXPECT_TRUE(same_bytes(fetch(qg), q)) << to_string(dtype) << " " << g[0] << "x" << g[1];
      }
    }
  }
}

TEST_F(KrylovGpu, EmptyOperandsReturnZero) {
  const Tensor e = Tensor::empty({0}, DType::f64, gpu());
  const Tensor f = Tensor::empty({0}, DType::f64, gpu());
  const Tensor g = Tensor::empty({0}, DType::f64, gpu());
  const Tensor h = Tensor::empty({0}, DType::f64, gpu());
  EXPECT_EQ(ops::cg_update(1.0, e, f, g, h), 0.0);
  ops::xpay(e, 1.0, f);
  EXPECT_EQ(ops::laplacian_5pt_dot(Tensor::empty({0, 4}, DType::f32, gpu()),
                                   Tensor::empty({0, 4}, DType::f32, gpu()), 1, 1, -1),
            0.0);
}

}  // namespace
}  // namespace tenax
