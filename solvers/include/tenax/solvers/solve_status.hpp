// The outcome of an iterative solve. Convergence is a result, not an exception: a solver
// returns a SolveResult whatever happened, and only invalid arguments (UsageError), a device
// fault or an out-of-memory error throw.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tenax::solvers {

enum class SolveStatus {
  converged,       // a residual criterion was met
  max_iterations,  // the iteration limit was reached first
  breakdown,       // a denominator of the method vanished (e.g. p.Ap = 0 in CG, rho = 0 in
                   // BiCGSTAB); the iterate is the last one computed before it
  diverged,        // the residual grew past the divergence limit
  non_finite,      // a NaN or Inf appeared in a residual norm or a scalar of the method
};

[[nodiscard]] std::string_view to_string(SolveStatus status) noexcept;
// The status named by to_string; throws UsageError listing the names otherwise.
[[nodiscard]] SolveStatus solve_status_from_string(std::string_view name);

struct SolveResult {
  SolveStatus status = SolveStatus::max_iterations;
  std::int64_t iterations = 0;      // iterations completed
  double initial_residual = 0.0;    // ||b - A x0|| (2-norm, unpreconditioned)
  double residual = 0.0;            // the final residual norm the criteria were checked on
  double relative_residual = 0.0;   // residual / ||b|| (residual when b = 0)
  std::int64_t bad_iteration = -1;  // for non_finite and breakdown: where it appeared
  std::string detail;               // for anything but converged: what happened, in words

  [[nodiscard]] bool converged() const noexcept { return status == SolveStatus::converged; }
};

}  // namespace tenax::solvers
