// In-process tests of the Runner's policies (resume, checkpoint schedule, out-of-memory backoff,
// anomaly rollback, device faults, injected faults, SIGTERM, option checks, rank agreement) with
// a small deterministic workload. Each test runs in a fresh run directory and passes its own
// fault plan, so that none depends on TENAX_FAULTS.
#include "tenax/runtime/runner.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/toy_workload.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/resource_adaptor.hpp"
#include "tenax/io/checkpoint_store.hpp"

namespace tenax::runtime {

// Readable statuses in failure messages (found by argument-dependent lookup).
void PrintTo(RunStatus status, std::ostream* out) { *out << to_string(status); }

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::toy_expected;
using test::ToyWorkload;

constexpr std::int64_t kSize = 8;  // work units of the toy workload: the first micro-batch

std::vector<double> values_of(const Tensor& tensor) {
  const double* data = tensor.data_as<double>();
  return {data, data + tensor.numel()};
}

std::vector<json> only(const std::vector<json>& lines, std::string_view event) {
  std::vector<json> out;
  for (const json& line : lines) {
    if (line.at("event") == event) out.push_back(line);
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<json>& lines) {
  std::vector<std::string> out;
  for (const json& line : lines) out.push_back(line.at("event").get<std::string>());
  return out;
}

std::map<std::int64_t, int> once_each(std::int64_t first, std::int64_t last) {
  std::map<std::int64_t, int> out;
  for (std::int64_t s = first; s <= last; ++s) out[s] = 1;
  return out;
}

// Wraps the CPU resource and counts release_cache() calls (empty_cache on out-of-memory).
class CacheCounter final : public ResourceAdaptor {
 public:
  explicit CacheCounter(std::shared_ptr<MemoryResource> upstream)
      : ResourceAdaptor(std::move(upstream)) {}
  int releases = 0;

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override {
    return upstream_resource().allocate(bytes, stream);
  }
  void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept override {
    upstream_resource().deallocate(ptr, bytes, stream);
  }
  std::size_t do_release_cache() noexcept override {
    ++releases;
    return upstream()->release_cache();
  }
};

// Installs a CacheCounter over the current CPU resource for the lifetime of the object.
class CountedCache {
 public:
  CountedCache()
      : counter_(std::make_shared<CacheCounter>(current_resource(Device::cpu()))),
        previous_(set_current_resource(Device::cpu(), counter_)) {}
  ~CountedCache() { set_current_resource(Device::cpu(), previous_); }
  CountedCache(const CountedCache&) = delete;
  CountedCache& operator=(const CountedCache&) = delete;
  [[nodiscard]] int releases() const { return counter_->releases; }

 private:
  std::shared_ptr<CacheCounter> counter_;
  std::shared_ptr<MemoryResource> previous_;
};

// Sets (or unsets, for nullopt) an environment variable and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (previous_) {
      ::setenv(name_, previous_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

volatile std::sig_atomic_t test_handler_calls = 0;
extern "C" void count_signal(int /*signal_number*/) { test_handler_calls = test_handler_calls + 1; }

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tenax-runner-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  [[nodiscard]] RunnerOptions options(std::int64_t total_steps,
                                      const FaultPlan* faults = nullptr) const {
    RunnerOptions o;
    o.run_dir = dir_;
    o.total_steps = total_steps;
    o.progress = ProgressMode::quiet;
    o.faults = faults != nullptr ? faults : &no_faults_;
    return o;
  }

  [[nodiscard]] std::vector<json> events() const {
    std::ifstream in(dir_ / "events.jsonl");
    std::vector<json> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
    return lines;
  }

  [[nodiscard]] std::vector<std::int64_t> committed() const {
    return io::CheckpointStore(dir_).committed_steps();
  }
  [[nodiscard]] io::LoadedCheckpoint newest() const {
    return io::CheckpointStore(dir_).load_latest();
  }

  // Asserts the newest checkpoint holds step `step` of the toy with micro-batch `micro_batch`.
  void expect_newest_checkpoint(std::int64_t step, std::int64_t micro_batch) const {
    const io::LoadedCheckpoint loaded = newest();
    ASSERT_TRUE(loaded.found);
    EXPECT_EQ(loaded.step, step);
    EXPECT_EQ(loaded.state.integer("runner/step"), step);
    EXPECT_EQ(loaded.state.integer("runner/micro_batch"), micro_batch);
    EXPECT_EQ(loaded.state.integer("workload/step"), step);
    EXPECT_EQ(values_of(loaded.state.tensor("workload/x")), toy_expected(kSize, step));
  }

  fs::path dir_;
  FaultPlan no_faults_;
};

TEST_F(RunnerTest, CompletesWithTheDirectResultAndAFinalCheckpoint) {
  ToyWorkload toy(kSize);
  Runner runner(toy, options(10));
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.step, 10);
  EXPECT_EQ(result.micro_batch, kSize);
  EXPECT_TRUE(result.message.empty()) << result.message;
  EXPECT_EQ(toy.values(), toy_expected(kSize, 10));
  EXPECT_EQ(toy.init_calls, 1);
  EXPECT_EQ(toy.loads, 0);
  EXPECT_EQ(toy.completions, once_each(1, 10));

  EXPECT_EQ(committed(), (std::vector<std::int64_t>{10, 0}));
  expect_newest_checkpoint(10, kSize);
  EXPECT_EQ(newest().state.integer("runner/total_steps"), 10);

  const std::vector<json> lines = events();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front().at("event"), "started");
  EXPECT_EQ(lines.front().at("total_steps"), 10);
  EXPECT_EQ(lines.front().at("micro_batch"), kSize);
  const std::vector<json> steps = only(lines, "step");
  ASSERT_EQ(steps.size(), 10u);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].at("step"), static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(steps[i].at("micro_batch"), kSize);
  }
  const json& exit = lines.back();
  EXPECT_EQ(exit.at("event"), "exit");
  EXPECT_EQ(exit.at("status"), "completed");
  EXPECT_EQ(exit.at("exit_code"), 0);
  EXPECT_EQ(exit.at("step"), 10);
  const std::vector<json> written = only(lines, "checkpoint_written");
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0].at("step"), 0);
  EXPECT_EQ(written[1].at("step"), 10);
}

TEST_F(RunnerTest, StepMetricsAreWrittenIntoEveryStepLine) {
  ToyWorkload toy(kSize);
  toy.metrics = [](std::int64_t step) {
    return std::vector<StepMetric>{{"loss", 1.0 / static_cast<double>(step)},
                                   {"solver_iterations_2", 7.0}};
  };
  Runner runner(toy, options(5));
  ASSERT_EQ(runner.run().status, RunStatus::completed);
  const std::vector<json> steps = only(events(), "step");
  ASSERT_EQ(steps.size(), 5u);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].at("metric_loss").get<double>(), 1.0 / static_cast<double>(i + 1));
    EXPECT_EQ(steps[i].at("metric_solver_iterations_2").get<double>(), 7.0);
  }
}

