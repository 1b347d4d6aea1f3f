// The step contract, timed whole: a workload that does all its work in commit_step() (the phase
// after the agreement) gets step times within 20 % of its own wall-clock per step, on one rank
// and on two; two ranks doing equal work in that phase get no slow-rank warning, while a rank
// that really computes three times as long is named. The memory pool refuses an allocation in
// commit_step(), naming the phase, and the Runner checks metric names before the first step.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/runner.hpp"

namespace tenax::runtime {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Work of `seconds` outside the communicator: a sleep, which (unlike a spin) keeps its length
// when the test shares two cores with other tests, so the ranks' compute stays comparable.
void compute_for(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// All of its work after the agreement: step() only stages; commit_step() exchanges a value with
// the other ranks (a halo) and computes for `work_seconds`. It measures its own wall-clock per
// step, from one step() call to the next.
class LateWork final : public Workload {
 public:
  LateWork(Communicator& comm, double work_seconds) : comm_(comm), work_seconds_(work_seconds) {}
  void init() override { x_ = 0; }
  std::int64_t work_units() const override { return 1; }
  void step(std::int64_t, std::int64_t) override {
    const auto now = Clock::now();
    if (started_) seconds_.push_back(std::chrono::duration<double>(now - last_).count());
    started_ = true;
    last_ = now;
    halo_ = Tensor::empty({1}, DType::f64);
  }
  void commit_step() override {
    halo_.data_as<double>()[0] = x_;
    comm_.all_reduce(halo_, ReduceOp::sum);  // the exchange: waits for the slower rank
    compute_for(work_seconds_);
    x_ += 1;
  }
  StateDict save_state() const override {
    StateDict state;
    state.set("x", x_);
    return state;
  }
  void load_state(const StateDict& state) override { x_ = state.real("x"); }
  [[nodiscard]] double median_own_seconds() const {
    std::vector<double> sorted = seconds_;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    return sorted[sorted.size() / 2];
  }

 private:
  Communicator& comm_;
  double work_seconds_;
  double x_ = 0;
  Tensor halo_;
  bool started_ = false;
  Clock::time_point last_;
  std::vector<double> seconds_;
};

class RunnerStepTime : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tenax-step-time-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunnerOptions options() const {
    RunnerOptions o;
    o.run_dir = dir_;
    o.total_steps = 100;
    o.progress = ProgressMode::quiet;
    o.telemetry_seconds = 0.1;  // each sample averages a few dozen steps
    o.faults = &no_faults_;
    return o;
  }
  // The "event" lines of `kind` in a rank's log.
  std::vector<json> events(const std::string& kind, int rank = 0) const {
    std::ifstream in(rank == 0 ? dir_ / "events.jsonl"
                               : dir_ / ("events-rank-" + std::to_string(rank) + ".jsonl"));
    std::vector<json> out;
    for (std::string line; std::getline(in, line);) {
      json parsed = json::parse(line);
      if (parsed["event"] == kind) out.push_back(std::move(parsed));
    }
    return out;
  }
  double median_logged(const std::string& field, int rank = 0) const {
    std::vector<double> values;
    for (const json& step : events("step", rank)) values.push_back(step[field].get<double>());
    std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
    return values[values.size() / 2];
  }
  // Runs LateWork on `ranks` threads, rank r computing work_seconds[r] per step.
  void run_ranks(const std::vector<double>& work_seconds, std::vector<double>& own_seconds) {
    const int ranks = static_cast<int>(work_seconds.size());
    auto comms = make_thread_communicators(ranks);
    own_seconds.assign(work_seconds.size(), 0.0);
    std::vector<std::thread> threads;
    std::vector<int> codes(work_seconds.size(), -1);
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        LateWork work(*comms[static_cast<std::size_t>(r)],
                      work_seconds[static_cast<std::size_t>(r)]);
        codes[static_cast<std::size_t>(r)] =
            Runner(work, options(), comms[static_cast<std::size_t>(r)]).run().exit_code;
        own_seconds[static_cast<std::size_t>(r)] = work.median_own_seconds();
      });
    }
    for (std::thread& t : threads) t.join();
    for (const int code : codes) ASSERT_EQ(code, 0);
  }

  fs::path dir_;
  FaultPlan no_faults_;
};

