#include "tenax/app/solver_settings.hpp"

#include <utility>

#include "tenax/core/error.hpp"

namespace tenax::app {

SolverSettings::SolverSettings(App& app, const SolverDefaults& defaults, SolverSettingNames names)
    : names_(std::move(names)),
      method_(
          app.setting(names_.method, defaults.method, "the Krylov method: cg, bicgstab or gmres")
              .one_of({"cg", "bicgstab", "gmres"})),
      preconditioner_(app.setting(names_.preconditioner, defaults.options.preconditioner,
                                  "the preconditioner: none, jacobi or ilu0")
                          .one_of({"none", "jacobi", "ilu0"})),
      tolerance_(app.setting(names_.prefix + "tol", defaults.options.tolerance,
                             "relative residual tolerance: stop when ||r|| <= tol ||b|| (0: run "
                             "to the iteration limit)")
                     .at_least(0.0)
                     .expect([](double v) { return v < 1.0; },
                             "a number below 1 (at 1 the starting guess of 0 already meets it)")
                     .safe_to_change()),
      absolute_tolerance_(app.setting(names_.prefix + "atol", defaults.options.absolute_tolerance,
                                      "absolute residual tolerance: stop when ||r|| <= atol")
                              .at_least(0.0)
                              .safe_to_change()),
      max_iterations_(app.setting(names_.prefix + "max-iters", defaults.options.max_iterations,
                                  "iteration limit")
                          .at_least(0)
                          .free_to_change()),
      restart_(
          app.setting(names_.prefix + "restart", defaults.options.restart, "GMRES restart length")
              .at_least(1)
              .recorded_when([this] { return method_() == "gmres"; })),
      orthogonalization_(
          app.setting(names_.prefix + "orthog", defaults.options.orthogonalization,
                      "GMRES's Gram-Schmidt: mgs (modified), cgs (classical, PETSc's default) "
                      "or cgs2 (classical twice)")
              .one_of({"mgs", "cgs", "cgs2"})
              // Recorded when not the default, so that run directories of mgs runs from before
              // the setting existed still resume.
              .recorded_when(
                  [this] { return method_() == "gmres" && orthogonalization_() != "mgs"; })),
      preconditioner_side_(
          app.setting(names_.prefix + "pc-side", defaults.options.preconditioner_side,
                      "GMRES's preconditioning side: right (residual b - Ax) or left (residual "
                      "M^-1 (b - Ax), against ||M^-1 b||)")
              .one_of({"right", "left"})
              // Recorded when not the default, so that earlier run directories still resume.
              .recorded_when(
                  [this] { return method_() == "gmres" && preconditioner_side_() != "right"; })),
      divergence_factor_(app.setting(names_.prefix + "divtol", defaults.options.divergence_factor,
                                     "divergence factor: stop when ||r|| > divtol ||r0|| (inf: "
                                     "never)")
                             .at_least(1.0)
                             .allow_infinity()
                             .safe_to_change()),
      text_(app.setting(names_.prefix + names_.options, "",
                        "more solver settings as key=value text (tol, atol, max_iters, restart, "
                        "orthog, pc_side, divtol, pc), separated by commas; they override the "
                        "flags")
                .not_recorded()) {
  app.on_parsed([this] { apply_text(); });
}

void SolverSettings::apply_text() {
  const std::string& text = text_();
  const std::string flag = "--" + text_.name();
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find_first_of(", \n\t", start);
    if (end == std::string::npos) end = text.size();
    const std::string entry = text.substr(start, end - start);
    start = end + 1;
    if (entry.empty()) continue;
    const std::size_t equals = entry.find('=');
    TENAX_EXPECTS(equals != std::string::npos && equals > 0, UsageError,
                  flag + ": the entry '" + entry + "' is not key=value",
                  "write entries as key=value separated by commas (e.g. tol=1e-10,pc=jacobi)");
    const std::string key = entry.substr(0, equals);
    const std::pair<const char*, SettingBase*> keys[] = {{"tol", &tolerance_},
                                                         {"atol", &absolute_tolerance_},
                                                         {"max_iters", &max_iterations_},
                                                         {"restart", &restart_},
                                                         {"orthog", &orthogonalization_},
                                                         {"divtol", &divergence_factor_},
                                                         {"pc", &preconditioner_},
                                                         {"pc_side", &preconditioner_side_}};
    SettingBase* target = nullptr;
    for (const auto& [name, setting] : keys) {
      if (key == name) target = setting;
    }
    TENAX_EXPECTS(target != nullptr, UsageError, flag + ": unknown key '" + key + "'",
                  "use tol, atol, max_iters, restart, orthog, pc_side, divtol or pc");
    target->assign(entry.substr(equals + 1), Source::command_line, flag + " " + entry);
  }
}

solvers::SolverOptions SolverSettings::options() const {
  solvers::SolverOptions options;
  options.tolerance = tolerance_();
  options.absolute_tolerance = absolute_tolerance_();
  options.max_iterations = max_iterations_();
  options.restart = restart_();
  options.orthogonalization = orthogonalization_();
  options.preconditioner_side = preconditioner_side_();
  options.divergence_factor = divergence_factor_();
  options.preconditioner = preconditioner_();
  solvers::validate(options);
  return options;
}

}  // namespace tenax::app
