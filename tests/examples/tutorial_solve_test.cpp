// docs/tutorial-solve.md cannot go stale: it shows docs/tutorial/membrane.cpp as it is, and the
// program it builds solves -Δu = 1 to its tolerance (checked here against the residual and the
// closed forms, not the program's word), takes the solver's flags, and is killed mid-solve and
// resumed to the same bits, as the page says.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "examples/tutorial_runs.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;
using testing::final_checkpoint;
using testing::fresh_run_dir;
using testing::read_text;

constexpr std::int64_t kN = 127;  // the program's default grid
const fs::path kSource = TENAX_SOURCE_DIR;

testing::CommandOutput membrane(const fs::path& run_dir, const std::string& flags = "") {
  return testing::run_tutorial(TUTORIAL_MEMBRANE_PATH, run_dir, flags);
}

// ||1 - A u|| / ||1|| for the 5-point -Δh on the n x n grid of the unit square, u = 0 outside.
double relative_residual(const double* u, std::int64_t n) {
  const double inv_h2 = static_cast<double>((n + 1) * (n + 1));
  const auto at = [&](std::int64_t y, std::int64_t x) {
    return y < 0 || y >= n || x < 0 || x >= n ? 0.0 : u[y * n + x];
  };
  double squares = 0;
  for (std::int64_t y = 0; y < n; ++y) {
    for (std::int64_t x = 0; x < n; ++x) {
      const double au =
          inv_h2 * (4 * at(y, x) - at(y - 1, x) - at(y + 1, x) - at(y, x - 1) - at(y, x + 1));
      squares += (1.0 - au) * (1.0 - au);
    }
  }
  return std::sqrt(squares) / static_cast<double>(n);
}

// The discrete problem's own solution at the centre, from the eigenvectors of -Δh (sine modes):
// 1 = sum_jk c_j c_k sin(j pi x) sin(k pi y), c_j = 2h sum_p sin(j pi p h), eigenvalues
// (4/h^2)(sin^2(j pi h/2) + sin^2(k pi h/2)).
double discrete_centre(std::int64_t n) {
  const double h = 1.0 / static_cast<double>(n + 1);
  std::vector<double> c(static_cast<std::size_t>(n + 1), 0.0);
  std::vector<double> s(static_cast<std::size_t>(n + 1), 0.0);
  for (std::int64_t j = 1; j <= n; ++j) {
    double sum = 0;
    for (std::int64_t p = 1; p <= n; ++p) sum += std::sin(std::numbers::pi * j * p * h);
    // c_j times the mode's value at the centre, sin(j pi / 2).
    c[j] = 2 * h * sum * std::sin(std::numbers::pi * j / 2.0);
    s[j] = std::pow(std::sin(std::numbers::pi * j * h / 2), 2) * 4 / (h * h);
  }
  double u = 0;
  for (std::int64_t j = 1; j <= n; ++j) {
    for (std::int64_t k = 1; k <= n; ++k) u += c[j] * c[k] / (s[j] + s[k]);
  }
  return u;
}

// The continuous problem's solution at the centre: the double sine series over odd m, k of
// 16 / (pi^4 m k (m^2 + k^2)) sin(m pi/2) sin(k pi/2) (0.0736713532...).
double continuous_centre() {
  double u = 0;
  for (int m = 1; m < 4000; m += 2) {
    for (int k = 1; k < 4000; k += 2) {
      const double sign = ((m + k) / 2) % 2 == 0 ? -1.0 : 1.0;  // sin(m pi/2) sin(k pi/2)
      u += sign * 16 /
           (std::pow(std::numbers::pi, 4) * m * k *
            (static_cast<double>(m) * m + static_cast<double>(k) * k));
    }
  }
  return u;
}

TEST(TutorialSolve, ThePageShowsTheProgramAsItIs) {
  testing::expect_linked_page_quoting("tutorial-solve.md", "tutorial/membrane.cpp");
}

