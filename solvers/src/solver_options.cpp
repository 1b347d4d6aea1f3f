#include "tenax/solvers/solver_options.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

#include "detail/format.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/key_values.hpp"
#include "tenax/core/text.hpp"
#include "tenax/solvers/factory.hpp"

namespace tenax::solvers {
namespace {

constexpr std::string_view kKeys[] = {"tol",    "atol",   "max_iters", "restart",
                                      "orthog", "divtol", "pc",        "pc_side"};
constexpr std::string_view kOrthogonalizations[] = {"mgs", "cgs", "cgs2"};
constexpr std::string_view kSides[] = {"right", "left"};

std::string key_list() { return detail::join_names(kKeys); }

std::string round_trip(double value) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

std::string entry_text(std::string_view key, std::string_view value) {
  return "solver option '" + std::string(key) + "=" + std::string(value) + "'";
}

double parse_real(std::string_view key, std::string_view value) {
  if (value == "inf" || value == "infinity") return HUGE_VAL;
  const std::optional<double> result = parse_whole<double>(value);
  TENAX_EXPECTS(result.has_value(), UsageError, entry_text(key, value) + " does not hold a number",
                "write a decimal number such as 1e-8 or 0.001");
  return *result;
}

std::int64_t parse_integer(std::string_view key, std::string_view value) {
  const std::optional<std::int64_t> result = parse_whole<std::int64_t>(value);
  TENAX_EXPECTS(result.has_value(), UsageError,
                entry_text(key, value) + " does not hold a whole number",
                "write an integer such as 500");
  return *result;
}

void apply_entry(SolverOptions& options, std::string_view key, std::string_view value) {
  if (key == "tol") {
    options.tolerance = parse_real(key, value);
  } else if (key == "atol") {
    options.absolute_tolerance = parse_real(key, value);
  } else if (key == "max_iters") {
    options.max_iterations = parse_integer(key, value);
  } else if (key == "restart") {
    options.restart = parse_integer(key, value);
  } else if (key == "orthog") {
    options.orthogonalization = std::string(value);
  } else if (key == "divtol") {
    options.divergence_factor = parse_real(key, value);
  } else if (key == "pc") {
    options.preconditioner = std::string(value);
  } else if (key == "pc_side") {
    options.preconditioner_side = std::string(value);
  } else {
    throw UsageError("unknown solver option '" + std::string(key) + "'",
                     "use one of: " + key_list());
  }
}

}  // namespace

void validate(const SolverOptions& options) {
  TENAX_EXPECTS(options.tolerance >= 0.0 && std::isfinite(options.tolerance), UsageError,
                "solver option tol = " + round_trip(options.tolerance) + " is out of range",
                "use a relative tolerance >= 0 (e.g. tol=1e-8)");
  TENAX_EXPECTS(
      options.absolute_tolerance >= 0.0 && std::isfinite(options.absolute_tolerance), UsageError,
      "solver option atol = " + round_trip(options.absolute_tolerance) + " is out of range",
      "use an absolute tolerance >= 0 (0 turns the absolute test off)");
  TENAX_EXPECTS(
      options.max_iterations >= 0, UsageError,
      "solver option max_iters = " + std::to_string(options.max_iterations) + " is negative",
      "use an iteration limit >= 0");
  TENAX_EXPECTS(options.restart >= 1, UsageError,
                "solver option restart = " + std::to_string(options.restart) + " is below 1",
                "use a GMRES restart length >= 1 (30 is common)");
  TENAX_EXPECTS(options.divergence_factor >= 1.0, UsageError,
                "solver option divtol = " + round_trip(options.divergence_factor) +
                    " is below 1, so the initial residual itself would count as divergence",
                "use a factor >= 1 (default 1e5), or divtol=inf to turn the test off");
  TENAX_EXPECTS(
      std::find(std::begin(kOrthogonalizations), std::end(kOrthogonalizations),
                options.orthogonalization) != std::end(kOrthogonalizations),
      UsageError,
      "solver option orthog = '" + options.orthogonalization + "' is not a Gram-Schmidt variant",
      "use orthog= one of: " + detail::join_names(kOrthogonalizations) + " (mgs is the default)");
  TENAX_EXPECTS(
      std::find(std::begin(kSides), std::end(kSides), options.preconditioner_side) !=
          std::end(kSides),
      UsageError,
      "solver option pc_side = '" + options.preconditioner_side + "' is not a preconditioning side",
      "use pc_side=right (the default) or pc_side=left (GMRES only)");
  const auto names = preconditioner_names();
  TENAX_EXPECTS(std::find(names.begin(), names.end(), options.preconditioner) != names.end(),
                UsageError, "unknown preconditioner '" + options.preconditioner + "'",
                "use pc= one of: " + detail::join_names(names));
}

SolverOptions parse_solver_options(std::string_view text, const SolverOptions& defaults) {
  SolverOptions options = defaults;
  for (const KeyValue& entry :
       split_key_values("solver options", text, kKeys, RepeatedKey::last_wins)) {
    apply_entry(options, entry.key, entry.value);
  }
  validate(options);
  return options;
}

std::string to_string(const SolverOptions& options) {
  return "tol=" + round_trip(options.tolerance) +
         ",atol=" + round_trip(options.absolute_tolerance) +
         ",max_iters=" + std::to_string(options.max_iterations) +
         ",restart=" + std::to_string(options.restart) + ",orthog=" + options.orthogonalization +
         ",divtol=" + round_trip(options.divergence_factor) + ",pc=" + options.preconditioner +
         ",pc_side=" + options.preconditioner_side;
}

}  // namespace tenax::solvers
