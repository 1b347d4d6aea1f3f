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
  ops::PcgDots dots;
  if (m == nullptr) {
    dots = ops::cg_residual(alpha, q_, r_);
  } else if (const Tensor* inverse_diagonal = m->inverse_diagonal()) {
    dots = ops::cg_residual(alpha, q_, r_, *inverse_diagonal, z_);
  } else {
    dots.rr = ops::cg_residual(alpha, q_, r_).rr;
    m->apply(r_, z_);
    dots.rz = ops::dot(r_, z_);
  }
  // x is advanced with the next direction, in one pass over p. When r.z rules out a next step
  // (the check above stops it), x alone is advanced and p is kept as it was.
  if (std::isfinite(dots.rz) && dots.rz > 0.0) {
    ops::cg_advance(alpha, p_, dots.rz / rz_, z(), solution());
  } else {
    ops::axpby(alpha, p_, 1.0, solution());
  }
  rz_prev_ = rz_;
  rz_ = dots.rz;
  return Step::done(std::sqrt(dots.rr));
}

// p is saved as "p_next", the direction of the next iteration. States saved before this layout
// hold "p", the direction of the last iteration, whose update to the next one was left to the
// start of the next step: load_method makes that update (the same op, the same bits), so such a
// state resumes exactly; a build that reads "p" finds no entry in a new state and says so,
// instead of updating the direction twice.
std::vector<KrylovSolver::SplitEntry> ConjugateGradient::method_split_entries() const {
  std::vector<SplitEntry> entries = {{"r", 0}, {"p_next", 0}};
  if (preconditions()) entries.push_back({"z", 0});
  return entries;
}

// 1 product + 8 passes: cg_residual reads r and q and writes r; cg_advance reads x, p and z and
// writes x and p. With Jacobi 10: the residual update also reads the inverse diagonal and writes z.
KrylovSolver::IterationTraffic ConjugateGradient::method_iteration_traffic(
    bool jacobi, std::int64_t /*iterations*/) const {
  return {1.0, jacobi ? 10.0 : 8.0};
}

void ConjugateGradient::save_method(StateDict& state) const {
  save_tensor(state, "r", r_);
  save_tensor(state, "p_next", p_);
  if (active_preconditioner() != nullptr) save_tensor(state, "z", z_);
  state.set("rz", rz_);
  state.set("rz_prev", rz_prev_);
}

void ConjugateGradient::load_method(const StateDict& state) {
  load_vector(state, "r", r_);
  if (active_preconditioner() != nullptr) load_vector(state, "z", z_);
  rz_ = state.real("rz");
  rz_prev_ = state.real("rz_prev");
  if (state.contains("p_next")) {
    load_vector(state, "p_next", p_);
    return;
  }
  load_vector(state, "p", p_);
  // rz_prev is 0 only before the first iteration, whose direction is z itself.
  if (rz_prev_ != 0.0 && std::isfinite(rz_) && rz_ > 0.0) ops::xpay(z(), rz_ / rz_prev_, p_);
}

}  // namespace tenax::solvers
