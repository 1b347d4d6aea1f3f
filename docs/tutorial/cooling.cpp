// The tutorial's job (docs/tutorial.md): N bodies cooling towards the room's temperature,
// T' = -k (T - T_room), stepped with explicit Euler on tenax tensors. The Runner around it gives
// checkpoints, resume after a kill, NaN rollback and the event log that `tenax report` reads.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/runner.hpp"

namespace rt = tenax::runtime;

class Cooling final : public rt::Workload {
 public:
  explicit Cooling(std::int64_t bodies) : bodies_(bodies) {}

  void init() override {  // body i starts at 20 + i degrees
    t_ = tenax::Tensor::empty({bodies_}, tenax::DType::f64);
    double* t = t_.data_as<double>();
    for (std::int64_t i = 0; i < bodies_; ++i) t[i] = 20.0 + static_cast<double>(i);
  }
  std::int64_t work_units() const override { return bodies_; }

  // Computes the next temperatures into `next_` without touching the state: a step that fails
  // (out of memory, say) leaves it as it was, and the Runner takes the step again.
  void step(std::int64_t /*step*/, std::int64_t /*micro_batch*/) override {
    next_ = tenax::Tensor::empty_like(t_);                 // memory from the pool: may run out
    tenax::ops::fill(next_, kDt * kRate * kRoom);          // dt k T_room
    tenax::ops::axpby(1.0 - kDt * kRate, t_, 1.0, next_);  // + (1 - dt k) T
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
  static constexpr double kDt = 0.01, kRate = 0.5, kRoom = 18.0;
  std::int64_t bodies_;
  tenax::Tensor t_, next_;
};

int main(int argc, char** argv) {
  const std::string run_dir = argc > 1 ? argv[1] : "runs/cooling";
  Cooling job(1000);
  rt::RunnerOptions options;
  options.run_dir = run_dir;
  options.total_steps = 2000;
  options.checkpoint_every = 100;
  const rt::RunResult result = rt::Runner(job, options).run();
  std::printf("cooling: %s at step %lld\n", std::string(rt::to_string(result.status)).c_str(),
              static_cast<long long>(result.step));
  return result.exit_code;
}
