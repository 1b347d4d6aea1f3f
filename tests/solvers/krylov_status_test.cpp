// How the Krylov methods end when they do not converge: breakdown, divergence, non-finite
// values (with the iteration they appeared at), the iteration limit; plus the session rules
// (usage errors, determinism, no allocation inside the iteration loop).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "solvers/counted_allocations.hpp"
#include "solvers/test_problems.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/solvers/callable_operator.hpp"
#include "tenax/solvers/factory.hpp"

namespace tenax::solvers {
namespace {

using tenax::testing::CountedAllocations;
using testing::make_tensor;
using testing::random_vector;
using testing::values_of;
using testing::zeros;

OperatorPtr dense_operator(std::int64_t n, const std::vector<double>& values) {
  return make_csr_operator(CsrMatrix::from_dense(testing::dense(n, values)));
}

// A right-hand side whose squares underflow (1e-300: r.r = 0, "converged" at x = 0 with an error
// of 1) or overflow (1e300, or finite values whose norm exceeds the largest double) in f64 is
// refused by every method, naming ||b|| and the rescaling; b = 0 still solves to x = 0.
TEST(KrylovStatus, ARightHandSideBeyondTheSquaresRangeIsRefused) {
  const OperatorPtr a = dense_operator(2, {1, 0, 0, 1});
  for (const char* method : {"cg", "bicgstab", "gmres"}) {
    for (const double v : {1e-300, 1e-160, 1e160, 1e300, 1.5e308}) {
      try {
        (void)make_solver(method)->solve(a, make_tensor({v, v}, DType::f64), zeros(2));
        ADD_FAILURE() << method << " accepted b = " << v;
      } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("the right-hand side's norm ||b||"), std::string::npos)
            << e.what();
        EXPECT_NE(e.fix().find("rescale the system"), std::string::npos) << e.fix();
      }
    }
    const Tensor x = make_tensor({3.0, 4.0}, DType::f64);
    EXPECT_EQ(make_solver(method)->solve(a, make_tensor({0.0, 0.0}, DType::f64), x).status,
              SolveStatus::converged)
        << method;
    const SolveResult near =
        make_solver(method)->solve(a, make_tensor({1e-150, 1e-150}, DType::f64), zeros(2));
    EXPECT_EQ(near.status, SolveStatus::converged) << method;
  }
}

