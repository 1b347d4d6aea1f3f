// heat2d: the 2-D heat equation u_t = alpha (u_xx + u_yy) on the unit square with u = 0 on the
// boundary, explicit FTCS in time and the 5-point Laplacian in space, run by the tenax Runner:
// checkpoints, resume, out-of-memory backoff, anomaly rollback and restart on device faults.
//
// Grid: n interior points per side; point (i, j) sits at x = (i+1)/(n+1), y = (j+1)/(n+1) and
// is stored at u[j][i]. A step computes the new field in blocks of rows into a second buffer,
// with each block's Laplacian in a scratch buffer from the memory pool; the rows per block are the
// step's micro-batch, so a smaller block after an out-of-memory backoff gives the same field bit
// for bit. The field is replaced only when the whole step is done, so a step that fails leaves
// the state as it was and can be retried.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/core/random.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/io/state_file.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/runner.hpp"

namespace {

using tenax::Device;
using tenax::DType;
using tenax::StateDict;
using tenax::Tensor;

struct Options {
  std::int64_t n = 256;
  std::int64_t steps = 1000;
  double alpha = 1.0;
  double courant = 0.9;  // dt as a fraction of the FTCS stability limit h^2 / (4 alpha)
  std::string initial = "sine";
  std::uint64_t seed = 1;
  std::string device = "auto";
  std::string run_dir = "runs/heat2d";
  std::int64_t checkpoint_every = 100;
  double checkpoint_seconds = 0;
  int keep_last = 3;
  bool async = false;
  std::string output;
  std::string inject;
  std::string progress = "auto";
};

class Heat2d final : public tenax::runtime::Workload {
 public:
  Heat2d(const Options& options, Device device)
      : options_(options),
        device_(device),
        h_(1.0 / static_cast<double>(options.n + 1)),
        dt_(options.courant * h_ * h_ / (4.0 * options.alpha)) {}

  [[nodiscard]] double dt() const noexcept { return dt_; }
  [[nodiscard]] const Tensor& field() const noexcept { return u_; }
  [[nodiscard]] double time() const noexcept { return time_; }

  void init() override {
    const std::int64_t n = options_.n;
    Tensor host = Tensor::empty({n, n}, DType::f64);
    double* u = host.data_as<double>();
    if (options_.initial == "random") {
      tenax::Generator generator(options_.seed);
      generator.fill_uniform(u, static_cast<std::size_t>(n * n));
    } else {
      const bool gauss = options_.initial == "gauss";
      for (std::int64_t j = 0; j < n; ++j) {
        const double y = h_ * static_cast<double>(j + 1);
        for (std::int64_t i = 0; i < n; ++i) {
          const double x = h_ * static_cast<double>(i + 1);
          u[j * n + i] = gauss ? std::exp(-50.0 * ((x - 0.5) * (x - 0.5) + (y - 0.5) * (y - 0.5)))
                               : std::sin(std::numbers::pi * x) * std::sin(std::numbers::pi * y);
        }
      }
    }
    adopt(host.to(device_), 0.0);
  }

  [[nodiscard]] std::int64_t work_units() const override { return options_.n; }

  void step(std::int64_t /*step*/, std::int64_t micro_batch) override {
    const std::int64_t n = options_.n;
    const double factor = options_.alpha * dt_;
    for (std::int64_t r0 = 0; r0 < n; r0 += micro_batch) {
      const std::int64_t r1 = std::min(n, r0 + micro_batch);
      // The block with one halo row on each side inside the grid; the halo rows' own Laplacian
      // is computed and discarded, so every kept value sees its true neighbours.
      const std::int64_t top = r0 > 0 ? r0 - 1 : 0;
      const std::int64_t bottom = r1 < n ? r1 + 1 : n;
      const Tensor halo = u_.slice(top, bottom);
      const Tensor laplacian = Tensor::empty_like(halo);  // scratch from the pool
      tenax::ops::laplacian_5pt(halo, laplacian, h_);
      const Tensor next = u_next_.slice(r0, r1);
      tenax::ops::copy(next, u_.slice(r0, r1));
      tenax::ops::axpby(factor, laplacian.slice(r0 - top, r1 - top), 1.0, next);
    }
    std::swap(u_, u_next_);  // only now does the state change
    time_ += dt_;
  }

  [[nodiscard]] StateDict save_state() const override {
    StateDict state;
    state.set("u", u_);
    state.set("t", time_);
    return state;
  }

  void load_state(const StateDict& state) override {
    const Tensor& u = state.tensor("u");
    TENAX_EXPECTS(u.shape() == (tenax::Shape{options_.n, options_.n}) && u.dtype() == DType::f64,
                  tenax::UsageError,
                  "the checkpoint holds u as " + u.describe() + " but this run has --n " +
                      std::to_string(options_.n),
                  "resume with the same --n, or use a new --run-dir");
    adopt(u.to(device_).clone(), state.real("t"));
  }

  [[nodiscard]] Device device() const override { return device_; }

 private:
  void adopt(Tensor u, double time) {
    u_ = std::move(u);
    u_next_ = Tensor::empty_like(u_);
    time_ = time;
  }

