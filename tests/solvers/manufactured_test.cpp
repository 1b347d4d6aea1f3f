// Systems with a known solution: the manufactured Poisson solution's values against its formula,
// the matrix applied to it against f (the truncation error falls as h^2, in 2-D and 3-D), a CG
// solve's error against it, the right-hand side's dtype and device, x = 1 and b = A 1 for any
// operator, and the refusals (each naming the value and the fix).
#include "tenax/solvers/manufactured.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "host_memory_limit.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/solvers/convection_diffusion.hpp"
#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/poisson.hpp"

namespace tenax::solvers {
namespace {

using tenax::testing::expect_usage_error;

using tenax::testing::values_of;

double g(double t) { return t * (1.0 - t) * std::exp(t); }
double minus_g2(double t) { return t * (t + 3.0) * std::exp(t); }  // -g''(t)

// max |A u - f| for the assembled -Δh on the n^dim grid.
double truncation_error(int dim, std::int64_t n) {
  const double h = 1.0 / static_cast<double>(n + 1);
  const CsrMatrix a = dim == 2 ? poisson_2d_csr(n, n, h, h) : poisson_3d_csr(n, n, n, h, h, h);
  const ManufacturedSolution m = manufactured_poisson(dim, n);
  const Tensor au = Tensor::empty({a.rows()}, DType::f64);
  make_csr_operator(a)->apply(testing::make_tensor(m.solution, DType::f64), au);
  const std::vector<double> product = values_of(au);
  const std::vector<double> f = values_of(m.rhs);
  double largest = 0.0;
  for (std::size_t k = 0; k < f.size(); ++k) {
    largest = std::max(largest, std::fabs(product[k] - f[k]));
  }
  return largest;
}

TEST(ManufacturedPoisson, ValuesAreTheFormulaAtTheGridPoints) {
  // n = 3: h = 1/4; in 2-D point 5 is (x index 2, y index 1), at (0.75, 0.5).
  const ManufacturedSolution m2 = manufactured_poisson(2, 3);
  ASSERT_EQ(m2.solution.size(), 9u);
  ASSERT_EQ(m2.rhs.numel(), 9);
  EXPECT_EQ(m2.rhs.dtype(), DType::f64);
  const std::vector<double>& u2 = m2.solution;
  const std::vector<double> f2 = values_of(m2.rhs);
  EXPECT_DOUBLE_EQ(u2[5], g(0.75) * g(0.5));
  EXPECT_DOUBLE_EQ(f2[5], minus_g2(0.75) * g(0.5) + g(0.75) * minus_g2(0.5));
  // In 3-D point 2 + 3 * (0 + 3 * 1) = 11 is (x 2, y 0, z 1), at (0.75, 0.25, 0.5).
  const ManufacturedSolution m3 = manufactured_poisson(3, 3);
  ASSERT_EQ(m3.solution.size(), 27u);
  const std::vector<double>& u3 = m3.solution;
  const std::vector<double> f3 = values_of(m3.rhs);
  EXPECT_DOUBLE_EQ(u3[11], g(0.75) * g(0.25) * g(0.5));
  EXPECT_DOUBLE_EQ(f3[11], minus_g2(0.75) * g(0.25) * g(0.5) + g(0.75) * minus_g2(0.25) * g(0.5) +
                               g(0.75) * g(0.25) * minus_g2(0.5));
  // Zero on the boundary, positive inside.
  for (const double u : u3) EXPECT_GT(u, 0.0);
}

TEST(ManufacturedPoisson, TheDiscreteLaplacianOfUIsFUpToSecondOrder) {
  for (const int dim : {2, 3}) {
    SCOPED_TRACE(dim);
    const double coarse = truncation_error(dim, 7);
    const double fine = truncation_error(dim, 15);  // h halved
    EXPECT_LT(coarse, 0.05);
    EXPECT_GT(coarse / fine, 3.5) << coarse << " then " << fine;
    EXPECT_LT(coarse / fine, 4.5) << coarse << " then " << fine;
  }
}

TEST(ManufacturedPoisson, ASolveIsWithinTheDiscretisationErrorAndTheStencilAgrees) {
  const std::int64_t n = 31;
  const double h = 1.0 / static_cast<double>(n + 1);
  const ManufacturedSolution m = manufactured_poisson(2, n);
  const auto solver = make_solver("cg", {.tolerance = 1e-12, .max_iterations = 2000});
  double errors[2];
  int k = 0;
  for (const OperatorPtr& a :
       {make_csr_operator(poisson_2d_csr(n, n, h, h)),
        OperatorPtr(std::make_shared<Laplacian2dOperator>(n, n, h, h, DType::f64))}) {
    const Tensor x = Tensor::empty({n * n}, DType::f64);
    ops::fill(x, 0.0);
    EXPECT_EQ(solver->solve(a, m.rhs, x).status, SolveStatus::converged);
    double largest = 0.0;
    const std::vector<double> got = values_of(x);
    const std::vector<double>& want = m.solution;
    for (std::size_t i = 0; i < got.size(); ++i) {
      largest = std::max(largest, std::fabs(got[i] - want[i]));
    }
    errors[k++] = largest;
  }
  EXPECT_GT(errors[0], 1e-7) << "u is not a discrete solution (O(h^2) away)";
  EXPECT_LT(errors[0], 2e-4);
  EXPECT_NEAR(errors[1], errors[0], 1e-9);
}

TEST(ManufacturedPoisson, TheRightHandSideIsRoundedOnceToTheDtypeAsked) {
  const ManufacturedSolution wide = manufactured_poisson(2, 9);
  const ManufacturedSolution narrow = manufactured_poisson(2, 9, DType::f32, Device::cpu());
  EXPECT_EQ(narrow.rhs.dtype(), DType::f32);
  EXPECT_EQ(narrow.solution, wide.solution) << "the reference stays f64";
  const std::vector<double> f64_values = values_of(wide.rhs);
  const std::vector<double> f32_values = values_of(narrow.rhs);
  for (std::size_t k = 0; k < f64_values.size(); ++k) {
    EXPECT_EQ(f32_values[k], static_cast<double>(static_cast<float>(f64_values[k]))) << k;
  }
}

TEST(ManufacturedOnes, IsAllOnesAndTheProductOfTheOperatorWithThem) {
  for (const DType dtype : {DType::f64, DType::f32}) {
    const OperatorPtr a = make_csr_operator(convection_diffusion_2d_csr(5, 4, 0.7, dtype));
    const ManufacturedSolution ones = manufactured_ones(*a);
    EXPECT_EQ(ones.rhs.dtype(), dtype);
    EXPECT_EQ(ones.solution, std::vector<double>(20, 1.0));
    // Row sums: (0, 0) has only its east and north neighbours, (1, 1) all four.
    const std::vector<double> b = values_of(ones.rhs);
    EXPECT_NEAR(b[0], 5.4 - 1.0 - 1.0, 1e-6);
    EXPECT_NEAR(b[5], 5.4 - 2 * 1.7 - 2 * 1.0, 1e-6);
    const Tensor direct = Tensor::empty({20}, dtype);
    const Tensor one = Tensor::empty({20}, dtype);
    ops::fill(one, 1.0);
    a->apply(one, direct);
    EXPECT_EQ(b, values_of(direct)) << "b is A 1 bit for bit";
  }
}

TEST(ManufacturedPoisson, BadArgumentsAreRefusedNamingTheValue) {
  expect_usage_error([] { (void)manufactured_poisson(1, 8); }, "dim is 1 but must be 2 or 3",
                     "unit square");
  expect_usage_error([] { (void)manufactured_poisson(4, 8); }, "dim is 4", "unit cube");
  expect_usage_error([] { (void)manufactured_poisson(2, 0); }, "n is 0 but must be at least 1",
                     "interior grid points");
  expect_usage_error([] { (void)manufactured_poisson(3, -5); }, "n is -5", "interior grid points");
  expect_usage_error([] { (void)manufactured_poisson(2, 4000000000); },
                     "the grid's points (n 4000000000, dim 2)", "a smaller n");
  expect_usage_error([] { (void)manufactured_poisson(2, 3037000000); },
                     "the bytes of u and f (n 3037000000, dim 2)", "a smaller n");
  expect_usage_error([] { (void)manufactured_poisson(3, 3000000); },
                     "the grid's points (n 3000000, dim 3)", "a smaller n");
  expect_usage_error([] { (void)manufactured_poisson(2, 4, DType::i32); },
                     "dtype i32 is not supported", "DType::f64 or DType::f32");
  // Only b takes room in the memory pool: u is a host reference outside it.
  const tenax::testing::HostMemoryLimit limit(std::size_t{32} << 20);
  EXPECT_EQ(manufactured_poisson(2, 1500).rhs.numel(), 2250000) << "18 MB of b in 32 MiB";
  try {
    (void)manufactured_poisson(2, 3000);
    FAIL() << "9 000 000 doubles fit a 32 MiB pool";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(e.cause().find("manufactured_poisson: the solution and right-hand side of 9000000 "
                             "points need 144000000 bytes on the host"),
              std::string::npos)
        << e.cause();
    EXPECT_NE(e.fix().find("a smaller n"), std::string::npos) << e.fix();
  }
}

}  // namespace
}  // namespace tenax::solvers
