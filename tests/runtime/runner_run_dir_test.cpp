// The Runner and its run directory, in process: the directory is locked for the whole run (a
// run on a directory held by someone else throws before anything is written, and the lock is
// free again when run() returns), and a resume checks the stored configuration: a refused
// change throws before the state is loaded and leaves the checkpoints alone, a free change is
// logged as config_changed once (a rollback does not check again), and an --allow-config-change
// that the configuration does not accept is refused by the constructor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "runtime/toy_workload.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/run_config.hpp"
#include "tenax/io/run_directory_lock.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/runner.hpp"

namespace tenax::runtime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::toy_expected;
using test::ToyWorkload;

constexpr std::int64_t kSize = 8;

class RunnerRunDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tenax-runner-dir-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Options of a toy run of `steps` steps whose configuration records its size and steps.
  [[nodiscard]] RunnerOptions options(std::int64_t steps, std::int64_t size = kSize) const {
    RunnerOptions o;
    o.run_dir = dir_;
    o.total_steps = steps;
    o.progress = ProgressMode::quiet;
    o.faults = &no_faults_;
    o.program = "toy";
    o.config = io::ConfigWriter("toy").set("size", size).set("steps", steps).text();
    o.config_policy.free_keys = {"steps"};
    return o;
  }
  // Runs a 4-step job of the toy on 2 threaded ranks (the toy of each set up by `prepare`) and
  // returns what each rank ended with: "ran", or "<fault class>: <cause>". Fails the test when a
  // rank waited for the communicator's 30 s timeout instead of learning of its peer's error.
  std::vector<std::string> run_two_ranks(const std::function<void(int, ToyWorkload&)>& prepare) {
    CommOptions comm_options;
    comm_options.timeout_seconds = 30;
    auto comms = make_thread_communicators(2, comm_options);
    std::vector<std::string> errors(2);
    const auto started = std::chrono::steady_clock::now();
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.emplace_back([&, r] {
        ToyWorkload toy(kSize);
        prepare(r, toy);
        try {
          Runner runner(toy, options(4), comms[static_cast<std::size_t>(r)]);
          (void)runner.run();
          errors[static_cast<std::size_t>(r)] = "ran";
        } catch (const Error& e) {
          errors[static_cast<std::size_t>(r)] =
              std::string(to_string(e.fault_class())) + ": " + e.cause();
        }
      });
    }
    for (std::thread& t : ranks) t.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_LT(seconds, 10.0) << "a rank waited for the communicator's timeout";
    return errors;
  }

  [[nodiscard]] std::vector<json> events(std::string_view event) const {
    std::ifstream in(dir_ / "events.jsonl");
    std::vector<json> lines;
    for (std::string line; std::getline(in, line);) {
      json parsed = json::parse(line);
      if (parsed.at("event") == event) lines.push_back(std::move(parsed));
    }
    return lines;
  }

  [[nodiscard]] std::string bytes_of_checkpoints() const {
    std::string all;
    for (const auto& entry : fs::recursive_directory_iterator(dir_ / "checkpoints")) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      all += entry.path().string() + ":" + std::string(std::istreambuf_iterator<char>(in), {});
    }
    return all;
  }

  fs::path dir_;
  FaultPlan no_faults_;
};

