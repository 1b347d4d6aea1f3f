#include "tenax/solvers/bicgstab.hpp"

#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "detail/format.hpp"
#include "detail/residual.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_krylov.hpp"

namespace tenax::solvers {
namespace {

using detail::format_number;

// The failure for a scalar that is not finite, or zero where it will divide; nothing otherwise.
std::optional<StopReason> check_scalar(const char* name, double value, const char* meaning) {
  if (!std::isfinite(value)) {
    return StopReason{SolveStatus::non_finite, std::string(name) + " = " + format_number(value)};
  }
  if (value == 0.0) {
    return StopReason{SolveStatus::breakdown, std::string(name) + " = 0: " + meaning};
  }
  return std::nullopt;
}

}  // namespace

BiCgStab::BiCgStab(SolverOptions options) : KrylovSolver(std::move(options)) {}

void BiCgStab::allocate_method() {
  ensure_vector(r_);
  ensure_vector(r_hat_);
  ensure_vector(p_);
  ensure_vector(v_);
  ensure_vector(t_);
  if (active_preconditioner() != nullptr) {
    ensure_vector(p_hat_);
    ensure_vector(s_hat_);
  }
}

double BiCgStab::start_method() {
  const double rr = detail::compute_residual(op(), rhs(), solution(), r_);
  ops::copy(r_hat_, r_);
  ops::fill(p_, 0.0);
  ops::fill(v_, 0.0);
  rho_ = alpha_ = omega_ = 1.0;
  next_rho_.reset();
  return std::sqrt(rr);
}

KrylovSolver::Step BiCgStab::step() {
  const auto fail = [](StopReason reason) { return Step{0.0, std::move(reason)}; };
  if (iteration() > 0) {
    if (auto failure = check_scalar("omega", omega_,
                                    "the stabilising step made no progress (t is orthogonal "
                                    "to s); restart from the current x or use gmres")) {
      return fail(*failure);
    }
  }
  // The last iteration's closing update computed r^.r already (the bits of ops::dot(r^, r)).
  const double rho = next_rho_ ? *next_rho_ : ops::dot(r_hat_, r_);
  next_rho_.reset();
  if (auto failure = check_scalar("r^.r", rho,
                                  "the shadow residual became orthogonal to the residual; "
                                  "restart from the current x or use gmres")) {
    return fail(*failure);
  }
  const Preconditioner* m = active_preconditioner();
  // A Jacobi preconditioner is applied inside the vector passes; any other one separately.
  const Tensor* inv_diag = m != nullptr ? m->inverse_diagonal() : nullptr;

  // p = r + beta (p - omega v); on the first iteration p = r (p and v start at 0).
  const double beta = (rho / rho_) * (alpha_ / omega_);
  if (inv_diag != nullptr) {
    ops::bicgstab_direction(beta, omega_, r_, v_, p_, *inv_diag, p_hat_);
  } else {
    ops::bicgstab_direction(beta, omega_, r_, v_, p_);
    if (m != nullptr) m->apply(p_, p_hat_);
  }
  const Tensor& p_hat = m != nullptr ? p_hat_ : p_;

  const double rv = op().apply_dot_with(p_hat, v_, r_hat_);
  if (auto failure = check_scalar("r^.v", rv,
                                  "the denominator of alpha vanished; restart from the current "
                                  "x or use gmres")) {
    return fail(*failure);
  }
  const double alpha = rho / rv;
  // s = r - alpha v, kept in r: from here on r and x + alpha p^ are a consistent pair.
  const double ss = inv_diag != nullptr ? ops::bicgstab_residual(alpha, v_, r_, *inv_diag, s_hat_)
                                        : ops::bicgstab_residual(alpha, v_, r_);
  const double s_norm = std::sqrt(ss);
  rho_ = rho;
  alpha_ = alpha;
  if (!std::isfinite(s_norm) || residual_converged(s_norm)) {
    ops::axpby(alpha, p_hat, 1.0, solution());
    omega_ = 1.0;  // unused: the session stops on this residual
    return Step::done(s_norm);
  }

  if (m != nullptr && inv_diag == nullptr) m->apply(r_, s_hat_);
  const Tensor& s_hat = m != nullptr ? s_hat_ : r_;
  // t = A s^, with t.s and t.t from the same pass.
  const LinearOperator::Dots dots = op().apply_dots(s_hat, t_, r_);
  const double tt = dots.yy;
  const double ts = dots.wy;
  std::optional<StopReason> failure =
      check_scalar("t.t", tt, "A M^-1 s vanished while s did not meet the tolerance; use gmres");
  if (!failure && !std::isfinite(ts)) {
    failure = StopReason{SolveStatus::non_finite, "t.s = " + format_number(ts)};
  }
  if (failure) {
    ops::axpby(alpha, p_hat, 1.0, solution());
    return fail(*failure);
  }
  const double omega = ts / tt;
  // x += alpha p^ + omega s^ and r = s - omega t, with r.r and the next r^.r in the same pass.
  const ops::BicgstabDots closing = ops::bicgstab_update(
      alpha, p_hat, omega, m != nullptr ? s_hat_ : Tensor{}, t_, r_hat_, solution(), r_);
  omega_ = omega;
  next_rho_ = closing.r_hat_r;
  return Step::done(std::sqrt(closing.rr));
}

std::vector<KrylovSolver::SplitEntry> BiCgStab::method_split_entries() const {
  std::vector<SplitEntry> entries = {{"r", 0}, {"r_hat", 0}, {"p", 0}, {"v", 0}};
  return entries;
}

// 2 products + 16 passes (ops_krylov.hpp's fused kernels): the direction reads r, p and v and
// writes p; each product also reads the vector its dots pair with; s reads r and v and writes r;
// the closing update reads x, p, r, t and r^ and writes x and r. With Jacobi 21: the direction
// and s also read the inverse diagonal and write p^ and s^, and the update reads s^.
KrylovSolver::IterationTraffic BiCgStab::method_iteration_traffic(
    bool jacobi, std::int64_t /*iterations*/) const {
  return {2.0, jacobi ? 21.0 : 16.0};
}

void BiCgStab::save_method(StateDict& state) const {
  save_tensor(state, "r", r_);
  save_tensor(state, "r_hat", r_hat_);
  save_tensor(state, "p", p_);
  save_tensor(state, "v", v_);
  state.set("rho", rho_);
  state.set("alpha", alpha_);
  state.set("omega", omega_);
}

void BiCgStab::load_method(const StateDict& state) {
  load_vector(state, "r", r_);
  load_vector(state, "r_hat", r_hat_);
  load_vector(state, "p", p_);
  load_vector(state, "v", v_);
  rho_ = state.real("rho");
  alpha_ = state.real("alpha");
  omega_ = state.real("omega");
  next_rho_.reset();  // recomputed from r^ and r: the same bits
}

}  // namespace tenax::solvers
