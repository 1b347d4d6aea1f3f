// heat_equation: the 2-D heat equation u_t = u_xx + u_yy on the unit square with u = 0 on the
// boundary, explicit Euler in time and the 5-point Laplacian in space, on the CPU or a GPU, in
// f64 or f32, as a resumable job.
//
// The initial state is the lowest discrete eigenmode sin(pi x) sin(pi y). The discrete
// Laplacian maps it to lambda times itself, lambda = -8/h^2 sin^2(pi h / 2), so every Euler step
// multiplies it by exactly (1 + dt lambda): the program checks the computed amplitude against
// that closed form and fails (exit 2) when they disagree, so the run verifies itself, resumed or
// not.
#include <tenax/tenax.hpp>

#include <cmath>
#include <cstdio>
#include <numbers>

namespace {

class HeatEquation final : public tenax::runtime::Workload {
 public:
  HeatEquation(std::int64_t n, double courant, tenax::DType dtype, tenax::Device device)
      : n_(n),
        h_(1.0 / static_cast<double>(n + 1)),
        dt_(courant * h_ * h_ / 4.0),
        dtype_(dtype),
        device_(device) {}

  // The amplitude the closed form gives after `steps` steps.
  [[nodiscard]] double expected_peak(std::int64_t steps) const {
    const double lambda = -8.0 / (h_ * h_) * std::pow(std::sin(std::numbers::pi * h_ / 2.0), 2);
    return peak0_ * std::pow(1.0 + dt_ * lambda, static_cast<double>(steps));
  }
  [[nodiscard]] double peak() const { return tenax::ops::max(u_); }
  [[nodiscard]] double dt() const { return dt_; }

  void init() override {
    tenax::Tensor host = tenax::Tensor::empty({n_, n_}, tenax::DType::f64);
    double* u = host.data_as<double>();
    for (std::int64_t y = 0; y < n_; ++y) {
      for (std::int64_t x = 0; x < n_; ++x) {
        u[y * n_ + x] = std::sin(std::numbers::pi * h_ * static_cast<double>(x + 1)) *
                        std::sin(std::numbers::pi * h_ * static_cast<double>(y + 1));
      }
    }
    u_ = (dtype_ == tenax::DType::f64 ? host : tenax::ops::cast(host, dtype_)).to(device_);
    peak0_ = peak();
  }
  std::int64_t work_units() const override { return 1; }
  // The Laplacian into a buffer taken now (memory may run out here, not after the agreement).
  void step(std::int64_t, std::int64_t) override {
    if (!laplacian_.defined()) laplacian_ = tenax::Tensor::empty_like(u_);
    tenax::ops::laplacian_5pt(u_, laplacian_, h_);
  }
  void commit_step() override { tenax::ops::axpby(dt_, laplacian_, 1.0, u_); }

  tenax::StateDict save_state() const override {
    tenax::StateDict state;
    state.set("u", u_);
    state.set("peak0", peak0_);
    return state;
  }
  void load_state(const tenax::StateDict& state) override {
    u_ = state.tensor("u").to(device_).clone();
    peak0_ = state.real("peak0");
  }
  std::vector<tenax::runtime::StepMetric> step_metrics() const override {
    return {{"peak", peak()}};
  }
  tenax::Device device() const override { return device_; }

 private:
  std::int64_t n_;
  double h_, dt_;
  tenax::DType dtype_;
  tenax::Device device_;
  double peak0_ = 0.0;
  tenax::Tensor u_, laplacian_;
};

}  // namespace

int main(int argc, char** argv) {
  tenax::app::App app("heat_equation",
                      "2-D heat equation with a self-check against the closed-form decay",
                      {.steps = 200, .checkpoint_every = 50});
  auto& grid = app.setting("grid", std::int64_t{256}, "interior points per side").at_least(3);
  auto& courant = app.setting("courant", 0.9, "dt as a fraction of the stability limit h^2/4")
                      .above(0.0)
                      .at_most(1.0);
  auto& dtype = app.setting("dtype", "f64", "f64 or f32").one_of({"f64", "f32"});
  return app.main(argc, argv, [&](tenax::app::Job& job) {
    const tenax::DType type = tenax::parse_dtype(dtype());
    // The field and its Laplacian, before anything is allocated.
    (void)tenax::app::expect_grid_fits(job.device(), grid.given(), grid(), 2,
                                       2 * static_cast<std::int64_t>(tenax::size_of(type)));
    HeatEquation heat(grid(), courant(), type, job.device());
    const tenax::runtime::RunResult result = job.run(heat);
    if (result.exit_code != 0) return result.exit_code;
    const double expected = heat.expected_peak(result.step);
    const double error = std::abs(heat.peak() - expected) / expected;
    const double tolerance = type == tenax::DType::f64 ? 1e-10 : 1e-4;
    std::printf(
        "heat_equation: %lld steps of dt %.3e, peak %.9f, closed form %.9f, relative "
        "error %.2e (%s %.0e)\n",
        static_cast<long long>(result.step), heat.dt(), heat.peak(), expected, error,
        error <= tolerance ? "within" : "OUTSIDE", tolerance);
    return error <= tolerance ? 0 : 2;
  });
}
