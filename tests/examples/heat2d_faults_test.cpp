// End-to-end proof of "no lost work" on the main job: heat2d runs under the supervisor with a
// fault injected (a kill at a step or at each phase of the checkpoint protocol, out-of-memory at
// allocations, a real memory limit, a device fault, a NaN, a full disk, SIGTERM) and must end
// with a final field bitwise equal to an uninterrupted run. 52 kill trials: 24 at random steps
// and 28 at every phase of the commit protocol (sync and async writes).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "heat2d_runs.hpp"
#include "tenax/io/checkpoint_store.hpp"

namespace tenax {
namespace {

using Heat2dFaults = testing::Heat2dRuns;
using testing::kSteps;
using testing::Outcome;
namespace fs = std::filesystem;

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
  // The 256x256 f64 field takes 512 KiB. The one-sweep step needs a second field, and blocks of
  // 128 rows two 256 KiB buffers, both more than the cap leaves beside the field, so the step
  // must back off twice, to blocks of 64 rows.
  const Outcome outcome = run("memory-limit", {}, "", false, "TENAX_MEMORY_LIMIT=900KiB", "256", 8);
  EXPECT_EQ(outcome.exit_code, 0) << log_of("memory-limit");
  EXPECT_GE(count(outcome.events, "\"event\":\"backoff\""), 2u) << outcome.events;
  const Outcome unlimited = run("memory-unlimited", {}, "", false, "", "256", 8);
  ASSERT_EQ(unlimited.exit_code, 0);
  const std::vector<double> limited_field = read_field("memory-limit");
  const std::vector<double> free_field = read_field("memory-unlimited");
  ASSERT_EQ(limited_field.size(), free_field.size());
  EXPECT_EQ(std::memcmp(limited_field.data(), free_field.data(), free_field.size() * 8), 0);
}

TEST_F(Heat2dFaults, AnAddressSpaceLimitIsLivedWithAndEndsBitwise) {
  // `ulimit -v` below the address space a pool sized by the machine's RAM would reserve: the
  // pool then takes half of what the limit leaves (the checkpoint writer's thread and the
  // libraries keep the rest), with or without TENAX_MEMORY_LIMIT.
  for (const std::string limit :
       {"ulimit -v 8000000;", "ulimit -v 8000000; TENAX_MEMORY_LIMIT=1900MiB"}) {
    SCOPED_TRACE(limit);
    const std::string name = limit.find("TENAX") == std::string::npos ? "ulimit" : "ulimit-cap";
    const Outcome outcome = run(name, {}, "", false, limit);
    ASSERT_EQ(outcome.exit_code, 0) << log_of(name);
    expect_bitwise_reference(name, outcome);
  }
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
  EXPECT_NE(log_of("enospc").find("failed, the checkpoint of step 10 is kept"), std::string::npos)
      << log_of("enospc");
  const io::CheckpointStore store(root_ / "enospc");
  const io::LoadedCheckpoint latest = store.load_latest();
  EXPECT_TRUE(latest.found);
  EXPECT_EQ(latest.step, kSteps);
}

TEST_F(Heat2dFaults, KillUnderMpirunIsRestartedThroughTheLauncher) {
  // mpirun reports a rank killed by SIGKILL as its own exit status 137; the supervisor must
  // restart the whole launch, and the rank must resume.
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun not installed (Debian package openmpi-bin; scripts/install-deps.sh)";
  }
  const std::string launcher =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false";
  const fs::path dir = root_ / "mpirun";
  fs::remove_all(dir);
  const std::string command =
      launcher + " TENAX_FAULTS='kill@step=31' " + std::string(TENAX_CLI_PATH) +
      " run --restart-delay 0 --run-dir " + dir.string() + " -- mpirun --oversubscribe -np 1 " +
      std::string(HEAT2D_PATH) + " --device cpu --progress quiet --n " + testing::kGrid +
      " --steps " + std::to_string(kSteps) + " --checkpoint-every 10 --run-dir " + dir.string() +
      " --output " + (dir / "final.h5").string() + " >" + (root_ / "mpirun.log").string() + " 2>&1";
  const int status = std::system(command.c_str());
  Outcome outcome;
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream events(dir / "events.jsonl");
  outcome.events.assign(std::istreambuf_iterator<char>(events), {});
  expect_bitwise_reference("mpirun", outcome);
  EXPECT_EQ(count(outcome.events, "\"event\":\"restart\""), 1u) << outcome.events;
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
