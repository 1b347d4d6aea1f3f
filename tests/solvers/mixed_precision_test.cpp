// Mixed-precision iterative refinement: f32 inner solves reach an f64 residual of 1e-12 on a
// 2-D Poisson problem where f32 CG alone stalls orders of magnitude above it.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "solvers/test_problems.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/solvers/callable_operator.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/mixed_precision.hpp"

namespace tenax::solvers {
namespace {

using testing::random_vector;
using testing::true_relative_residual;
using testing::zeros;

constexpr std::int64_t kGrid = 64;
constexpr std::int64_t kUnknowns = kGrid * kGrid;

CsrMatrix poisson64() { return testing::poisson(kGrid); }

TEST(MixedPrecision, PlainF32CgStallsFarAbove1e12) {
  const CsrMatrix a = poisson64();
  const OperatorPtr a32 = make_csr_operator(a)->with_dtype(DType::f32);
  const Tensor b = random_vector(kUnknowns, 1);
  const Tensor x32 = zeros(kUnknowns, DType::f32);
  SolverOptions options;
  options.tolerance = 1e-12;
  options.max_iterations = 3000;
  (void)make_solver("cg", options)->solve(a32, ops::cast(b, DType::f32), x32);
  EXPECT_GT(true_relative_residual(a, b, ops::cast(x32, DType::f64)), 1e-9);
}

TEST(MixedPrecision, RefinementReaches1e12OnAnAssembledMatrix) {
  const CsrMatrix a = poisson64();
  const Tensor b = random_vector(kUnknowns, 1);
  const Tensor x = zeros(kUnknowns);
  MixedPrecisionRefinement refinement;
  const RefinementResult result = refinement.solve(make_csr_operator(a), b, x);
  ASSERT_EQ(result.outer.status, SolveStatus::converged) << result.outer.detail;
  EXPECT_LE(result.outer.relative_residual, 1e-12);
  EXPECT_LE(true_relative_residual(a, b, x), 2e-12);
  EXPECT_GE(result.outer.iterations, 2) << "one f32 solve cannot reach 1e-12";
  EXPECT_LE(result.outer.iterations, 10);
  EXPECT_GT(result.inner_iterations, result.outer.iterations);
  EXPECT_EQ(result.last_inner.status, SolveStatus::converged);
}

TEST(MixedPrecision, RefinementWorksMatrixFreeWithAPreconditionedInnerSolve) {
  const double h = testing::unit_spacing(kGrid);
  const OperatorPtr stencil = std::make_shared<const Laplacian2dOperator>(kGrid, kGrid, h, h);
  const Tensor b = random_vector(kUnknowns, 2);
  const Tensor x = zeros(kUnknowns);
  RefinementOptions options;
  options.inner.preconditioner = "jacobi";
  options.inner_solver = "bicgstab";
  const RefinementResult result = MixedPrecisionRefinement(options).solve(stencil, b, x);
  ASSERT_EQ(result.outer.status, SolveStatus::converged) << result.outer.detail;
  EXPECT_LE(true_relative_residual(poisson64(), b, x), 2e-12);
}

TEST(MixedPrecision, ACallableOperatorNeedsItsInnerOperatorPassed) {
  const OperatorPtr csr = make_csr_operator(testing::poisson(16));
  const OperatorPtr callable = std::make_shared<const CallableOperator>(
      256, 256, DType::f64, Device::cpu(),
      [csr](const Tensor& x, const Tensor& y) { csr->apply(x, y); }, "poisson");
  const Tensor b = random_vector(256, 3);
  MixedPrecisionRefinement refinement;
  EXPECT_THROW((void)refinement.solve(callable, b, zeros(256)), UsageError);
  const Tensor x = zeros(256);
  const RefinementResult result = refinement.solve(callable, b, x, csr->with_dtype(DType::f32));
  EXPECT_EQ(result.outer.status, SolveStatus::converged) << result.outer.detail;
  EXPECT_THROW((void)refinement.solve(callable, b, x, csr), UsageError)
      << "an f64 inner operator does not match inner_dtype f32";
}

TEST(MixedPrecision, TheOuterIterationLimitIsAStatus) {
  RefinementOptions options;
  options.outer.max_iterations = 1;
  const Tensor b = random_vector(kUnknowns, 4);
  const RefinementResult result =
      MixedPrecisionRefinement(options).solve(make_csr_operator(poisson64()), b, zeros(kUnknowns));
  EXPECT_EQ(result.outer.status, SolveStatus::max_iterations);
  EXPECT_EQ(result.outer.iterations, 1);
  EXPECT_LT(result.outer.relative_residual, 1e-3);
}

TEST(MixedPrecision, BadOptionsAreUsageErrors) {
  RefinementOptions options;
  options.inner_solver = "lu";
  EXPECT_THROW(MixedPrecisionRefinement{options}, UsageError);
  options = {};
  options.inner_dtype = DType::f16;
  EXPECT_THROW(MixedPrecisionRefinement{options}, UsageError);
  options = {};
  options.outer.tolerance = -1.0;
  EXPECT_THROW(MixedPrecisionRefinement{options}, UsageError);
}

}  // namespace
}  // namespace tenax::solvers
