#include "tenax/solvers/cg.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "detail/format.hpp"
#include "detail/residual.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_krylov.hpp"

namespace tenax::solvers {
ConjugateGradient::ConjugateGradient(SolverOptions options) : KrylovSolver(std::move(options)) {}

const Tensor& ConjugateGradient::z() const noexcept {
  return active_preconditioner() != nullptr ? z_ : r_;
}

void ConjugateGradient::allocate_method() {
  ensure_vector(r_);
  ensure_vector(p_);
  ensure_vector(q_);
  if (active_preconditioner() != nullptr) ensure_vector(z_);
}

double ConjugateGradient::start_method() {
  const Preconditioner* m = active_preconditioner();

  const double rr = detail::compute_residual(op(), rhs(), solution(), r_);
  if (m != nullptr) {
    m->apply(r_, z_);
    rz_ = ops::dot(r_, z_);
  } else {
    rz_ = rr;
  }
  rz_prev_ = 0.0;
  ops::copy(p_, z());
  return std::sqrt(rr);
}

KrylovSolver::Step ConjugateGradient::step() {
  const Preconditioner* m = active_preconditioner();
  if (!std::isfinite(rz_)) {
    return Step::failed(SolveStatus::non_finite, "r.z = " + detail::format_number(rz_));
  }
  if (!(rz_ > 0.0)) {
    return Step::failed(SolveStatus::breakdown,
                        "r.z = " + detail::format_number(rz_) +
                            " <= 0 with a nonzero residual: the preconditioner is not positive "
                            "definite (CG needs an SPD preconditioner)");
  }
  // The direction update of the previous iteration is done here, after the check above, so
  // that a breakdown leaves p as it was and a converged solve skips it.
  if (iteration() > 0) ops::xpay(z(), rz_ / rz_prev_, p_);

  const double pq = op().apply_dot(p_, q_);
  if (!std::isfinite(pq)) {
    return Step::failed(SolveStatus::non_finite, "p.Ap = " + detail::format_number(pq));
  }
  if (!(pq > 0.0)) {
    return Step::failed(SolveStatus::breakdown,
                        "p.Ap = " + detail::format_number(pq) +
                            " <= 0: the operator is not positive definite along p (CG needs an "
                            "SPD operator; use gmres or bicgstab for indefinite systems)");
  }
  const double alpha = rz_ / pq;
  double rr = 0.0;
  double rz = 0.0;
  if (m == nullptr) {
    rr = ops::cg_update(alpha, p_, q_, solution(), r_);
    rz = rr;
  } else if (const Tensor* inverse_diagonal = m->inverse_diagonal()) {
    const ops::PcgDots dots =
        ops::pcg_jacobi_update(alpha, p_, q_, solution(), r_, *inverse_diagonal, z_);
    rr = dots.rr;
    rz = dots.rz;
  } else {
    rr = ops::cg_update(alpha, p_, q_, solution(), r_);
    m->apply(r_, z_);
    rz = ops::dot(r_, z_);
  }
  rz_prev_ = rz_;
  rz_ = rz;
  return Step::done(std::sqrt(rr));
}

void ConjugateGradient::save_method(StateDict& state) const {
  save_tensor(state, "r", r_);
  save_tensor(state, "p", p_);
  if (active_preconditioner() != nullptr) save_tensor(state, "z", z_);
  state.set("rz", rz_);
  state.set("rz_prev", rz_prev_);
}

void ConjugateGradient::load_method(const StateDict& state) {
  load_vector(state, "r", r_);
  load_vector(state, "p", p_);
  if (active_preconditioner() != nullptr) load_vector(state, "z", z_);
  rz_ = state.real("rz");
  rz_prev_ = state.real("rz_prev");
}

}  // namespace tenax::solvers