  Options options_;
  Device device_;
  double h_;
  double dt_;
  Tensor u_;
  Tensor u_next_;
  double time_ = 0.0;
};

std::string config_json(const Options& o) {
  return "{\"n\":" + std::to_string(o.n) + ",\"steps\":" + std::to_string(o.steps) +
         ",\"alpha\":" + std::to_string(o.alpha) + ",\"courant\":" + std::to_string(o.courant) +
         ",\"initial\":\"" + o.initial + "\",\"seed\":" + std::to_string(o.seed) + "}";
}

int run(const Options& options) {
  TENAX_EXPECTS(options.n >= 1, tenax::UsageError, "--n " + std::to_string(options.n),
                "use at least 1 interior point per side");
  TENAX_EXPECTS(options.alpha > 0 && std::isfinite(options.alpha), tenax::UsageError,
                "--alpha " + std::to_string(options.alpha), "use a positive diffusivity");
  TENAX_EXPECTS(options.courant > 0 && options.courant <= 1, tenax::UsageError,
                "--courant " + std::to_string(options.courant) + " is outside (0, 1]",
                "FTCS is stable only for dt <= h^2/(4 alpha): pick a fraction in (0, 1]");
  TENAX_EXPECTS(
      options.initial == "sine" || options.initial == "gauss" || options.initial == "random",
      tenax::UsageError, "--initial " + options.initial + " is not known",
      "use sine, gauss or random");
  if (!options.inject.empty()) {
    // --inject is TENAX_FAULTS by another name; the variable also reaches restarted processes.
    (void)tenax::FaultPlan::parse(options.inject);  // reject a bad spec before anything runs
    ::setenv("TENAX_FAULTS", options.inject.c_str(), 1);
  }
  const Device device = tenax::select_device(options.device);
  Heat2d heat(options, device);

  tenax::runtime::RunnerOptions runner_options;
  runner_options.run_dir = options.run_dir;
  runner_options.total_steps = options.steps;
  runner_options.checkpoint_every = options.checkpoint_every;
  runner_options.checkpoint_seconds = options.checkpoint_seconds;
  runner_options.keep_last = options.keep_last;
  runner_options.async_checkpoints = options.async;
  runner_options.config = config_json(options);
  runner_options.progress = tenax::runtime::parse_progress_mode(options.progress);
  tenax::runtime::Runner runner(heat, runner_options);
  const tenax::runtime::RunResult result = runner.run();
  if (result.status != tenax::runtime::RunStatus::completed) {
    std::fprintf(stderr, "heat2d: %s: %s\n", std::string(to_string(result.status)).c_str(),
                 result.message.c_str());
    return result.exit_code;
  }

  std::printf("heat2d: %lld steps of %lldx%lld on %s done, t = %.9g, max u = %.17g\n",
              static_cast<long long>(options.steps), static_cast<long long>(options.n),
              static_cast<long long>(options.n), tenax::to_string(device).c_str(), heat.time(),
              tenax::ops::max(heat.field()));
  if (!options.output.empty()) {
    tenax::io::FileMetadata metadata;
    metadata.step = options.steps;
    metadata.config = config_json(options);
    tenax::io::write_tensor_file(options.output, "u", heat.field().to(Device::cpu()),
                                 {{"t", heat.time()},
                                  {"alpha", options.alpha},
                                  {"steps", static_cast<double>(options.steps)}},
                                 metadata);
    std::printf("heat2d: final field written to %s (dataset /u)\n", options.output.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"2-D heat equation, FTCS, run with checkpoints and fault recovery"};
  app.add_option("--n", o.n, "interior grid points per side")->capture_default_str();
  app.add_option("--steps", o.steps, "time steps")->capture_default_str();
  app.add_option("--alpha", o.alpha, "diffusivity")->capture_default_str();
  app.add_option("--courant", o.courant, "dt as a fraction of the stable limit h^2/(4 alpha)")
      ->capture_default_str();
  app.add_option("--initial", o.initial, "initial condition: sine, gauss or random")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of --initial random")->capture_default_str();
  app.add_option("--device", o.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--run-dir", o.run_dir,
                 "checkpoints and events.jsonl go here; a run resumes "
                 "from the newest valid checkpoint in it")
      ->capture_default_str();
  app.add_option("--checkpoint-every", o.checkpoint_every, "steps between checkpoints (0: off)")
      ->capture_default_str();
  app.add_option("--checkpoint-seconds", o.checkpoint_seconds,
                 "seconds between checkpoints (0: off)")
      ->capture_default_str();
  app.add_option("--keep-last", o.keep_last, "checkpoints kept")->capture_default_str();
  app.add_flag("--async", o.async, "write checkpoints on a background thread");
  app.add_option("--output", o.output, "write the final field to this HDF5 file (dataset /u)");
  app.add_option("--inject", o.inject,
                 "faults to inject, e.g. kill@step=75 or oom@alloc=37 (same as TENAX_FAULTS)");
  app.add_option("--progress", o.progress, "auto, terminal, log or quiet")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const tenax::Error& e) {
    std::fprintf(stderr, "heat2d: %s\n", e.what());
    return tenax::exit_code_for(e.fault_class());
  }
}
