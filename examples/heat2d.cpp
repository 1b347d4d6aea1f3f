// heat2d: the 2-D heat equation u_t = alpha (u_xx + u_yy) on the unit square with u = 0 on the
// boundary, the 5-point Laplacian in space, run by the tenax Runner: checkpoints, resume,
// out-of-memory backoff, anomaly rollback and restart on device faults.
//
// Time schemes (--scheme): explicit (FTCS, the default, below), rk4, implicit (backward Euler)
// and cn (Crank-Nicolson); the last three are the solvers layer's DiffusionIntegrator on the
// whole grid (the implicit ones solve with CG, warm-started from u).
//
// Several ranks (mpirun -np N): FTCS runs on a runtime::Grid whose rows are divided among the
// ranks (the grid exchanges the halo rows and gathers the field); its step is a kernel of this
// file's (the library's 5-point bodies) run by StencilSimulation, which also takes the
// out-of-memory backoff: a smaller micro-batch updates the field in place, a block of rows at a
// time, with the same bits. The integrators divide the grid's points in block-aligned ranges (a
// range may end inside a row) and run on runtime::DistributedLaplacian2dOperator with the
// reductions across the ranks, so their CG takes the single-process iterations and gives its bits.
// Either split is stored with each checkpoint, so a run resumes on another number of ranks. --dt
// sets the time step; the default is --courant times the FTCS limit h^2/(4 alpha). An implicit step
// whose solve does not converge is an anomaly: the Runner rolls back and, when it happens again,
// stops with the solver's report.
//
// Grid: n interior points per side; point (i, j) sits at x = (i+1)/(n+1), y = (j+1)/(n+1) and
// is stored at u[j][i]; u = 0 on the boundary (the grid's Dirichlet rule).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "tenax/app/app.hpp"
#include "tenax/app/problem_size.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/philox.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/io/run_config.hpp"
#include "tenax/io/state_file.hpp"
#include "tenax/kernels/detail/stencil_bodies.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/diffusion_simulation.hpp"
#include "tenax/runtime/distributed_laplacian.hpp"
#include "tenax/runtime/distributed_vector.hpp"
#include "tenax/runtime/runner.hpp"
#include "tenax/runtime/stencil.hpp"
#include "tenax/runtime/step_times.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/time_integrator.hpp"

namespace {

using tenax::Device;
using tenax::DType;
using tenax::StateDict;
using tenax::Tensor;

// heat2d's settings, each declared once: the flag, its check, its help and what a resume may
// change. --steps changes freely (a longer or shorter run of the same steps); the time step
// (--courant, --dt) and the implicit solve's tolerance with --allow-config-change (the field stays
// a valid state at its time t; the steps still to run are computed differently). The grid, the
// diffusivity, the scheme (whose state the checkpoint holds) and the initial condition define
// the problem being run and never change.
struct Settings {
  explicit Settings(tenax::app::App& app)
      : n(app.setting("n", std::int64_t{256}, "interior grid points per side").at_least(1)),
        alpha(app.setting("alpha", 1.0, "diffusivity").above(0.0)),
        scheme(app.setting("scheme", "explicit",
                           "time scheme: explicit (FTCS), rk4, implicit (backward Euler) or cn "
                           "(Crank-Nicolson)")
                   .one_of({"explicit", "rk4", "implicit", "cn"})),
        // Recorded only without --dt: with one, the fraction has no effect.
        courant(app.setting("courant", 0.9,
                            "dt as a fraction of the FTCS stability limit h^2/(4 alpha)")
                    .above(0.0)
                    .at_most(1.0)
                    .safe_to_change()
                    .recorded_when([this] { return dt() == 0; })),
        dt(app.setting("dt", 0.0, "time step (0: --courant times the FTCS limit)")
               .at_least(0.0)
               .safe_to_change()),
        // Recorded only for the schemes that solve.
        solver_tol(app.setting("solver-tol", 1e-10,
                               "relative tolerance of the implicit schemes' CG solve per step")
                       .above(0.0)
                       .safe_to_change()
                       .recorded_when([this] { return by_points(); })),
        initial(app.setting("initial", "sine", "initial condition: sine, gauss or random")
                    .one_of({"sine", "gauss", "random"})),
        // Recorded only for a random initial field.
        seed(
            app.setting("seed", std::uint64_t{1}, "seed of --initial random").recorded_when([this] {
              return initial() == "random";
            })),
        output(app.setting("output", "", "write the final field to this HDF5 file (dataset /u)")
                   .empty_means("no output file")
                   .not_recorded()),
        json(app.setting("json", false, "print a JSON summary as the last line").not_recorded()) {}

