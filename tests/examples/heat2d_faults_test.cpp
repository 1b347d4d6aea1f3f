// End-to-end proof of "no lost work" on the main job: heat2d runs under the supervisor with a
// fault injected (a kill at a step or at each phase of the checkpoint protocol, out-of-memory at
// allocations, a real memory limit, a device fault, a NaN, a full disk, SIGTERM) and must end
// with a final field bitwise equal to an uninterrupted run. 52 kill trials: 24 at random steps
// and 28 at every phase of the commit protocol (sync and async writes).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/state_file.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGrid = "40";
constexpr int kSteps = 60;

struct Outcome {
  int exit_code = -1;
  std::string events;  // the run's events.jsonl
};

class Heat2dFaults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("tenax-heat2d-faults-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    reference_ = run("reference", {}, "", false).exit_code == 0 ? read_field("reference")
                                                                : std::vector<double>{};
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  // Runs heat2d (under `tenax run` when supervised) with TENAX_FAULTS=`faults`.
  static Outcome run(const std::string& name, const std::vector<std::string>& extra,
                     const std::string& faults, bool supervised,
                     const std::string& environment = "", const std::string& grid = kGrid,
                     int steps = kSteps) {
    const fs::path dir = root_ / name;
    fs::remove_all(dir);
    std::string command = environment + " TENAX_FAULTS='" + faults + "' ";
    if (supervised) {
      command += std::string(TENAX_CLI_PATH) +
                 " run --restart-delay 0 --max-restarts 3 --run-dir " + dir.string() + " -- ";
    }
    command += std::string(HEAT2D_PATH) + " --device cpu --progress quiet --n " + grid +
               " --steps " + std::to_string(steps) + " --checkpoint-every 10 --run-dir " +
               dir.string() + " --output " + (dir / "final.h5").string();
    for (const std::string& arg : extra) command += " " + arg;
    command += " >" + (root_ / (name + ".log")).string() + " 2>&1";
    const int status = std::system(command.c_str());
    Outcome outcome;
    outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream events(dir / "events.jsonl");
    outcome.events.assign(std::istreambuf_iterator<char>(events), {});
    return outcome;
  }

  static std::vector<double> read_field(const std::string& name) {
    const fs::path file = root_ / name / "final.h5";
    if (!fs::exists(file)) return {};
    const StateDict state = io::read_state_file(file);
    const Tensor& u = state.tensor("u");
    return {u.data_as<double>(), u.data_as<double>() + u.numel()};
  }

  static std::string log_of(const std::string& name) {
    std::ifstream in(root_ / (name + ".log"));
    return {std::istreambuf_iterator<char>(in), {}};
  }

  // The run ended well and its field equals the uninterrupted run's, bit for bit.
  static void expect_bitwise_reference(const std::string& name, const Outcome& outcome) {
    ASSERT_FALSE(reference_.empty()) << "the reference run failed";
    EXPECT_EQ(outcome.exit_code, 0) << log_of(name);
    const std::vector<double> field = read_field(name);
    ASSERT_EQ(field.size(), reference_.size()) << name << ": no final field\n" << log_of(name);
    EXPECT_EQ(std::memcmp(field.data(), reference_.data(), field.size() * sizeof(double)), 0)
        << name << ": the final field differs from the uninterrupted run";
  }

  static std::size_t count(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  }

  static inline fs::path root_;
  static inline std::vector<double> reference_;
};

TEST_F(Heat2dFaults, KillAtRandomStepsResumesBitwise) {
  std::mt19937 random(20261129);
  std::uniform_int_distribution<int> step(1, kSteps);
  for (int trial = 0; trial < 24; ++trial) {
    const int at = step(random);
    const std::string name = "kill-step-" + std::to_string(at);
    const Outcome outcome = run(name, {}, "kill@step=" + std::to_string(at), true);
    expect_bitwise_reference(name, outcome);
    EXPECT_EQ(count(outcome.events, "\"event\":\"restart\""), 1u) << name;
    EXPECT_EQ(count(outcome.events, "\"event\":\"resumed\""), 1u) << name;
  }
}

TEST_F(Heat2dFaults, KillAtEveryCommitPhaseResumesBitwise) {
  for (io::CheckpointPhase phase : io::kAllCheckpointPhases) {
    for (int checkpoint : {2, 4}) {
      for (bool async : {false, true}) {
        const std::string phase_name(io::to_string(phase));
        const std::string name =
            "kill-" + phase_name + "-" + std::to_string(checkpoint) + (async ? "-async" : "");
        const Outcome outcome =
            run(name, async ? std::vector<std::string>{"--async"} : std::vector<std::string>{},
                "kill@checkpoint=" + std::to_string(checkpoint) + ":" + phase_name, true);
        expect_bitwise_reference(name, outcome);
        EXPECT_EQ(count(outcome.events, "\"event\":\"restart\""), 1u) << name;
      }
    }
  }
}

