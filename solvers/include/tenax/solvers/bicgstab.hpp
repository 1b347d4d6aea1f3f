/// BiCGSTAB (van der Vorst) for general, possibly non-symmetric or indefinite, A, with right
/// preconditioning: it iterates on A M^-1 y = b, x = M^-1 y, so the residual it carries is the
/// unpreconditioned b - A x.
/// @file
/// One iteration: two operator applications, two preconditioner applications, four dots, two
/// norms, in five passes over memory (ops_krylov.hpp's fused BiCGSTAB kernels, with a Jacobi
/// preconditioner applied inside them and the dots inside the operator's product where it
/// offers LinearOperator::apply_dots); each vector and scalar has the bits the textbook sequence
/// of separate ops gives. It ends half way (x += alpha p^, counted as the iteration) when the
/// intermediate residual s already meets a convergence criterion.
///
/// Reported residual: the 2-norm of the recurrence residual (r = s - omega t), equal to b - A x
/// in exact arithmetic.
///
/// Breakdown (x is the last consistent iterate, which may include the half step):
/// ```
/// r^.r = 0      the shadow residual became orthogonal to r (rho)
/// r^.v = 0      (the denominator of alpha)
/// t.t = 0       A M^-1 s vanished while s did not meet the tolerance
/// omega = 0     the stabilising step made no progress (t orthogonal to s)
/// ```
/// A NaN or Inf in any of these scalars stops with non_finite at that iteration.
///
/// Saved state: x, r, r^ (the shadow residual), p, v and rho, alpha, omega.
#pragma once

#include <optional>
#include <string_view>

#include "tenax/solvers/krylov_solver.hpp"

namespace tenax::solvers {

/// Right-preconditioned BiCGSTAB, "bicgstab" for make_solver; see the file description for the
/// iteration, the residual it reports, its breakdowns and its saved state.
class BiCgStab final : public KrylovSolver {
 public:
  /// Validates `options` (UsageError); restart and orthog do not apply to BiCGSTAB.
  explicit BiCgStab(SolverOptions options = {});
  [[nodiscard]] std::string_view name() const noexcept override { return "bicgstab"; }

 private:
  void allocate_method() override;
  double start_method() override;
  Step step() override;
  void save_method(StateDict& state) const override;
  void load_method(const StateDict& state) override;
  [[nodiscard]] std::vector<SplitEntry> method_split_entries() const override;
  [[nodiscard]] IterationTraffic method_iteration_traffic(bool jacobi,
                                                          std::int64_t iterations) const override;

  Tensor r_;
  Tensor r_hat_;
  Tensor p_;
  Tensor v_;
  Tensor t_;
  Tensor p_hat_;  ///< M^-1 p (scratch, preconditioned only)
  Tensor s_hat_;  ///< M^-1 s (scratch, preconditioned only)
  double rho_ = 1.0;
  double alpha_ = 1.0;
  double omega_ = 1.0;
  /// r^.r of the current r, when the last step's closing update computed it (not saved: a loaded
  /// state recomputes it, with the same bits).
  std::optional<double> next_rho_;
};

}  // namespace tenax::solvers