  // The schemes that solve (on the integrators' split by points; FTCS splits rows).
  [[nodiscard]] bool by_points() const { return scheme() != "explicit"; }

  tenax::app::Setting<std::int64_t>& n;
  tenax::app::Setting<double>& alpha;
  tenax::app::Setting<std::string>& scheme;
  tenax::app::Setting<double>& courant;  // dt as a fraction of the FTCS limit h^2 / (4 alpha)
  tenax::app::Setting<double>& dt;       // 0: courant * h^2 / (4 alpha)
  tenax::app::Setting<double>& solver_tol;
  tenax::app::Setting<std::string>& initial;
  tenax::app::Setting<std::uint64_t>& seed;
  tenax::app::Setting<std::string>& output;
  tenax::app::Setting<bool>& json;
};

// The initial value at point (i, j) (x = (i+1) h, y = (j+1) h), the same on every rank: the
// random field's value is the Philox stream's element j n + i (what Generator::fill_uniform gives
// the whole grid).
double initial_value(const Settings& options, std::int64_t j, std::int64_t i) {
  const std::int64_t n = options.n();
  if (options.initial() == "random") {
    return tenax::uniform_f64(options.seed(), 0, static_cast<std::uint64_t>(j * n + i));
  }
  const double h = 1.0 / static_cast<double>(n + 1);
  const double y = h * static_cast<double>(j + 1);
  const double x = h * static_cast<double>(i + 1);
  return options.initial() == "gauss"
             ? std::exp(-50.0 * ((x - 0.5) * (x - 0.5) + (y - 0.5) * (y - 0.5)))
             : std::sin(std::numbers::pi * x) * std::sin(std::numbers::pi * y);
}

// One FTCS step at a point: u + alpha dt L(u), with the library's 5-point bodies (the arithmetic
// of ops::laplacian_5pt_update, so the bits of the hand-written sweep this replaced).
struct Ftcs {
  tenax::kernels::Laplacian2dCoefficients<double> c;
  double factor;  // alpha dt

  template <class Field>
  TENAX_HD void operator()(const Field& u, double& next) const {
    const double center = u(0, 0);
    const double laplacian =
        tenax::kernels::laplacian_5pt_point(center, u(0, -1), u(0, 1), u(-1, 0), u(1, 0), c);
    next = tenax::kernels::explicit_update_point(center, laplacian, factor);
  }
};

// FTCS: the field u on a grid with u = 0 outside, stepped by the kernel above.
class HeatFtcs final : public tenax::runtime::StencilSimulation<Ftcs, 1> {
 public:
  HeatFtcs(const Settings& options, const tenax::runtime::Grid& grid, Device device, double dt)
      : StencilSimulation(grid, device, {"u"},
                          Ftcs{tenax::kernels::laplacian_coefficients<double>(
                                   1.0 / static_cast<double>(options.n() + 1),
                                   1.0 / static_cast<double>(options.n() + 1)),
                               options.alpha() * dt}),
        dt_(dt) {
    set_initial([&options](const std::int64_t* point, double* u) {
      *u = initial_value(options, point[0], point[1]);
    });
  }
  [[nodiscard]] double time() const noexcept { return dt_ * static_cast<double>(steps()); }
  [[nodiscard]] std::vector<tenax::runtime::StepMetric> step_metrics() const override {
    return {{"simulated_time", time()}};
  }

