#include "tenax/solvers/time_integrator.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <utility>

#include "detail/format.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/scaled_shifted_operator.hpp"

namespace tenax::solvers {
namespace {

constexpr std::string_view kSchemeNames[] = {"explicit_euler", "rk4", "implicit_euler",
                                             "crank_nicolson"};
constexpr TimeScheme kSchemes[] = {TimeScheme::explicit_euler, TimeScheme::rk4,
                                   TimeScheme::implicit_euler, TimeScheme::crank_nicolson};

const OperatorPtr& checked(const OperatorPtr& a, double alpha) {
  TENAX_EXPECTS(a != nullptr && a->rows() == a->cols(), UsageError,
                "DiffusionIntegrator needs a square spatial operator",
                "pass the SPD operator A of u_t = -alpha A u (e.g. a Laplacian2dOperator)");
  TENAX_EXPECTS(std::isfinite(alpha) && alpha > 0.0, UsageError,
                "DiffusionIntegrator: alpha = " + detail::format_number(alpha) +
                    " but the diffusivity must be positive and finite",
                "pass alpha > 0 (length^2 / time)");
  return a;
}

}  // namespace

std::string_view to_string(TimeScheme scheme) noexcept {
  return kSchemeNames[static_cast<int>(scheme)];
}

TimeScheme time_scheme_from_string(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kSchemeNames); ++i) {
    if (kSchemeNames[i] == name) return kSchemes[i];
  }
  throw UsageError("unknown time scheme '" + std::string(name) + "'",
                   "use one of: " + detail::join_names(kSchemeNames));
}

DiffusionIntegrator::DiffusionIntegrator(OperatorPtr a, double alpha, IntegratorOptions options)
    : a_(checked(a, alpha)),
      alpha_(alpha),
      options_(std::move(options)),
      solver_(make_solver(options_.solver, options_.solver_options)) {}

DiffusionIntegrator::DiffusionIntegrator(DiffusionIntegrator&&) noexcept = default;
DiffusionIntegrator& DiffusionIntegrator::operator=(DiffusionIntegrator&&) noexcept = default;
DiffusionIntegrator::~DiffusionIntegrator() = default;

Tensor DiffusionIntegrator::checked_vector(const Tensor& u, double dt, const char* call) const {
  TENAX_EXPECTS(std::isfinite(dt) && dt > 0.0, UsageError,
                std::string(call) + ": dt = " + detail::format_number(dt) +
                    " but the time step must be positive and finite",
                "pass dt > 0");
  const std::int64_t n = a_->rows();
  TENAX_EXPECTS(u.defined() && u.numel() == n, UsageError,
                std::string(call) + ": u is " + (u.defined() ? u.describe() : "undefined") +
                    " but " + a_->describe() + " acts on " + std::to_string(n) + " unknowns",
                "pass the state with one element per unknown (any shape, e.g. the grid)");
  const Tensor v = u.reshape({n});
  a_->check_vector(std::string(call) + ": u", v, n);
  return v;
}

void DiffusionIntegrator::reserve(const Tensor& u, double dt) {
  const Tensor v = checked_vector(u, dt, "DiffusionIntegrator::reserve");
  ensure_work(v);
  if (options_.scheme == TimeScheme::implicit_euler ||
      options_.scheme == TimeScheme::crank_nicolson) {
    solver_->reserve(implicit_system(dt), rhs_, v);
  }
}

SolveResult DiffusionIntegrator::step(const Tensor& u, double dt) {
  const Tensor v = checked_vector(u, dt, "DiffusionIntegrator::step");
  ensure_work(v);
  // On a distributed operator the finiteness check and the implicit solve reduce over every rank's
  // shard, so every rank reaches the same verdict.
  const kernels::GlobalReductions global = a_->reductions();

  SolveResult result;
  switch (options_.scheme) {
    case TimeScheme::explicit_euler:
    case TimeScheme::rk4: {
      // u_t = -alpha A u with A SPD only decays, and a stable explicit step keeps every mode's
      // factor within [-1, 1]: ||u|| grows only when dt is past the scheme's stability limit.
      // Caught at the first growth, long before the field overflows to Inf.
      const double before = ops::nrm2(v);
      if (options_.scheme == TimeScheme::explicit_euler) {
        explicit_euler(v, dt);
      } else {
        rk4(v, dt);
      }
      result.iterations = 1;
      const double norm = ops::nrm2(v);
      // Slack for rounding: a field near its steady state decays by less per step than f32
      // rounds, so f32 gets a wider margin (a real instability grows by orders past either).
      const double slack = a_->dtype() == DType::f64 ? 1e-10 : 1e-4;
      if (std::isfinite(norm) && std::isfinite(before) && norm > before * (1.0 + slack)) {
        std::ostringstream detail;
        detail.precision(6);
        detail << "||u|| grew from " << before << " to " << norm << " in "
               << to_string(options_.scheme) << " step " << steps_ + 1 << ": dt = " << dt
               << " is past the scheme's stability limit for this operator (alpha dt "
               << "lambda_max(A) <= 2 for explicit_euler, about 2.78 for rk4; the 2-D Laplacian's "
               << "lambda_max is 8 / h^2): lower dt, or use implicit_euler or crank_nicolson";
        result.status = SolveStatus::diverged;
        result.bad_iteration = 1;
        result.detail = detail.str();
      } else if (std::isfinite(norm)) {
        result.status = SolveStatus::converged;
      } else {
        result.status = SolveStatus::non_finite;
        result.bad_iteration = 1;
        result.detail = "u holds a NaN or Inf after " + std::string(to_string(options_.scheme)) +
                        " step " + std::to_string(steps_ + 1) +
                        " (for an explicit scheme a too large dt makes it unstable)";
      }
      break;
    }
    case TimeScheme::implicit_euler:
    case TimeScheme::crank_nicolson:
      result = implicit_step(v, dt);
      break;
  }
  time_ += dt;
  ++steps_;
  return result;
}

