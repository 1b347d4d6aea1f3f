// The Runner with several ranks (threads of this process, make_thread_communicators), a workload
// that all-reduces in every step, and a fault on one rank only: every policy must end with the
// bits of the unfaulted run (or the documented stop), the same decision on every rank naming
// the rank that caused it, and no step applied twice (the all-reduce spreads any rank's extra
// step into every rank's state, and commits are counted).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
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

constexpr std::int64_t kUnits = 4;  // elements per rank

// x <- 0.5 x + 0.01 * (sum of x over all ranks) + 0.001 * step, staged until commit_step().
class ReducingToy final : public Workload {
 public:
  using Hook = std::function<bool(std::int64_t step, int attempt)>;
  ReducingToy(Communicator& comm) : comm_(comm) {}

  Hook oom, anomaly, overflow, nan, device_fault, early_device_fault, raise_signal;
  int signal_number = SIGUSR1;

  void init() override {
    x_ = Tensor::empty({kUnits}, DType::f64);
    for (std::int64_t i = 0; i < kUnits; ++i) {
      x_.data_as<double>()[i] = 1.0 + 0.25 * static_cast<double>(i + kUnits * comm_.rank());
    }
    step_ = 0;
  }
  [[nodiscard]] std::int64_t work_units() const override { return kUnits; }

  void step(std::int64_t step, std::int64_t micro_batch) override {
    const std::int64_t taking = step + 1;
    const int attempt = attempts[taking]++;
    if (step != step_) throw UsageError("asked for step " + std::to_string(step), "bug");
    if (early_device_fault && early_device_fault(taking, attempt)) {
      throw DeviceFaultError("toy device fault before the step's collective",
                             "none: the test asked for it");
    }
    Tensor sum = Tensor::empty({1}, DType::f64);
    double local = 0;
    for (std::int64_t i = 0; i < kUnits; ++i) local += x_.data_as<double>()[i];
    sum.data_as<double>()[0] = local;
    comm_.all_reduce(sum, ReduceOp::sum);
    // The faults below come after the collective, which every rank reached.
    if (device_fault && device_fault(taking, attempt)) {
      throw DeviceFaultError("toy device fault", "none: the test asked for it");
    }
    if (anomaly && anomaly(taking, attempt)) {
      throw AnomalyError("toy non-finite loss", "none: the test asked for it");
    }
    if (overflow && overflow(taking, attempt)) {
      throw OverflowError("toy overflow at the minimum loss scale", "none: the test asked for it");
    }
    if (raise_signal && raise_signal(taking, attempt)) std::raise(signal_number);
    if (oom && oom(taking, attempt)) {
      throw OutOfMemoryError("toy out of memory", "none: the test asked for it");
    }
    micro_batches[taking].push_back(micro_batch);
    next_ = Tensor::empty({kUnits}, DType::f64);
    for (std::int64_t i = 0; i < kUnits; ++i) {
      next_.data_as<double>()[i] = 0.5 * x_.data_as<double>()[i] + 0.01 * sum.data_as<double>()[0] +
                                   0.001 * static_cast<double>(taking);
    }
    staged_attempt_ = attempt;
  }
  void commit_step() override {
    ASSERT_TRUE(next_.defined()) << "commit without a staged step";
    x_ = next_;
    next_ = Tensor{};
    ++step_;
    ++commits[step_];
    if (nan && nan(step_, staged_attempt_))
      x_.data_as<double>()[0] = std::numeric_limits<double>::quiet_NaN();
  }
  void discard_step() override {
    if (next_.defined()) ++discards[step_ + 1];
    next_ = Tensor{};
  }
  [[nodiscard]] StateDict save_state() const override {
    StateDict s;
    s.set("x", x_);
    s.set("step", step_);
    return s;
  }
  void load_state(const StateDict& s) override {
    x_ = s.tensor("x").clone();
    step_ = s.integer("step");
    next_ = Tensor{};
  }
  [[nodiscard]] std::vector<double> values() const {
    if (!x_.defined()) return {};
    return {x_.data_as<double>(), x_.data_as<double>() + kUnits};
  }

