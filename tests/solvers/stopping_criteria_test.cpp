// Stopping criteria: each one's rule, the evaluation order of a set, and the set built from
// options.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "tenax/core/error.hpp"
#include "tenax/solvers/stopping_criteria.hpp"

namespace tenax::solvers {
namespace {

ResidualCheck at(std::int64_t iteration, double residual, double initial = 1.0,
                 double rhs_norm = 2.0) {
  return ResidualCheck{iteration, residual, initial, rhs_norm};
}

TEST(StoppingCriteria, MaxIterationsStopsAtTheLimit) {
  const MaxIterations limit(5);
  EXPECT_FALSE(limit.check(at(4, 1.0)));
  const auto reason = limit.check(at(5, 1.0));
  ASSERT_TRUE(reason);
  EXPECT_EQ(reason->status, SolveStatus::max_iterations);
  EXPECT_TRUE(MaxIterations(0).check(at(0, 1.0)));
  EXPECT_THROW(MaxIterations(-1), UsageError);
}

TEST(StoppingCriteria, RelativeResidualIsRelativeToTheRightHandSide) {
  const RelativeResidual relative(1e-3);
  EXPECT_FALSE(relative.check(at(1, 2.1e-3, 1.0, 2.0)));
  const auto reason = relative.check(at(1, 2.0e-3, 1.0, 2.0));
  ASSERT_TRUE(reason);
  EXPECT_EQ(reason->status, SolveStatus::converged);
  // b = 0: the residual itself is compared, as SolveResult::relative_residual is defined.
  EXPECT_TRUE(relative.check(at(1, 1e-3, 1.0, 0.0)));
  EXPECT_FALSE(relative.check(at(1, 2e-3, 1.0, 0.0)));
  EXPECT_THROW(RelativeResidual(-1.0), UsageError);
}

TEST(StoppingCriteria, AbsoluteResidualAndDivergence) {
  EXPECT_TRUE(AbsoluteResidual(1e-6).check(at(3, 1e-6)));
  EXPECT_FALSE(AbsoluteResidual(1e-6).check(at(3, 1.1e-6)));
  const Divergence divergence(10.0);
  EXPECT_FALSE(divergence.check(at(2, 10.0, 1.0)));
  const auto reason = divergence.check(at(2, 10.5, 1.0));
  ASSERT_TRUE(reason);
  EXPECT_EQ(reason->status, SolveStatus::diverged);
  EXPECT_FALSE(Divergence(std::numeric_limits<double>::infinity()).check(at(2, 1e300, 1.0)));
  EXPECT_THROW(Divergence(0.5), UsageError);
}

TEST(StoppingCriteria, NonFiniteComesFirstThenConvergenceThenTheRestInOrder) {
  StoppingCriteria set;
  set.add(std::make_shared<const MaxIterations>(3))
      .add(std::make_shared<const Divergence>(2.0))
      .add(std::make_shared<const RelativeResidual>(0.5));
  EXPECT_EQ(set.evaluate(at(3, NAN))->status, SolveStatus::non_finite);
  EXPECT_EQ(set.evaluate(at(3, INFINITY))->status, SolveStatus::non_finite);
  // Converging on the last allowed iteration counts as converged.
  EXPECT_EQ(set.evaluate(at(3, 0.5, 1.0, 1.0))->status, SolveStatus::converged);
  // Max iterations was added before divergence, so it wins when both hold.
  EXPECT_EQ(set.evaluate(at(3, 5.0, 1.0, 1.0))->status, SolveStatus::max_iterations);
  EXPECT_EQ(set.evaluate(at(2, 5.0, 1.0, 1.0))->status, SolveStatus::diverged);
  EXPECT_FALSE(set.evaluate(at(2, 0.9, 1.0, 1.0)));
  EXPECT_TRUE(set.converged(at(2, 0.4, 1.0, 1.0)));
  EXPECT_FALSE(set.converged(at(2, NAN, 1.0, 1.0)));
}

TEST(StoppingCriteria, FromOptionsBuildsTheConfiguredSet) {
  SolverOptions options;
  options.tolerance = 1e-6;
  options.absolute_tolerance = 1e-9;
  options.max_iterations = 7;
  options.divergence_factor = 100.0;
  const StoppingCriteria set = StoppingCriteria::from_options(options);
  EXPECT_EQ(set.describe(),
            "max_iterations 7, relative residual 1e-06, absolute residual 1e-09, divergence 100");
  EXPECT_EQ(set.evaluate(at(1, 5e-10, 1.0, 1e6))->status, SolveStatus::converged)
      << "the absolute test alone suffices";
  EXPECT_EQ(set.evaluate(at(1, 101.0, 1.0, 1e7))->status, SolveStatus::diverged);
  EXPECT_EQ(set.evaluate(at(7, 0.5, 1.0, 1.0))->status, SolveStatus::max_iterations);

  options.absolute_tolerance = 0.0;
  options.divergence_factor = std::numeric_limits<double>::infinity();
  EXPECT_EQ(StoppingCriteria::from_options(options).describe(),
            "max_iterations 7, relative residual 1e-06");
}

}  // namespace
}  // namespace tenax::solvers
