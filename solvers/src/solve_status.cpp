#include "tenax/solvers/solve_status.hpp"

#include "tenax/core/error.hpp"

namespace tenax::solvers {
namespace {

constexpr SolveStatus kAllStatuses[] = {SolveStatus::converged, SolveStatus::max_iterations,
                                        SolveStatus::breakdown, SolveStatus::diverged,
                                        SolveStatus::non_finite};

}  // namespace

std::string_view to_string(SolveStatus status) noexcept {
  switch (status) {
    case SolveStatus::converged:
      return "converged";
    case SolveStatus::max_iterations:
      return "max_iterations";
    case SolveStatus::breakdown:
      return "breakdown";
    case SolveStatus::diverged:
      return "diverged";
    case SolveStatus::non_finite:
      return "non_finite";
  }
  return "unknown";
}

SolveStatus solve_status_from_string(std::string_view name) {
  std::string names;
  for (const SolveStatus status : kAllStatuses) {
    if (to_string(status) == name) return status;
    names += (names.empty() ? "" : ", ") + std::string(to_string(status));
  }
  throw UsageError("unknown solve status '" + std::string(name) + "'", "use one of: " + names);
}

}  // namespace tenax::solvers