TEST_F(RunnerTest, BadStepMetricNamesAreRefusedNamingTheMetric) {
  for (const std::string& name :
       std::vector<std::string>{"", "Loss", "a-b", "with space", std::string(33, 'a')}) {
    SCOPED_TRACE("'" + name + "'");
    fs::remove_all(dir_);
    ToyWorkload toy(kSize);
    toy.metrics = [name](std::int64_t) { return std::vector<StepMetric>{{name, 1.0}}; };
    Runner runner(toy, options(3));
    try {
      (void)runner.run();
      ADD_FAILURE() << "a metric named '" << name << "' must be refused";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("metric '" + name + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("a-z, 0-9 and _"), std::string::npos) << e.what();
    }
  }
}

// A run of no step was reported "completed at step 0: no faults": it is a mistake, refused
// before the run directory is touched.
TEST_F(RunnerTest, ZeroStepsAreAUsageErrorNotACompletedRun) {
  ToyWorkload toy(kSize);
  try {
    Runner runner(toy, options(0));
    FAIL() << "total_steps = 0 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(
        e.cause().find("RunnerOptions::total_steps is 0: the run would end before its first step"),
        std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "events.jsonl"));
}

// A workload that reaches its goal early (a converged solve) ends the run there, checkpointed,
// and a run resumed from that checkpoint takes no further step.
TEST_F(RunnerTest, AFinishedWorkloadEndsTheRunEarlyAndStaysFinishedOnResume) {
  {
    ToyWorkload toy(kSize);
    toy.finish_at = 4;
    Runner runner(toy, options(10));
    const RunResult result = runner.run();
    EXPECT_EQ(result.status, RunStatus::completed);
    EXPECT_EQ(result.step, 4);
    EXPECT_EQ(toy.completions, once_each(1, 4));
    EXPECT_EQ(toy.values(), toy_expected(kSize, 4));
  }
  EXPECT_EQ(committed().front(), 4);
  expect_newest_checkpoint(4, kSize);
  EXPECT_EQ(only(events(), "step").size(), 4u);
  ToyWorkload resumed(kSize);
  resumed.finish_at = 4;
  Runner again(resumed, options(10));
  const RunResult result = again.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(result.step, 4);
  EXPECT_EQ(resumed.loads, 1);
  EXPECT_TRUE(resumed.attempts.empty());
}

TEST_F(RunnerTest, ResumeContinuesFromTheCheckpointAndMatchesOneLongRun) {
  {
    ToyWorkload first(kSize);
    Runner runner(first, options(6));
    ASSERT_EQ(runner.run().status, RunStatus::completed);
    EXPECT_EQ(first.completions, once_each(1, 6));
  }
  const std::size_t lines_after_first = events().size();

  ToyWorkload second(kSize);
  {
    Runner runner(second, options(15));
    const RunResult result = runner.run();
    EXPECT_EQ(result.status, RunStatus::completed);
    EXPECT_EQ(result.step, 15);
  }
  EXPECT_EQ(second.init_calls, 0);
  EXPECT_EQ(second.loads, 1);
  EXPECT_EQ(second.completions, once_each(7, 15));  // steps 1..6 are not redone
  EXPECT_EQ(second.attempts.begin()->first, 7);
  EXPECT_EQ(second.values(), toy_expected(kSize, 15));
  expect_newest_checkpoint(15, kSize);

  std::vector<json> lines = events();
  const std::vector<json> second_lines(lines.begin() + static_cast<long>(lines_after_first),
                                       lines.end());
  ASSERT_FALSE(second_lines.empty());
  EXPECT_EQ(second_lines.front().at("event"), "resumed");
  EXPECT_EQ(second_lines.front().at("step"), 6);
  EXPECT_EQ(second_lines.front().at("micro_batch"), kSize);
  EXPECT_TRUE(only(second_lines, "started").empty());
  EXPECT_EQ(only(second_lines, "step").size(), 9u);

  // A run as long as the two together, in another directory, ends in the same state.
  const fs::path single_dir = dir_ / "single";
  ToyWorkload single(kSize);
  RunnerOptions single_options = options(15);
  single_options.run_dir = single_dir;
  Runner single_runner(single, single_options);
  ASSERT_EQ(single_runner.run().status, RunStatus::completed);
  EXPECT_EQ(single.values(), second.values());

  // The same total again: nothing to do but report completion.
  const std::size_t lines_after_second = events().size();
  ToyWorkload third(kSize);
  Runner runner(third, options(15));
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.step, 15);
  EXPECT_EQ(third.init_calls, 0);
  EXPECT_TRUE(third.attempts.empty());
  EXPECT_EQ(third.values(), toy_expected(kSize, 15));
  lines = events();
  const std::vector<json> third_lines(lines.begin() + static_cast<long>(lines_after_second),
                                      lines.end());
  // Nothing to do: the resume, its telemetry sample, the closing one and the exit.
  EXPECT_EQ(names_of(third_lines),
            (std::vector<std::string>{"resumed", "telemetry", "telemetry", "exit"}));
  EXPECT_EQ(third_lines.back().at("status"), "completed");
  EXPECT_EQ(committed().front(), 15);
}

TEST_F(RunnerTest, CheckpointsEveryNStepsAndKeepsTheLastOnes) {
  ToyWorkload toy(kSize);
  RunnerOptions o = options(10);
  o.checkpoint_every = 3;
  o.keep_last = 2;
  Runner runner(toy, o);
  ASSERT_EQ(runner.run().status, RunStatus::completed);
  std::vector<std::int64_t> written;
  for (const json& line : only(events(), "checkpoint_written")) {
    written.push_back(line.at("step").get<std::int64_t>());
  }
  EXPECT_EQ(written, (std::vector<std::int64_t>{0, 3, 6, 9, 10}));
  EXPECT_EQ(committed(), (std::vector<std::int64_t>{10, 9}));
  EXPECT_FALSE(io::CheckpointStore(dir_).verify(9).has_value());
  expect_newest_checkpoint(10, kSize);
}

TEST_F(RunnerTest, AFinalStepOnTheScheduleIsWrittenOnce) {
  ToyWorkload toy(kSize);
  RunnerOptions o = options(12);
  o.checkpoint_every = 4;
  o.keep_last = 10;
  Runner runner(toy, o);
  ASSERT_EQ(runner.run().status, RunStatus::completed);
  // 12 is a multiple of 4: the final state is already checkpointed and not written twice.
  EXPECT_EQ(committed(), (std::vector<std::int64_t>{12, 8, 4, 0}));
  EXPECT_EQ(only(events(), "checkpoint_written").size(), 4u);
}