TEST_F(RunnerStepTime, WorkAfterTheAgreementIsInTheStepTime) {
  SingleRankCommunicator comm;
  LateWork work(comm, 0.003);
  ASSERT_EQ(Runner(work, options()).run().exit_code, 0);
  const double logged = median_logged("seconds");
  const double own = work.median_own_seconds();
  EXPECT_GE(own, 0.003);
  EXPECT_NEAR(logged, own, 0.2 * own) << "the Runner logged " << logged << " s per step, the "
                                      << "workload measured " << own << " s";
  EXPECT_NEAR(median_logged("compute_seconds"), own, 0.2 * own);
}

TEST_F(RunnerStepTime, TwoRanksWithEqualWorkAfterTheAgreementGetNoSlowRankWarning) {
  std::vector<double> own;
  run_ranks({0.003, 0.003}, own);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_NEAR(median_logged("seconds", rank), own[static_cast<std::size_t>(rank)],
                0.2 * own[static_cast<std::size_t>(rank)])
        << "rank " << rank;
    EXPECT_TRUE(events("warning", rank).empty()) << events("warning", rank).front().dump();
  }
}

TEST_F(RunnerStepTime, ARankThatComputesThreeTimesAsLongIsNamedButNotTheOneWaitingForIt) {
  std::vector<double> own;
  run_ranks({0.002, 0.006}, own);
  // Both ranks' steps take as long (rank 0 waits in the exchange), but their compute differs.
  EXPECT_NEAR(median_logged("seconds", 0), median_logged("seconds", 1),
              0.2 * median_logged("seconds", 1));
  EXPECT_LT(median_logged("compute_seconds", 0), 0.5 * median_logged("compute_seconds", 1));
  const std::vector<json> warnings = events("warning", 0);
  ASSERT_FALSE(warnings.empty());
  EXPECT_EQ(warnings.front()["kind"], "slow_rank");
  EXPECT_NE(warnings.front()["cause"].get<std::string>().find("rank 1 computes"), std::string::npos)
      << warnings.front().dump();
  EXPECT_TRUE(events("warning", 1).empty()) << "rank 1 is the slow one; it names no other";
}

// Allocates in commit_step(), breaking the contract.
class AllocatesInCommit final : public Workload {
 public:
  void init() override { x_ = Tensor::empty({4}, DType::f64); }
  std::int64_t work_units() const override { return 1; }
  void step(std::int64_t, std::int64_t) override {}
  void commit_step() override { x_ = Tensor::empty({1024}, DType::f64); }
  StateDict save_state() const override {
    StateDict state;
    state.set("x", x_);
    return state;
  }
  void load_state(const StateDict& state) override { x_ = state.tensor("x").clone(); }

 private:
  Tensor x_;
};

TEST_F(RunnerStepTime, ThePoolRefusesAnAllocationInCommitStepNamingThePhase) {
  AllocatesInCommit work;
  try {
    (void)Runner(work, options()).run();
    FAIL() << "an allocation in commit_step() was not refused";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("Workload::commit_step() asked the memory pool for 8.00 KiB"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.fix().find("acquire what the step needs in Workload::step()"), std::string::npos)
        << e.what();
  }
  // Outside the phase the pool serves this thread again.
  EXPECT_NO_THROW((void)Tensor::empty({1024}, DType::f64));
}

// Names a metric that breaks the rule.
class BadMetric final : public Workload {
 public:
  void init() override {}
  std::int64_t work_units() const override { return 1; }
  void step(std::int64_t, std::int64_t) override { ++steps_; }
  void commit_step() override {}
  StateDict save_state() const override { return {}; }
  void load_state(const StateDict&) override {}
  std::vector<StepMetric> step_metrics() const override { return {{"Loss Value", 1.0}}; }
  int steps_ = 0;
};

TEST_F(RunnerStepTime, MetricNamesAreCheckedBeforeTheFirstStep) {
  BadMetric work;
  try {
    (void)Runner(work, options()).run();
    FAIL() << "a bad metric name was not refused";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("named a metric 'Loss Value'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(work.steps_, 0) << "refused only after a step had run";
}

}  // namespace
}  // namespace tenax::runtime
