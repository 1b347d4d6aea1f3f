// The CUDA linear-algebra kernels: the SpMV and stencil bodies the CPU backend runs
// (spmv_cases.hpp, stencil_cases.hpp) on CUDA, and against the CPU backend, the reference. cuBLAS
// sums in its own order, so GEMM results agree within the rounding bound; SpMV and the stencils run
// the same bodies as the CPU (no FMA contraction on either side), so they agree bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "kernels/linalg_test_helpers.hpp"
#include "kernels/spmv_cases.hpp"
#include "kernels/stencil_cases.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace tenax {
namespace {

using ops::Transpose;
using testing::make_tensor;
using testing::naive_gemm;
using testing::random_integers;
using testing::random_reals;
using testing::values_of;

// Every SpMV and stencil test body the CPU backend runs, on CUDA.
using spmv_cases::SpmvKernels;
using stencil_cases::StencilKernels;
INSTANTIATE_TEST_SUITE_P(Cuda, SpmvKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);
INSTANTIATE_TEST_SUITE_P(Cuda, StencilKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);

class LinalgGpu : public testing::GpuTest {
 protected:
  static std::vector<double> fetch(const Tensor& t) {
    tenax::cuda::context(t.device()).synchronize();
    return values_of(t);
  }
};

TEST_F(LinalgGpu, GemmMatchesTheCpuBackend) {
  const std::tuple<std::int64_t, std::int64_t, std::int64_t> sizes[] = {
      {1, 1, 1}, {3, 5, 4}, {33, 17, 65}, {130, 21, 40}, {257, 129, 300}};
  struct Case {
    DType in, out;
    double out_unit_roundoff;
  };
  const Case cases[] = {
      {DType::f64, DType::f64, 0.0},  {DType::f32, DType::f32, 0.0},
      {DType::f16, DType::f32, 0.0},  {DType::f16, DType::f16, std::ldexp(1.0, -11)},
      {DType::bf16, DType::f32, 0.0}, {DType::bf16, DType::bf16, std::ldexp(1.0, -8)}};
  std::uint32_t seed = 1;
  for (const Case& cs : cases) {
    const double u = cs.in == DType::f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
    for (const auto& [m, n, k] : sizes) {
      for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
          const auto a = random_reals(m * k, cs.in, seed++);
          const auto b = random_reals(k * n, cs.in, seed++);
          const auto c0 = random_reals(m * n, cs.out, seed++);
          const Tensor a_cpu = make_tensor(ta ? Shape{k, m} : Shape{m, k}, cs.in, a);
          const Tensor b_cpu = make_tensor(tb ? Shape{n, k} : Shape{k, n}, cs.in, b);
          const Tensor c_cpu = make_tensor({m, n}, cs.out, c0);
          const Tensor c_gpu = c_cpu.to(gpu());
          const auto fa = ta ? Transpose::yes : Transpose::no;
          const auto fb = tb ? Transpose::yes : Transpose::no;
          ops::gemm(a_cpu, b_cpu, c_cpu, 1.5, -0.5, fa, fb);
          ops::gemm(a_cpu.to(gpu()), b_cpu.to(gpu()), c_gpu, 1.5, -0.5, fa, fb);
          const auto want = values_of(c_cpu);
          const auto got = fetch(c_gpu);
          // Both differ from the exact product by at most the bound; |a|, |b|, |c| <= 1.
          const auto exact = naive_gemm(a, b, c0, m, n, k, ta, tb, 1.5, -0.5);
          for (std::size_t i = 0; i < want.size(); ++i) {
            const double tol = 2.0 * (static_cast<double>(k) + 2.0) * u * (1.5 * k + 0.5) +
                               2.0 * std::fabs(exact[i]) * cs.out_unit_roundoff * 1.01;
            ASSERT_NEAR(got[i], want[i], tol)
                << to_string(cs.in) << "->" << to_string(cs.out) << " m=" << m << " n=" << n
                << " k=" << k << " ta=" << ta << " tb=" << tb << " element " << i;
          }
        }
      }
    }
  }
}