TEST_F(RunnerTest, OutOfMemoryRetriesThenBacksOffAndTheMicroBatchIsKept) {
  {
    CountedCache cache;
    ToyWorkload toy(kSize);
    toy.oom = [](std::int64_t step, int attempt, std::int64_t) { return step == 3 && attempt < 2; };
    RunnerOptions o = options(5);
    o.checkpoint_every = 1;
    Runner runner(toy, o);
    const RunResult result = runner.run();
    EXPECT_EQ(result.status, RunStatus::completed);
    EXPECT_EQ(result.micro_batch, kSize / 2);
    EXPECT_EQ(cache.releases(), 1);  // the first failure empties the cache
    // First failure: same micro-batch again; second: halved.
    EXPECT_EQ(toy.micro_batches[3], (std::vector<std::int64_t>{kSize, kSize, kSize / 2}));
    EXPECT_EQ(toy.micro_batches[4], (std::vector<std::int64_t>{kSize / 2}));
    EXPECT_EQ(toy.completions, once_each(1, 5));
    EXPECT_EQ(toy.values(), toy_expected(kSize, 5));
  }
  const std::vector<json> lines = events();
  const std::vector<json> retries = only(lines, "oom_retry");
  const std::vector<json> backoffs = only(lines, "backoff");
  ASSERT_EQ(retries.size(), 1u);
  ASSERT_EQ(backoffs.size(), 1u);
  EXPECT_EQ(retries[0].at("step"), 3);
  EXPECT_EQ(retries[0].at("micro_batch"), kSize);
  EXPECT_EQ(backoffs[0].at("step"), 3);
  EXPECT_EQ(backoffs[0].at("micro_batch"), kSize / 2);
  for (const json& step : only(lines, "step")) {
    EXPECT_EQ(step.at("micro_batch"), step.at("step") < 3 ? kSize : kSize / 2) << step;
  }
  expect_newest_checkpoint(5, kSize / 2);

  // The learned micro-batch comes back with the checkpoint.
  ToyWorkload resumed(kSize);
  Runner runner(resumed, options(7));
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(result.micro_batch, kSize / 2);
  EXPECT_EQ(resumed.micro_batches[6], (std::vector<std::int64_t>{kSize / 2}));
  EXPECT_EQ(resumed.completions, once_each(6, 7));
  EXPECT_EQ(resumed.values(), toy_expected(kSize, 7));
  const std::vector<json> resumed_lines = only(events(), "resumed");
  ASSERT_EQ(resumed_lines.size(), 1u);
  EXPECT_EQ(resumed_lines[0].at("micro_batch"), kSize / 2);
}

TEST_F(RunnerTest, OutOfMemoryAtTheSmallestMicroBatchCheckpointsAndStops) {
  CountedCache cache;
  ToyWorkload toy(kSize);
  toy.oom = [](std::int64_t step, int, std::int64_t) { return step == 5; };
  RunnerOptions o = options(10);
  o.checkpoint_every = 3;
  o.min_micro_batch = 2;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::out_of_memory);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.step, 4);
  EXPECT_EQ(result.micro_batch, 2);
  EXPECT_NE(result.message.find("out of memory at step 5"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("tenax memory summary"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("fix:"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("checkpointed at step 4"), std::string::npos) << result.message;
  // Retry and back off at every size down to the floor, then stop.
  EXPECT_EQ(toy.micro_batches[5], (std::vector<std::int64_t>{8, 8, 4, 4, 2, 2}));
  EXPECT_EQ(cache.releases(), 3);
  // No step ran twice to completion, none was skipped, the failing one never completed.
  EXPECT_EQ(toy.completions, once_each(1, 4));
  EXPECT_EQ(toy.values(), toy_expected(kSize, 4));

  EXPECT_EQ(committed().front(), 4);
  expect_newest_checkpoint(4, 2);
  const std::vector<json> lines = events();
  EXPECT_EQ(only(lines, "oom_retry").size(), 3u);
  EXPECT_EQ(only(lines, "backoff").size(), 2u);
  EXPECT_EQ(lines.back().at("event"), "exit");
  EXPECT_EQ(lines.back().at("status"), "out_of_memory");
  EXPECT_EQ(lines.back().at("exit_code"), 1);
  EXPECT_EQ(lines.back().at("step"), 4);
}

TEST_F(RunnerTest, AnAnomalyThrownByAStepRollsBackAndARepeatedOneStopsAtOnce) {
  ToyWorkload toy(kSize);
  // Step 5 fails once (a transient NaN loss), step 8 every time (a bad sample, say).
  toy.anomaly = [](std::int64_t step, int attempt, std::int64_t) {
    return (step == 5 && attempt == 0) || step == 8;
  };
  RunnerOptions o = options(10);
  o.checkpoint_every = 3;
  o.max_anomaly_retries = 5;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::anomaly);
  EXPECT_EQ(result.exit_code, 1);
  // No futile rollbacks: the second failure of step 8, with the same inputs, stops the run,
  // naming the step, its inputs, the error and how to skip it instead.
  for (const char* part :
       {"step 8 (the toy inputs of step 8) failed again after a rollback, with the same inputs",
        "toy non-finite loss at step 8", "RunnerOptions::repeated_anomaly = skip"}) {
    EXPECT_NE(result.message.find(part), std::string::npos) << part << "\n" << result.message;
  }
  // Step 5 was redone from the checkpoint of step 3; step 8 never completed.
  EXPECT_EQ(toy.completions[5], 1);
  EXPECT_EQ(toy.completions.count(8), 0u);
  EXPECT_EQ(toy.attempts[8], 2) << "the first try and the one after the rollback";
  EXPECT_EQ(toy.values(), toy_expected(kSize, 7)) << "the step that threw changed nothing";
  EXPECT_EQ(only(events(), "anomaly").size(), 3u);
  EXPECT_EQ(only(events(), "rollback").size(), 2u);
  EXPECT_TRUE(toy.skipped.empty());
}

// The same step failing again after a rollback is skipped for good under
// RepeatedAnomaly::skip: the run goes on from the state before it, says so, logs it, counts it,
// and ends with the bits of a run that never took that step.
TEST_F(RunnerTest, ARepeatedAnomalyIsSkippedWhenThePolicySaysSo) {
  ToyWorkload toy(kSize);
  toy.can_skip = true;
  toy.anomaly = [](std::int64_t step, int, std::int64_t) { return step == 8; };
  RunnerOptions o = options(10);
  o.checkpoint_every = 3;
  o.repeated_anomaly = RepeatedAnomaly::skip;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  ASSERT_EQ(result.status, RunStatus::completed) << result.message;
  EXPECT_EQ(toy.skipped, std::vector<std::int64_t>{8});
  EXPECT_EQ(toy.attempts[8], 2);
  EXPECT_EQ(result.events.anomalous_steps_skipped, 1);
  EXPECT_EQ(result.events.rollbacks, 1);
  // x as if step 8 was never taken.
  std::vector<double> expected = toy_expected(kSize, 7);
  for (std::int64_t s = 9; s <= 10; ++s) {
    for (std::int64_t i = 0; i < kSize; ++i) {
      auto& v = expected[static_cast<std::size_t>(i)];
      v = test::toy_update(v, i, s);
    }
  }
  EXPECT_EQ(toy.values(), expected);
  const std::vector<json> skipped = only(events(), "anomalous_step_skipped");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].at("step"), 8);
  EXPECT_EQ(skipped[0].at("inputs"), "the toy inputs of step 8");
  EXPECT_NE(skipped[0].at("reason").get<std::string>().find("toy non-finite loss at step 8"),
            std::string::npos);
  EXPECT_NE(describe(result.events).find("1 step skipped after a repeated anomaly"),
            std::string::npos)
      << describe(result.events);
  const io::LoadedCheckpoint last = newest();
  ASSERT_TRUE(last.found);
  EXPECT_EQ(last.step, 10);
  const Tensor& x = last.state.tensor("workload/x");
  EXPECT_EQ(std::vector<double>(x.data_as<double>(), x.data_as<double>() + kSize), expected);
}

