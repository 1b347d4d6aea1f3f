// A user's heat job on the installed package: a square plate, hot in the middle, its edges held
// at 0, cooled by u_t = alpha (u_xx + u_yy) with Crank-Nicolson (or any --scheme) through the
// library's DiffusionSimulation: the operator, the initial values and the settings are the job.
#include <tenax/tenax.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  tenax::app::App app("plate", "a hot plate cooling, any time scheme", {.steps = 40});
  auto& n = app.setting("n", std::int64_t{63}, "grid points per side").at_least(1);
  auto& alpha = app.setting("alpha", 1.0, "diffusivity").above(0.0);
  auto& dt = app.setting("dt", 1e-4, "time step").above(0.0);
  auto& scheme = app.setting("scheme", "crank_nicolson", "time scheme")
                     .one_of({"explicit_euler", "rk4", "implicit_euler", "crank_nicolson"});
  return app.main(argc, argv, [&](tenax::app::Job& job) {
    const double h = 1.0 / (n() + 1.0);
    tenax::solvers::IntegratorOptions options;
    options.scheme = tenax::solvers::time_scheme_from_string(scheme());
    tenax::runtime::DiffusionSimulation plate(
        job.comm(), std::make_shared<const tenax::solvers::Laplacian2dOperator>(n(), n(), h, h),
        alpha(), dt(), options);
    plate.set_initial([&](std::int64_t point) {  // 1 in the middle third, 0 elsewhere
      const std::int64_t y = point / n(), x = point % n();
      return 3 * y >= n() && 3 * y < 2 * n() && 3 * x >= n() && 3 * x < 2 * n() ? 1.0 : 0.0;
    });
    const tenax::runtime::RunResult ran = job.run(plate);
    if (ran.status != tenax::runtime::RunStatus::completed) return ran.exit_code;
    const double hottest = plate.field().max();
    if (job.leader()) std::printf("plate: t = %.6g, hottest %.17g\n", plate.time(), hottest);
    return 0;
  });
}
