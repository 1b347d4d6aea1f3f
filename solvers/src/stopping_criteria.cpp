#include "tenax/solvers/stopping_criteria.hpp"

#include <cmath>
#include <utility>

#include "detail/format.hpp"
#include "tenax/core/error.hpp"

namespace tenax::solvers {
namespace {

void check_tolerance(const char* what, double tolerance) {
  TENAX_EXPECTS(
      std::isfinite(tolerance) && tolerance >= 0.0, UsageError,
      std::string(what) + " tolerance " + detail::format_number(tolerance) + " is out of range",
      "use a finite tolerance >= 0");
}

}  // namespace

MaxIterations::MaxIterations(std::int64_t limit) : limit_(limit) {
  TENAX_EXPECTS(limit >= 0, UsageError, "iteration limit " + std::to_string(limit) + " is negative",
                "use a limit >= 0");
}

std::optional<StopReason> MaxIterations::check(const ResidualCheck& state) const {
  if (state.iteration < limit_) return std::nullopt;
  return StopReason{SolveStatus::max_iterations, "reached the limit of " + std::to_string(limit_) +
                                                     " iterations with residual " +
                                                     detail::format_number(state.residual)};
}

std::string MaxIterations::describe() const { return "max_iterations " + std::to_string(limit_); }

RelativeResidual::RelativeResidual(double tolerance) : tolerance_(tolerance) {
  check_tolerance("relative residual", tolerance);
}

std::optional<StopReason> RelativeResidual::check(const ResidualCheck& state) const {
  const double reference = state.rhs_norm > 0.0 ? state.rhs_norm : 1.0;
  if (!(state.residual <= tolerance_ * reference)) return std::nullopt;
  return StopReason{SolveStatus::converged,
                    "residual " + detail::format_number(state.residual) +
                        " <= " + detail::format_number(tolerance_) +
                        " * ||b|| = " + detail::format_number(tolerance_ * reference)};
}

std::string RelativeResidual::describe() const {
  return "relative residual " + detail::format_number(tolerance_);
}

AbsoluteResidual::AbsoluteResidual(double tolerance) : tolerance_(tolerance) {
  check_tolerance("absolute residual", tolerance);
}

std::optional<StopReason> AbsoluteResidual::check(const ResidualCheck& state) const {
  if (!(state.residual <= tolerance_)) return std::nullopt;
  return StopReason{SolveStatus::converged, "residual " + detail::format_number(state.residual) +
                                                " <= " + detail::format_number(tolerance_)};
}

std::string AbsoluteResidual::describe() const {
  return "absolute residual " + detail::format_number(tolerance_);
}

Divergence::Divergence(double factor) : factor_(factor) {
  TENAX_EXPECTS(factor >= 1.0, UsageError,
                "divergence factor " + detail::format_number(factor) +
                    " is below 1, so the initial residual itself would count as divergence",
                "use a factor >= 1, or infinity to turn the test off");
}

std::optional<StopReason> Divergence::check(const ResidualCheck& state) const {
  if (!(state.residual > factor_ * state.initial_residual)) return std::nullopt;
  return StopReason{SolveStatus::diverged, "residual " + detail::format_number(state.residual) +
                                               " > " + detail::format_number(factor_) +
                                               " * initial residual " +
                                               detail::format_number(state.initial_residual)};
}

std::string Divergence::describe() const { return "divergence " + detail::format_number(factor_); }

StoppingCriteria StoppingCriteria::from_options(const SolverOptions& options) {
  validate(options);
  StoppingCriteria set;
  set.add(std::make_shared<const MaxIterations>(options.max_iterations));
  set.add(std::make_shared<const RelativeResidual>(options.tolerance));
  if (options.absolute_tolerance > 0.0) {
    set.add(std::make_shared<const AbsoluteResidual>(options.absolute_tolerance));
  }
  if (std::isfinite(options.divergence_factor)) {
    set.add(std::make_shared<const Divergence>(options.divergence_factor));
  }
  return set;
}

StoppingCriteria& StoppingCriteria::add(std::shared_ptr<const StoppingCriterion> criterion) {
  TENAX_EXPECTS(criterion != nullptr, UsageError, "a null stopping criterion was added",
                "pass a criterion object (MaxIterations, RelativeResidual, ...)");
  criteria_.push_back(std::move(criterion));
  return *this;
}

std::optional<StopReason> StoppingCriteria::evaluate(const ResidualCheck& state) const {
  if (!std::isfinite(state.residual)) {
    return StopReason{SolveStatus::non_finite,
                      "the residual norm is " + detail::format_number(state.residual) +
                          " at iteration " + std::to_string(state.iteration)};
  }
  for (const auto& criterion : criteria_) {
    if (!criterion->is_convergence_test()) continue;
    if (auto reason = criterion->check(state)) return reason;
  }
  for (const auto& criterion : criteria_) {
    if (criterion->is_convergence_test()) continue;
    if (auto reason = criterion->check(state)) return reason;
  }
  return std::nullopt;
}

bool StoppingCriteria::converged(const ResidualCheck& state) const {
  if (!std::isfinite(state.residual)) return false;
  for (const auto& criterion : criteria_) {
    if (criterion->is_convergence_test() && criterion->check(state)) return true;
  }
  return false;
}

std::string StoppingCriteria::describe() const {
  std::string text;
  for (const auto& criterion : criteria_) {
    text += (text.empty() ? "" : ", ") + criterion->describe();
  }
  return text.empty() ? "no criteria" : text;
}

}  // namespace tenax::solvers