// Skipping needs a workload that can skip (the default refuses) and a step that failed before
// its commit: otherwise the repeated anomaly stops the run, saying why.
TEST_F(RunnerTest, ARepeatedAnomalyThatCannotBeSkippedStops) {
  {
    ToyWorkload toy(kSize);
    toy.anomaly = [](std::int64_t step, int, std::int64_t) { return step == 4; };
    RunnerOptions o = options(6);
    o.checkpoint_every = 2;
    o.repeated_anomaly = RepeatedAnomaly::skip;
    Runner runner(toy, o);
    const RunResult result = runner.run();
    EXPECT_EQ(result.status, RunStatus::anomaly);
    EXPECT_NE(result.message.find("the workload cannot skip a step (Workload::skip_step)"),
              std::string::npos)
        << result.message;
  }
  std::filesystem::remove_all(dir_);
  {
    ToyWorkload toy(kSize);
    toy.can_skip = true;
    toy.nan = [](std::int64_t step, int, std::int64_t) { return step == 4; };  // after the commit
    RunnerOptions o = options(6);
    o.checkpoint_every = 2;
    o.repeated_anomaly = RepeatedAnomaly::skip;
    Runner runner(toy, o);
    const RunResult result = runner.run();
    EXPECT_EQ(result.status, RunStatus::anomaly);
    EXPECT_NE(result.message.find("turned unhealthy after the step was applied"), std::string::npos)
        << result.message;
    EXPECT_TRUE(toy.skipped.empty());
  }
  EXPECT_EQ(parse_repeated_anomaly("skip"), RepeatedAnomaly::skip);
  EXPECT_EQ(to_string(RepeatedAnomaly::stop), "stop");
  EXPECT_THROW((void)parse_repeated_anomaly("ignore"), UsageError);
}

TEST_F(RunnerTest, OverflowAtTheMinimumScaleCheckpointsTheLastGoodStateAndStops) {
  ToyWorkload toy(kSize);
  toy.overflow = [](std::int64_t step, int, std::int64_t) { return step == 5; };
  RunnerOptions o = options(10);
  o.checkpoint_every = 3;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::overflow);
  EXPECT_EQ(to_string(result.status), "overflow");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.step, 4);
  EXPECT_NE(result.message.find("toy overflow"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("checkpointed at step 4"), std::string::npos) << result.message;
  EXPECT_EQ(toy.attempts[5], 1) << "no retry: it cannot help";
  expect_newest_checkpoint(4, kSize);
  const std::vector<json> lines = events();
  EXPECT_EQ(only(lines, "overflow").size(), 1u);
  EXPECT_EQ(lines.back().at("status"), "overflow");
  // Once the cause is fixed, the run resumes from that state and ends as an uninterrupted one.
  ToyWorkload fixed(kSize);
  Runner again(fixed, o);
  EXPECT_EQ(again.run().status, RunStatus::completed);
  EXPECT_EQ(fixed.values(), toy_expected(kSize, 10));
}

TEST_F(RunnerTest, NanRollsBackToTheLastCheckpointAndRedoesTheSteps) {
  ToyWorkload toy(kSize);
  toy.nan = [](std::int64_t step, int attempt, std::int64_t) { return step == 7 && attempt == 0; };
  RunnerOptions o = options(10);
  o.checkpoint_every = 5;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(toy.values(), toy_expected(kSize, 10));
  std::map<std::int64_t, int> expected = once_each(1, 10);
  expected[6] = 2;  // redone from the checkpoint of step 5
  expected[7] = 2;
  EXPECT_EQ(toy.completions, expected);
  EXPECT_EQ(toy.loads, 1);

  const std::vector<json> lines = events();
  const std::vector<json> anomalies = only(lines, "anomaly");
  const std::vector<json> rollbacks = only(lines, "rollback");
  ASSERT_EQ(anomalies.size(), 1u);
  ASSERT_EQ(rollbacks.size(), 1u);
  EXPECT_EQ(anomalies[0].at("step"), 7);
  EXPECT_NE(anomalies[0].at("reason").get<std::string>().find("non-finite"), std::string::npos);
  EXPECT_EQ(rollbacks[0].at("step"), 5);
  // The anomalous step is not reported as a step; the redone one is, once.
  int step_seven = 0;
  for (const json& step : only(lines, "step")) step_seven += step.at("step") == 7 ? 1 : 0;
  EXPECT_EQ(step_seven, 1);
  expect_newest_checkpoint(10, kSize);
}

TEST_F(RunnerTest, RollbackKeepsTheMicroBatchLearnedSinceTheCheckpoint) {
  // Checkpoint at 5 with the full micro-batch; step 7 backs off to half; NaN after step 8 rolls
  // back to 5. The redone steps must use the learned half size, not the checkpoint's.
  ToyWorkload toy(kSize);
  toy.oom = [](std::int64_t step, int attempt, std::int64_t) { return step == 7 && attempt < 2; };
  toy.nan = [](std::int64_t step, int attempt, std::int64_t) { return step == 8 && attempt == 0; };
  RunnerOptions o = options(10);
  o.checkpoint_every = 5;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(toy.micro_batches[6], (std::vector<std::int64_t>{kSize, kSize / 2}));
  EXPECT_EQ(toy.micro_batches[7], (std::vector<std::int64_t>{kSize, kSize, kSize / 2, kSize / 2}));
  EXPECT_EQ(only(events(), "backoff").size(), 1u);
  EXPECT_EQ(only(events(), "rollback").size(), 1u);
  EXPECT_EQ(toy.values(), toy_expected(kSize, 10));
}

// The events among `kinds`, as "kind@step:micro_batch".
std::vector<std::string> policy_events(const std::vector<json>& lines,
                                       std::initializer_list<std::string_view> kinds) {
  std::vector<std::string> out;
  for (const json& line : lines) {
    const std::string kind = line.at("event").get<std::string>();
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
    out.push_back(kind + "@" + std::to_string(line.at("step").get<std::int64_t>()) + ":" +
                  std::to_string(line.at("micro_batch").get<std::int64_t>()));
  }
  return out;
}

// The toy's values after `steps` steps of a run without any fault (in its own run directory).
std::vector<double> values_without_faults(const fs::path& run_dir, std::int64_t steps) {
  ToyWorkload plain(kSize);
  RunnerOptions o;
  o.run_dir = run_dir;
  o.total_steps = steps;
  o.progress = ProgressMode::quiet;
  static const FaultPlan no_faults;
  o.faults = &no_faults;
  Runner runner(plain, o);
  EXPECT_EQ(runner.run().status, RunStatus::completed);
  return plain.values();
}