TEST(KrylovStatus, CgBreaksDownWhenPApIsZero) {
  // A is zero on the subspace of the last two unknowns and b lies in it: p0 = b, A p0 = 0.
  const OperatorPtr a = dense_operator(4, {2, 1, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  const Tensor x = zeros(4);
  const SolveResult result =
      make_solver("cg")->solve(a, make_tensor({0.0, 0.0, 1.0, -2.0}, DType::f64), x);
  EXPECT_EQ(result.status, SolveStatus::breakdown);
  EXPECT_EQ(result.bad_iteration, 1);
  EXPECT_EQ(result.iterations, 0);
  EXPECT_NE(result.detail.find("p.Ap = 0"), std::string::npos) << result.detail;
  EXPECT_EQ(values_of(x), std::vector<double>(4, 0.0)) << "x is the last iterate, x0";
}

TEST(KrylovStatus, CgOnAnIndefiniteSystemStopsWithBreakdownAtNegativeCurvature) {
  // The shifted Poisson matrix is negative along its lowest mode; b = that mode makes p0.Ap0 < 0.
  const std::int64_t n = 8;
  const OperatorPtr a = make_csr_operator(testing::shifted_poisson(n));
  const SolveResult result = make_solver("cg")->solve(
      a, make_tensor(testing::poisson_mode(n, 1, 1), DType::f64), zeros(n * n));
  EXPECT_EQ(result.status, SolveStatus::breakdown);
  EXPECT_EQ(result.bad_iteration, 1);
  EXPECT_NE(result.detail.find("not positive definite"), std::string::npos) << result.detail;
}

TEST(KrylovStatus, BiCgStabBreaksDownOnASkewSymmetricOperator) {
  // r0 . A r0 = 0 for skew-symmetric A, so the denominator of alpha vanishes at once.
  const OperatorPtr a = dense_operator(2, {0, 1, -1, 0});
  const SolveResult result =
      make_solver("bicgstab")->solve(a, make_tensor({1.0, 2.0}, DType::f64), zeros(2));
  EXPECT_EQ(result.status, SolveStatus::breakdown);
  EXPECT_EQ(result.bad_iteration, 1);
  EXPECT_NE(result.detail.find("r^.v = 0"), std::string::npos) << result.detail;
}

TEST(KrylovStatus, GmresBreaksDownWhenTheHessenbergMatrixIsSingular) {
  // A nilpotent: A b = 0 with b != 0, so the first Arnoldi column is zero.
  const OperatorPtr a = dense_operator(2, {0, 1, 0, 0});
  const Tensor x = zeros(2);
  const SolveResult result = make_solver("gmres")->solve(a, make_tensor({1.0, 0.0}, DType::f64), x);
  EXPECT_EQ(result.status, SolveStatus::breakdown);
  EXPECT_EQ(result.bad_iteration, 1);
  EXPECT_EQ(values_of(x), (std::vector<double>{0.0, 0.0}));
}

TEST(KrylovStatus, GrowingResidualIsReportedAsDivergence) {
  // CG on diag(1, 1e6) with b = (1, 0.01): the first step overshoots the stiff component and
  // ||r1|| is about 99 ||r0|| before the second step solves the system exactly.
  const OperatorPtr a = dense_operator(2, {1, 0, 0, 1e6});
  const Tensor b = make_tensor({1.0, 0.01}, DType::f64);
  SolverOptions options;
  options.divergence_factor = 10.0;
  const SolveResult diverged = make_solver("cg", options)->solve(a, b, zeros(2));
  EXPECT_EQ(diverged.status, SolveStatus::diverged);
  EXPECT_EQ(diverged.iterations, 1);
  EXPECT_GT(diverged.residual, 10.0 * diverged.initial_residual);
  EXPECT_EQ(diverged.bad_iteration, -1);
  // With the default factor the same solve converges.
  const SolveResult converged = make_solver("cg")->solve(a, b, zeros(2));
  EXPECT_EQ(converged.status, SolveStatus::converged);
  EXPECT_EQ(converged.iterations, 2);
}

// The 1-D Poisson matrix of size n as a callable that writes a NaN into y on its call number
// `poisoned_call` (0-based: call 0 is start()'s residual).
OperatorPtr poisoned_operator(std::int64_t n, int poisoned_call, std::shared_ptr<int> calls) {
  return std::make_shared<const CallableOperator>(
      n, n, DType::f64, Device::cpu(),
      [n, poisoned_call, calls](const Tensor& x, const Tensor& y) {
        const double* xv = x.data_as<const double>();
        double* yv = y.data_as<double>();
        for (std::int64_t i = 0; i < n; ++i) {
          yv[i] = 2.0 * xv[i] - (i > 0 ? xv[i - 1] : 0.0) - (i + 1 < n ? xv[i + 1] : 0.0);
        }
        if ((*calls)++ == poisoned_call) yv[n / 2] = std::numeric_limits<double>::quiet_NaN();
      },
      "poisoned 1-D poisson");
}

TEST(KrylovStatus, ANanFromTheOperatorIsReportedAtItsIteration) {
  const std::int64_t n = 200;  // no method converges to 1e-8 in 7 iterations here
  const int k = 7;
  // Operator calls per iteration: one for cg and gmres (restart > k), two for bicgstab.
  const struct {
    const char* method;
    int poisoned_call;
  } cases[] = {{"cg", k}, {"gmres", k}, {"bicgstab", 2 * k - 1}, {"bicgstab", 2 * k}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.method) + " poisoned at call " + std::to_string(c.poisoned_call));
    auto calls = std::make_shared<int>(0);
    const Tensor x = zeros(n);
    const SolveResult result = make_solver(c.method)->solve(
        poisoned_operator(n, c.poisoned_call, calls), random_vector(n, 4), x);
    EXPECT_EQ(result.status, SolveStatus::non_finite);
    EXPECT_EQ(result.bad_iteration, k);
    EXPECT_EQ(result.iterations, k - 1);
    EXPECT_FALSE(result.detail.empty());
    EXPECT_EQ(ops::count_nonfinite(x), 0) << "x stays the last finite iterate";
  }
}

TEST(KrylovStatus, ANanInTheInitialGuessIsReportedAtIterationZero) {
  const OperatorPtr a = make_csr_operator(testing::poisson(4));
  Tensor x = zeros(16);
  x.data_as<double>()[3] = std::numeric_limits<double>::infinity();
  const SolveResult result = make_solver("gmres")->solve(a, random_vector(16, 1), x);
  EXPECT_EQ(result.status, SolveStatus::non_finite);
  EXPECT_EQ(result.bad_iteration, 0);
  EXPECT_EQ(result.iterations, 0);
}

TEST(KrylovStatus, TheIterationLimitIsAStatusNotAnError) {
  const OperatorPtr a = make_csr_operator(testing::poisson(16));
  SolverOptions options;
  options.max_iterations = 5;
  for (const std::string_view method : solver_names()) {
    const SolveResult result =
        make_solver(method, options)->solve(a, random_vector(256, 2), zeros(256));
    EXPECT_EQ(result.status, SolveStatus::max_iterations) << method;
    EXPECT_EQ(result.iterations, 5) << method;
    EXPECT_LT(result.residual, result.initial_residual) << method << " made progress";
    EXPECT_NE(result.detail.find("limit of 5"), std::string::npos) << result.detail;
  }
}