// addmm on the device: within gemm's bound of the CPU's addmm (cuBLAS sums in its own order); with
// k = 0 every row is the bias bit for bit (a -0 and a NaN kept), as on the CPU; a bias on another
// device than c is refused.
TEST_F(LinalgGpu, AddmmAgreesWithTheCpuAndKeepsTheBiasBits) {
  const std::tuple<std::int64_t, std::int64_t, std::int64_t> sizes[] = {
      {3, 5, 4}, {33, 17, 65}, {130, 40, 64}, {64, 48, 0}};
  std::uint32_t seed = 100;
  for (const DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    const DType out = dtype == DType::f64 ? DType::f64 : DType::f32;
    const double u = dtype == DType::f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
    for (const auto& [m, n, k] : sizes) {
      for (int t = 0; t < 4; ++t) {
        const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
        const auto fa = ta ? Transpose::yes : Transpose::no;
        const auto fb = tb ? Transpose::yes : Transpose::no;
        const Tensor a = make_tensor(ta ? Shape{k, m} : Shape{m, k}, dtype,
                                     random_reals(static_cast<std::size_t>(m * k), dtype, seed++));
        const Tensor b = make_tensor(tb ? Shape{n, k} : Shape{k, n}, dtype,
                                     random_reals(static_cast<std::size_t>(k * n), dtype, seed++));
        std::vector<double> bias_values = random_reals(static_cast<std::size_t>(n), out, seed++);
        bias_values[0] = -0.0;
        bias_values[2] = std::numeric_limits<double>::quiet_NaN();
        const Tensor bias = make_tensor(Shape{n}, out, bias_values);
        const Tensor want = Tensor::empty({m, n}, out);
        const Tensor got = Tensor::empty({m, n}, out, gpu());
        ops::addmm(bias, a, b, want, 0.5, fa, fb);
        ops::addmm(bias.to(gpu()), a.to(gpu()), b.to(gpu()), got, 0.5, fa, fb);
        const std::string what = std::string(to_string(dtype)) + " " + std::to_string(m) + "x" +
                                 std::to_string(n) + "x" + std::to_string(k) + " t" +
                                 std::to_string(t);
        if (k == 0) {
          testing::expect_identical(want, got, what);
          continue;
        }
        const std::vector<double> w = values_of(want), g = fetch(got);
        for (std::size_t i = 0; i < w.size(); ++i) {
          if (std::isnan(w[i])) {
            ASSERT_TRUE(std::isnan(g[i])) << what << " element " << i;
            continue;
          }
          // |a|, |b| <= 1, alpha 0.5: both within the product's bound of the exact result.
          const double tol = 2.0 * (static_cast<double>(k) + 2.0) * u * (0.5 * k + 1.0);
          ASSERT_NEAR(g[i], w[i], tol) << what << " element " << i;
        }
      }
    }
  }
  const Tensor a = Tensor::empty({2, 3}, DType::f32, gpu());
  const Tensor b = Tensor::empty({3, 2}, DType::f32, gpu());
  const Tensor c = Tensor::empty({2, 2}, DType::f32, gpu());
  try {
    ops::addmm(make_tensor(Shape{2}, DType::f32, {1, 2}), a, b, c);
    FAIL() << "a bias on the cpu for c on the device must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("addmm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
  }
}

// gemm_batched on the device gives each product the bits the device's gemm gives it, and agrees
// with the CPU's within gemm's bound.
TEST_F(LinalgGpu, GemmBatchedIsEachProductsGemm) {
  const std::int64_t count = 5, m = 17, n = 33, k = 24;
  for (const DType dtype : {DType::f32, DType::bf16}) {
    const Tensor a = make_tensor({count, k, m}, dtype,
                                 random_reals(static_cast<std::size_t>(count * m * k), dtype, 7));
    const Tensor b = make_tensor({count, k, n}, dtype,
                                 random_reals(static_cast<std::size_t>(count * k * n), dtype, 8));
    const Tensor c0 = make_tensor({count, m, n}, dtype,
                                  random_reals(static_cast<std::size_t>(count * m * n), dtype, 9));
    const Tensor got = c0.to(gpu());
    ops::gemm_batched(a.to(gpu()), b.to(gpu()), got, 1.5, 0.5, Transpose::yes, Transpose::no);
    const Tensor cpu = c0.clone();
    ops::gemm_batched(a, b, cpu, 1.5, 0.5, Transpose::yes, Transpose::no);
    for (std::int64_t i = 0; i < count; ++i) {
      const Tensor one = c0.slice(i, i + 1).reshape(Shape{m, n}).to(gpu());
      ops::gemm(a.slice(i, i + 1).reshape(Shape{k, m}).to(gpu()),
                b.slice(i, i + 1).reshape(Shape{k, n}).to(gpu()), one, 1.5, 0.5, Transpose::yes,
                Transpose::no);
      testing::expect_identical(one.to(Device::cpu()), got.slice(i, i + 1).reshape(Shape{m, n}),
                                std::string(to_string(dtype)) + " product " + std::to_string(i));
    }
    const std::vector<double> w = values_of(cpu), g = fetch(got);
    const double out_u = dtype == DType::bf16 ? std::ldexp(1.0, -8) : 0.0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double tol = 2.0 * (k + 2.0) * std::ldexp(1.0, -24) * (1.5 * k + 0.5) +
                         2.0 * std::fabs(w[i]) * out_u * 1.01 + 2.0 * out_u;
      ASSERT_NEAR(g[i], w[i], tol) << to_string(dtype) << " element " << i;
    }
  }
}

TEST_F(LinalgGpu, GemmIsExactOnIntegersAndSkipsCWhenBetaIsZero) {
  const std::int64_t m = 64, n = 48, k = 96;
  const auto a = random_integers(m * k, 4, 3);
  const auto b = random_integers(k * n, 4, 4);
  const Tensor c =
      make_tensor({m, n}, DType::f64, std::vector<double>(m * n, std::nan(""))).to(gpu());
  ops::gemm(make_tensor({m, k}, DType::f64, a).to(gpu()),
            make_tensor({k, n}, DType::f64, b).to(gpu()), c);
  EXPECT_EQ(fetch(c), naive_gemm(a, b, std::vector<double>(m * n), m, n, k, false, false, 1, 0));

  const Tensor r = ops::matmul(make_tensor({m, k}, DType::f64, a).to(gpu()),
                               make_tensor({k, n}, DType::f64, b).to(gpu()));
  EXPECT_EQ(r.device(), gpu());
  EXPECT_EQ(fetch(r), fetch(c));
}