TEST_F(RunnerTest, MicroBatchRegrowsAfterKStepsWithoutOutOfMemory) {
  // Step 3 runs out of memory four times: retry, halve to 4, retry, halve to 2. With K = 3,
  // steps 4-6 go clean at 2, so step 7 runs at 4; steps 7-9 go clean at 4, so step 10 runs at 8,
  // the full size, where the policy rests.
  ToyWorkload toy(kSize);
  toy.oom = [](std::int64_t step, int attempt, std::int64_t) { return step == 3 && attempt < 4; };
  RunnerOptions o = options(14);
  o.regrow_micro_batch_after = 3;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(result.micro_batch, kSize);
  EXPECT_EQ(toy.micro_batches[3], (std::vector<std::int64_t>{8, 8, 4, 4, 2}));
  for (std::int64_t s = 4; s <= 14; ++s) {
    const std::int64_t expected = s <= 6 ? 2 : s <= 9 ? 4 : 8;
    EXPECT_EQ(toy.micro_batches[s], (std::vector<std::int64_t>{expected})) << "step " << s;
  }
  EXPECT_EQ(toy.completions, once_each(1, 14));

  const std::vector<json> lines = events();
  EXPECT_EQ(policy_events(lines, {"oom_retry", "backoff", "regrow"}),
            (std::vector<std::string>{"oom_retry@3:8", "backoff@3:4", "oom_retry@3:4",
                                      "backoff@3:2", "regrow@7:4", "regrow@10:8"}));
  const std::vector<json> regrows = only(lines, "regrow");
  ASSERT_EQ(regrows.size(), 2u);
  EXPECT_EQ(regrows[0].at("previous_micro_batch"), 2);
  EXPECT_EQ(regrows[0].at("clean_steps"), 3);
  for (const json& step : only(lines, "step")) {
    const std::int64_t s = step.at("step").get<std::int64_t>();
    EXPECT_EQ(step.at("micro_batch"), s < 3 ? 8 : s <= 6 ? 2 : s <= 9 ? 4 : 8) << step;
  }
  // Bitwise the result of a run that never ran out of memory.
  EXPECT_EQ(toy.values(), toy_expected(kSize, 14));
  const std::vector<double> plain = values_without_faults(dir_ / "plain", 14);
  ASSERT_EQ(plain.size(), toy.values().size());
  EXPECT_EQ(std::memcmp(plain.data(), toy.values().data(), plain.size() * sizeof(double)), 0);
  expect_newest_checkpoint(14, kSize);
}

TEST_F(RunnerTest, OutOfMemoryAfterARegrowthBacksOffAgainAndAnyOomRestartsTheCount) {
  // K = 2. Step 3 halves to 4; steps 4-5 regrow to 8 for step 6; step 8 halves to 4 again;
  // step 9 counts 1, step 10 runs out of memory once (the cache retry absorbs it, but the count
  // restarts and step 10 does not count), steps 11-12 count 2: step 13 runs at 8.
  ToyWorkload toy(kSize);
  toy.oom = [](std::int64_t step, int attempt, std::int64_t) {
    return ((step == 3 || step == 8) && attempt < 2) || (step == 10 && attempt == 0);
  };
  RunnerOptions o = options(16);
  o.regrow_micro_batch_after = 2;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(toy.micro_batches[3], (std::vector<std::int64_t>{8, 8, 4}));
  EXPECT_EQ(toy.micro_batches[6], (std::vector<std::int64_t>{8}));
  EXPECT_EQ(toy.micro_batches[8], (std::vector<std::int64_t>{8, 8, 4}));
  EXPECT_EQ(toy.micro_batches[10], (std::vector<std::int64_t>{4, 4}));
  EXPECT_EQ(toy.micro_batches[12], (std::vector<std::int64_t>{4}));
  EXPECT_EQ(toy.micro_batches[13], (std::vector<std::int64_t>{8}));
  EXPECT_EQ(policy_events(events(), {"oom_retry", "backoff", "regrow"}),
            (std::vector<std::string>{"oom_retry@3:8", "backoff@3:4", "regrow@6:8", "oom_retry@8:8",
                                      "backoff@8:4", "oom_retry@10:4", "regrow@13:8"}));
  EXPECT_EQ(toy.completions, once_each(1, 16));
  EXPECT_EQ(toy.values(), toy_expected(kSize, 16));
}

TEST_F(RunnerTest, ZeroRegrowMicroBatchAfterNeverRegrows) {
  ToyWorkload toy(kSize);
  toy.oom = [](std::int64_t step, int attempt, std::int64_t) { return step == 3 && attempt < 2; };
  RunnerOptions o = options(30);
  ASSERT_EQ(o.regrow_micro_batch_after, 0);  // the default
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(result.micro_batch, kSize / 2);
  for (std::int64_t s = 4; s <= 30; ++s) {
    EXPECT_EQ(toy.micro_batches[s], (std::vector<std::int64_t>{kSize / 2})) << "step " << s;
  }
  EXPECT_TRUE(only(events(), "regrow").empty());
  EXPECT_EQ(newest().state.integer("runner/regrow_clean_steps"), 0);
  EXPECT_EQ(toy.values(), toy_expected(kSize, 30));
}