TEST(KrylovStatus, TheLargestIterationLimitSolvesLikeAnyOther) {
  // solve() runs max_iters + 1 steps at most in one call; at INT64_MAX that count must not wrap.
  const OperatorPtr a = make_csr_operator(testing::poisson(16));
  SolverOptions options;
  options.max_iterations = std::numeric_limits<std::int64_t>::max();
  for (const std::string_view method : solver_names()) {
    const SolveResult result =
        make_solver(method, options)->solve(a, random_vector(256, 2), zeros(256));
    EXPECT_EQ(result.status, SolveStatus::converged) << method << ": " << result.detail;
  }
}

TEST(KrylovStatus, SameInputsGiveTheSameBits) {
  const OperatorPtr a = make_csr_operator(testing::convection_diffusion(12, 30.0, 10.0));
  const Tensor b = random_vector(144, 6);
  for (const std::string_view method : {"bicgstab", "gmres"}) {
    const Tensor x1 = zeros(144);
    const Tensor x2 = zeros(144);
    const SolveResult r1 = make_solver(method)->solve(a, b, x1);
    const SolveResult r2 = make_solver(method)->solve(a, b, x2);
    EXPECT_EQ(values_of(x1), values_of(x2)) << method;
    EXPECT_EQ(r1.residual, r2.residual) << method;
    EXPECT_EQ(r1.iterations, r2.iterations) << method;
  }
}

TEST(KrylovStatus, IteratingAllocatesNothing) {
  const OperatorPtr a = make_csr_operator(testing::poisson(24));
  const Tensor b = random_vector(576, 7);
  for (const std::string_view method : solver_names()) {
    for (const char* pc : {"none", "jacobi", "ilu0"}) {
      SolverOptions options;
      options.tolerance = 1e-15;  // out of reach in 15 iterations: every one of them runs
      options.preconditioner = pc;
      options.restart = 10;
      const auto solver = make_solver(method, options);
      const Tensor x = zeros(576);
      CountedAllocations allocations;
      solver->start(a, b, x);
      const std::int64_t after_start = allocations.blocks();
      EXPECT_FALSE(solver->iterate(15))
          << method << " with pc=" << pc << ": " << to_string(solver->result().status) << " after "
          << solver->result().iterations << ", " << solver->result().detail;
      EXPECT_EQ(allocations.blocks(), after_start) << method << " with pc=" << pc;
      // A second session of the same solver reuses its work vectors.
      solver->start(a, b, zeros(576));
      EXPECT_EQ(allocations.blocks(), after_start + 1) << "only the new x: " << method;
    }
  }
}

TEST(KrylovStatus, MisuseIsAUsageErrorNamingTheFix) {
  const OperatorPtr a = make_csr_operator(testing::poisson(4));
  const auto solver = make_solver("cg");
  EXPECT_THROW((void)solver->iterate(1), UsageError);
  StateDict state;
  EXPECT_THROW(solver->save_state(state, "s"), UsageError);
  EXPECT_THROW(solver->start(a, random_vector(15, 1), zeros(16)), UsageError);
  EXPECT_THROW(solver->start(a, random_vector(16, 1, DType::f32), zeros(16)), UsageError);
  EXPECT_THROW(solver->start(nullptr, random_vector(16, 1), zeros(16)), UsageError);
  const Tensor b = random_vector(16, 1);
  try {
    solver->start(a, b, b);
    FAIL() << "x aliasing b was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(e.fix().find("b.clone()"), std::string::npos) << e.fix();
  }
  const OperatorPtr rectangular =
      make_csr_operator(CsrMatrix::from_dense(make_tensor({2, 3}, DType::f64, {1, 2, 3, 4, 5, 6})));
  EXPECT_THROW(solver->start(rectangular, random_vector(2, 1), zeros(3)), UsageError);
  solver->start(a, b, zeros(16));
  EXPECT_THROW((void)solver->iterate(-1), UsageError);
}

TEST(KrylovStatus, AnExplicitPreconditionerMustFitTheOperator) {
  const OperatorPtr a = make_csr_operator(testing::poisson(4));
  const auto solver = make_solver("cg");
  solver->set_preconditioner(make_preconditioner("jacobi", make_csr_operator(testing::poisson(5))));
  EXPECT_THROW(solver->start(a, random_vector(16, 1), zeros(16)), UsageError);
  solver->set_preconditioner(make_preconditioner("ilu0", a));
  solver->start(a, random_vector(16, 1), zeros(16));
  EXPECT_EQ(solver->preconditioner()->name(), "ilu0");
  EXPECT_TRUE(solver->iterate(1000));
  EXPECT_TRUE(solver->result().converged());
}

}  // namespace
}  // namespace tenax::solvers
