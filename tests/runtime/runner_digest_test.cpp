// The Runner's state digests with several ranks (threads of this process): a bit flipped on one
// rank's replicated state after a step (bitflip@step=S:rank=R) is caught at that step, the rank
// named (by majority with 3 ranks; both suspect with 2), the run rolled back, and it ends with
// the bits of the clean run; a rank that differs again stops the run naming its host; the
// agreed digest is the same for any number of ranks and goes into the step's event and every
// checkpoint; a checkpoint whose state does not match its recorded digest is refused at resume.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "io/forged_checkpoint.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/io/checkpoint_layout.hpp"
#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/runner_entries.hpp"
#include "tenax/io/state_file.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/runner.hpp"

namespace tenax::runtime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::int64_t kUnits = 6;

// A data-parallel toy: every rank holds the same x; a step all-reduces (max) the sum of x, the
// same on every rank, and sets x <- 0.5 x + 0.01 * sum + 0.001 * step.
class ReplicatedToy final : public Workload {
 public:
  explicit ReplicatedToy(Communicator& comm) : comm_(comm) {}
  void init() override {
    x_ = Tensor::empty({kUnits}, DType::f64);
    for (std::int64_t i = 0; i < kUnits; ++i) x_.data_as<double>()[i] = 1.0 + 0.25 * double(i);
    step_ = 0;
  }
  [[nodiscard]] std::int64_t work_units() const override { return kUnits; }
  void step(std::int64_t step, std::int64_t) override {
    Tensor sum = Tensor::empty({1}, DType::f64);
    double local = 0;
    for (std::int64_t i = 0; i < kUnits; ++i) local += x_.data_as<double>()[i];
    sum.data_as<double>()[0] = local;
    comm_.all_reduce(sum, ReduceOp::max);
    next_ = Tensor::empty({kUnits}, DType::f64);
    const double mean = sum.data_as<double>()[0];
    for (std::int64_t i = 0; i < kUnits; ++i) {
      next_.data_as<double>()[i] =
          0.5 * x_.data_as<double>()[i] + 0.01 * mean + 0.001 * double(step + 1);
    }
  }
  void commit_step() override {
    x_ = next_;
    next_ = Tensor{};
    ++step_;
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
  }
  [[nodiscard]] bool replicated_state() const override { return true; }
  [[nodiscard]] std::vector<double> values() const {
    return {x_.data_as<double>(), x_.data_as<double>() + kUnits};
  }

 private:
  Communicator& comm_;
  Tensor x_, next_;
  std::int64_t step_ = 0;
};

struct RankEnd {
  RunResult result;
  std::vector<double> values;
  std::string error;
};

class RunnerDigestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tenax-digest-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<RankEnd> run(int ranks, const fs::path& dir, const std::string& faults,
                           std::int64_t steps = 10, std::int64_t digest_every = 1) {
    CommOptions comm_options;
    comm_options.timeout_seconds = 30;
    auto comms = make_thread_communicators(ranks, comm_options);
    const FaultPlan plan = FaultPlan::parse(faults);
    std::vector<RankEnd> ends(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        ReplicatedToy toy(*comms[static_cast<std::size_t>(r)]);
        RunnerOptions o;
        o.run_dir = dir;
        o.total_steps = steps;
        o.checkpoint_every = 4;
        o.digest_every = digest_every;
        o.progress = ProgressMode::quiet;
        o.telemetry_seconds = 0;
        o.faults = &plan;
        auto& end = ends[static_cast<std::size_t>(r)];
        try {
          Runner runner(toy, o, comms[static_cast<std::size_t>(r)]);
          end.result = runner.run();
          end.values = toy.values();
        } catch (const Error& e) {
          end.error = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    return ends;
  }

  static std::vector<json> events(const fs::path& dir, std::string_view event,
                                  const std::string& file = "events.jsonl") {
    std::ifstream in(dir / file);
    std::vector<json> lines;
    for (std::string line; std::getline(in, line);) {
      json parsed = json::parse(line);
      if (parsed.at("event") == event) lines.push_back(std::move(parsed));
    }
    return lines;
  }

  fs::path dir_;
};

TEST_F(RunnerDigestTest, AFlipOnOneOfThreeRanksIsCaughtAtItsStepNamedAndRolledBack) {
  const std::vector<RankEnd> clean = run(3, dir_ / "clean", "");
  const std::vector<RankEnd> flipped = run(3, dir_ / "flipped", "bitflip@step=6:rank=1");
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankEnd& end = flipped[static_cast<std::size_t>(r)];
    ASSERT_EQ(end.error, "");
    EXPECT_EQ(end.result.status, RunStatus::completed) << end.result.message;
    EXPECT_EQ(end.values, clean[static_cast<std::size_t>(r)].values) << "the clean run's bits";
    EXPECT_EQ(end.result.events.corruptions, 1);
    EXPECT_EQ(end.result.events.rollbacks, 1);
    EXPECT_EQ(end.result.events.steps_recomputed, 2) << "steps 5 and 6 from the checkpoint of 4";
  }
  const std::vector<json> mismatch = events(dir_ / "flipped", "digest_mismatch");
  ASSERT_EQ(mismatch.size(), 1u);
  EXPECT_EQ(mismatch[0].at("step"), 6);
  EXPECT_EQ(mismatch[0].at("suspects"), "1");
  const std::vector<json> rollback = events(dir_ / "flipped", "rollback");
  ASSERT_EQ(rollback.size(), 1u);
  EXPECT_EQ(rollback[0].at("step"), 4);
  // Rank 1's own log holds its flip and its own (differing) digest part.
  const std::vector<json> faults = events(dir_ / "flipped", "fault", "events-rank-1.jsonl");
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].at("kind"), "bitflip");
  const std::vector<json> own = events(dir_ / "flipped", "digest_mismatch", "events-rank-1.jsonl");
  ASSERT_EQ(own.size(), 1u);
  EXPECT_NE(own[0].at("digest"), mismatch[0].at("digest"));
}