TEST_F(RunnerTest, TheRegrowthCountIsCheckpointedSoAResumedRunRegrowsOnSchedule) {
  // K = 4: step 3 halves to 4, steps 4-5 count 2 and the run stops at 5. Resumed, steps 6-7
  // make 4, so step 8 runs at 8, as in an uninterrupted run.
  {
    ToyWorkload toy(kSize);
    toy.oom = [](std::int64_t step, int attempt, std::int64_t) { return step == 3 && attempt < 2; };
    RunnerOptions o = options(5);
    o.checkpoint_every = 1;
    o.regrow_micro_batch_after = 4;
    Runner runner(toy, o);
    EXPECT_EQ(runner.run().status, RunStatus::completed);
  }
  expect_newest_checkpoint(5, kSize / 2);
  EXPECT_EQ(newest().state.integer("runner/regrow_clean_steps"), 2);

  ToyWorkload resumed(kSize);
  RunnerOptions o = options(10);
  o.regrow_micro_batch_after = 4;
  Runner runner(resumed, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(result.micro_batch, kSize);
  EXPECT_EQ(resumed.micro_batches[6], (std::vector<std::int64_t>{kSize / 2}));
  EXPECT_EQ(resumed.micro_batches[7], (std::vector<std::int64_t>{kSize / 2}));
  EXPECT_EQ(resumed.micro_batches[8], (std::vector<std::int64_t>{kSize}));
  EXPECT_EQ(policy_events(events(), {"regrow"}), (std::vector<std::string>{"regrow@8:8"}));
  EXPECT_EQ(resumed.values(), toy_expected(kSize, 10));
}

TEST_F(RunnerTest, RollbackUndoesARegrowthSinceTheCheckpoint) {
  // K = 2. Step 2 halves to 4; the checkpoint of step 3 holds micro-batch 4 and a count of 1;
  // step 4 regrows to 8; a NaN after step 5 rolls back to 3, where the checkpoint's smaller
  // micro-batch and its count come back: step 4 is redone at 4 and regrows again.
  ToyWorkload toy(kSize);
  toy.oom = [](std::int64_t step, int attempt, std::int64_t) { return step == 2 && attempt < 2; };
  toy.nan = [](std::int64_t step, int attempt, std::int64_t) { return step == 5 && attempt == 0; };
  RunnerOptions o = options(7);
  o.checkpoint_every = 3;
  o.regrow_micro_batch_after = 2;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(toy.micro_batches[4], (std::vector<std::int64_t>{4, 4}));
  EXPECT_EQ(toy.micro_batches[5], (std::vector<std::int64_t>{8, 8}));
  EXPECT_EQ(policy_events(events(), {"backoff", "regrow", "rollback"}),
            (std::vector<std::string>{"backoff@2:4", "regrow@5:8", "rollback@3:4", "regrow@5:8"}));
  EXPECT_EQ(toy.values(), toy_expected(kSize, 7));
}

TEST_F(RunnerTest, SparseAnomalyScansStillNeverCheckpointANan) {
  // Scans only before checkpoints: the NaN made at step 7 is found at step 10 (a checkpoint is
  // due), nothing unhealthy is written, and the run rolls back to step 5 and ends right.
  ToyWorkload toy(kSize);
  toy.nan = [](std::int64_t step, int attempt, std::int64_t) { return step == 7 && attempt == 0; };
  RunnerOptions o = options(10);
  o.checkpoint_every = 5;
  o.anomaly_check_every = 0;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(toy.values(), toy_expected(kSize, 10));
  std::map<std::int64_t, int> expected = once_each(1, 10);
  for (std::int64_t s = 6; s <= 10; ++s) expected[s] = 2;
  EXPECT_EQ(toy.completions, expected);
  const std::vector<json> anomalies = only(events(), "anomaly");
  ASSERT_EQ(anomalies.size(), 1u);
  EXPECT_EQ(anomalies[0].at("step"), 10);
  EXPECT_EQ(only(events(), "rollback").at(0).at("step"), 5);
  int tenth = 0;
  for (const json& written : only(events(), "checkpoint_written"))
    tenth += written.at("step") == 10;
  EXPECT_EQ(tenth, 1) << "only the redone, healthy step 10 is written";
  EXPECT_EQ(committed(), (std::vector<std::int64_t>{10, 5, 0}));
  expect_newest_checkpoint(10, kSize);
}

TEST_F(RunnerTest, AnomalyScansEveryNSteps) {
  ToyWorkload toy(kSize);
  toy.nan = [](std::int64_t step, int attempt, std::int64_t) { return step == 7 && attempt == 0; };
  RunnerOptions o = options(10);
  o.checkpoint_every = 5;
  o.anomaly_check_every = 2;
  Runner runner(toy, o);
  ASSERT_EQ(runner.run().status, RunStatus::completed);
  EXPECT_EQ(toy.values(), toy_expected(kSize, 10));
  EXPECT_EQ(only(events(), "anomaly").at(0).at("step"), 8);
  RunnerOptions bad = options(10);
  bad.anomaly_check_every = -1;
  EXPECT_THROW(Runner(toy, bad), UsageError);
}

TEST_F(RunnerTest, PersistentNanStopsWhenItRepeatsAfterARollback) {
  ToyWorkload toy(kSize);
  toy.nan = [](std::int64_t step, int, std::int64_t) { return step == 7; };
  RunnerOptions o = options(10);
  o.checkpoint_every = 5;
  o.max_anomaly_retries = 2;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::anomaly);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.message.find("step 7"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("failed again after a rollback"), std::string::npos)
      << result.message;
  EXPECT_NE(result.message.find("fix:"), std::string::npos) << result.message;
  // One rollback; the second failure of the same step ends the run. Step 6 in between was
  // healthy both times.
  EXPECT_EQ(toy.attempts[7], 2);
  EXPECT_EQ(toy.completions[6], 2);
  const std::vector<json> lines = events();
  EXPECT_EQ(only(lines, "anomaly").size(), 2u);
  EXPECT_EQ(only(lines, "rollback").size(), 1u);
  EXPECT_EQ(lines.back().at("status"), "anomaly");
  EXPECT_EQ(committed().front(), 5);  // the bad state was never checkpointed
  expect_newest_checkpoint(5, kSize);
}

// Anomalies at different steps in a row are bounded by max_anomaly_retries.
TEST_F(RunnerTest, AnomaliesAtOtherStepsInARowStopAfterMaxAnomalyRetries) {
  ToyWorkload toy(kSize);
  // Step 7 fails on its first try, step 6 on its second and third: never past step 7.
  toy.anomaly = [](std::int64_t step, int attempt, std::int64_t) {
    return (step == 7 && attempt == 0) || (step == 6 && attempt >= 1);
  };
  RunnerOptions o = options(10);
  o.checkpoint_every = 5;
  o.max_anomaly_retries = 2;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::anomaly);
  EXPECT_NE(result.message.find("step 6"), std::string::npos) << result.message;
}

// A state that starts unhealthy has no checkpoint to roll back to: the run is refused before
// anything is written (before, the NaN was checkpointed as step 0 and rolled back to three times).
TEST_F(RunnerTest, ANonFiniteInitialStateIsRefusedBeforeAnyCheckpoint) {
  ToyWorkload toy(kSize);
  toy.nan_at_init = true;
  Runner runner(toy, options(10));
  try {
    (void)runner.run();
    FAIL() << "no error";
  } catch (const AnomalyError& e) {
    EXPECT_NE(e.cause().find("initial state"), std::string::npos) << e.cause();
    EXPECT_NE(e.cause().find("1 non-finite value(s) in state tensor 'x'"), std::string::npos)
        << e.cause();
  }
  EXPECT_TRUE(committed().empty()) << "a non-finite state was checkpointed";
  EXPECT_EQ(toy.attempts.count(1), 0u) << "no step was taken";
  const std::vector<json> lines = events();
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2].at("event"), "error");
  EXPECT_EQ(lines.back().at("event"), "exit") << "the log ends with the run's exit line";
  EXPECT_EQ(lines.back().at("status"), "failed");
}

TEST_F(RunnerTest, PersistentNanRightAfterACheckpointStopsToo) {
  ToyWorkload toy(kSize);
  toy.nan = [](std::int64_t step, int, std::int64_t) { return step == 6; };
  RunnerOptions o = options(10);
  o.checkpoint_every = 5;
  o.max_anomaly_retries = 1;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::anomaly);
  EXPECT_EQ(toy.attempts[6], 2);
  EXPECT_EQ(only(events(), "rollback").size(), 1u);
}

TEST_F(RunnerTest, CheckMessageTriggersARollback) {
  ToyWorkload toy(kSize);
  int reported = 0;
  toy.problem = [&reported](std::int64_t step) -> std::optional<std::string> {
    if (step == 4 && reported++ == 0) return "residual grew by 1e9";
    return std::nullopt;
  };
  RunnerOptions o = options(6);
  o.checkpoint_every = 2;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(toy.values(), toy_expected(kSize, 6));
  std::map<std::int64_t, int> expected = once_each(1, 6);
  expected[3] = 2;
  expected[4] = 2;
  EXPECT_EQ(toy.completions, expected);
  const std::vector<json> anomalies = only(events(), "anomaly");
  ASSERT_EQ(anomalies.size(), 1u);
  EXPECT_EQ(anomalies[0].at("reason"), "residual grew by 1e9");
  const std::vector<json> rollbacks = only(events(), "rollback");
  ASSERT_EQ(rollbacks.size(), 1u);
  EXPECT_EQ(rollbacks[0].at("step"), 2);
}