  std::map<std::int64_t, int> attempts, commits, discards;
  std::map<std::int64_t, std::vector<std::int64_t>> micro_batches;

 private:
  Communicator& comm_;
  Tensor x_, next_;
  std::int64_t step_ = 0;
  int staged_attempt_ = 0;
};

struct RankRun {
  RunResult result;
  std::vector<double> values;
  std::map<std::int64_t, int> commits, discards;
  std::map<std::int64_t, std::vector<std::int64_t>> micro_batches;
  std::string error;  // what run() threw, if anything
};

class RunnerRanksTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->name());
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    dir_ = fs::temp_directory_path() / ("tenax-ranks-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `ranks` ranks to `steps` in dir_ with `setup(rank, toy, options)` applied per rank.
  std::vector<RankRun> run(int ranks, std::int64_t steps,
                           const std::function<void(int, ReducingToy&, RunnerOptions&)>& setup,
                           double timeout = 20, const fs::path& dir = {}) {
    CommOptions comm_options;
    comm_options.timeout_seconds = timeout;
    auto comms = make_thread_communicators(ranks, comm_options);
    std::vector<RankRun> runs(static_cast<std::size_t>(ranks));
    std::vector<FaultPlan> plans(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        ReducingToy toy(*comms[r]);
        RunnerOptions o;
        o.run_dir = dir.empty() ? dir_ : dir;
        o.total_steps = steps;
        o.checkpoint_every = 4;
        o.progress = ProgressMode::quiet;
        o.faults = &plans[static_cast<std::size_t>(r)];
        if (setup) setup(r, toy, o);
        RankRun& out = runs[static_cast<std::size_t>(r)];
        try {
          Runner runner(toy, o, comms[r]);
          out.result = runner.run();
        } catch (const std::exception& e) {
          out.error = e.what();
        }
        out.values = toy.values();
        out.commits = toy.commits;
        out.discards = toy.discards;
        out.micro_batches = toy.micro_batches;
      });
    }
    for (auto& t : threads) t.join();
    return runs;
  }

  // The unfaulted run's values, in a directory of its own.
  std::vector<std::vector<double>> reference(int ranks, std::int64_t steps) {
    const fs::path dir = dir_.string() + "-reference";
    fs::remove_all(dir);
    auto runs = run(ranks, steps, nullptr, 20, dir);
    fs::remove_all(dir);
    std::vector<std::vector<double>> values;
    for (const RankRun& r : runs) {
      EXPECT_EQ(r.error, "");
      EXPECT_EQ(r.result.status, RunStatus::completed);
      values.push_back(r.values);
    }
    return values;
  }

  static void expect_each_step_committed_once(const RankRun& run, std::int64_t steps) {
    for (std::int64_t s = 1; s <= steps; ++s) {
      EXPECT_EQ(run.commits.count(s) ? run.commits.at(s) : 0, 1) << "step " << s;
    }
  }

  std::vector<std::string> lines_of(const fs::path& file) const {
    std::ifstream in(file);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  fs::path dir_;
};

TEST_P(RunnerRanksTest, UnfaultedRanksAgreeAndCommitEachStepOnce) {
  const int ranks = GetParam();
  const auto runs = run(ranks, 10, nullptr);
  for (const RankRun& r : runs) {
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.result.status, RunStatus::completed);
    EXPECT_EQ(r.result.step, 10);
    expect_each_step_committed_once(r, 10);
  }
  // One commit record listing every rank's file.
  io::CheckpointStore store(dir_);
  ASSERT_FALSE(store.committed_steps().empty());
  EXPECT_EQ(store.committed_steps().front(), 10);
  EXPECT_EQ(store.committed_world_size(10), ranks);
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(store.verify(10, r), std::nullopt);
  EXPECT_TRUE(fs::exists(dir_ / "events.jsonl"));
  if (ranks > 1) EXPECT_TRUE(fs::exists(dir_ / "events-rank-1.jsonl"));
}

