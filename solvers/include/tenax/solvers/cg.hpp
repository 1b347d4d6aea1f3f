/// Conjugate gradients, optionally preconditioned, for symmetric positive definite A (and an SPD
/// preconditioner M).
/// @file
/// Per iteration, unpreconditioned or with Jacobi, exactly three fused kernels (ops_krylov.hpp):
/// ```
/// q = A p and p.q        apply_dot     (the operator's bytes)
/// r -= a q               cg_residual   (returns r.r; with Jacobi also z = M^-1 r and r.z)
/// x += a p; p = z + b p  cg_advance    (x waits for the next direction: one pass over p)
/// ```
/// that is the operator plus 64 N bytes for f64 vectors of length N (80 N with Jacobi). Other
/// preconditioners add z = M^-1 r and one dot r.z. Every vector keeps the bits of the textbook
/// sequence of separate ops (axpby, dot, xpay).
///
/// Reported residual: sqrt(r.r) of the recurrence r_k = r_{k-1} - a q, which equals b - A x_k in
/// exact arithmetic (and to rounding in practice for well-conditioned systems); it is the
/// unpreconditioned residual also when M is used.
///
/// Breakdown (the iterate is the last one computed before it):
/// ```
/// p.Ap <= 0   A is not positive definite along p (indefinite or singular A; PETSc's
///             KSP_DIVERGED_INDEFINITE_MAT). CG on an indefinite system stops this way as soon
///             as it meets a direction of non-positive curvature; use gmres or bicgstab.
/// r.z <= 0    M is not positive definite (with r != 0).
/// ```
/// A NaN or Inf in p.Ap, r.z or the residual stops with non_finite at that iteration.
///
/// Saved state: x, r, the next direction p ("p_next"), z (when preconditioned), r.z of the last
/// two iterations. A state of the earlier layout ("p", the last direction) loads and resumes
/// exactly.
#pragma once

#include <string_view>

#include "tenax/solvers/krylov_solver.hpp"

namespace tenax::solvers {

/// (Preconditioned) conjugate gradients, "cg" for make_solver; see the file description for
/// the iteration, the residual it reports, its breakdowns and its saved state.
class ConjugateGradient final : public KrylovSolver {
 public:
  /// Validates `options` (UsageError); restart and orthog do not apply to CG.
  explicit ConjugateGradient(SolverOptions options = {});
  [[nodiscard]] std::string_view name() const noexcept override { return "cg"; }

 private:
  void allocate_method() override;
  double start_method() override;
  Step step() override;
  void save_method(StateDict& state) const override;
  void load_method(const StateDict& state) override;
  [[nodiscard]] std::vector<SplitEntry> method_split_entries() const override;
  [[nodiscard]] IterationTraffic method_iteration_traffic(bool jacobi,
                                                          std::int64_t iterations) const override;

  /// The preconditioned residual: z_ itself, or r_ when there is no preconditioner.
  [[nodiscard]] const Tensor& z() const noexcept;

  Tensor r_;
  Tensor p_;
  Tensor q_;
  Tensor z_;
  double rz_ = 0.0;       ///< r.z of the current residual
  double rz_prev_ = 0.0;  ///< r.z of the previous one (0 before the first iteration)
};

}  // namespace tenax::solvers
