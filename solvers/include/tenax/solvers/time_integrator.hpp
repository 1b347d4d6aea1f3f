/// Time integration of linear diffusion u_t = -alpha A u for an SPD operator A. With A the
/// matrix-free -Δh (laplacian_operator.hpp) this is the heat equation u_t = alpha Δu with
/// Dirichlet-zero boundaries on the grid; make_heat_integrator builds that case.
/// @file
/// Schemes (dt in the time unit of alpha; alpha in length^2 / time):
/// ```
/// explicit_euler   u += dt f(u),  f(u) = -alpha A u. First order; stable only for
///                  dt <= 2 / (alpha lambda_max(A)) (h^2 / (4 alpha) for the 2-D stencil).
/// rk4              classical Runge-Kutta, fourth order; stable for dt up to about 2.78 /
///                  (alpha lambda_max).
/// implicit_euler   (I + dt alpha A) u_new = u. First order, unconditionally stable.
/// crank_nicolson   (I + dt/2 alpha A) u_new = (I - dt/2 alpha A) u. Second order,
///                  unconditionally stable.
/// ```
/// The implicit schemes do one solve per step with the configured Krylov method (CG by default)
/// on a scaled/shifted operator (scaled_shifted_operator.hpp), warm-started from the previous u;
/// the operator is rebuilt only when dt changes.
///
/// step() advances u in place and returns a SolveResult the caller acts on: for the implicit
/// schemes the result of the step's solve (u holds whatever the solve reached); for the explicit
/// schemes converged with 1 iteration (the update), non_finite with bad_iteration 1 when u
/// holds a NaN or Inf after the step, or diverged with bad_iteration 1 when ||u|| grew (by more
/// than a relative 1e-10 in f64, 1e-4 in f32): the solution of u_t = -alpha A u only decays, and a
/// stable explicit step never makes it grow, so growth means dt is past the scheme's stability
/// limit, caught at its first step rather than when the field overflows (two norm passes per step;
/// the detail says the norms and the fix). u, time() and steps() advance whatever the status: a
/// caller that rejects a step restores its copy of u and the saved integrator state. u may have any
/// shape with as many elements as A has rows (a grid [ny, nx] is fine), A's dtype and device.
///
/// State beyond u (which the caller owns and saves): the time, the number of steps, the scheme.
/// Work vectors are allocated on the first step and reused. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/solvers/krylov_solver.hpp"
#include "tenax/solvers/linear_operator.hpp"
#include "tenax/solvers/solve_status.hpp"
#include "tenax/solvers/solver_options.hpp"

namespace tenax::solvers {

/// The time-stepping scheme of a DiffusionIntegrator (formulas and stability in the file
/// description).
enum class TimeScheme {
  explicit_euler,  ///< forward Euler: first order, conditionally stable
  rk4,             ///< classical fourth-order Runge-Kutta: conditionally stable
  implicit_euler,  ///< backward Euler: first order, one linear solve per step
  crank_nicolson   ///< trapezoidal rule: second order, one linear solve per step
};

/// The enumerator's name ("explicit_euler", "rk4", "implicit_euler", "crank_nicolson"), as
/// saved state stores it.
[[nodiscard]] std::string_view to_string(TimeScheme scheme) noexcept;
/// Inverse of to_string; UsageError listing the names otherwise.
[[nodiscard]] TimeScheme time_scheme_from_string(std::string_view name);

/// How a DiffusionIntegrator steps: the scheme and, for the implicit schemes, the linear solver.
struct IntegratorOptions {
  TimeScheme scheme = TimeScheme::crank_nicolson;  ///< fixed for the integrator's lifetime
  /// The implicit schemes' Krylov method, by its make_solver name (built, and validated, even
  /// for the explicit schemes).
  std::string solver = "cg";
  /// The implicit schemes' solver options (tolerance relative to the step's right-hand side; the
  /// warm start from u makes few iterations usual).
  SolverOptions solver_options = {.tolerance = 1e-10, .max_iterations = 1000};
};

/// Steps u_t = -alpha A u in place on a caller-owned u, one step() per time step (see the file
/// description for the schemes, the returned status and what is saved). Not thread-safe.
class DiffusionIntegrator {
 public:
  /// A (kept alive, shared) non-null and square, alpha > 0 and finite. Throws UsageError
  /// otherwise, and for an unknown solver or invalid solver options.
  DiffusionIntegrator(OperatorPtr a, double alpha, IntegratorOptions options = {});

