// rank_job: a job of N ranks for the multi-rank end-to-end tests (mpirun, tenax run). Each rank
// holds --units values; every step all-reduces their sum (so any rank's extra or missing step
// changes every rank's state) and updates x <- 0.5 x + 0.01 sum + 0.001 step. Takes the run
// standard flags of every job (--run-dir, --inject, --comm, --comm-timeout, ...); --step-ms makes
// steps slow enough for a kill to land at a random moment; --output PREFIX writes each rank's
// final values to PREFIX.rank-<r> as exact hexadecimal floats.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "tenax/app/app.hpp"
#include "tenax/core/error.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/runner.hpp"

namespace {

using namespace tenax;

class RankJob final : public runtime::Workload {
 public:
  RankJob(runtime::Communicator& comm, std::int64_t units, int step_ms)
      : comm_(comm), units_(units), step_ms_(step_ms) {}

  void init() override {
    x_ = Tensor::empty({units_}, DType::f64);
    for (std::int64_t i = 0; i < units_; ++i) {
      x_.data_as<double>()[i] = 1.0 + 0.25 * static_cast<double>(i + units_ * comm_.rank());
    }
  }
  [[nodiscard]] std::int64_t work_units() const override { return units_; }

  void step(std::int64_t step, std::int64_t) override {
    if (step_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_ms_));
    const Tensor sum = Tensor::empty({1}, DType::f64);
    double local = 0;
    for (std::int64_t i = 0; i < units_; ++i) local += x_.data_as<double>()[i];
    sum.data_as<double>()[0] = local;
    comm_.all_reduce(sum, runtime::ReduceOp::sum);
    next_ = Tensor::empty({units_}, DType::f64);
    for (std::int64_t i = 0; i < units_; ++i) {
      next_.data_as<double>()[i] = 0.5 * x_.data_as<double>()[i] + 0.01 * sum.data_as<double>()[0] +
                                   0.001 * static_cast<double>(step + 1);
    }
  }
  void commit_step() override {
    x_ = next_;
    next_ = Tensor{};
  }
  void discard_step() override { next_ = Tensor{}; }
  [[nodiscard]] StateDict save_state() const override {
    StateDict s;
    s.set("x", x_);
    return s;
  }
  void load_state(const StateDict& s) override { x_ = s.tensor("x").clone(); }

  void write(const std::string& prefix) const {
    std::ofstream out(prefix + ".rank-" + std::to_string(comm_.rank()));
    char text[64];
    for (std::int64_t i = 0; i < units_; ++i) {
      std::snprintf(text, sizeof(text), "%a\n", x_.data_as<double>()[i]);
      out << text;
    }
  }

 private:
  runtime::Communicator& comm_;
  std::int64_t units_;
  int step_ms_;
  Tensor x_, next_;
};

}  // namespace

int main(int argc, char** argv) {
  app::App app("rank_job", "a job of N ranks that all-reduces in every step (multi-rank tests)",
               {.steps = 40, .checkpoint_every = 5, .divides_work_across_ranks = true});
  auto& units = app.setting("units", std::int64_t{8}, "values per rank").at_least(1);
  auto& step_ms =
      app.setting("step-ms", 0, "milliseconds each step sleeps").at_least(0).not_recorded();
  auto& output = app.setting("output", "", "prefix of the per-rank value files").not_recorded();
  return app.main(argc, argv, [&](app::Job& run) {
    RankJob job(run.comm(), units(), step_ms());
    const runtime::RunResult result = run.run(job);
    if (result.status != runtime::RunStatus::completed) return result.exit_code;
    if (!output().empty()) job.write(output());
    if (run.leader()) {
      std::printf("rank_job: %lld steps on %d ranks done\n", static_cast<long long>(result.step),
                  run.comm().size());
    }
    return 0;
  });
}
