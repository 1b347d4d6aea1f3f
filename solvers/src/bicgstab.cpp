#include "tenax/solvers/bicgstab.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "detail/format.hpp"
#include "detail/residual.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

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

const Tensor& BiCgStab::precondition(const Tensor& v, const Tensor& z) const {
  const Preconditioner* m = active_preconditioner();
  if (m == nullptr) return v;
  m->apply(v, z);
  return z;
}

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
  const double rho = ops::dot(r_hat_, r_);
  if (auto failure = check_scalar("r^.r", rho,
                                  "the shadow residual became orthogonal to the residual; "
                                  "restart from the current x or use gmres")) {
    return fail(*failure);
  }
  // p = r + beta (p - omega v); on the first iteration p = r (p and v start at 0).
  const double beta = (rho / rho_) * (alpha_ / omega_);
  ops::axpby(-omega_, v_, 1.0, p_);
  ops::axpby(1.0, r_, beta, p_);

  const Tensor& p_hat = precondition(p_, p_hat_);
  op().apply(p_hat, v_);
  const double rv = ops::dot(r_hat_, v_);
  if (auto failure = check_scalar("r^.v", rv,
                                  "the denominator of alpha vanished; restart from the current "
                                  "x or use gmres")) {
    return fail(*failure);
  }
  const double alpha = rho / rv;
  // s = r - alpha v, kept in r: from here on r and x + alpha p^ are a consistent pair.
  ops::axpby(-alpha, v_, 1.0, r_);
  const double s_norm = ops::nrm2(r_);
  rho_ = rho;
  alpha_ = alpha;
  if (!std::isfinite(s_norm) || residual_converged(s_norm)) {
    ops::axpby(alpha, p_hat, 1.0, solution());
    omega_ = 1.0;  // unused: the session stops on this residual
    return Step::done(s_norm);
  }

  const Tensor& s_hat = precondition(r_, s_hat_);
  op().apply(s_hat, t_);
  const double tt = ops::dot(t_, t_);
  const double ts = ops::dot(t_, r_);
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
  ops::axpby(alpha, p_hat, 1.0, solution());
  ops::axpby(omega, s_hat, 1.0, solution());
  ops::axpby(-omega, t_, 1.0, r_);
  omega_ = omega;
  return Step::done(ops::nrm2(r_));
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
}

}  // namespace tenax::solvers
