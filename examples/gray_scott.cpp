// gray_scott: Gray-Scott reaction-diffusion on a periodic 2-D grid (spacing 1, the 5-point
// Laplacian, explicit Euler), in f64:
//   u' = Du lap(u) - u v^2 + F (1 - u),   v' = Dv lap(v) + u v^2 - (F + k) v.
// u = 1, v = 0, but for a square in the middle (u = 0.5, v = 0.25), both plus a seeded
// perturbation keyed by the point's index, so the start is the same on any number of ranks.
// The kernel below is the whole model: the library runs it on the CPU or a GPU, on any number of
// ranks (the same bits), with checkpoints, resume, fault policies and out-of-memory backoff.
#include <tenax/tenax.hpp>

#include <algorithm>

#include <cstdio>
#include <vector>

// One explicit Euler step of both fields at one point.
struct GrayScott {
  double F, k, Du, Dv, dt;

  template <class Field>
  TENAX_HD void operator()(const Field& u, const Field& v, double& u_next, double& v_next) const {
    const double uc = u(0, 0);
    const double vc = v(0, 0);
    const double lap_u = (u(-1, 0) + u(1, 0)) + (u(0, -1) + u(0, 1)) - 4.0 * uc;
    const double lap_v = (v(-1, 0) + v(1, 0)) + (v(0, -1) + v(0, 1)) - 4.0 * vc;
    const double uvv = uc * vc * vc;
    u_next = uc + dt * (Du * lap_u - uvv + F * (1.0 - uc));
    v_next = vc + dt * (Dv * lap_v + uvv - (F + k) * vc);
  }
};

int main(int argc, char** argv) {
  tenax::app::App app("gray_scott", "Gray-Scott reaction-diffusion on a periodic 2-D grid",
                      {.steps = 1000, .checkpoint_every = 200, .divides_work_across_ranks = true});
  auto& n = app.setting("n", std::int64_t{256}, "points per side").at_least(1);
  auto& F = app.setting("F", 0.037, "feed rate").at_least(0.0);
  auto& k = app.setting("k", 0.06, "kill rate").at_least(0.0);
  auto& Du = app.setting("Du", 0.16, "diffusion rate of u").at_least(0.0);
  auto& Dv = app.setting("Dv", 0.08, "diffusion rate of v").at_least(0.0);
  auto& dt = app.setting("dt", 1.0, "time step").above(0.0);
  auto& seed = app.setting("seed", std::uint64_t{1}, "seed of the initial perturbation");
  auto& noise = app.setting("noise", 0.01, "amplitude of the initial perturbation").at_least(0.0);
  auto& output = app.setting("output", "", "write u and v to this HDF5 file (datasets /u, /v)")
                     .empty_means("no output file")
                     .not_recorded();
  auto& columns = app.setting("columns", std::int64_t{0}, "ranks across x (0: the grid chooses)")
                      .at_least(0)
                      .not_recorded();  // any split gives the same bits
  auto& json = app.setting("json", false, "print a JSON summary as the last line").not_recorded();
  app.output_file(output);
  return app.main(argc, argv, [&](tenax::app::Job& job) {
    // The explicit step of a diffusion rate D on a unit grid is stable for D dt <= 1/4.
    TENAX_EXPECTS(std::max(Du(), Dv()) * dt() <= 0.25, tenax::UsageError,
                  Du.given() + ", " + Dv.given() + " and " + dt.given() +
                      " give a diffusion number max(Du, Dv) dt above 1/4: unstable",
                  "lower --dt to at most 0.25 / max(Du, Dv)");
    // u and v at the least, with their ghost rows and the backoff's smallest blocks: 8 rows.
    (void)tenax::app::expect_grid_fits(job.device(), n.given(), n(), 2, 2 * sizeof(double),
                                       8 * n() * sizeof(double));
    const int ranks = job.comm().size(), across = static_cast<int>(columns());
    const tenax::runtime::Grid grid(
        job.comm(),
        {.extents = {n(), n()},
         .ranks = across > 0 ? std::vector<int>{ranks / across, across} : std::vector<int>{}});
    tenax::runtime::StencilSimulation<GrayScott, 2> sim(grid, job.device(), {"u", "v"},
                                                        GrayScott{F(), k(), Du(), Dv(), dt()});
    const std::int64_t side = n(), low = side / 2 - side / 10, high = side / 2 + side / 10;
    sim.set_initial([&](const std::int64_t* p, double* uv) {
      const bool square = p[0] >= low && p[0] < high && p[1] >= low && p[1] < high;
      const auto index = static_cast<std::uint64_t>(p[0] * side + p[1]);
      const double r = noise() * (tenax::uniform_f64(seed(), 0, index) - 0.5);
      uv[0] = (square ? 0.5 : 1.0) + r;
      uv[1] = (square ? 0.25 : 0.0) + r;
    });
    const tenax::runtime::RunResult result = job.run(sim);
    if (result.status != tenax::runtime::RunStatus::completed) return result.exit_code;
    if (!output().empty()) {
      sim.write(output(), {{"t", dt() * static_cast<double>(sim.steps())}},
                {.step = result.step, .config = job.config()});
    }
    if (!job.leader()) return 0;
    const double ms = 1e3 * sim.step_times().median();  // this process's steps (0: none taken)
    const double bytes = 32.0 * static_cast<double>(side * side);  // u, v read and written
    std::printf("gray_scott: %lld steps on %s, grid %s: %.3f ms per step (median), %.1f GB/s\n",
                static_cast<long long>(result.step), tenax::to_string(job.device()).c_str(),
                grid.describe().c_str(), ms, ms > 0 ? bytes / ms / 1e6 : 0.0);
    if (json()) {
      std::printf(
          "{\"n\":%lld,\"steps\":%lld,\"ranks\":%d,\"ms_per_step\":%.9g,"
          "\"bytes_per_step\":%.17g,\"gbps\":%.9g}\n",
          static_cast<long long>(side), static_cast<long long>(result.step), job.comm().size(), ms,
          bytes, ms > 0 ? bytes / ms / 1e6 : 0.0);
    }
    return 0;
  });
}