// A whole solve: converged to the tolerance by the residual computed here from the checkpointed
// solution, which matches the discrete problem's closed form and, within the grid's O(h^2) error,
// the continuous one. Killed mid-solve and resumed, it ends with the same bits, and the report
// says what it cost.
TEST(TutorialSolve, SolvesToTheClosedFormAndResumesToTheSameBits) {
  const fs::path whole = fresh_run_dir("membrane-whole");
  const testing::CommandOutput first = membrane(whole);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string said = testing::line_starting(first.output, "membrane: converged after ");
  EXPECT_FALSE(said.empty()) << first.output;
  const io::LoadedCheckpoint expected = final_checkpoint(whole);
  EXPECT_GT(expected.step, 17) << "the kill below must come before the solve converges";
  EXPECT_NE(first.output.find("tenax: completed at step " + std::to_string(expected.step) +
                              ": no faults"),
            std::string::npos)
      << first.output;
  const Tensor& u = expected.state.tensor("workload/solver/x");
  ASSERT_EQ(u.numel(), kN * kN);
  EXPECT_LE(relative_residual(u.data_as<double>(), kN), 1e-8);
  const double centre = u.data_as<double>()[kN * kN / 2];
  EXPECT_NEAR(centre, discrete_centre(kN), 1e-9);
  EXPECT_NEAR(centre, continuous_centre(), 1e-5);  // h^2 = 6e-5
  EXPECT_NE(said.find("u(1/2, 1/2) = 0.07366781"), std::string::npos) << said;

  const fs::path killed = fresh_run_dir("membrane-killed");
  testing::expect_resumed_as_whole(TUTORIAL_MEMBRANE_PATH, killed, 17, 10, "membrane: ", said,
                                   expected, "6 steps recomputed", "relative_residual");
  fs::remove_all(whole);
  fs::remove_all(killed);
}

// The solver is chosen by name from the flags the page shows; convergence is a result (a solve
// cut short by its iteration limit ends with exit 2 and says so), and a resume may not change the
// method, but may tighten the tolerance when asked to.
TEST(TutorialSolve, TheSolverComesFromTheFlags) {
  const fs::path dir = fresh_run_dir("membrane-flags");
  const testing::CommandOutput gmres = membrane(dir, "--solver gmres --pc ilu0 --solver.tol 1e-10");
  ASSERT_EQ(gmres.exit_code, 0) << gmres.output;
  EXPECT_NE(gmres.output.find("membrane: converged"), std::string::npos) << gmres.output;
  const io::LoadedCheckpoint loaded = final_checkpoint(dir);
  EXPECT_NEAR(loaded.state.tensor("workload/solver/x").data_as<double>()[kN * kN / 2],
              discrete_centre(kN), 1e-11);
  EXPECT_LE(relative_residual(loaded.state.tensor("workload/solver/x").data_as<double>(), kN),
            1e-10);
  fs::remove_all(dir);

  const testing::CommandOutput jacobi = membrane(dir, "--solver cg --pc jacobi --solver.tol 1e-8");
  EXPECT_EQ(jacobi.exit_code, 0) << jacobi.output;
  EXPECT_NE(jacobi.output.find("membrane: converged"), std::string::npos) << jacobi.output;
  fs::remove_all(dir);

  const testing::CommandOutput short_of_it = membrane(dir, "--solver.max-iters 50");
  EXPECT_EQ(short_of_it.exit_code, 2) << short_of_it.output;
  EXPECT_NE(short_of_it.output.find("membrane: max_iterations after 50 iterations"),
            std::string::npos)
      << short_of_it.output;
  fs::remove_all(dir);

  ASSERT_NE(membrane(dir, "--inject kill@step=3").exit_code, 0);
  const testing::CommandOutput other_method = membrane(dir, "--solver bicgstab");
  EXPECT_EQ(other_method.exit_code, 1) << other_method.output;
  EXPECT_NE(other_method.output.find("solver: \"cg\" -> \"bicgstab\""), std::string::npos)
      << other_method.output;
  const testing::CommandOutput tighter =
      membrane(dir, "--solver.tol 1e-10 --allow-config-change solver.tol");
  EXPECT_EQ(tighter.exit_code, 0) << tighter.output;
  EXPECT_NE(tighter.output.find("membrane: converged"), std::string::npos) << tighter.output;
  EXPECT_LE(relative_residual(
                final_checkpoint(dir).state.tensor("workload/solver/x").data_as<double>(), kN),
            1e-10);

  const testing::CommandOutput even = membrane(dir, "--n 64");
  EXPECT_EQ(even.exit_code, 1) << even.output;
  EXPECT_NE(even.output.find("--n 64: expected"), std::string::npos) << even.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tenax