TEST_F(RunnerTest, DeviceFaultExitsForRestartWithoutWritingAnotherCheckpoint) {
  {
    ToyWorkload toy(kSize);
    toy.device_fault = [](std::int64_t step, int, std::int64_t) { return step == 6; };
    RunnerOptions o = options(10);
    o.checkpoint_every = 4;
    Runner runner(toy, o);
    const RunResult result = runner.run();
    EXPECT_EQ(result.status, RunStatus::restart);
    EXPECT_EQ(result.exit_code, kRestartExitCode);
    EXPECT_EQ(result.exit_code, 75);
    EXPECT_EQ(result.step, 5);
    EXPECT_NE(result.message.find("checkpoint of step 4"), std::string::npos) << result.message;
    EXPECT_EQ(toy.completions, once_each(1, 5));
    EXPECT_EQ(toy.attempts[6], 1);  // not retried
  }
  EXPECT_EQ(committed(), (std::vector<std::int64_t>{4, 0}));  // state 5 was not written
  const std::vector<json> lines = events();
  const std::vector<json> faults = only(lines, "fault");
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].at("kind"), "device_fault");
  EXPECT_EQ(faults[0].at("step"), 6);
  bool after_fault = false;
  for (const json& line : lines) {
    if (line.at("event") == "fault") after_fault = true;
    if (after_fault) EXPECT_NE(line.at("event"), "checkpoint_written") << line;
  }
  EXPECT_EQ(lines.back().at("status"), "restart");
  EXPECT_EQ(lines.back().at("exit_code"), 75);

  // The restarted job resumes from step 4 and ends as if nothing had happened.
  ToyWorkload restarted(kSize);
  Runner runner(restarted, options(10));
  EXPECT_EQ(runner.run().status, RunStatus::completed);
  EXPECT_EQ(restarted.completions, once_each(5, 10));
  EXPECT_EQ(restarted.values(), toy_expected(kSize, 10));
}

TEST_F(RunnerTest, InjectedOutOfMemoryRetriesAndBacksOff) {
  const FaultPlan plan = FaultPlan::parse("oom@step=3x3");
  CountedCache cache;
  ToyWorkload toy(kSize);
  Runner runner(toy, options(5, &plan));
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(result.micro_batch, kSize / 2);
  // The injected failures happen before the workload is called: it sees one call per step.
  EXPECT_EQ(toy.micro_batches[3], (std::vector<std::int64_t>{kSize / 2}));
  EXPECT_EQ(toy.completions, once_each(1, 5));
  EXPECT_EQ(toy.values(), toy_expected(kSize, 5));
  EXPECT_EQ(cache.releases(), 2);
  std::vector<std::string> policy;
  for (const json& line : events()) {
    if (line.at("event") == "oom_retry" || line.at("event") == "backoff") {
      EXPECT_EQ(line.at("step"), 3);
      policy.push_back(line.at("event").get<std::string>());
    }
  }
  EXPECT_EQ(policy, (std::vector<std::string>{"oom_retry", "backoff", "oom_retry"}));
}

TEST_F(RunnerTest, InjectedNanRollsBackOnce) {
  const FaultPlan plan = FaultPlan::parse("nan@step=4");
  ToyWorkload toy(kSize);
  RunnerOptions o = options(6, &plan);
  o.checkpoint_every = 2;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(toy.values(), toy_expected(kSize, 6));
  std::map<std::int64_t, int> expected = once_each(1, 6);
  expected[3] = 2;
  expected[4] = 2;
  EXPECT_EQ(toy.completions, expected);
  const std::vector<json> anomalies = only(events(), "anomaly");
  ASSERT_EQ(anomalies.size(), 1u);
  EXPECT_EQ(anomalies[0].at("step"), 4);
  ASSERT_EQ(only(events(), "rollback").size(), 1u);
  EXPECT_EQ(only(events(), "rollback")[0].at("step"), 2);
}

TEST_F(RunnerTest, InjectedDeviceFaultFiresOnlyInTheFirstAttemptOfAJob) {
  const FaultPlan plan = FaultPlan::parse("device@step=3");
  {
    ScopedEnv first_attempt("TENAX_RESTART_COUNT", std::nullopt);
    ToyWorkload toy(kSize);
    RunnerOptions o = options(5, &plan);
    o.checkpoint_every = 2;
    Runner runner(toy, o);
    const RunResult result = runner.run();
    EXPECT_EQ(result.status, RunStatus::restart);
    EXPECT_EQ(result.exit_code, 75);
    EXPECT_EQ(result.step, 2);
    EXPECT_EQ(toy.completions, once_each(1, 2));
    const std::vector<json> faults = only(events(), "fault");
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0].at("kind"), "device_fault");
    EXPECT_EQ(faults[0].at("step"), 3);
  }
  {
    ScopedEnv zero("TENAX_RESTART_COUNT", "0");
    ToyWorkload toy(kSize);
    RunnerOptions o = options(5, &plan);
    o.run_dir = dir_ / "zero";
    Runner runner(toy, o);
    EXPECT_EQ(runner.run().status, RunStatus::restart);
  }
  ScopedEnv restarted("TENAX_RESTART_COUNT", "1");
  ToyWorkload toy(kSize);
  Runner runner(toy, options(5, &plan));
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(toy.completions, once_each(3, 5));  // resumed from the checkpoint of step 2
  EXPECT_EQ(toy.values(), toy_expected(kSize, 5));
}

TEST_F(RunnerTest, SigtermFinishesTheStepCheckpointsItAndRestoresTheHandler) {
  struct sigaction mine {};
  mine.sa_handler = count_signal;
  sigemptyset(&mine.sa_mask);
  struct sigaction original_term {};
  struct sigaction original_int {};
  ASSERT_EQ(sigaction(SIGTERM, &mine, &original_term), 0);
  ASSERT_EQ(sigaction(SIGINT, &mine, &original_int), 0);
  test_handler_calls = 0;
  {
    ToyWorkload toy(kSize);
    toy.sigterm = [](std::int64_t step, int attempt, std::int64_t) {
      return step == 4 && attempt == 0;
    };
    RunnerOptions o = options(10);
    o.checkpoint_every = 0;
    Runner runner(toy, o);
    const RunResult result = runner.run();
    EXPECT_EQ(result.status, RunStatus::interrupted);
    EXPECT_EQ(result.exit_code, 75);
    EXPECT_EQ(result.step, 4);
    EXPECT_NE(result.message.find("signal " + std::to_string(SIGTERM)), std::string::npos)
        << result.message;
    EXPECT_EQ(toy.completions, once_each(1, 4));  // step 4 finished, step 5 never started
    EXPECT_EQ(toy.values(), toy_expected(kSize, 4));
  }
  EXPECT_EQ(test_handler_calls, 0);  // the runner's handler took the signal
  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, count_signal);
  ASSERT_EQ(sigaction(SIGINT, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, count_signal);
  std::raise(SIGTERM);  // reaches the restored handler
  EXPECT_EQ(test_handler_calls, 1);

  EXPECT_EQ(committed(), (std::vector<std::int64_t>{4, 0}));
  expect_newest_checkpoint(4, kSize);
  const std::vector<json> lines = events();
  EXPECT_EQ(lines.back().at("status"), "interrupted");
  EXPECT_EQ(lines.back().at("exit_code"), 75);

  // Running again resumes at step 4 (no handler of ours is needed: no signal comes).
  ToyWorkload resumed(kSize);
  Runner runner(resumed, options(10));
  EXPECT_EQ(runner.run().status, RunStatus::completed);
  EXPECT_EQ(resumed.completions, once_each(5, 10));
  EXPECT_EQ(resumed.values(), toy_expected(kSize, 10));

  sigaction(SIGTERM, &original_term, nullptr);
  sigaction(SIGINT, &original_int, nullptr);
}