TEST_P(RunnerRanksTest, OutOfMemoryOnOneRankRetriesAndBacksOffTogether) {
  const int ranks = GetParam();
  const auto expected = reference(ranks, 8);
  const int faulty = ranks - 1;
  const auto runs = run(ranks, 8, [&](int r, ReducingToy& toy, RunnerOptions&) {
    if (r == faulty) toy.oom = [](std::int64_t s, int attempt) { return s == 3 && attempt < 2; };
  });
  for (int r = 0; r < ranks; ++r) {
    const RankRun& run = runs[static_cast<std::size_t>(r)];
    ASSERT_EQ(run.error, "");
    EXPECT_EQ(run.result.status, RunStatus::completed);
    EXPECT_EQ(run.values, expected[static_cast<std::size_t>(r)]) << "rank " << r;
    expect_each_step_committed_once(run, 8);
    // Only the rank that ran out of memory halved its micro-batch.
    EXPECT_EQ(run.micro_batches.at(3).back(), r == faulty ? kUnits / 2 : kUnits) << "rank " << r;
    if (r != faulty) EXPECT_EQ(run.discards.at(3), 2) << "rank " << r;  // two retries
  }
}

TEST_P(RunnerRanksTest, AnAnomalyOnOneRankRollsEveryRankBackToTheSameCheckpoint) {
  const int ranks = GetParam();
  const auto expected = reference(ranks, 10);
  const auto runs = run(ranks, 10, [&](int r, ReducingToy& toy, RunnerOptions&) {
    if (r == 1 % ranks)
      toy.nan = [](std::int64_t s, int attempt) { return s == 6 && attempt == 0; };
  });
  for (int r = 0; r < ranks; ++r) {
    const RankRun& run = runs[static_cast<std::size_t>(r)];
    ASSERT_EQ(run.error, "");
    EXPECT_EQ(run.result.status, RunStatus::completed);
    EXPECT_EQ(run.values, expected[static_cast<std::size_t>(r)]) << "rank " << r;
    // Steps 5 and 6 were redone after the rollback to step 4, the others taken once.
    EXPECT_EQ(run.commits.at(5), 2);
    EXPECT_EQ(run.commits.at(6), 2);
    EXPECT_EQ(run.commits.at(7), 1);
  }
}

TEST_P(RunnerRanksTest, AnAnomalyThrownByOneRanksStepIsRolledBackEverywhere) {
  const int ranks = GetParam();
  const auto expected = reference(ranks, 8);
  const auto runs = run(ranks, 8, [&](int r, ReducingToy& toy, RunnerOptions&) {
    if (r == 0) toy.anomaly = [](std::int64_t s, int attempt) { return s == 6 && attempt == 0; };
  });
  for (int r = 0; r < ranks; ++r) {
    const RankRun& run = runs[static_cast<std::size_t>(r)];
    ASSERT_EQ(run.error, "");
    EXPECT_EQ(run.values, expected[static_cast<std::size_t>(r)]) << "rank " << r;
    EXPECT_EQ(run.commits.at(5), 2) << "rank " << r;  // rolled back to 4, step 5 redone
  }
}

TEST_P(RunnerRanksTest, ADeviceFaultOnOneRankMakesEveryRankExitForRestartNamingIt) {
  const int ranks = GetParam();
  const int faulty = ranks / 2;
  const auto runs = run(ranks, 8, [&](int r, ReducingToy& toy, RunnerOptions&) {
    if (r == faulty) toy.device_fault = [](std::int64_t s, int) { return s == 6; };
  });
  for (int r = 0; r < ranks; ++r) {
    const RankRun& run = runs[static_cast<std::size_t>(r)];
    ASSERT_EQ(run.error, "");
    EXPECT_EQ(run.result.status, RunStatus::restart);
    EXPECT_EQ(run.result.exit_code, kRestartExitCode);
    EXPECT_EQ(run.result.step, 5);
    EXPECT_FALSE(run.commits.count(6)) << "rank " << r << " applied the failed step";
    if (ranks > 1 && r != faulty) {
      EXPECT_NE(run.result.message.find("rank " + std::to_string(faulty)), std::string::npos)
          << run.result.message;
    }
  }
  // The restarted job resumes from step 4 on every rank and ends with the unfaulted bits.
  const auto expected = reference(ranks, 8);
  const auto resumed = run(ranks, 8, nullptr);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(resumed[static_cast<std::size_t>(r)].values, expected[static_cast<std::size_t>(r)]);
  }
}

