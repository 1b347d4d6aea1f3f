// KrylovSolver::iteration_traffic: each method's count of products and vector passes per
// iteration (the achieved-bandwidth model poisson prints), with and without Jacobi, GMRES's
// growth along a cycle for each Gram-Schmidt variant, and no model where there is none.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/jacobi_preconditioner.hpp"
#include "tenax/solvers/laplacian_operator.hpp"

namespace tenax::solvers {
namespace {

KrylovSolver::IterationTraffic traffic(const std::string& method, const std::string& pc,
                                       std::int64_t iterations, std::int64_t restart = 30,
                                       const std::string& orthog = "mgs") {
  SolverOptions options;
  options.preconditioner = pc;
  options.restart = restart;
  options.orthogonalization = orthog;
  const auto t = make_solver(method, options)->iteration_traffic(iterations);
  EXPECT_TRUE(t.has_value()) << method << " " << pc;
  return t.value_or(KrylovSolver::IterationTraffic{});
}

TEST(IterationTraffic, CgAndBicgstabCountTheirFusedKernels) {
  EXPECT_EQ(traffic("cg", "none", 10).applies, 1.0);
  EXPECT_EQ(traffic("cg", "none", 10).passes, 8.0);
  EXPECT_EQ(traffic("cg", "jacobi", 10).passes, 10.0);
  EXPECT_EQ(traffic("bicgstab", "none", 10).applies, 2.0);
  EXPECT_EQ(traffic("bicgstab", "none", 10).passes, 16.0);
  EXPECT_EQ(traffic("bicgstab", "jacobi", 10).passes, 21.0);
  // The iteration count does not matter to them.
  EXPECT_EQ(traffic("cg", "none", 1).passes, traffic("cg", "none", 100000).passes);
}

TEST(IterationTraffic, GmresGrowsAlongACycleForEachGramSchmidt) {
  // A full cycle of m = 30: j + 1 averages (m + 1) / 2 = 15.5.
  EXPECT_EQ(traffic("gmres", "none", 1000, 30, "mgs").passes, 3 + 5 * 15.5);
  EXPECT_EQ(traffic("gmres", "none", 1000, 30, "cgs").passes, 5 + 2 * 15.5);
  EXPECT_EQ(traffic("gmres", "none", 1000, 30, "cgs2").passes, 8 + 4 * 15.5);
  EXPECT_EQ(traffic("gmres", "jacobi", 1000, 30, "mgs").passes, 3 + 3 + 5 * 15.5);
  // Fewer iterations than a cycle: averaged over the part filled (9 steps: j + 1 averages 5).
  EXPECT_EQ(traffic("gmres", "none", 9, 30, "mgs").passes, 3 + 5 * 5.0);
  // No iteration yet counts one step.
  EXPECT_EQ(traffic("gmres", "none", 0, 30, "mgs").passes, 3 + 5 * 1.0);
  EXPECT_EQ(traffic("gmres", "none", 1000, 30, "mgs").applies, 1.0);
}

TEST(IterationTraffic, NoModelForIluOrAPreconditionerOfTheCallers) {
  SolverOptions options;
  options.preconditioner = "ilu0";
  EXPECT_EQ(make_solver("cg", options)->iteration_traffic(10), std::nullopt);
  const Laplacian2dOperator a(8, 8, 0.1, 0.1);
  const auto cg = make_solver("cg", {});
  cg->set_preconditioner(std::make_shared<JacobiPreconditioner>(a));
  EXPECT_EQ(cg->iteration_traffic(10), std::nullopt);
}

}  // namespace
}  // namespace tenax::solvers
