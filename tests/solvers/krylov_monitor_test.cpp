// The residual monitor of the Krylov solvers: called once for the initial residual and once per
// completed iteration, in order, with the numbers result() reports for the last one, for every
// method and both GMRES sides, whether the session runs in one call or in chunks; and
// ResidualHistory, the ready recorder.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "solvers/test_problems.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/residual_monitor.hpp"

namespace tenax::solvers {
namespace {

using testing::random_vector;
using testing::zeros;

struct Case {
  std::string method;
  std::string options;
};

void expect_history_matches_result(const Case& c, std::int64_t chunk) {
  SCOPED_TRACE(c.method + " " + c.options + " chunk " + std::to_string(chunk));
  const OperatorPtr a = make_csr_operator(testing::convection_diffusion(16, 10.0, 5.0));
  const Tensor b = random_vector(256, 3);
  ResidualHistory history;
  SolverOptions options = parse_solver_options(c.options);
  options.monitor = history.monitor();
  const auto solver = make_solver(c.method, options);
  const Tensor x = zeros(256);
  solver->start(a, b, x);
  while (!solver->iterate(chunk)) {
  }
  const SolveResult& r = solver->result();
  ASSERT_EQ(r.status, SolveStatus::converged) << r.detail;
  ASSERT_GT(r.iterations, 5);
  const std::vector<ResidualRecord>& records = history.records();
  ASSERT_EQ(static_cast<std::int64_t>(records.size()), r.iterations + 1);
  for (std::size_t k = 0; k < records.size(); ++k) {
    EXPECT_EQ(records[k].iteration, static_cast<std::int64_t>(k));
  }
  EXPECT_EQ(records.front().residual, r.initial_residual);
  EXPECT_EQ(records.back().residual, r.residual);
  EXPECT_EQ(records.back().relative_residual, r.relative_residual);
  EXPECT_EQ(history.residuals().back(), r.residual);
  // The same solve without a monitor: the same bits.
  const auto plain = make_solver(c.method, parse_solver_options(c.options));
  const Tensor y = zeros(256);
  (void)plain->solve(a, b, y);
  EXPECT_EQ(testing::values_of(y), testing::values_of(x));
  EXPECT_EQ(plain->result().residual, r.residual);
}

TEST(KrylovMonitor, IsCalledOncePerIterationWithTheReportedResidual) {
  // A non-symmetric problem: CG has its own test below.
  for (const Case& c :
       {Case{"bicgstab", "tol=1e-10"}, Case{"bicgstab", "tol=1e-10,pc=jacobi"},
        Case{"gmres", "tol=1e-10,restart=7"}, Case{"gmres", "tol=1e-10,restart=7,pc=jacobi"},
        Case{"gmres", "tol=1e-10,restart=7,pc=jacobi,pc_side=left"}}) {
    for (const std::int64_t chunk : {std::int64_t{1000}, std::int64_t{3}}) {
      expect_history_matches_result(c, chunk);
    }
  }
}

TEST(KrylovMonitor, CgReportsEveryIteration) {
  const OperatorPtr a = make_csr_operator(testing::poisson(20));
  const Tensor b = random_vector(400, 5);
  ResidualHistory history;
  SolverOptions options;
  options.tolerance = 1e-10;
  options.preconditioner = "jacobi";
  options.monitor = history.monitor();
  const auto solver = make_solver("cg", options);
  const SolveResult r = solver->solve(a, b, zeros(400));
  ASSERT_TRUE(r.converged());
  ASSERT_EQ(static_cast<std::int64_t>(history.records().size()), r.iterations + 1);
  EXPECT_EQ(history.records().back().iteration, r.iterations);
  EXPECT_EQ(history.records().back().residual, r.residual);
  EXPECT_EQ(history.records().back().relative_residual, r.relative_residual);
  // A second solve with the same solver appends a second history; clear() forgets.
  (void)solver->solve(a, b, zeros(400));
  EXPECT_EQ(static_cast<std::int64_t>(history.records().size()), 2 * (r.iterations + 1));
  history.clear();
  EXPECT_TRUE(history.records().empty());
}

TEST(KrylovMonitor, AFailedIterationIsNotReported) {
  // CG on an indefinite matrix stops with breakdown at negative curvature.
  const OperatorPtr a = make_csr_operator(testing::shifted_poisson(8));
  const Tensor b = random_vector(64, 1);
  ResidualHistory history;
  SolverOptions options;
  options.monitor = history.monitor();
  const SolveResult r = make_solver("cg", options)->solve(a, b, zeros(64));
  ASSERT_EQ(r.status, SolveStatus::breakdown);
  ASSERT_EQ(static_cast<std::int64_t>(history.records().size()), r.iterations + 1);
  EXPECT_EQ(history.records().back().residual, r.residual);
}

}  // namespace
}  // namespace tenax::solvers
