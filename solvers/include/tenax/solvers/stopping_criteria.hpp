/// Stopping criteria: separate objects, combined into one StoppingCriteria set that a solver
/// evaluates once per iteration on the residual norm the method already has (no extra pass over
/// the vectors). Criteria are stateless: everything they look at is in ResidualCheck, so a solver
/// resumed from saved state stops exactly where the uninterrupted one would.
/// @file
/// Order of evaluation within a set: a residual that is not finite stops with non_finite first;
/// then the convergence criteria (so that meeting the tolerance on the last allowed iteration
/// counts as converged); then the others in the order they were added.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tenax/solvers/solve_status.hpp"
#include "tenax/solvers/solver_options.hpp"

namespace tenax::solvers {

/// What a criterion sees after an iteration (iteration 0: the initial guess).
struct ResidualCheck {
  std::int64_t iteration = 0;     ///< iterations completed (0: the initial guess)
  double residual = 0.0;          ///< ||r|| of this iteration (2-norm, unpreconditioned)
  double initial_residual = 0.0;  ///< ||r0|| = ||b - A x0||
  double rhs_norm = 0.0;          ///< ||b||
};

/// Why a criterion stops the iteration.
struct StopReason {
  SolveStatus status = SolveStatus::converged;  ///< what the solve ends with
  std::string detail;                           ///< in words, with the numbers
};

/// One test a solver applies after each iteration. Implementations (the four below, or user
/// classes added with StoppingCriteria::add) must be immutable and decide from `state` alone, so
/// that a resumed solve stops where the uninterrupted one would; they may be shared between
/// threads.
class StoppingCriterion {
 public:
  virtual ~StoppingCriterion() = default;
  /// The reason to stop now, or nothing to go on.
  [[nodiscard]] virtual std::optional<StopReason> check(const ResidualCheck& state) const = 0;
  /// Whether meeting this criterion means the solve converged (evaluated before the others).
  [[nodiscard]] virtual bool is_convergence_test() const noexcept { return false; }
  /// The criterion and its parameter, for messages: "max_iterations 1000", "relative residual
  /// 1e-08", "absolute residual 1e-12", "divergence 100000".
  [[nodiscard]] virtual std::string describe() const = 0;
};

/// Stops with max_iterations once `limit` iterations are done.
class MaxIterations final : public StoppingCriterion {
 public:
  explicit MaxIterations(std::int64_t limit);  ///< limit >= 0 (UsageError otherwise)
  [[nodiscard]] std::optional<StopReason> check(const ResidualCheck& state) const override;
  [[nodiscard]] std::string describe() const override;

 private:
  std::int64_t limit_;
};

/// Converged when ||r|| <= tolerance * ||b|| (||r|| <= tolerance when b = 0, matching
/// SolveResult::relative_residual).
class RelativeResidual final : public StoppingCriterion {
 public:
  explicit RelativeResidual(double tolerance);  ///< tolerance finite, >= 0 (else UsageError)
  [[nodiscard]] std::optional<StopReason> check(const ResidualCheck& state) const override;
  [[nodiscard]] bool is_convergence_test() const noexcept override { return true; }
  [[nodiscard]] std::string describe() const override;

 private:
  double tolerance_;
};

/// Converged when ||r|| <= tolerance.
class AbsoluteResidual final : public StoppingCriterion {
 public:
  explicit AbsoluteResidual(double tolerance);  ///< tolerance finite, >= 0 (else UsageError)
  [[nodiscard]] std::optional<StopReason> check(const ResidualCheck& state) const override;
  [[nodiscard]] bool is_convergence_test() const noexcept override { return true; }
  [[nodiscard]] std::string describe() const override;

 private:
  double tolerance_;
};

/// Diverged when ||r|| > factor * ||r0||.
class Divergence final : public StoppingCriterion {
 public:
  /// factor >= 1 (UsageError otherwise); infinity never stops.
  explicit Divergence(double factor = kDefaultDivergenceFactor);
  [[nodiscard]] std::optional<StopReason> check(const ResidualCheck& state) const override;
  [[nodiscard]] std::string describe() const override;

 private:
  double factor_;
};

/// A set of criteria. Copies share the criterion objects (they are immutable).
class StoppingCriteria {
 public:
  StoppingCriteria() = default;  ///< the empty set: stops only on a non-finite residual

  /// MaxIterations, RelativeResidual, AbsoluteResidual (when atol > 0) and Divergence (when
  /// divtol is finite) from `options`, in that order. Validates `options` first (UsageError).
  [[nodiscard]] static StoppingCriteria from_options(const SolverOptions& options);

  /// Appends `criterion` (evaluated after those added before it of the same kind: convergence or
  /// not); returns *this for chaining. UsageError for nullptr.
  StoppingCriteria& add(std::shared_ptr<const StoppingCriterion> criterion);

  /// The first reason to stop, in the order described at the top of this file; nothing to go on.
  [[nodiscard]] std::optional<StopReason> evaluate(const ResidualCheck& state) const;
  /// Whether a convergence criterion is met by a finite residual (used by methods with an early
  /// exit half way through an iteration, such as BiCGSTAB).
  [[nodiscard]] bool converged(const ResidualCheck& state) const;

  /// Whether the set holds no criterion.
  [[nodiscard]] bool empty() const noexcept { return criteria_.empty(); }
  /// "max_iterations 1000, relative residual 1e-08, divergence 100000"
  [[nodiscard]] std::string describe() const;

 private:
  std::vector<std::shared_ptr<const StoppingCriterion>> criteria_;
};

}  // namespace tenax::solvers
