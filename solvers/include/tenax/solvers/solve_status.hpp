/// The outcome of an iterative solve. Convergence is a result, not an exception: a solver
/// returns a SolveResult whatever happened, and only invalid arguments (UsageError), a device
/// fault or an out-of-memory error throw. @file
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tenax::solvers {

/// How an iterative solve ended (SolveResult::status). Only `converged` means that a residual
/// criterion was met; with the others x holds the last iterate the method computed.
enum class SolveStatus {
  converged,       ///< a residual criterion was met
  max_iterations,  ///< the iteration limit was reached first
  breakdown,       ///< a denominator of the method vanished or lost its sign (e.g. p.Ap <= 0
                   ///< in CG, rho = 0 in BiCGSTAB); the iterate is the last one computed
                   ///< before it
  diverged,        ///< the residual grew past the divergence limit
  non_finite,      ///< a NaN or Inf appeared in a residual norm or a scalar of the method
};

/// The enumerator's name ("converged", "max_iterations", "breakdown", "diverged",
/// "non_finite"), as reports print it and saved solver state stores it; "unknown" for a value
/// outside the enumeration.
[[nodiscard]] std::string_view to_string(SolveStatus status) noexcept;
/// The status named by to_string; throws UsageError listing the names otherwise.
[[nodiscard]] SolveStatus solve_status_from_string(std::string_view name);

/// What an iterative solve reports. Convergence is read here, never from an exception. A
/// running session keeps it up to date (KrylovSolver::result()); it is final once the solver is
/// finished(). Residual norms are 2-norms of the unpreconditioned residual b - A x.
struct SolveResult {
  /// How the solve ended; max_iterations while a session is still running.
  SolveStatus status = SolveStatus::max_iterations;
  std::int64_t iterations = 0;      ///< iterations completed
  double initial_residual = 0.0;    ///< ||b - A x0|| (2-norm, unpreconditioned)
  double residual = 0.0;            ///< the final residual norm the criteria were checked on
  double relative_residual = 0.0;   ///< residual / ||b|| (residual when b = 0)
  std::int64_t bad_iteration = -1;  ///< for non_finite and breakdown: where it appeared, else -1
  std::string detail;               ///< for anything but converged: what happened, in words

  /// Whether status is SolveStatus::converged (x meets a convergence criterion).
  [[nodiscard]] bool converged() const noexcept { return status == SolveStatus::converged; }
};

}  // namespace tenax::solvers
