// A user's own job, built against the installed package with only its headers: an ensemble of
// harmonic oscillators stepped with symplectic Euler. Its settings are declared once; the App
// gives it the standard flags. tests/install/consumer_test.sh runs it: --help, --print-config,
// a bad value, a kill and a bitwise resume, a refused and an allowed change.
#include <tenax/tenax.hpp>

#include <cstdio>

class Oscillators final : public tenax::runtime::Workload {
 public:
  Oscillators(std::int64_t n, double omega, double dt, std::uint64_t seed)
      : n_(n), pull_(-dt * omega * omega), dt_(dt), seed_(seed) {}

  void init() override {  // random positions in [0, 1), at rest
    x_ = tenax::Tensor::empty({n_}, tenax::DType::f64);
    v_ = tenax::Tensor::empty({n_}, tenax::DType::f64);
    tenax::Generator(seed_).fill_uniform(x_.data_as<double>(), static_cast<std::size_t>(n_));
    tenax::ops::fill(v_, 0.0);
  }
  std::int64_t work_units() const override { return n_; }
  void step(std::int64_t, std::int64_t) override {
    next_v_ = tenax::Tensor::empty_like(v_);
    next_x_ = tenax::Tensor::empty_like(x_);
    tenax::ops::copy(next_v_, v_);
    tenax::ops::axpby(pull_, x_, 1.0, next_v_);  // v += -dt w^2 x
    tenax::ops::copy(next_x_, x_);
    tenax::ops::axpby(dt_, next_v_, 1.0, next_x_);  // x += dt v
  }
  void commit_step() override {
    std::swap(x_, next_x_);
    std::swap(v_, next_v_);
  }
  tenax::StateDict save_state() const override {
    tenax::StateDict state;
    state.set("x", x_);
    state.set("v", v_);
    return state;
  }
  void load_state(const tenax::StateDict& state) override {
    x_ = state.tensor("x").clone();
    v_ = state.tensor("v").clone();
  }
  double energy() const { return tenax::ops::dot(v_, v_) - pull_ / dt_ * tenax::ops::dot(x_, x_); }

 private:
  std::int64_t n_;
  double pull_, dt_;
  std::uint64_t seed_;
  tenax::Tensor x_, v_, next_x_, next_v_;
};

int main(int argc, char** argv) {
  tenax::app::App app("oscillators", "an ensemble of harmonic oscillators",
                      {.steps = 40, .checkpoint_every = 5});
  auto& n = app.setting("n", std::int64_t{4096}, "oscillators").at_least(1);
  auto& omega = app.setting("omega", 2.0, "angular frequency").above(0.0);
  auto& dt = app.setting("dt", 0.01, "time step").above(0.0).safe_to_change();
  auto& seed = app.setting("seed", std::uint64_t{7}, "seed of the initial positions");
  return app.main(argc, argv, [&](tenax::app::Job& job) {
    Oscillators oscillators(n(), omega(), dt(), seed());
    const tenax::runtime::RunResult result = job.run(oscillators);
    if (result.exit_code == 0) std::printf("oscillators: energy %a\n", oscillators.energy());
    return result.exit_code;
  });
}