TEST_P(RunnerRanksTest, ARankFailingBeforeTheStepsCollectiveIsARestartEverywhereNotAHang) {
  const int ranks = GetParam();
  const auto start = std::chrono::steady_clock::now();
  const auto runs = run(
      ranks, 8,
      [&](int r, ReducingToy& toy, RunnerOptions&) {
        if (r == 0) toy.early_device_fault = [](std::int64_t s, int) { return s == 6; };
      },
      /*timeout=*/2.0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
  for (int r = 0; r < ranks; ++r) {
    const RankRun& run = runs[static_cast<std::size_t>(r)];
    ASSERT_EQ(run.error, "");
    EXPECT_EQ(run.result.status, RunStatus::restart) << "rank " << r;
    EXPECT_EQ(run.result.exit_code, kRestartExitCode);
    EXPECT_FALSE(run.commits.count(6)) << "rank " << r << " applied the failed step";
  }
  const auto expected = reference(ranks, 8);
  const auto resumed = run(ranks, 8, nullptr);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(resumed[static_cast<std::size_t>(r)].values, expected[static_cast<std::size_t>(r)]);
  }
}

TEST_P(RunnerRanksTest, OverflowOnOneRankStopsEveryRankWithTheOverflowNamingIt) {
  const int ranks = GetParam();
  const int faulty = ranks - 1;
  const auto runs = run(ranks, 8, [&](int r, ReducingToy& toy, RunnerOptions&) {
    if (r == faulty) toy.overflow = [](std::int64_t s, int) { return s == 6; };
  });
  for (int r = 0; r < ranks; ++r) {
    const RankRun& run = runs[static_cast<std::size_t>(r)];
    ASSERT_EQ(run.error, "");
    EXPECT_EQ(run.result.status, RunStatus::overflow) << "rank " << r << ": a peer's overflow "
                                                      << "is an overflow, not another stop";
    EXPECT_EQ(run.result.step, 5);
    EXPECT_FALSE(run.commits.count(6));
    if (r != faulty) {
      EXPECT_NE(run.result.message.find("rank " + std::to_string(faulty)), std::string::npos)
          << run.result.message;
    }
  }
  io::CheckpointStore store(dir_);
  EXPECT_EQ(store.committed_steps().front(), 5);  // the last good state, on every rank
}

TEST_P(RunnerRanksTest, AStopSignalOnOneRankCheckpointsOnceAndEveryRankExits75) {
  const int ranks = GetParam();
  for (const int signal_number : {SIGTERM, SIGUSR1, SIGHUP, SIGINT}) {
    fs::remove_all(dir_);
    const auto runs = run(ranks, 12, [&](int r, ReducingToy& toy, RunnerOptions&) {
      if (r == ranks - 1) {
        toy.signal_number = signal_number;
        toy.raise_signal = [](std::int64_t s, int) { return s == 6; };
      }
    });
    std::int64_t stopped_at = -1;
    for (const RankRun& run : runs) {
      ASSERT_EQ(run.error, "");
      EXPECT_EQ(run.result.status, RunStatus::interrupted) << "signal " << signal_number;
      EXPECT_EQ(run.result.exit_code, kRestartExitCode);
      if (stopped_at < 0) stopped_at = run.result.step;
      EXPECT_EQ(run.result.step, stopped_at) << "every rank stops at the same step";
    }
    EXPECT_GE(stopped_at, 6);
    io::CheckpointStore store(dir_);
    EXPECT_EQ(store.committed_steps().front(), stopped_at);
    EXPECT_EQ(store.committed_world_size(stopped_at), ranks);
    const auto expected = reference(ranks, 12);
    const auto resumed = run(ranks, 12, nullptr);
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(resumed[static_cast<std::size_t>(r)].values, expected[static_cast<std::size_t>(r)]);
    }
  }
}

