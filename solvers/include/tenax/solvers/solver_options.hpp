/// SolverOptions: how an iterative solve is configured, by value or from "key=value" text.
/// @file
/// Text form (for command-line flags and option files): entries "key=value" separated by commas,
/// spaces or newlines; '#' starts a comment that runs to the end of the line. Keys:
/// ```
/// tol        relative residual tolerance: stop when ||r|| <= tol * ||b||     (>= 0)
/// atol       absolute residual tolerance: stop when ||r|| <= atol            (>= 0)
/// max_iters  iteration limit                                                 (>= 0)
/// restart    GMRES restart length m                                          (>= 1)
/// orthog     GMRES's Gram-Schmidt: mgs (modified, the default: one dot and one axpby per
///            basis vector), cgs (classical, PETSc's default: all dots in one pass over the
///            basis, then all subtractions in one; cheaper, less orthogonal in finite
///            precision), cgs2 (classical twice: as orthogonal as mgs or better, four passes)
/// divtol     divergence factor: stop when ||r|| > divtol * ||r0||  (>= 1, "inf" disables)
/// pc         preconditioner built for the operator at start(): none | jacobi | ilu0
/// pc_side    GMRES's preconditioning side: right (the default: the residual is b - A x) or
///            left (the residual is M^-1 (b - A x), measured against ||M^-1 b||; gmres.hpp)
/// ```
/// SolverOptions::monitor (residual_monitor.hpp) has no text form: it is set in code.
/// Real values may be written "inf" or "infinity". Unknown keys, malformed values and values out of
/// range throw UsageError naming the entry and listing the valid keys or range. Later entries
/// override earlier ones.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tenax/solvers/residual_monitor.hpp"

namespace tenax::solvers {

/// Divergence factor used unless configured: a residual 1e5 times the initial one means the
/// iteration is going nowhere useful (PETSc uses 1e4; one more decade leaves room for the
/// transient growth of CG and BiCGSTAB on ill-conditioned systems).
inline constexpr double kDefaultDivergenceFactor = 1e5;

/// How a Krylov solve is configured (make_solver, KrylovSolver, the inner and outer solves of
/// MixedPrecisionRefinement). A plain value type; the ranges are checked by validate(), which
/// the solvers' constructors call. Each field names its text key.
struct SolverOptions {
  /// `tol`: converged when ||r|| <= tolerance * ||b|| (2-norm; ||r|| <= tolerance when b = 0).
  double tolerance = 1e-8;
  /// `atol`: also converged when ||r|| <= absolute_tolerance; 0 leaves only the relative test.
  double absolute_tolerance = 0.0;
  /// `max_iters`: the solve stops with SolveStatus::max_iterations after this many iterations.
  std::int64_t max_iterations = 1000;
  std::int64_t restart = 30;              ///< `restart`: GMRES only, the cycle length m (>= 1)
  std::string orthogonalization = "mgs";  ///< `orthog`: GMRES only, mgs | cgs | cgs2
  /// `divtol`: diverged when ||r|| > divergence_factor * ||r0|| (>= 1; infinity turns the test
  /// off).
  double divergence_factor = kDefaultDivergenceFactor;
  /// `pc`: the preconditioner KrylovSolver::start() builds for the operator by name
  /// (none | jacobi | ilu0, see make_preconditioner), unless one was set explicitly.
  std::string preconditioner = "none";
  /// `pc_side`: GMRES only, right (A M^-1 y = b, the default) or left (M^-1 A x = M^-1 b); with
  /// left the residual reported, monitored and tested against tol is the preconditioned one,
  /// ||M^-1 (b - A x)|| <= tol * ||M^-1 b|| (PETSc's default for left; see gmres.hpp).
  std::string preconditioner_side = "right";
  /// Called once per iteration with the residual the criteria checked (residual_monitor.hpp);
  /// empty (the default) calls nothing. Not part of the text form.
  ResidualMonitor monitor{};
};

/// Checks every field: the ranges given with the text keys above, and that orthog, pc and pc_side
/// name a known choice. Throws UsageError naming the field and its valid values.
void validate(const SolverOptions& options);

/// `defaults` updated by the entries of `text`, then validated.
[[nodiscard]] SolverOptions parse_solver_options(std::string_view text,
                                                 const SolverOptions& defaults = {});

/// The text form of all fields but the monitor ("tol=1e-08,atol=0,max_iters=1000,restart=30,
/// orthog=mgs,divtol=1e+05,pc=none,pc_side=right"); parse_solver_options reads it back exactly
/// (doubles are written in the shortest form that round-trips).
[[nodiscard]] std::string to_string(const SolverOptions& options);

}  // namespace tenax::solvers
