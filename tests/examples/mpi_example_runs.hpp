// The harness of the examples' multi-rank tests: runs an example as `mpirun -np N` processes
// (one process without mpirun), optionally under the supervisor, in a fresh directory per test;
// reads back its logs and the tensors it wrote. Without MPI the tests skip with the reason.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tenax/io/state_file.hpp"
#include "tenax/kernels/ops.hpp"

#ifndef MPIRUN_PATH
#define TENAX_NO_MPI 1
#define MPIRUN_PATH ""
#define TENAX_CLI_PATH ""
#endif

namespace tenax::testing {

class MpiExampleRuns : public ::testing::Test {
 protected:
  explicit MpiExampleRuns(std::string program) : program_(std::move(program)) {}

  void SetUp() override {
#ifdef TENAX_NO_MPI
    GTEST_SKIP() << "this build has no MPI (or no mpirun was found when it was configured)";
#endif
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    root_ = std::filesystem::temp_directory_path() /
            ("tenax-ranks-" + std::to_string(::getpid()) + "-" + test);
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(root_);
  }

  // `program arguments` on `ranks` processes (1: without mpirun), its output in log(name);
  // `dir(name)` is its own directory. Returns the exit status (128 + signal when killed).
  int run_program(const std::string& name, int ranks, const std::string& arguments,
                  bool supervised = false, const std::string& environment = "") {
    std::string command = environment + " ";
    if (supervised) {
      command += std::string(TENAX_CLI_PATH) + " run --restart-delay 0 --max-restarts 3 -- ";
    }
    if (ranks > 1) command += launcher() + " -np " + std::to_string(ranks) + " ";
    return run_command(name, command + program_ + " " + arguments);
  }

  // A shell command line, its output in log(name); returns its exit status.
  int run_command(const std::string& name, const std::string& command) {
    std::filesystem::create_directories(dir(name));
    const std::string line = command + " >" + (root_ / (name + ".log")).string() + " 2>&1";
    const int status = std::system(line.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // mpirun with the flags CI needs (root, more ranks than cores), without -np.
  [[nodiscard]] static std::string launcher() {
    return std::string(MPIRUN_PATH) + " --allow-run-as-root --oversubscribe";
  }
  [[nodiscard]] const std::string& program() const noexcept { return program_; }

  [[nodiscard]] std::filesystem::path dir(const std::string& name) const { return root_ / name; }

  [[nodiscard]] std::string log(const std::string& name) const {
    std::ifstream in(root_ / (name + ".log"));
    return {std::istreambuf_iterator<char>(in), {}};
  }

  // The floating tensor `entry` of the state file `file` in dir(name), widened to f64 (exactly);
  // empty when there is none.
  [[nodiscard]] std::vector<double> values(const std::string& name, const std::string& file,
                                           const std::string& entry) const {
    const std::filesystem::path path = dir(name) / file;
    if (!std::filesystem::exists(path)) return {};
    const Tensor t = ops::cast(io::read_state_file(path).tensor(entry), DType::f64);
    return {t.data_as<double>(), t.data_as<double>() + t.numel()};
  }

  // One leg of a job run in turns on different numbers of ranks: `ranks` processes, killed by
  // `inject` (none: the leg finishes), resuming from `resumed` ("step S, written by N").
  struct Leg {
    int ranks;
    std::string inject;
    std::string resumed;
  };
  // Whether the event log of `run_dir` holds the resume that `resumed` describes ("step 3,
  // written by 4 rank(s), on 2": a `resharded` event of that step and those rank counts). The
  // console says it too, but mpirun may drop a rank's last output when it aborts the job for
  // the injected kill of another rank (seen on a loaded machine); the event log is on disk.
  static bool logged_resume(const std::filesystem::path& run_dir, const std::string& resumed) {
    long long step = 0;
    int from = 0;
    int to = 0;
    if (std::sscanf(resumed.c_str(), "step %lld, written by %d rank(s), on %d", &step, &from,
                    &to) != 3) {
      return false;
    }
    const std::string fields = "\"step\":" + std::to_string(step) +
                               ",\"from_ranks\":" + std::to_string(from) +
                               ",\"to_ranks\":" + std::to_string(to);
    std::ifstream events(run_dir / "events.jsonl");
    for (std::string line; std::getline(events, line);) {
      if (line.find("\"event\":\"resharded\"") != std::string::npos &&
          line.find(fields) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  // Runs the legs in order on one run directory (dir(name)), each with `arguments` (which must
  // name that run directory); a leg with an injection must die, the last must finish, and each
  // leg with `resumed` must say that it resumed from there.
  void run_legs(const std::string& name, const std::string& arguments,
                const std::vector<Leg>& legs) {
    for (std::size_t k = 0; k < legs.size(); ++k) {
      const Leg& leg = legs[k];
      const std::string log_name = name + "-leg" + std::to_string(k);
      const int status = run_program(log_name, leg.ranks, arguments + " " + leg.inject);
      if (leg.inject.empty()) {
        ASSERT_EQ(status, 0) << log(log_name);
      } else {
        ASSERT_NE(status, 0) << "the injected kill did not happen\n" << log(log_name);
      }
      if (!leg.resumed.empty()) {
        EXPECT_TRUE(log(log_name).find("resumed from the checkpoint of " + leg.resumed) !=
                        std::string::npos ||
                    logged_resume(dir(name), leg.resumed))
            << log(log_name);
      }
    }
  }

 private:
  std::string program_;
  std::filesystem::path root_;
};

}  // namespace tenax::testing