  /// @name Moves
  ///@{

  /// Transfers the operator, solver and work vectors; the moved-from integrator may only be
  /// destroyed or assigned to.
  DiffusionIntegrator(DiffusionIntegrator&&) noexcept;
  DiffusionIntegrator& operator=(DiffusionIntegrator&&) noexcept;
  ///@}
  ~DiffusionIntegrator();

  /// Advances u by dt (see the top of this file for the result). Throws UsageError when dt is
  /// not positive and finite, or u does not hold one element per row of A (any shape) in A's
  /// dtype on A's device.
  SolveResult step(const Tensor& u, double dt);
  /// Allocates what step(u, dt) needs (work vectors, the implicit system for dt, the solver's
  /// vectors) without computing anything: no operator application and no reduction, hence no
  /// collective when u is split across ranks. step() with a u of the same size, dtype and device
  /// and the same dt then allocates nothing. Validates as step() does.
  void reserve(const Tensor& u, double dt);

  /// The simulated time: the sum of the dt of every step() so far (0 at construction), whatever
  /// their status; restored by load_state().
  [[nodiscard]] double time() const noexcept { return time_; }
  /// The number of step() calls so far, whatever their status; restored by load_state().
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }
  /// The options given to the constructor.
  [[nodiscard]] const IntegratorOptions& options() const noexcept { return options_; }
  /// A, the operator of u_t = -alpha A u.
  [[nodiscard]] const OperatorPtr& spatial_operator() const noexcept { return a_; }

  /// Stores the scheme's name, time() and steps() as `<prefix>/scheme`, `<prefix>/time` and
  /// `<prefix>/steps` (u is the caller's to save).
  void save_state(StateDict& state, std::string_view prefix) const;
  /// Restores time() and steps() from the entries save_state wrote under `prefix`. Throws
  /// UsageError when the saved scheme differs from options().scheme, or an entry is missing or
  /// of another kind.
  void load_state(const StateDict& state, std::string_view prefix);

 private:
  void explicit_euler(const Tensor& u, double dt);
  void rk4(const Tensor& u, double dt);
  SolveResult implicit_step(const Tensor& u, double dt);
  /// The implicit schemes' I + c A for dt (rebuilt only when dt changes).
  const OperatorPtr& implicit_system(double dt);
  /// u as the vector the operator acts on, checked as step() documents.
  Tensor checked_vector(const Tensor& u, double dt, const char* call) const;
  void ensure_work(const Tensor& like);

  OperatorPtr a_;
  double alpha_;
  IntegratorOptions options_;
  std::unique_ptr<KrylovSolver> solver_;
  OperatorPtr system_;  ///< the implicit schemes' I + c A, for system_dt_
  double system_dt_ = 0.0;
  Tensor rhs_;
  Tensor stage_;
  Tensor sum_;
  double time_ = 0.0;
  std::int64_t steps_ = 0;
};

/// The heat equation u_t = alpha Δu on a 2-D grid [ny, nx] with spacings hy, hx and
/// Dirichlet-zero boundaries: a DiffusionIntegrator over Laplacian2dOperator(ny, nx, hy, hx,
/// dtype, device). Throws UsageError as those constructors do.
[[nodiscard]] DiffusionIntegrator make_heat_integrator(std::int64_t ny, std::int64_t nx, double hy,
                                                       double hx, double alpha,
                                                       IntegratorOptions options = {},
                                                       DType dtype = DType::f64,
                                                       Device device = Device::cpu());

}  // namespace tenax::solvers