 private:
  double dt_;
};

// The implicit and RK4 schemes: the library's DiffusionSimulation (the solvers layer's
// DiffusionIntegrator as a Workload) on the 5-point Laplacian of the n * n grid, whose points the
// ranks divide in block-aligned ranges (the reductions run across the ranks).
tenax::runtime::DiffusionSimulation make_integrated(const Settings& options,
                                                    tenax::runtime::Communicator& comm,
                                                    Device device, double dt) {
  const std::int64_t n = options.n();
  const double h = 1.0 / static_cast<double>(n + 1);
  tenax::solvers::IntegratorOptions integrator;
  integrator.scheme =
      tenax::solvers::time_scheme_from_string(options.scheme() == "implicit" ? "implicit_euler"
                                              : options.scheme() == "cn"     ? "crank_nicolson"
                                                                             : options.scheme());
  integrator.solver_options.tolerance = options.solver_tol();
  tenax::solvers::OperatorPtr laplacian;
  if (comm.size() > 1) {
    laplacian = std::make_shared<const tenax::runtime::DistributedLaplacian2dOperator>(
        comm, tenax::kernels::block_aligned_range(n * n, comm.size(), comm.rank()), n, n, h, h);
  } else {
    laplacian =
        std::make_shared<const tenax::solvers::Laplacian2dOperator>(n, n, h, h, DType::f64, device);
  }
  tenax::runtime::DiffusionSimulation sim(comm, std::move(laplacian), options.alpha(), dt,
                                          integrator);
  sim.set_initial(
      [&options, n](std::int64_t point) { return initial_value(options, point / n, point % n); });
  return sim;
}

// The stability limit of an explicit scheme, set by the largest eigenvalue of -Δh, 8/h^2: FTCS
// for alpha dt <= h^2/4, classical RK4 for alpha dt <= 2.78 h^2/8; 0 for the implicit ones.
double stability_limit(const Settings& s) {
  const double h = 1.0 / static_cast<double>(s.n() + 1);
  return s.scheme() == "explicit" ? h * h / (4.0 * s.alpha())
         : s.scheme() == "rk4"    ? 2.78 * h * h / (8.0 * s.alpha())
                                  : 0.0;
}

// The time step: --dt, or --courant times the FTCS limit h^2 / (4 alpha).
double time_step(const Settings& options) {
  const double h = 1.0 / static_cast<double>(options.n() + 1);
  return options.dt() > 0 ? options.dt() : options.courant() * h * h / (4.0 * options.alpha());
}

// What a finished run prints and writes: the same for either split.
struct Finished {
  double t = 0;
  double max_u = 0;
  std::int64_t points = 0;  // this rank's
  tenax::runtime::StepTimes times;
};

int run(const Settings& options, tenax::app::Job& job) {
  const double limit = stability_limit(options);
  TENAX_EXPECTS(limit == 0.0 || options.dt() <= limit, tenax::UsageError,
                options.dt.given() + " is above the stability limit " + std::to_string(limit) +
                    " of --scheme " + options.scheme(),
                "lower --dt, or use --scheme implicit or cn (unconditionally stable)");
  tenax::runtime::Communicator& comm = job.comm();
  TENAX_EXPECTS(options.n() >= comm.size(), tenax::UsageError,
                options.n.given() + " on " + std::to_string(comm.size()) + " ranks",
                "give every rank at least one row: use --n >= the number of ranks");
  const Device device = job.device();
  // The field itself and what FTCS needs beside it at the least (the in-place sweep's two
  // blocks of one row at the smallest micro-batch, and a halo row on each side), before anything
  // is allocated; the fast path's second field and the integrators' vectors come on top and meet
  // the pool's own limit (FTCS then backs off to the in-place sweep).
  (void)tenax::app::expect_grid_fits(device, "--n " + std::to_string(options.n()), options.n(), 2,
                                     sizeof(double), 4 * options.n() * std::int64_t{8});
  TENAX_EXPECTS(comm.size() == 1 || options.scheme() == "explicit" || device.is_cpu(),
                tenax::UsageError,
                "--scheme " + options.scheme() + " on " + std::to_string(comm.size()) +
                    " ranks with --device " + tenax::to_string(device),
                "run the integrators of several ranks with --device cpu (their distributed "
                "operator is CPU-only for now), or use --scheme explicit (FTCS), which runs on "
                "GPUs across ranks");
  const double dt = time_step(options);
  // A step too small for a double to carry (h^2/(4 alpha) underflows for a huge --alpha) would
  // leave t where it is and the field unchanged: refused, not run.
  char step_text[32];
  std::snprintf(step_text, sizeof step_text, "%.3g", dt);
  TENAX_EXPECTS(
      dt >= std::numeric_limits<double>::min(), tenax::UsageError,
      "the time step is " + std::string(step_text) + " (" +
          (options.dt() > 0 ? options.dt.given()
                            : "--courant times h^2/(4 alpha) with " + options.alpha.given()) +
          "): below the smallest normal double, so t would not advance",
      "lower --alpha or give a larger --dt");
  // ... and one too large for a double (h^2/(4 alpha) overflows for a subnormal --alpha).
  TENAX_EXPECTS(std::isfinite(dt), tenax::UsageError,
                "the time step is " + std::string(step_text) +
                    " (--courant times h^2/(4 alpha) with " + options.alpha.given() +
                    "): beyond the largest double",
                "raise --alpha, or give --dt");
  tenax::io::FileMetadata metadata;
  metadata.config = job.config();
  const auto attributes = [&](double t, std::int64_t steps) {
    return std::vector<std::pair<std::string, double>>{
        {"t", t}, {"alpha", options.alpha()}, {"steps", static_cast<double>(steps)}};
  };
  tenax::runtime::RunResult result;
  Finished done;
  if (options.scheme() == "explicit") {
    const tenax::runtime::Grid grid(comm,
                                    {.extents = {options.n(), options.n()},
                                     .boundaries = {tenax::runtime::Boundary::dirichlet(0.0)}});
    HeatFtcs heat(options, grid, device, dt);
    result = job.run(heat);
    if (result.status != tenax::runtime::RunStatus::completed) return result.exit_code;
    done = {heat.time(), grid.max(heat.field(0)), grid.owned(heat.field(0)).numel(),
            heat.step_times()};
    metadata.step = result.step;
    if (!options.output().empty()) {
      heat.write(options.output(), attributes(heat.time(), result.step), metadata);
    }
  } else {
    tenax::runtime::DiffusionSimulation heat = make_integrated(options, comm, device, dt);
    result = job.run(heat);
    if (result.status != tenax::runtime::RunStatus::completed) return result.exit_code;
    const tenax::runtime::DistributedVector u = heat.field();
    done = {heat.time(), u.max(), u.local().numel(), heat.step_times()};
    const Tensor whole = options.output().empty() ? Tensor{} : u.gather();
    metadata.step = result.step;
    if (job.leader() && whole.defined()) {
      tenax::io::write_tensor_file(options.output(), "u", whole.reshape({options.n(), options.n()}),
                                   attributes(heat.time(), result.step), metadata);
    }
  }
  if (!job.leader()) return 0;
  const std::string where =
      tenax::to_string(device) +
      (comm.size() > 1 ? " x " + std::to_string(comm.size()) + " ranks" : std::string());
  // The step the state reached: --steps, or more when a resume asked for fewer than the run had.
  const std::int64_t steps = result.step;
  std::printf("heat2d: %lld steps of %lldx%lld on %s done, t = %.9g, max u = %.17g\n",
              static_cast<long long>(steps), static_cast<long long>(options.n()),
              static_cast<long long>(options.n()), where.c_str(), done.t, done.max_u);
  if (!options.output().empty()) {
    std::printf("heat2d: final field written to %s (dataset /u)\n", options.output().c_str());
  }
  // An FTCS step reads and writes the field once: 16 bytes per point (f64) at the least.
  // Per rank: its own rows (the ranks run side by side).
  const double points = static_cast<double>(done.points);
  const double step_seconds = done.times.median();
  const double gbps =
      options.scheme() == "explicit" && step_seconds > 0 ? 16.0 * points / step_seconds / 1e9 : 0.0;
  if (done.times.count() > 0) {
    std::printf("heat2d: %.3f ms per step (median of %zu)", 1e3 * step_seconds, done.times.count());
    if (gbps > 0) std::printf(", %.1f GB/s at 16 bytes per point", gbps);
    std::printf("\n");
  }
  if (options.json()) {
    std::printf(
        "{\"scheme\":\"%s\",\"n\":%lld,\"steps\":%lld,\"timed_steps\":%zu,"
        "\"ms_per_step\":%.9g,\"bytes_per_step\":%.17g,\"gbps\":%.9g,\"t\":%.17g}\n",
        options.scheme().c_str(), static_cast<long long>(options.n()),
        static_cast<long long>(steps), done.times.count(), 1e3 * step_seconds, 16.0 * points, gbps,
        done.t);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tenax::app::App app("heat2d",
                      "2-D heat equation (FTCS, RK4, implicit Euler or Crank-Nicolson), run with "
                      "checkpoints and fault recovery",
                      {.steps = 1000, .checkpoint_every = 100, .divides_work_across_ranks = true});
  const Settings settings(app);
  app.output_file(settings.output);
  return app.main(argc, argv, [&](tenax::app::Job& job) { return run(settings, job); });
}
