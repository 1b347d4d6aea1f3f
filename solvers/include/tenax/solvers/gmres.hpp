/// Restarted GMRES(m) for general A: Arnoldi with Gram-Schmidt, the Hessenberg least-
/// squares problem reduced by Givens rotations as it grows, right or left preconditioning
/// (SolverOptions::preconditioner_side, text key pc_side).
/// @file
/// Right (the default): it iterates on A M^-1 y = b with x = M^-1 y, so the residual it minimises,
/// reports and tests is the unpreconditioned r = b - A x, converged when ||r|| <= tol ||b||.
/// Left: it iterates on M^-1 A x = M^-1 b, so the residual it minimises, reports (SolveResult,
/// the monitor, the divergence test) and tests is the preconditioned z = M^-1 (b - A x), converged
/// when ||z|| <= tol ||M^-1 b|| (and ||z|| <= atol): PETSc's default norm for left
/// preconditioning (KSP_NORM_PRECONDITIONED); SciPy's gmres also iterates on the preconditioned
/// residual but checks the true one at each restart. The true residual at exit then satisfies
/// ||b - A x|| <= ||M|| ||z||, which can be larger than tol ||b|| for an ill-conditioned M: check
/// it where it matters. Without a preconditioner (pc=none) the two sides are the same iteration.
/// A left-preconditioned step applies A, then M^-1; the update is x += V y (no M^-1).
/// One iteration is one Arnoldi step: one operator (and preconditioner) application, j + 1 dots
/// and axpys against the basis (j = position in the cycle) and one norm.
/// SolverOptions::orthogonalization chooses how: mgs (modified Gram-Schmidt, the default: dot and
/// axpy one basis vector after the other, 2 (j + 1) + 1 passes over w), cgs (classical: all j + 1
/// dots in one pass over the basis, then every subtraction and the norm in a second,
/// ops::basis_dots and ops::basis_subtract; PETSc's default, less orthogonal than mgs once the
/// basis grows ill-conditioned), cgs2 (classical twice, the second pass's coefficients added to the
/// first's: orthogonal to working precision, four passes over the basis). x is updated at the end
/// of each cycle of m steps (and when the session stops): x += M^-1 V y with H y = g solved by
/// back substitution on the host, in f64.
///
/// Reported residual: within a cycle, the least-squares residual |g_{j+1}|, which equals
/// ||b - A x_j|| in exact arithmetic; at each restart the true residual ||b - A x|| recomputed
/// from the updated x (the iteration that ends a cycle reports that one). With left
/// preconditioning read M^-1 (b - A x) for b - A x throughout.
///
/// A zero subdiagonal h_{j+1,j} is the "happy breakdown": the Krylov space is invariant and the
/// solution lies in it, so the cycle ends there and restarts from the exact residual (normally
/// converged). A zero on the diagonal of the rotated H (A M^-1 singular on the Krylov space)
/// stops with breakdown; a NaN or Inf in the Arnoldi column with non_finite. In both cases x gets
/// the update from the steps completed before.
///
/// Memory: (m + 1) basis vectors plus two. Saved state: x, the first j + 1 basis vectors, H, the
/// rotations, g, j and the side. A state saved with restart m and a side loads only into a solver
/// with restart m and that side (a state without a side, from before the option, is right).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tenax/solvers/krylov_solver.hpp"

namespace tenax::solvers {

/// Right- or left-preconditioned restarted GMRES(m), "gmres" for make_solver; see the file
/// description for the iteration, the residual it reports, its breakdowns and its saved state.
class Gmres final : public KrylovSolver {
 public:
  /// Validates `options` (UsageError); m = options.restart and the Gram-Schmidt variant
  /// options.orthogonalization are fixed for the solver's lifetime. The host-side least-squares
  /// arrays (about (m + 1) m doubles) are allocated here, the basis at start().
  explicit Gmres(SolverOptions options = {});
  [[nodiscard]] std::string_view name() const noexcept override { return "gmres"; }

 private:
  void allocate_method() override;
  double start_method() override;
  Step step() override;
  /// Orthogonalises w against v_0 .. v_j by the configured Gram-Schmidt, leaving the coefficients
  /// in column_[0, j]; returns w.w of the orthogonalised w.
  double orthogonalize(std::int64_t j);
  double reference_norm() override;
  /// The preconditioner when it is applied on the left, else nullptr.
  [[nodiscard]] const Preconditioner* left_preconditioner() const noexcept;
  void finish_method() override;
  void resume_method() override;
  void save_method(StateDict& state) const override;
  void load_method(const StateDict& state) override;
  [[nodiscard]] std::vector<SplitEntry> method_split_entries() const override;
  [[nodiscard]] IterationTraffic method_iteration_traffic(bool jacobi,
                                                          std::int64_t iterations) const override;

  [[nodiscard]] Tensor basis_vector(std::int64_t i) const;
  [[nodiscard]] double& h(std::int64_t row, std::int64_t col) {
    return hessenberg_[static_cast<std::size_t>(col * (restart_ + 1) + row)];
  }
  /// r = b - A x into basis vector 0, normalised; resets the cycle; returns ||r||.
  double restart_cycle();
  /// x += M^-1 V y for the j_ columns of the cycle; j_ becomes 0.
  void update_solution();

  std::int64_t restart_;
  bool left_;     ///< preconditioned on the left (options().preconditioner_side)
  Tensor basis_;  ///< [restart + 1, n]
  Tensor w_;
  Tensor z_;                        ///< M^-1 v (right) or A v (left); preconditioned only
  std::vector<double> hessenberg_;  ///< column-major [restart + 1, restart], rotated
  std::vector<double> cosines_;
  std::vector<double> sines_;
  std::vector<double> g_;           ///< rotated right-hand side of the least-squares problem
  std::vector<double> column_;      ///< the new column, committed only when it is valid
  std::vector<double> correction_;  ///< cgs2's second coefficients (scratch)
  std::int64_t j_ = 0;              ///< Arnoldi steps done in this cycle
};

}  // namespace tenax::solvers