TEST_F(RunnerDigestTest, WithTwoRanksBothAreSuspectAndTheRunStillEndsWithTheCleanBits) {
  const std::vector<RankEnd> clean = run(2, dir_ / "clean", "");
  const std::vector<RankEnd> flipped = run(2, dir_ / "flipped", "bitflip@step=3:rank=0");
  for (int r = 0; r < 2; ++r) {
    const RankEnd& end = flipped[static_cast<std::size_t>(r)];
    ASSERT_EQ(end.error, "");
    EXPECT_EQ(end.result.status, RunStatus::completed) << end.result.message;
    EXPECT_EQ(end.values, clean[static_cast<std::size_t>(r)].values);
  }
  const std::vector<json> mismatch = events(dir_ / "flipped", "digest_mismatch");
  ASSERT_EQ(mismatch.size(), 1u);
  EXPECT_EQ(mismatch[0].at("suspects"), "0,1");
}

TEST_F(RunnerDigestTest, ARankThatDiffersAgainStopsTheRunNamingItsHost) {
  // The flip fires at both computations of step 6: after the rollback, rank 1 is wrong again.
  const std::vector<RankEnd> ends = run(3, dir_, "bitflip@step=6x2:rank=1");
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  for (const RankEnd& end : ends) {
    ASSERT_EQ(end.error, "");
    EXPECT_EQ(end.result.status, RunStatus::corrupted);
    EXPECT_EQ(end.result.exit_code, 1);
    EXPECT_EQ(end.result.step, 6);
    EXPECT_NE(end.result.message.find("rank 1 computed a wrong state twice"), std::string::npos)
        << end.result.message;
    EXPECT_NE(end.result.message.find("host " + std::string(host)), std::string::npos);
    EXPECT_NE(end.result.message.find("--exclude=" + std::string(host)), std::string::npos);
    EXPECT_NE(end.result.message.find("checkpoint of step 4 is kept"), std::string::npos);
  }
  // The corrupted state was never written: the newest checkpoint is step 4's.
  EXPECT_FALSE(fs::exists(dir_ / "checkpoints" / "step-6"));
  EXPECT_TRUE(fs::exists(dir_ / "checkpoints" / "step-4"));
  EXPECT_EQ(events(dir_, "digest_mismatch").size(), 2u);
}

TEST_F(RunnerDigestTest, TheAgreedDigestIsTheSameForAnyNumberOfRanksAndIsRecordedInCheckpoints) {
  std::map<int, std::vector<std::string>> logged;
  for (int ranks : {1, 2, 3}) {
    const fs::path dir = dir_ / std::to_string(ranks);
    for (const RankEnd& end : run(ranks, dir, "", 8, 2)) ASSERT_EQ(end.error, "");
    for (const json& line : events(dir, "step")) {
      const std::int64_t step = line.at("step");
      EXPECT_EQ(line.contains("digest"), step % 2 == 0) << line.dump();
      if (line.contains("digest")) logged[ranks].push_back(line.at("digest"));
    }
    io::CheckpointStore store(dir);
    const io::LoadedCheckpoint loaded = store.load_latest();
    EXPECT_EQ(loaded.state.text(io::runner_entry::state_digest), logged[ranks].back());
  }
  // The toy's state does not depend on the number of ranks: neither do its digests.
  EXPECT_EQ(logged[2], logged[1]);
  EXPECT_EQ(logged[3], logged[1]);
}

TEST_F(RunnerDigestTest, AResumeRefusesACheckpointWhoseStateIsNotTheOneItsDigestRecorded) {
  for (const RankEnd& end : run(1, dir_, "", 4)) ASSERT_EQ(end.error, "");
  // The step-4 checkpoint changed after the agreement and made consistent again.
  io::testing::forge_checkpoint(dir_ / "checkpoints" / "step-4", 0, [](StateDict& state) {
    Tensor x = state.tensor("workload/x").clone();
    x.data_as<double>()[2] += 1e-12;
    state.set("workload/x", x);
  });
  const std::vector<RankEnd> resumed = run(1, dir_, "", 8);
  ASSERT_NE(resumed[0].error, "");
  EXPECT_NE(resumed[0].error.find("checkpoint of step 4 holds a state that has the digest"),
            std::string::npos)
      << resumed[0].error;
  EXPECT_NE(resumed[0].error.find("tenax ckpt verify --deep"), std::string::npos);
}

}  // namespace
}  // namespace tenax::runtime
