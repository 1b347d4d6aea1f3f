// The tutorial's job (docs/tutorial.md): N bodies cooling towards the room's temperature,
// T' = -k (T - T_room), stepped with explicit Euler on tenax tensors. The App gives it the
// standard flags; the Runner gives checkpoints, resume after a kill, NaN rollback and the event
// log that `tenax report` reads.
#include <tenax/tenax.hpp>

#include <cstdio>

namespace rt = tenax::runtime;

class Cooling final : public rt::Workload {
 public:
  Cooling(std::int64_t bodies, double rate, double room, double dt)
      : bodies_(bodies), decay_(1.0 - dt * rate), inflow_(dt * rate * room) {}

  void init() override {  // body i starts at 20 + i degrees
    t_ = tenax::Tensor::empty({bodies_}, tenax::DType::f64);
    double* t = t_.data_as<double>();
    for (std::int64_t i = 0; i < bodies_; ++i) t[i] = 20.0 + static_cast<double>(i);
  }
  std::int64_t work_units() const override { return bodies_; }

  // Computes the next temperatures into `next_` without touching the state: a step that fails
  // (out of memory, say) leaves it as it was, and the Runner takes the step again.
  void step(std::int64_t /*step*/, std::int64_t /*micro_batch*/) override {
    next_ = tenax::Tensor::empty_like(t_);      // memory from the pool: may run out
    tenax::ops::fill(next_, inflow_);           // dt k T_room
    tenax::ops::axpby(decay_, t_, 1.0, next_);  // + (1 - dt k) T
  }
  void commit_step() override { t_ = next_; }

  tenax::StateDict save_state() const override {
    tenax::StateDict state;
    state.set("temperature", t_);
    return state;
  }
  void load_state(const tenax::StateDict& state) override {
    t_ = state.tensor("temperature").clone();
  }
  // What `tenax report` and `tenax watch` show beside the step time.
  std::vector<rt::StepMetric> step_metrics() const override {
    return {{"hottest", tenax::ops::max(t_)}};
  }

 private:
  std::int64_t bodies_;
  double decay_, inflow_;
  tenax::Tensor t_, next_;
};

int main(int argc, char** argv) {
  tenax::app::App app("cooling", "bodies cooling towards the room's temperature",
                      {.steps = 2000, .checkpoint_every = 100});
  auto& bodies = app.setting("bodies", std::int64_t{1000}, "bodies to cool").at_least(1);
  auto& rate = app.setting("rate", 0.5, "cooling rate k, per second").above(0.0);
  auto& room = app.setting("room", 18.0, "the room's temperature, degrees");
  auto& dt = app.setting("dt", 0.01, "time step, seconds").above(0.0).safe_to_change();
  return app.main(argc, argv, [&](tenax::app::Job& job) {
    Cooling cooling(bodies(), rate(), room(), dt());
    return job.run(cooling).exit_code;
  });
}