TEST_F(RunnerRunDirTest, TheRunHoldsTheLockAndADirectoryInUseIsRefusedBeforeAnythingIsWritten) {
  {
    const io::RunDirectoryLock other = io::RunDirectoryLock::acquire(dir_, 0, "other-job");
    ToyWorkload toy(kSize);
    Runner runner(toy, options(4));
    try {
      (void)runner.run();
      ADD_FAILURE() << "ran in a directory in use";
    } catch (const UsageError& e) {
      EXPECT_NE(e.cause().find("is in use by other-job (pid " + std::to_string(::getpid())),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(toy.init_calls, 0);
    EXPECT_FALSE(fs::exists(dir_ / "events.jsonl"));
    EXPECT_FALSE(fs::exists(dir_ / "checkpoints"));
  }
  // Free again: the run takes the lock under its program's name, for as long as it runs.
  ToyWorkload toy(kSize);
  std::vector<std::string> holders;
  toy.problem = [&](std::int64_t) -> std::optional<std::string> {
    std::ifstream in(io::RunDirectoryLock::lock_file(dir_, 0));
    holders.push_back(
        io::RunDirectoryLock::parse_holder(std::string(std::istreambuf_iterator<char>(in), {}))
            .program);
    return std::nullopt;
  };
  Runner runner(toy, options(4));
  EXPECT_EQ(runner.run().status, RunStatus::completed);
  ASSERT_GE(holders.size(), 4u);  // after each step, and before the final checkpoint
  EXPECT_EQ(holders, std::vector<std::string>(holders.size(), "toy"));
  EXPECT_TRUE(io::RunDirectoryLock::acquire(dir_, 0, "after").held()) << "released at the end";
}

// A 2-rank job on a directory another job holds (its rank 0): rank 0 is refused, and rank 1,
// whose own lock was free, waited out the communicator's timeout and wrote events-rank-1.jsonl
// into the other job's directory. Now every rank is refused at once and writes nothing there.
TEST_F(RunnerRunDirTest, ARefusalOnOneRankReachesEveryRankAtOnceAndNothingIsWritten) {
  const io::RunDirectoryLock other = io::RunDirectoryLock::acquire(dir_, 0, "other-job");
  const std::vector<std::string> errors = run_two_ranks([](int, ToyWorkload&) {});
  EXPECT_NE(errors[0].find("usage: run directory " + dir_.string() + " is in use by other-job"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("usage: run directory " + dir_.string() + " cannot be locked by rank 0"),
            std::string::npos)
      << errors[1];
  EXPECT_FALSE(fs::exists(dir_ / "events.jsonl"));
  EXPECT_FALSE(fs::exists(dir_ / "events-rank-1.jsonl"));
  EXPECT_FALSE(fs::exists(dir_ / "checkpoints"));
}

// A NaN in one rank's initial state stops every rank at once (the ranks agree on it), and no
// checkpoint is written.
TEST_F(RunnerRunDirTest, ANonFiniteInitialStateOnOneRankStopsEveryRankAtOnce) {
  const std::vector<std::string> errors =
      run_two_ranks([](int rank, ToyWorkload& toy) { toy.nan_at_init = rank == 1; });
  EXPECT_NE(errors[0].find("anomaly: the initial state (Workload::init) holds non-finite values "
                           "on rank 1"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("anomaly: the initial state (Workload::init) holds 1 non-finite"),
            std::string::npos)
      << errors[1];
  EXPECT_TRUE(io::CheckpointStore(dir_).committed_steps().empty());
}

TEST_F(RunnerRunDirTest, ARefusedConfigurationChangeThrowsBeforeTheStateIsLoaded) {
  {
    ToyWorkload toy(kSize);
    Runner runner(toy, options(4));
    ASSERT_EQ(runner.run().status, RunStatus::completed);
  }
  const std::string before = bytes_of_checkpoints();
  ToyWorkload toy(kSize);
  Runner runner(toy, options(6, /*size=*/9));
  try {
    (void)runner.run();
    ADD_FAILURE() << "resumed with another size";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("size: 8 -> 9; steps: 4 -> 6"), std::string::npos) << e.what();
  }
  EXPECT_EQ(toy.loads, 0);
  EXPECT_EQ(toy.init_calls, 0);
  EXPECT_EQ(bytes_of_checkpoints(), before);
  ASSERT_EQ(events("config_refused").size(), 1u);
  EXPECT_EQ(events("config_refused")[0].at("step"), 4);
}

TEST_F(RunnerRunDirTest, AFreeChangeIsLoggedOnceAndARollbackDoesNotCheckAgain) {
  {
    ToyWorkload toy(kSize);
    Runner runner(toy, options(4));
    ASSERT_EQ(runner.run().status, RunStatus::completed);
  }
  ToyWorkload toy(kSize);
  toy.nan = [](std::int64_t step, int attempt, std::int64_t) { return step == 6 && attempt == 0; };
  Runner runner(toy, options(8));
  const RunResult result = runner.run();
  EXPECT_EQ(result.status, RunStatus::completed);
  EXPECT_EQ(toy.values(), toy_expected(kSize, 8));
  EXPECT_EQ(events("rollback").size(), 1u);
  const std::vector<json> changed = events("config_changed");
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].at("key"), "steps");
  EXPECT_EQ(changed[0].at("old"), "4");
  EXPECT_EQ(changed[0].at("new"), "8");
  EXPECT_EQ(changed[0].at("allowed"), false);
}

TEST_F(RunnerRunDirTest, AnAllowedKeyTheConfigurationDoesNotAcceptIsRefusedAtOnce) {
  ToyWorkload toy(kSize);
  RunnerOptions o = options(4);
  o.config_policy.allowed = {"size"};
  EXPECT_THROW((void)Runner(toy, o), UsageError);
  o.config_policy.allowed = {"missing"};
  EXPECT_THROW((void)Runner(toy, o), UsageError);
  o.config_policy.safe_keys = {"size"};
  o.config_policy.allowed = {"size"};
  EXPECT_NO_THROW((void)Runner(toy, o));
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(RunnerRunDirTest, WithoutAConfigurationNothingIsChecked) {
  {
    ToyWorkload toy(kSize);
    RunnerOptions o = options(4);
    o.config.clear();
    Runner runner(toy, o);
    ASSERT_EQ(runner.run().status, RunStatus::completed);
  }
  ToyWorkload toy(kSize);
  RunnerOptions o = options(6);
  o.config.clear();
  Runner runner(toy, o);
  EXPECT_EQ(runner.run().status, RunStatus::completed);
  EXPECT_EQ(toy.loads, 1);
  EXPECT_TRUE(events("config_changed").empty());
}

TEST_F(RunnerRunDirTest, WhenEveryCheckpointIsDamagedTheRunStopsAndOverwritesNothing) {
  {
    ToyWorkload toy(kSize);
    RunnerOptions o = options(6);
    o.checkpoint_every = 2;
    ASSERT_EQ(Runner(toy, o).run().status, RunStatus::completed);
  }
  // Every committed checkpoint's rank file cut short (a disk that lost them).
  for (const auto& entry : fs::directory_iterator(dir_ / "checkpoints")) {
    fs::resize_file(entry.path() / "rank-0.h5", 100);
  }
  const std::string before = bytes_of_checkpoints();
  ToyWorkload toy(kSize);
  RunnerOptions o = options(8);
  o.checkpoint_every = 2;
  try {
    (void)Runner(toy, o).run();
    ADD_FAILURE() << "the run started afresh";
  } catch (const IoError& e) {
    EXPECT_NE(e.cause().find("every committed checkpoint in " + dir_.string() + " is damaged"),
              std::string::npos)
        << e.cause();
    EXPECT_NE(e.fix().find("tenax ckpt verify"), std::string::npos) << e.fix();
  }
  EXPECT_EQ(toy.init_calls, 0) << "the initial state was built";
  EXPECT_EQ(bytes_of_checkpoints(), before) << "the damaged checkpoints were changed";
}

}  // namespace
}  // namespace tenax::runtime