void DiffusionIntegrator::explicit_euler(const Tensor& u, double dt) {
  a_->apply(u, rhs_);
  ops::axpby(-alpha_ * dt, rhs_, 1.0, u);
}

void DiffusionIntegrator::rk4(const Tensor& u, double dt) {
  // With k_i = A (stage_i), f = -alpha k_i: sum_ collects k1 + 2 k2 + 2 k3 + k4, rhs_ holds the
  // current k, stage_ the next stage point u - c k.
  const double half = -alpha_ * dt / 2.0;
  a_->apply(u, rhs_);
  ops::copy(sum_, rhs_);
  const double stage_factors[] = {half, half, -alpha_ * dt};
  const double weights[] = {2.0, 2.0, 1.0};
  for (int i = 0; i < 3; ++i) {
    ops::copy(stage_, u);
    ops::axpby(stage_factors[i], rhs_, 1.0, stage_);
    a_->apply(stage_, rhs_);
    ops::axpby(weights[i], rhs_, 1.0, sum_);
  }
  ops::axpby(-alpha_ * dt / 6.0, sum_, 1.0, u);
}

SolveResult DiffusionIntegrator::implicit_step(const Tensor& u, double dt) {
  const bool crank_nicolson = options_.scheme == TimeScheme::crank_nicolson;
  const double c = (crank_nicolson ? dt / 2.0 : dt) * alpha_;
  const OperatorPtr& system = implicit_system(dt);
  if (crank_nicolson) {
    a_->apply(u, rhs_);
    ops::axpby(1.0, u, -c, rhs_);
  } else {
    ops::copy(rhs_, u);
  }
  return solver_->solve(system, rhs_, u);
}

const OperatorPtr& DiffusionIntegrator::implicit_system(double dt) {
  const double c = (options_.scheme == TimeScheme::crank_nicolson ? dt / 2.0 : dt) * alpha_;
  if (system_ == nullptr || system_dt_ != dt) {
    system_ = scale_and_shift(a_, c, 1.0);
    system_dt_ = dt;
  }
  return system_;
}

void DiffusionIntegrator::ensure_work(const Tensor& like) {
  for (Tensor* t : {&rhs_, &stage_, &sum_}) {
    if (t->defined() && t->shape() == like.shape() && t->dtype() == like.dtype() &&
        t->device() == like.device()) {
      continue;
    }
    *t = Tensor::empty_like(like);
  }
}

void DiffusionIntegrator::save_state(StateDict& state, std::string_view prefix) const {
  state.set(detail::scoped_name(prefix, "scheme"), std::string(to_string(options_.scheme)));
  state.set(detail::scoped_name(prefix, "time"), time_);
  state.set(detail::scoped_name(prefix, "steps"), steps_);
}

void DiffusionIntegrator::load_state(const StateDict& state, std::string_view prefix) {
  const std::string& scheme = state.text(detail::scoped_name(prefix, "scheme"));
  TENAX_EXPECTS(scheme == to_string(options_.scheme), UsageError,
                "DiffusionIntegrator: the state was saved by a " + scheme +
                    " integrator but this one is " + std::string(to_string(options_.scheme)),
                "configure scheme " + scheme + " to resume this run");
  time_ = state.real(detail::scoped_name(prefix, "time"));
  steps_ = state.integer(detail::scoped_name(prefix, "steps"));
}

DiffusionIntegrator make_heat_integrator(std::int64_t ny, std::int64_t nx, double hy, double hx,
                                         double alpha, IntegratorOptions options, DType dtype,
                                         Device device) {
  return DiffusionIntegrator(
      std::make_shared<const Laplacian2dOperator>(ny, nx, hy, hx, dtype, device), alpha,
      std::move(options));
}

}  // namespace tenax::solvers