TEST_F(RunnerTest, SigtermAtACheckpointedStepDoesNotRewriteIt) {
  struct sigaction mine {};
  mine.sa_handler = count_signal;
  sigemptyset(&mine.sa_mask);
  struct sigaction original {};
  ASSERT_EQ(sigaction(SIGTERM, &mine, &original), 0);
  ToyWorkload toy(kSize);
  toy.sigterm = [](std::int64_t step, int, std::int64_t) { return step == 4; };
  RunnerOptions o = options(10);
  o.checkpoint_every = 2;
  o.keep_last = 1;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  sigaction(SIGTERM, &original, nullptr);
  EXPECT_EQ(result.status, RunStatus::interrupted);
  EXPECT_EQ(result.step, 4);
  int writes_of_four = 0;
  for (const json& line : only(events(), "checkpoint_written")) {
    writes_of_four += line.at("step") == 4 ? 1 : 0;
  }
  EXPECT_EQ(writes_of_four, 1);
  EXPECT_EQ(committed(), (std::vector<std::int64_t>{4}));
  expect_newest_checkpoint(4, kSize);
}

TEST_F(RunnerTest, FailedCheckpointOfTheLastStepIsWrittenAtTheEnd) {
  // Checkpoints: #1 step 0, #2 step 2, #3 step 4 fails as on a full disk.
  const FaultPlan plan = FaultPlan::parse("enospc@checkpoint=3");
  ToyWorkload toy(kSize);
  RunnerOptions o = options(4, &plan);
  o.checkpoint_every = 2;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  const std::vector<json> failed = only(events(), "checkpoint_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].at("step"), 4);
  EXPECT_EQ(committed().front(), 4);
  expect_newest_checkpoint(4, kSize);
}

TEST_F(RunnerTest, FailedBackgroundCheckpointAtTheEndIsWrittenAgain) {
  // Checkpoints: #1 step 0 (waited for), #2 step 5 and #3 step 10 in the background; #3 fails as
  // on a full disk after the loop has ended, so the run must write step 10 again itself.
  const FaultPlan plan = FaultPlan::parse("enospc@checkpoint=3");
  ToyWorkload toy(kSize);
  RunnerOptions o = options(10, &plan);
  o.checkpoint_every = 5;
  o.async_checkpoints = true;
  Runner runner(toy, o);
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  const std::vector<json> failed = only(events(), "checkpoint_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].at("step"), 10);
  EXPECT_EQ(committed().front(), 10);
  expect_newest_checkpoint(10, kSize);
}

void expect_usage_error_naming(Workload& workload, const RunnerOptions& options,
                               const std::string& name) {
  try {
    Runner runner(workload, options);
    ADD_FAILURE() << "options with a bad " << name << " were accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.fault_class(), FaultClass::usage);
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

TEST_F(RunnerTest, TelemetryLinesCarryThePoolAndHostFiguresAtTheStartEveryIntervalAndEveryEvent) {
  {
    ToyWorkload toy(kSize);
    toy.oom = [](std::int64_t step, int attempt, std::int64_t) { return step == 3 && attempt < 1; };
    RunnerOptions o = options(6);
    o.telemetry_seconds = 1e-9;  // due after every step
    Runner runner(toy, o);
    ASSERT_EQ(runner.run().status, RunStatus::completed);
  }
  const std::vector<json> lines = events();
  const std::vector<json> samples = only(lines, "telemetry");
  std::vector<std::string> triggers;
  for (const json& t : samples) {
    triggers.push_back(t.at("trigger"));
    EXPECT_EQ(t.at("device"), "cpu");
    EXPECT_GT(t.at("host_rss").get<std::int64_t>(), 0) << t;
    EXPECT_GE(t.at("pool_reserved").get<std::int64_t>(),
              t.at("pool_allocated").get<std::int64_t>());
    EXPECT_GE(t.at("pool_peak").get<std::int64_t>(), t.at("pool_allocated").get<std::int64_t>());
    EXPECT_FALSE(t.contains("gpu_temperature")) << "no NVML for a host device";
  }
  EXPECT_EQ(triggers,
            (std::vector<std::string>{"started", "interval", "interval", "oom_retry", "interval",
                                      "interval", "interval", "interval", "exit"}));
  // The toy's state lives in the pool; an interval line knows the step and its rate.
  EXPECT_GT(samples[1].at("pool_allocated").get<std::int64_t>(), 0) << samples[1];
  EXPECT_EQ(samples[1].at("step"), 1);
  EXPECT_GT(samples[1].at("steps_per_second").get<double>(), 0);
  EXPECT_GT(samples[1].at("step_seconds").get<double>(), 0);
  EXPECT_EQ(samples.back().at("step"), 6);
  // The exit's sample comes just before the exit line.
  EXPECT_EQ(lines[lines.size() - 2].at("event"), "telemetry");

  // The default interval (10 s) on a run of milliseconds: the start, the end, nothing between.
  fs::remove_all(dir_);
  {
    ToyWorkload toy(kSize);
    Runner runner(toy, options(6));
    ASSERT_EQ(runner.run().status, RunStatus::completed);
  }
  triggers.clear();
  for (const json& t : only(events(), "telemetry")) triggers.push_back(t.at("trigger"));
  EXPECT_EQ(triggers, (std::vector<std::string>{"started", "exit"}));

  // 0 turns it off.
  fs::remove_all(dir_);
  {
    ToyWorkload toy(kSize);
    RunnerOptions o = options(6);
    o.telemetry_seconds = 0;
    Runner runner(toy, o);
    ASSERT_EQ(runner.run().status, RunStatus::completed);
  }
  EXPECT_TRUE(only(events(), "telemetry").empty());
}

TEST_F(RunnerTest, InconsistentOptionsAreUsageErrorsNamingTheOption) {
  ToyWorkload toy(kSize);
  RunnerOptions o = options(-1);
  expect_usage_error_naming(toy, o, "total_steps");
  o = options(5);
  o.run_dir.clear();
  expect_usage_error_naming(toy, o, "run_dir");
  o = options(5);
  o.min_micro_batch = 0;
  expect_usage_error_naming(toy, o, "min_micro_batch");
  o = options(5);
  o.regrow_micro_batch_after = -1;
  expect_usage_error_naming(toy, o, "regrow_micro_batch_after");
  o = options(5);
  o.checkpoint_every = -2;
  expect_usage_error_naming(toy, o, "checkpoint_every");
  o = options(5);
  o.checkpoint_seconds = -1;
  expect_usage_error_naming(toy, o, "checkpoint_seconds");
  o = options(5);
  o.max_anomaly_retries = -1;
  expect_usage_error_naming(toy, o, "max_anomaly_retries");
  for (double bad : {-1.0, std::nan(""), HUGE_VAL, 1e300}) {
    o = options(5);
    o.telemetry_seconds = bad;
    expect_usage_error_naming(toy, o, "RunnerOptions::telemetry_seconds");
  }
  EXPECT_THROW((void)Runner(toy, options(5), nullptr), UsageError);
  EXPECT_EQ(toy.init_calls, 0);
  EXPECT_FALSE(fs::exists(dir_));  // nothing was created
}

}  // namespace
}  // namespace tenax::runtime