TEST_F(LinalgGpu, SpmvMatchesTheCpuBackendBitForBit) {
  std::uint32_t seed = 20;
  for (const DType dtype : {DType::f64, DType::f32}) {
    for (const DType index : {DType::i64, DType::i32}) {
      const std::int64_t rows = 1000, cols = 777;
      auto dense = random_reals(rows * cols, dtype, seed++);
      for (std::size_t i = 0; i < dense.size(); ++i) {
        if ((i * 2654435761u) % 7 != 0) dense[i] = 0.0;
      }
      const CsrMatrix a_cpu = CsrMatrix::from_dense(make_tensor({rows, cols}, dtype, dense), index);
      const CsrMatrix a_gpu = a_cpu.to(gpu());
      EXPECT_EQ(a_gpu.device(), gpu());
      const Tensor x = make_tensor({cols}, dtype, random_reals(cols, dtype, seed++));
      const Tensor y_cpu = make_tensor({rows}, dtype, random_reals(rows, dtype, seed++));
      const Tensor y_gpu = y_cpu.to(gpu());
      ops::spmv(a_cpu, x, y_cpu, 1.25, 0.75);
      ops::spmv(a_gpu, x.to(gpu()), y_gpu, 1.25, 0.75);
      EXPECT_EQ(fetch(y_gpu), values_of(y_cpu)) << to_string(dtype) << " " << to_string(index);
    }
  }
}

TEST_F(LinalgGpu, CsrValidationReadsDeviceIndices) {
  Tensor rp = Tensor::empty({3}, DType::i32);
  Tensor ci = Tensor::empty({2}, DType::i32);
  rp.data_as<std::int32_t>()[0] = 0;
  rp.data_as<std::int32_t>()[1] = 1;
  rp.data_as<std::int32_t>()[2] = 2;
  ci.data_as<std::int32_t>()[0] = 0;
  ci.data_as<std::int32_t>()[1] = 5;
  const Tensor v = make_tensor({2}, DType::f32, {1, 2}).to(gpu());
  EXPECT_THROW(CsrMatrix(2, 2, rp.to(gpu()), ci.to(gpu()), v), UsageError);
  ci.data_as<std::int32_t>()[1] = 1;
  EXPECT_NO_THROW(CsrMatrix(2, 2, rp.to(gpu()), ci.to(gpu()), v));
  EXPECT_THROW(CsrMatrix(2, 2, rp, ci.to(gpu()), v), UsageError);  // mixed devices
}

TEST_F(LinalgGpu, StencilsMatchTheCpuBackendBitForBit) {
  std::uint32_t seed = 40;
  for (const DType dtype : {DType::f64, DType::f32}) {
    for (const auto& [ny, nx] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {2, 3}, {61, 130}}) {
      const Tensor u = make_tensor({ny, nx}, dtype, random_reals(ny * nx, dtype, seed++));
      const Tensor out_cpu = Tensor::empty({ny, nx}, dtype);
      const Tensor out_gpu = Tensor::empty({ny, nx}, dtype, gpu());
      ops::laplacian_5pt(u, out_cpu, 0.3, 0.7);
      ops::laplacian_5pt(u.to(gpu()), out_gpu, 0.3, 0.7);
      EXPECT_EQ(fetch(out_gpu), values_of(out_cpu)) << ny << "x" << nx;
    }
    const std::int64_t shapes[][3] = {{1, 1, 1}, {2, 3, 1}, {17, 33, 65}};
    for (const auto& [nz, ny, nx] : shapes) {
      const Tensor u = make_tensor({nz, ny, nx}, dtype, random_reals(nz * ny * nx, dtype, seed++));
      const Tensor out_cpu = Tensor::empty({nz, ny, nx}, dtype);
      const Tensor out_gpu = Tensor::empty({nz, ny, nx}, dtype, gpu());
      ops::laplacian_7pt(u, out_cpu, 0.5, 0.25, 2.0);
      ops::laplacian_7pt(u.to(gpu()), out_gpu, 0.5, 0.25, 2.0);
      EXPECT_EQ(fetch(out_gpu), values_of(out_cpu)) << nz << "x" << ny << "x" << nx;
    }
  }
}

TEST_F(LinalgGpu, MixedDevicesAreUsageErrors) {
  const Tensor a = Tensor::empty({2, 2}, DType::f32);
  const Tensor b = Tensor::empty({2, 2}, DType::f32, gpu());
  try {
    ops::gemm(a, b, Tensor::empty({2, 2}, DType::f32));
    FAIL() << "gemm across devices must throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("gemm: a is on cpu but b is on cuda:0"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ops::laplacian_5pt(a, b), UsageError);
}

}  // namespace
}  // namespace tenax
