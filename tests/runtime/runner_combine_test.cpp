// Workload::combine_step on several ranks (threads of this process): an OverflowError found in
// the combined data (a loss scale at its minimum after the gradient exchange), alike on every
// rank, stops the run as an overflow of step() does -- a checkpoint of the last committed step,
// RunStatus::overflow on every rank -- instead of escaping Runner::run().
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/io/checkpoint_store.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/runner.hpp"

namespace tenax::runtime {
namespace {

namespace fs = std::filesystem;

// x <- x + 1 each step; combine_step() throws OverflowError at step `overflow_at` on every rank.
class CombiningToy final : public Workload {
 public:
  explicit CombiningToy(std::int64_t overflow_at) : overflow_at_(overflow_at) {}
  void init() override { x_ = 0; }
  [[nodiscard]] std::int64_t work_units() const override { return 1; }
  void step(std::int64_t step, std::int64_t) override {
    taking_ = step + 1;
    next_ = x_ + 1;
  }
  std::optional<std::string> combine_step() override {
    if (taking_ == overflow_at_) {
      throw OverflowError(
          "the f16 loss scale reached its minimum at step " + std::to_string(taking_),
          "use bf16 or f32");
    }
    return std::nullopt;
  }
  void commit_step() override { x_ = next_; }
  [[nodiscard]] StateDict save_state() const override {
    StateDict s;
    s.set("x", x_);
    return s;
  }
  void load_state(const StateDict& s) override { x_ = s.integer("x"); }
  [[nodiscard]] bool replicated_state() const override { return true; }

 private:
  std::int64_t overflow_at_;
  std::int64_t taking_ = 0;
  std::int64_t x_ = 0, next_ = 0;
};

TEST(RunnerCombine, AnOverflowFoundInTheCombinedDataStopsEveryRankWithACheckpoint) {
  const fs::path dir = fs::temp_directory_path() / ("tenax-combine-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  CommOptions comm_options;
  comm_options.timeout_seconds = 30;
  auto comms = make_thread_communicators(2, comm_options);
  const FaultPlan no_faults;
  std::vector<RunResult> results(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      CombiningToy toy(6);
      RunnerOptions o;
      o.run_dir = dir;
      o.total_steps = 10;
      o.checkpoint_every = 4;
      o.progress = ProgressMode::quiet;
      o.telemetry_seconds = 0;
      o.faults = &no_faults;
      try {
        Runner runner(toy, o, comms[static_cast<std::size_t>(r)]);
        results[static_cast<std::size_t>(r)] = runner.run();
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RunResult& result = results[static_cast<std::size_t>(r)];
    EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "the overflow escaped Runner::run()";
    EXPECT_EQ(result.status, RunStatus::overflow);
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(result.step, 5);
    EXPECT_NE(result.message.find("loss scale reached its minimum at step 6"), std::string::npos)
        << result.message;
    EXPECT_NE(result.message.find("state checkpointed at step 5"), std::string::npos)
        << result.message;
  }
  io::CheckpointStore store(dir);
  EXPECT_EQ(store.load_latest().step, 5);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tenax::runtime
