/// Mixed-precision iterative refinement: f64 accuracy at mostly f32 cost.
/// @file
/// ```
/// repeat:  r = b - A x             (working precision, usually f64)
///          solve A d = r / ||r||   (inner precision, usually f32, to a loose tolerance)
///          x += ||r|| d            (working precision)
/// ```
/// Each outer iteration gains roughly the inner solve's relative accuracy, so a handful of f32
/// solves reach a residual f32 arithmetic alone cannot (plain f32 CG stalls near 1e-6 relative on
/// a Poisson problem; refinement reaches 1e-12). Scaling r to unit norm keeps the f32 right-hand
/// side away from underflow as the residual shrinks.
///
/// The inner operator is A->with_dtype(inner_dtype) (CSR values cast; stencils rebuilt in that
/// dtype) unless one is passed explicitly (a callable operator must be). Everything runs on the
/// operator's device. The outer loop stops on its own criteria (tolerance, absolute tolerance,
/// iteration limit, divergence of the outer options, evaluated on the true working-precision
/// residual); an inner solve that ends with non_finite stops it with non_finite, one that breaks
/// down before making progress with breakdown; max_iterations of an inner solve is normal (its
/// correction is used).
///
/// Vectors are allocated once per solve() (and the inner solver's reused across outer
/// iterations). Not thread-safe; one object per concurrent solve.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tenax/solvers/krylov_solver.hpp"
#include "tenax/solvers/linear_operator.hpp"
#include "tenax/solvers/solve_status.hpp"
#include "tenax/solvers/solver_options.hpp"

namespace tenax::solvers {

/// How MixedPrecisionRefinement iterates: when the outer loop stops, which solver does the inner
/// solves and in which precision. Validated by the MixedPrecisionRefinement constructor.
struct RefinementOptions {
  /// Stopping of the outer loop (tol, atol, max_iters, divtol; pc, restart and orthog are not
  /// used, but must be valid).
  SolverOptions outer = {.tolerance = 1e-12, .max_iterations = 50};
  /// The inner method, by its make_solver name ("cg", "bicgstab", "gmres").
  std::string inner_solver = "cg";
  /// The inner solves' options (tolerance relative to the scaled residual, i.e. the reduction
  /// each outer iteration asks for; pc, restart and orthog apply).
  SolverOptions inner = {.tolerance = 1e-4, .max_iterations = 1000};
  /// The inner precision: f32 (mixed precision) or f64 (plain iterative refinement).
  DType inner_dtype = DType::f32;
};

/// What MixedPrecisionRefinement::solve reports.
struct RefinementResult {
  /// The outer loop: status, iterations = outer iterations, residual norms of b - A x computed
  /// in working precision (accumulated in f64).
  SolveResult outer;
  std::int64_t inner_iterations = 0;  ///< summed over the inner solves
  SolveResult last_inner;             ///< the last inner solve's result
};

/// Iterative refinement around an inner Krylov solver in lower precision (see the file
/// description). Owns one inner solver, reused by every solve(); not thread-safe.
class MixedPrecisionRefinement {
 public:
  /// Validates the options, the inner solver name and the inner dtype (UsageError).
  explicit MixedPrecisionRefinement(RefinementOptions options = {});
  ~MixedPrecisionRefinement();

  /// The options given to the constructor.
  [[nodiscard]] const RefinementOptions& options() const noexcept { return options_; }

  /// Solves A x = b; x holds the initial guess on entry and the solution on exit. a, b and x share
  /// a dtype (the working precision) and device. `inner` (optional) is the operator of the inner
  /// solves: same size and device, dtype options().inner_dtype. Throws UsageError for a null or
  /// non-square `a`, operands that do not fit it, an `inner` that does not match, or no `inner`
  /// when `a` is not in the inner dtype and cannot change dtype
  /// (LinearOperator::supports_dtype_cast). The outcome, converged or not, is the returned
  /// status.
  RefinementResult solve(const OperatorPtr& a, const Tensor& b, const Tensor& x,
                         OperatorPtr inner = nullptr);

 private:
  RefinementOptions options_;
  std::unique_ptr<KrylovSolver> inner_solver_;
};

}  // namespace tenax::solvers
