// heat2d's time schemes against each other and against the exact solution
// u = exp(-2 pi^2 t) sin(pi x) sin(pi y) (alpha = 1): second order in space, Crank-Nicolson second
// order in time, implicit and explicit Euler first order, and an implicit run killed mid-way
// that resumes bitwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

#include "heat2d_runs.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"

namespace tenax {
namespace {

// Largest difference between two fields of the same grid.
double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double largest = 0.0;
  for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
    largest = std::max(largest, std::abs(a[k] - b[k]));
  }
  return largest;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

class Heat2dSchemes : public testing::Heat2dRuns {
 protected:
  // Runs `scheme` with time step `dt` for `steps` steps on an n x n grid; the final field.
  static std::vector<double> field_after(const std::string& scheme, double dt, int steps, int n) {
    const std::string name = scheme + "-" + std::to_string(n) + "-" + std::to_string(steps);
    const testing::Outcome outcome =
        run(name, {"--scheme", scheme, "--dt", number(dt), "--solver-tol", "1e-13"}, "", false, "",
            std::to_string(n), steps);
    EXPECT_EQ(outcome.exit_code, 0) << log_of(name);
    return read_field(name);
  }
};

// heat2d's FTCS is a kernel of its own over a runtime::Grid: its field must be, bit for bit, the
// library's hand-written sweep (ops::laplacian_5pt_update, the step heat2d took before it moved
// onto the grid) applied as many times to the same start, with and without the out-of-memory
// backoff's in-place blocks.
TEST_F(Heat2dSchemes, FtcsOnTheGridIsTheHandWrittenSweepBitForBit) {
  const int n = 37;
  const int steps = 12;
  const double h = 1.0 / (n + 1);
  const double dt = 0.9 * h * h / 4.0;  // the default --courant 0.9
  Tensor u = Tensor::empty({n, n}, DType::f64);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      const double x = h * (i + 1);
      const double y = h * (j + 1);
      u.data_as<double>()[j * n + i] =
          std::sin(std::numbers::pi * x) * std::sin(std::numbers::pi * y);
    }
  }
  Tensor next = Tensor::empty({n, n}, DType::f64);
  for (int s = 0; s < steps; ++s) {
    ops::laplacian_5pt_update(u, next, 0, dt, h, h);
    std::swap(u, next);
  }
  const std::vector<double> expected(u.data_as<double>(), u.data_as<double>() + n * n);
  for (const std::string inject : {std::string(), std::string("oom@step=3x4")}) {
    const std::string name = "ftcs-sweep" + std::string(inject.empty() ? "" : "-oom");
    const testing::Outcome outcome = run(name, {}, inject, false, "", std::to_string(n), steps);
    ASSERT_EQ(outcome.exit_code, 0) << log_of(name);
    EXPECT_EQ(read_field(name), expected) << inject;
  }
}

TEST_F(Heat2dSchemes, TimeOrderOfEachScheme) {
  // A fixed grid and end time; each scheme's error against an RK4 run with a far smaller step
  // (fourth order: its own time error is negligible here) as dt halves.
  const int n = 31;
  const double t_end = 0.02;
  const std::vector<double> reference = field_after("rk4", t_end / 640, 640, n);
  ASSERT_FALSE(reference.empty());
  struct Expectation {
    std::string scheme;
    int first_steps;
    double order;
  };
  // Explicit Euler needs dt below h^2/4 = 2.4e-4: 160 steps and more.
  for (const Expectation& e :
       std::vector<Expectation>{{"cn", 10, 2.0}, {"implicit", 10, 1.0}, {"explicit", 160, 1.0}}) {
    std::vector<double> errors;
    for (int steps = e.first_steps; steps <= 4 * e.first_steps; steps *= 2) {
      errors.push_back(max_difference(field_after(e.scheme, t_end / steps, steps, n), reference));
    }
    for (std::size_t k = 1; k < errors.size(); ++k) {
      const double observed = std::log2(errors[k - 1] / errors[k]);
      EXPECT_NEAR(observed, e.order, 0.25)
          << e.scheme << ": errors " << errors[k - 1] << " -> " << errors[k];
    }
  }
}

TEST_F(Heat2dSchemes, SecondOrderInSpace) {
  // Crank-Nicolson with a step small enough that the time error is far below the space error.
  const double t_end = 0.01;
  std::vector<double> errors;
  for (const int n : {15, 31, 63}) {
    const std::vector<double> u = field_after("cn", t_end / 100, 100, n);
    const double h = 1.0 / (n + 1);
    const double decay = std::exp(-2.0 * std::numbers::pi * std::numbers::pi * t_end);
    std::vector<double> exact(u.size());
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < n; ++i) {
        exact[static_cast<std::size_t>(j * n + i)] = decay *
                                                     std::sin(std::numbers::pi * h * (i + 1)) *
                                                     std::sin(std::numbers::pi * h * (j + 1));
      }
    }
    errors.push_back(max_difference(u, exact));
  }
  for (std::size_t k = 1; k < errors.size(); ++k) {
    EXPECT_NEAR(errors[k - 1] / errors[k], 4.0, 0.4) << errors[k - 1] << " -> " << errors[k];
  }
}

TEST_F(Heat2dSchemes, ImplicitRunKilledMidWayResumesBitwise) {
  const std::vector<std::string> args = {"--scheme", "cn", "--dt", "0.001"};
  ASSERT_EQ(run("cn-reference", args, "", false).exit_code, 0) << log_of("cn-reference");
  const std::vector<double> expected = read_field("cn-reference");
  for (const std::string faults :
       {"kill@step=17", "kill@checkpoint=3:after_rename", "nan@step=33"}) {
    const std::string name =
        "cn-" + faults.substr(0, faults.find('@')) + faults.substr(faults.find('=') + 1, 2);
    const testing::Outcome outcome = run(name, args, faults, true);
    ASSERT_EQ(outcome.exit_code, 0) << log_of(name);
    const std::vector<double> got = read_field(name);
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_EQ(max_difference(got, expected), 0.0) << faults;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), expected.begin(),
                           [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }))
        << faults << ": not bitwise equal";
  }
}

TEST_F(Heat2dSchemes, UnstableExplicitStepIsRefusedWithTheFix) {
  const testing::Outcome outcome =
      run("unstable", {"--scheme", "explicit", "--dt", "0.01"}, "", false);
  EXPECT_NE(outcome.exit_code, 0);
  EXPECT_NE(log_of("unstable").find("above the stability limit"), std::string::npos)
      << log_of("unstable");
  EXPECT_NE(log_of("unstable").find("--scheme implicit or cn"), std::string::npos);
}

}  // namespace
}  // namespace tenax
