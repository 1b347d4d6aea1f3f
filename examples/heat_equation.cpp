// 2-D heat equation u_t = u_xx + u_yy on the unit square with u = 0 on the boundary, explicit
// Euler in time and the 5-point Laplacian in space, on the CPU or a GPU.
//
// The initial state is the lowest discrete eigenmode sin(pi x) sin(pi y). The discrete
// Laplacian maps it to lambda times itself, lambda = -8/h^2 sin^2(pi h / 2), so every Euler step
// multiplies it by exactly (1 + dt lambda): the program checks the computed amplitude against
// that closed form and fails when they disagree, so the run verifies itself.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <string>
#include <vector>

#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"

#include "run_flags.hpp"

namespace {

struct Options {
  std::string device = "auto";
  std::string dtype = "f64";
  std::int64_t grid = 256;
  std::int64_t steps = 200;
  double courant = 0.9;  // fraction of the explicit stability limit dt <= h^2 / 4
};

tenax::Tensor initial_mode(std::int64_t n, double h, tenax::DType dtype) {
  std::vector<double> values(static_cast<std::size_t>(n * n));
  for (std::int64_t y = 0; y < n; ++y) {
    for (std::int64_t x = 0; x < n; ++x) {
      values[static_cast<std::size_t>(y * n + x)] =
          std::sin(std::numbers::pi * h * static_cast<double>(x + 1)) *
          std::sin(std::numbers::pi * h * static_cast<double>(y + 1));
    }
  }
  tenax::Tensor host = tenax::Tensor::empty({n, n}, tenax::DType::f64);
  std::copy(values.begin(), values.end(), host.data_as<double>());
  if (dtype == tenax::DType::f64) return host;
  return tenax::ops::cast(host, dtype);
}

int run(const Options& options) {
  const tenax::Device device = tenax::select_device(options.device);
  const tenax::DType dtype = tenax::parse_dtype(options.dtype);
  TENAX_EXPECTS(dtype == tenax::DType::f64 || dtype == tenax::DType::f32, tenax::UsageError,
                "--dtype " + options.dtype + " is not supported by the stencil",
                "use --dtype f64 or --dtype f32");
  TENAX_EXPECTS(options.grid >= 3, tenax::UsageError,
                "--grid " + std::to_string(options.grid) + " is too small",
                "use a grid of at least 3 interior points per side");
  TENAX_EXPECTS(options.courant > 0 && options.courant <= 1, tenax::UsageError,
                "--courant " + std::to_string(options.courant) + " is outside (0, 1]",
                "explicit Euler is stable only for dt <= h^2/4: pick a fraction in (0, 1]");

  const std::int64_t n = options.grid;
  // The field and its Laplacian, before anything is allocated.
  (void)tenax::examples::expect_grid_fits(device, "--grid " + std::to_string(n), n, 2,
                                          2 * static_cast<std::int64_t>(tenax::size_of(dtype)));
  const double h = 1.0 / static_cast<double>(n + 1);
  const double dt = options.courant * h * h / 4.0;
  const double lambda = -8.0 / (h * h) * std::pow(std::sin(std::numbers::pi * h / 2.0), 2);
  const double growth = 1.0 + dt * lambda;

  tenax::Tensor u = initial_mode(n, h, dtype).to(device);
  tenax::Tensor laplacian = tenax::Tensor::empty_like(u);
  std::printf("heat_equation: %lldx%lld grid, %s on %s, dt = %.3e, %lld steps\n",
              static_cast<long long>(n), static_cast<long long>(n), options.dtype.c_str(),
              tenax::to_string(device).c_str(), dt, static_cast<long long>(options.steps));

  const double initial_peak = tenax::ops::max(u);
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t report_every = std::max<std::int64_t>(1, options.steps / 4);
  for (std::int64_t step = 1; step <= options.steps; ++step) {
    tenax::ops::laplacian_5pt(u, laplacian, h);
    tenax::ops::axpby(dt, laplacian, 1.0, u);
    if (step % report_every == 0 || step == options.steps) {
      std::printf("  step %6lld  peak %.9f  expected %.9f\n", static_cast<long long>(step),
                  tenax::ops::max(u), initial_peak * std::pow(growth, static_cast<double>(step)));
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const double expected = initial_peak * std::pow(growth, static_cast<double>(options.steps));
  const double relative_error = std::abs(tenax::ops::max(u) - expected) / expected;
  const double tolerance = dtype == tenax::DType::f64 ? 1e-10 : 1e-4;
  std::printf("heat_equation: %.3f ms per step, relative error vs closed form %.2e (%s %.0e)\n",
              1e3 * seconds / static_cast<double>(options.steps), relative_error,
              relative_error <= tolerance ? "within" : "OUTSIDE", tolerance);
  return relative_error <= tolerance ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"2-D heat equation with a self-check against the closed-form decay"};
  app.add_option("--device", options.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--dtype", options.dtype, "f64 or f32")->capture_default_str();
  app.add_option("--grid", options.grid, "interior points per side")->capture_default_str();
  app.add_option("--steps", options.steps, "time steps")->capture_default_str();
  app.add_option("--courant", options.courant, "dt as a fraction of the stability limit h^2/4")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return tenax::examples::run_program("heat_equation", [&] { return run(options); });
}
