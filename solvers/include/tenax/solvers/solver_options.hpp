// SolverOptions: how an iterative solve is configured, by value or from "key=value" text.
//
// Text form (for command-line flags and option files): entries "key=value" separated by commas,
// spaces or newlines; '#' starts a comment that runs to the end of the line. Keys:
//   tol        relative residual tolerance: stop when ||r|| <= tol * ||b||     (>= 0)
//   atol       absolute residual tolerance: stop when ||r|| <= atol            (>= 0)
//   max_iters  iteration limit                                                 (>= 0)
//   restart    GMRES restart length m                                          (>= 1)
//   orthog     GMRES's Gram-Schmidt: mgs (modified, the default: one dot and one axpby per
//              basis vector), cgs (classical, PETSc's default: all dots in one pass over the
//              basis, then all subtractions in one; cheaper, less orthogonal in finite
//              precision), cgs2 (classical twice: as orthogonal as mgs or better, four passes)
//   divtol     divergence factor: stop when ||r|| > divtol * ||r0||  (>= 1, "inf" disables)
//   pc         preconditioner built for the operator at start(): none | jacobi | ilu0
// Unknown keys, malformed values and values out of range throw UsageError naming the entry and
// listing the valid keys or range. Later entries override earlier ones.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tenax::solvers {

// Divergence factor used unless configured: a residual 1e5 times the initial one means the
// iteration is going nowhere useful (PETSc uses 1e4; one more decade leaves room for the
// transient growth of CG and BiCGSTAB on ill-conditioned systems).
inline constexpr double kDefaultDivergenceFactor = 1e5;

struct SolverOptions {
  double tolerance = 1e-8;          // relative to ||b|| (2-norm)
  double absolute_tolerance = 0.0;  // 0: only the relative test
  std::int64_t max_iterations = 1000;
  std::int64_t restart = 30;              // GMRES only
  std::string orthogonalization = "mgs";  // GMRES only: mgs | cgs | cgs2
  double divergence_factor = kDefaultDivergenceFactor;
  std::string preconditioner = "none";
};

// Checks the ranges above; throws UsageError naming the field and its valid range.
void validate(const SolverOptions& options);

// `defaults` updated by the entries of `text`, then validated.
[[nodiscard]] SolverOptions parse_solver_options(std::string_view text,
                                                 const SolverOptions& defaults = {});

// The text form of all fields ("tol=1e-08,atol=0,max_iters=1000,restart=30,orthog=mgs,
// divtol=1e+05,pc=none"); parse_solver_options reads it back exactly (doubles are written in the
// shortest form that round-trips).
[[nodiscard]] std::string to_string(const SolverOptions& options);

}  // namespace tenax::solvers
