// Time integrators for the heat equation u_t = alpha Δu on the unit square, Dirichlet zero:
// orders of accuracy in space (against the exact PDE solution) and in time (against the exact
// solution of the semi-discrete system, known in closed form for combinations of discrete
// eigenmodes), the solve result of implicit steps, instability, and saved state.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "solvers/test_problems.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/time_integrator.hpp"

namespace tenax::solvers {
namespace {

using testing::make_tensor;
using testing::values_of;

constexpr double kAlpha = 0.5;

struct Mode {
  int j, k;
  double amplitude;
};

// sum of amplitude * exp(-alpha lambda t) * mode over the modes, lambda the eigenvalue of -Δh
// (discrete = true) or of -Δ (pi^2 (j^2 + k^2)).
std::vector<double> modal_solution(std::int64_t n, const std::vector<Mode>& modes, double t,
                                   bool discrete) {
  std::vector<double> u(static_cast<std::size_t>(n * n), 0.0);
  for (const Mode& m : modes) {
    const double lambda = discrete ? testing::poisson_eigenvalue(n, m.j, m.k)
                                   : std::numbers::pi * std::numbers::pi * (m.j * m.j + m.k * m.k);
    const double decay = m.amplitude * std::exp(-kAlpha * lambda * t);
    const std::vector<double> shape = testing::poisson_mode(n, m.j, m.k);
    for (std::size_t i = 0; i < u.size(); ++i) u[i] += decay * shape[i];
  }
  return u;
}

double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

IntegratorOptions with_scheme(TimeScheme scheme, double tolerance = 1e-13) {
  IntegratorOptions options;
  options.scheme = scheme;
  options.solver_options.tolerance = tolerance;
  return options;
}

// Integrates the modes on an [n, n] grid to time t_end in `steps` equal steps; the max error
// against the semi-discrete (discrete = true) or the PDE solution.
double integration_error(TimeScheme scheme, std::int64_t n, const std::vector<Mode>& modes,
                         double t_end, int steps, bool discrete) {
  const double h = testing::unit_spacing(n);
  DiffusionIntegrator integrator = make_heat_integrator(n, n, h, h, kAlpha, with_scheme(scheme));
  const Tensor u = make_tensor({n, n}, DType::f64, modal_solution(n, modes, 0.0, true));
  const double dt = t_end / steps;
  for (int s = 0; s < steps; ++s) {
    const SolveResult result = integrator.step(u, dt);
    EXPECT_EQ(result.status, SolveStatus::converged) << result.detail;
  }
  EXPECT_NEAR(integrator.time(), t_end, 1e-12);
  EXPECT_EQ(integrator.steps(), steps);
  return max_difference(values_of(u), modal_solution(n, modes, t_end, discrete));
}

const std::vector<Mode> kFundamental = {{1, 1, 1.0}};
const std::vector<Mode> kThreeModes = {{1, 1, 1.0}, {2, 1, 0.5}, {1, 3, -0.25}};

// error(first) / error(second) must be within 10% of `order_ratio`.
void expect_ratios(const std::vector<double>& errors, double order_ratio) {
  for (std::size_t i = 0; i + 1 < errors.size(); ++i) {
    const double ratio = errors[i] / errors[i + 1];
    EXPECT_NEAR(ratio, order_ratio, 0.1 * order_ratio)
        << "errors " << errors[i] << " and " << errors[i + 1];
  }
}

TEST(TimeIntegrator, CrankNicolsonIsSecondOrderInSpace) {
  // dt small enough that the time error is far below the space error at every grid.
  std::vector<double> errors;
  for (const std::int64_t n : {15, 31, 63}) {
    errors.push_back(
        integration_error(TimeScheme::crank_nicolson, n, kFundamental, 0.1, 200, false));
  }
  expect_ratios(errors, 4.0);
}

TEST(TimeIntegrator, CrankNicolsonIsSecondOrderInTime) {
  std::vector<double> errors;
  for (const int steps : {20, 40, 80}) {
    errors.push_back(
        integration_error(TimeScheme::crank_nicolson, 31, kThreeModes, 0.1, steps, true));
  }
  expect_ratios(errors, 4.0);
}

TEST(TimeIntegrator, ImplicitEulerIsFirstOrderInTime) {
  std::vector<double> errors;
  for (const int steps : {80, 160, 320}) {
    errors.push_back(
        integration_error(TimeScheme::implicit_euler, 31, kThreeModes, 0.1, steps, true));
  }
  expect_ratios(errors, 2.0);
}

TEST(TimeIntegrator, ExplicitEulerIsFirstOrderInTime) {
  // h = 1/16: stable for dt <= h^2 / (4 alpha) = 1.95e-3.
  std::vector<double> errors;
  for (const int steps : {100, 200, 400}) {
    errors.push_back(
        integration_error(TimeScheme::explicit_euler, 15, kThreeModes, 0.1, steps, true));
  }
  expect_ratios(errors, 2.0);
}

TEST(TimeIntegrator, Rk4IsFourthOrderInTime) {
  // h = 1/8: lambda_max ~ 493, so dt = 0.1 / 64 gives alpha lambda dt ~ 0.39, well inside the
  // RK4 stability region.
  std::vector<double> errors;
  for (const int steps : {64, 128, 256}) {
    errors.push_back(integration_error(TimeScheme::rk4, 7, kThreeModes, 0.1, steps, true));
  }
  expect_ratios(errors, 16.0);
}

TEST(TimeIntegrator, ImplicitStepsReturnTheirSolveAndWarmStart) {
  const std::int64_t n = 24;
  const double h = testing::unit_spacing(n);
  DiffusionIntegrator integrator =
      make_heat_integrator(n, n, h, h, kAlpha, with_scheme(TimeScheme::crank_nicolson, 1e-10));
  const Tensor u = testing::random_vector(n * n, 8);
  const SolveResult first = integrator.step(u, 1e-3);
  EXPECT_EQ(first.status, SolveStatus::converged);
  EXPECT_GT(first.iterations, 1);
  EXPECT_LE(first.relative_residual, 1e-10);

  IntegratorOptions starved = with_scheme(TimeScheme::implicit_euler);
  starved.solver_options.max_iterations = 2;
  DiffusionIntegrator limited = make_heat_integrator(n, n, h, h, kAlpha, starved);
  const SolveResult result = limited.step(testing::random_vector(n * n, 9), 1e-2);
  EXPECT_EQ(result.status, SolveStatus::max_iterations);
  EXPECT_EQ(result.iterations, 2);
}

TEST(TimeIntegrator, ThePreconditionedSolverGivesTheSameSteps) {
  // Jacobi-preconditioned GMRES and plain CG solve the same implicit systems.
  const std::int64_t n = 15;
  const double h = testing::unit_spacing(n);
  IntegratorOptions options = with_scheme(TimeScheme::crank_nicolson);
  options.solver_options.preconditioner = "jacobi";
  options.solver = "gmres";
  DiffusionIntegrator preconditioned = make_heat_integrator(n, n, h, h, kAlpha, options);
  DiffusionIntegrator plain =
      make_heat_integrator(n, n, h, h, kAlpha, with_scheme(TimeScheme::crank_nicolson));
  const Tensor u = testing::random_vector(n * n, 12);
  const Tensor v = u.clone();
  for (int s = 0; s < 10; ++s) {
    ASSERT_TRUE(preconditioned.step(u, 0.01).converged());
    ASSERT_TRUE(plain.step(v, 0.01).converged());
  }
  EXPECT_LE(max_difference(values_of(u), values_of(v)), 1e-11);
}

TEST(TimeIntegrator, AnUnstableExplicitStepIsCaughtAtItsFirstGrowth) {
  const std::int64_t n = 15;
  const double h = testing::unit_spacing(n);
  for (TimeScheme scheme : {TimeScheme::explicit_euler, TimeScheme::rk4}) {
    SCOPED_TRACE(std::string(to_string(scheme)));
    DiffusionIntegrator integrator = make_heat_integrator(n, n, h, h, kAlpha, with_scheme(scheme));
    const Tensor u = testing::random_vector(n * n, 10);
    const double dt = 10.0 * h * h / (4.0 * kAlpha);  // ten times the FTCS limit
    const SolveResult result = integrator.step(u, dt);
    EXPECT_EQ(result.status, SolveStatus::diverged);
    EXPECT_EQ(result.bad_iteration, 1);
    EXPECT_NE(result.detail.find("||u|| grew from"), std::string::npos) << result.detail;
    EXPECT_NE(result.detail.find(std::string(to_string(scheme)) + " step 1"), std::string::npos)
        << result.detail;
    EXPECT_NE(result.detail.find("crank_nicolson"), std::string::npos) << result.detail;
  }
  // At the limit itself (alpha dt lambda_max = 2 for explicit Euler, just under for safety),
  // many steps of rough data never grow.
  DiffusionIntegrator stable =
      make_heat_integrator(n, n, h, h, kAlpha, with_scheme(TimeScheme::explicit_euler));
  const Tensor v = testing::random_vector(n * n, 11);
  const double limit = 0.999 * h * h / (4.0 * kAlpha);
  for (int s = 0; s < 200; ++s) ASSERT_TRUE(stable.step(v, limit).converged()) << "step " << s;
}

TEST(TimeIntegrator, AFieldHoldingANanReportsNonFinite) {
  const std::int64_t n = 15;
  const double h = testing::unit_spacing(n);
  DiffusionIntegrator integrator =
      make_heat_integrator(n, n, h, h, kAlpha, with_scheme(TimeScheme::explicit_euler));
  const Tensor u = testing::random_vector(n * n, 10);
  u.data_as<double>()[17] = std::numeric_limits<double>::quiet_NaN();
  const SolveResult result = integrator.step(u, 0.1 * h * h);
  EXPECT_EQ(result.status, SolveStatus::non_finite);
  EXPECT_EQ(result.bad_iteration, 1);
  EXPECT_NE(result.detail.find("explicit_euler"), std::string::npos) << result.detail;
}

TEST(TimeIntegrator, ResumesFromSavedStateBitwise) {
  const std::int64_t n = 20;
  const double h = testing::unit_spacing(n);
  const auto integrator = [&] {
    return make_heat_integrator(n, n, h, h, kAlpha, with_scheme(TimeScheme::crank_nicolson));
  };
  DiffusionIntegrator whole = integrator();
  const Tensor u = testing::random_vector(n * n, 11);
  for (int s = 0; s < 20; ++s) (void)whole.step(u, 2e-3);

  DiffusionIntegrator first = integrator();
  const Tensor v = testing::random_vector(n * n, 11);
  for (int s = 0; s < 10; ++s) (void)first.step(v, 2e-3);
  StateDict state;
  first.save_state(state, "heat");
  state.set("heat/u", v.clone());

  DiffusionIntegrator second = integrator();
  second.load_state(state, "heat");
  const Tensor w = state.tensor("heat/u").clone();
  for (int s = 0; s < 10; ++s) (void)second.step(w, 2e-3);
  EXPECT_EQ(values_of(w), values_of(u));
  EXPECT_EQ(second.steps(), 20);
  EXPECT_EQ(second.time(), whole.time());

  DiffusionIntegrator other =
      make_heat_integrator(n, n, h, h, kAlpha, with_scheme(TimeScheme::rk4));
  EXPECT_THROW(other.load_state(state, "heat"), UsageError);
}

TEST(TimeIntegrator, SchemeNamesAndMisuse) {
  for (const TimeScheme scheme : {TimeScheme::explicit_euler, TimeScheme::rk4,
                                  TimeScheme::implicit_euler, TimeScheme::crank_nicolson}) {
    EXPECT_EQ(time_scheme_from_string(to_string(scheme)), scheme);
  }
  EXPECT_THROW((void)time_scheme_from_string("leapfrog"), UsageError);
  EXPECT_THROW(make_heat_integrator(4, 4, 0.2, 0.2, -1.0), UsageError);
  DiffusionIntegrator integrator = make_heat_integrator(4, 4, 0.2, 0.2, 1.0);
  EXPECT_THROW((void)integrator.step(testing::zeros(16), 0.0), UsageError);
  EXPECT_THROW((void)integrator.step(testing::zeros(15), 0.1), UsageError);
  EXPECT_THROW((void)integrator.step(testing::zeros(16, DType::f32), 0.1), UsageError);
  IntegratorOptions bad;
  bad.solver = "jacobi";
  EXPECT_THROW(make_heat_integrator(4, 4, 0.2, 0.2, 1.0, bad), UsageError);
}

}  // namespace
}  // namespace tenax::solvers
