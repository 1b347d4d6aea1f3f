/// The settings of a Krylov solve, declared by the solver component itself, PETSc-style: the
/// method and the preconditioner by name, the stopping rules and method parameters under a prefix,
/// and a text of `key=value` entries (solver_options.hpp's form) that sets any of them. With the
/// default names:
/// @code
///   --solver cg --pc jacobi --solver.tol 1e-10 --solver.max-iters 500
///   --solver.options "divtol=inf,orthog=cgs"
/// @endcode
/// Their resume policy is the solver's: the stopping tolerances (tol, atol, divtol) are safe to
/// change (the iterates stay the same, the solve stops elsewhere), the iteration limit is free,
/// the method, the preconditioner and GMRES's restart length and Gram-Schmidt variant must match
/// (restart and orthog are recorded only for GMRES, orthog only when it is not the default mgs),
/// and so must GMRES's preconditioning side `pc-side` (recorded only when it is not right).
/// @file
#pragma once

#include <string>
#include <vector>

#include "tenax/app/app.hpp"
#include "tenax/app/setting.hpp"
#include "tenax/solvers/solver_options.hpp"

namespace tenax::app {

/// The flags' names: a program keeps its own (poisson: `--precond`, `--tol`, `--max-iters`).
struct SolverSettingNames {
  std::string method = "solver";      ///< the method's flag: cg, bicgstab or gmres
  std::string preconditioner = "pc";  ///< the preconditioner's flag: none, jacobi or ilu0
  /// Put before tol, atol, max-iters, restart, orthog, pc-side, divtol and options: "solver." gives
  /// `--solver.tol`; "" gives `--tol`.
  std::string prefix = "solver.";
  /// The `key=value` text's flag without the prefix.
  std::string options = "options";
};

/// The defaults of a program's solve.
struct SolverDefaults {
  std::string method = "cg";       ///< cg, bicgstab or gmres
  solvers::SolverOptions options;  ///< tolerances, limits, restart, orthog, divtol, pc
};

/// A Krylov solve's settings, declared on an App (see the file). Declare it with the program's
/// other settings, before App::main.
class SolverSettings {
 public:
  /// Declares the settings on `app`, under the current section.
  SolverSettings(App& app, const SolverDefaults& defaults = {}, SolverSettingNames names = {});

  /// The method: "cg", "bicgstab" or "gmres" (solvers::make_solver takes it).
  [[nodiscard]] const std::string& method() const { return method_(); }
  /// The solver's options from the settings, validated (solvers::validate).
  [[nodiscard]] solvers::SolverOptions options() const;

 private:
  void apply_text();

  SolverSettingNames names_;
  Setting<std::string>& method_;
  Setting<std::string>& preconditioner_;
  Setting<double>& tolerance_;
  Setting<double>& absolute_tolerance_;
  Setting<std::int64_t>& max_iterations_;
  Setting<std::int64_t>& restart_;
  Setting<std::string>& orthogonalization_;
  Setting<std::string>& preconditioner_side_;
  Setting<double>& divergence_factor_;
  Setting<std::string>& text_;
};

}  // namespace tenax::app