TEST_P(RunnerRanksTest, AFailedCheckpointOnOneRankFailsItOnEveryRankAndKeepsThePrevious) {
  const int ranks = GetParam();
  const int faulty = ranks - 1;
  const auto expected = reference(ranks, 10);
  const FaultPlan plan = FaultPlan::parse("enospc@checkpoint=2:rank=" + std::to_string(faulty));
  const auto runs = run(ranks, 10, [&](int, ReducingToy&, RunnerOptions& o) { o.faults = &plan; });
  for (int r = 0; r < ranks; ++r) {
    const RankRun& run = runs[static_cast<std::size_t>(r)];
    ASSERT_EQ(run.error, "");
    EXPECT_EQ(run.result.status, RunStatus::completed);
    EXPECT_EQ(run.values, expected[static_cast<std::size_t>(r)]);
  }
  // The 2nd checkpoint (step 4) failed on every rank: it was never committed, the one of step 0
  // stayed valid, and the later ones were written.
  io::CheckpointStore store(dir_);
  const auto steps = store.committed_steps();
  EXPECT_EQ(std::count(steps.begin(), steps.end(), 4), 0);
  EXPECT_EQ(steps.front(), 10);
  for (int r = 0; r < ranks; ++r) {
    const auto lines = lines_of(r == 0 ? dir_ / "events.jsonl"
                                       : dir_ / ("events-rank-" + std::to_string(r) + ".jsonl"));
    const auto failed = std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
      return l.find("\"checkpoint_failed\"") != std::string::npos;
    });
    EXPECT_EQ(failed, 1) << "rank " << r;
  }
}

TEST_P(RunnerRanksTest, AHungRankIsNamedByItsPeersWithinTheDeadline) {
  const int ranks = GetParam();
  if (ranks < 2) GTEST_SKIP() << "a hang needs a peer to notice it";
  const FaultPlan plan = FaultPlan::parse("hang@step=5:rank=1");
  const auto start = std::chrono::steady_clock::now();
  const auto runs = run(
      ranks, 10, [&](int, ReducingToy&, RunnerOptions& o) { o.faults = &plan; }, /*timeout=*/1.0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0);
  for (int r = 0; r < ranks; ++r) {
    const RankRun& run = runs[static_cast<std::size_t>(r)];
    ASSERT_EQ(run.error, "") << "rank " << r;
    EXPECT_EQ(run.result.status, RunStatus::restart) << "rank " << r;
    EXPECT_EQ(run.result.exit_code, kRestartExitCode);
    if (r != 1) {
      EXPECT_NE(run.result.message.find("timed out"), std::string::npos) << run.result.message;
      EXPECT_NE(run.result.message.find("rank(s) 1 did not arrive"), std::string::npos)
          << run.result.message;
    }
  }
  // The checkpoint of step 4 is valid on every rank: the restart resumes there.
  io::CheckpointStore store(dir_);
  EXPECT_EQ(store.committed_steps().front(), 4);
}

TEST_P(RunnerRanksTest, AResumeWithAnotherNumberOfRanksIsRefused) {
  const int ranks = GetParam();
  (void)run(ranks, 4, nullptr);
  const int other = ranks == 4 ? 2 : ranks + 1;
  const auto runs = run(other, 8, nullptr);
  for (const RankRun& run : runs) {
    EXPECT_NE(run.error.find("written by " + std::to_string(ranks) + " rank(s)"), std::string::npos)
        << run.error;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, RunnerRanksTest, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

}  // namespace
}  // namespace tenax::runtime