TEST_F(Heat2dFaults, OutOfMemoryAtEveryAllocationLosesNoStep) {
  // The first 40 allocations cover building the state, the first checkpoint and the first steps
  // (one scratch block per step): every one of them fails once and the run absorbs it.
  for (int allocation = 1; allocation <= 40; ++allocation) {
    const std::string name = "oom-alloc-" + std::to_string(allocation);
    const Outcome outcome = run(name, {}, "oom@alloc=" + std::to_string(allocation), false);
    expect_bitwise_reference(name, outcome);
    EXPECT_EQ(count(outcome.events, "\"event\":\"restart\""), 0u) << name;
  }
}

TEST_F(Heat2dFaults, RepeatedOutOfMemoryBacksOffTheMicroBatchWithTheSameResult) {
  const Outcome outcome = run("oom-backoff", {}, "oom@step=7x3", false);
  expect_bitwise_reference("oom-backoff", outcome);
  EXPECT_GE(count(outcome.events, "\"event\":\"backoff\""), 1u) << outcome.events;
}

TEST_F(Heat2dFaults, RealMemoryLimitBacksOffAndCompletes) {
  // Two 256x256 f64 fields take 1 MiB; the cap leaves about 176 KiB beside them, less than a
  // full-grid scratch block (516 KiB), so the step must shrink its blocks.
  const Outcome outcome =
      run("memory-limit", {}, "", false, "TENAX_MEMORY_LIMIT=1200KiB", "256", 8);
  EXPECT_EQ(outcome.exit_code, 0) << log_of("memory-limit");
  EXPECT_GE(count(outcome.events, "\"event\":\"backoff\""), 1u) << outcome.events;
  const Outcome unlimited = run("memory-unlimited", {}, "", false, "", "256", 8);
  ASSERT_EQ(unlimited.exit_code, 0);
  const std::vector<double> limited_field = read_field("memory-limit");
  const std::vector<double> free_field = read_field("memory-unlimited");
  ASSERT_EQ(limited_field.size(), free_field.size());
  EXPECT_EQ(std::memcmp(limited_field.data(), free_field.data(), free_field.size() * 8), 0);
}

TEST_F(Heat2dFaults, DeviceFaultExitsForRestartAndResumesBitwise) {
  const Outcome alone = run("device-alone", {}, "device@step=23", false);
  EXPECT_EQ(alone.exit_code, 75) << log_of("device-alone");
  const Outcome supervised = run("device", {}, "device@step=23", true);
  expect_bitwise_reference("device", supervised);
  EXPECT_EQ(count(supervised.events, "\"kind\":\"device_fault\""), 1u) << supervised.events;
}

TEST_F(Heat2dFaults, NanRollsBackAndEndsBitwise) {
  const Outcome outcome = run("nan", {}, "nan@step=35", false);
  expect_bitwise_reference("nan", outcome);
  EXPECT_EQ(count(outcome.events, "\"event\":\"rollback\""), 1u) << outcome.events;
}

TEST_F(Heat2dFaults, FullDiskKeepsThePreviousCheckpointAndSaysSo) {
  const Outcome outcome = run("enospc", {}, "enospc@checkpoint=3", false);
  expect_bitwise_reference("enospc", outcome);
  EXPECT_EQ(count(outcome.events, "\"event\":\"checkpoint_failed\""), 1u) << outcome.events;
  EXPECT_NE(log_of("enospc").find("previous one is kept"), std::string::npos) << log_of("enospc");
  const io::CheckpointStore store(root_ / "enospc");
  const io::LoadedCheckpoint latest = store.load_latest();
  EXPECT_TRUE(latest.found);
  EXPECT_EQ(latest.step, kSteps);
}

TEST_F(Heat2dFaults, SigtermCheckpointsExitsForRestartAndResumes) {
  // SIGTERM to heat2d itself at a step boundary: it checkpoints and exits 75; a second run
  // resumes and finishes.
  const fs::path dir = root_ / "sigterm";
  fs::remove_all(dir);
  const std::string base = std::string(HEAT2D_PATH) +
                           " --device cpu --progress quiet --n 40 --steps 400000 "
                           "--checkpoint-every 100000 --run-dir " +
                           dir.string();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec " + base + " >/dev/null 2>&1").c_str(), nullptr);
    ::_exit(127);
  }
  // Let it start stepping, then ask it to stop.
  for (int i = 0; i < 200 && !fs::exists(dir / "checkpoints"); ++i) ::usleep(20000);
  ::usleep(200000);
  ::kill(child, SIGTERM);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 75);
  const io::CheckpointStore store(dir);
  const io::LoadedCheckpoint stopped = store.load_latest();
  ASSERT_TRUE(stopped.found);
  EXPECT_GT(stopped.step, 0) << "the interrupted run must checkpoint the step it reached";
}

}  // namespace
}  // namespace tenax
