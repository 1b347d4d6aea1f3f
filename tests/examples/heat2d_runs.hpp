// Runs of the heat2d example for the end-to-end fault tests: a reference run, runs with faults
// injected (optionally under the supervisor), and bitwise comparison of their final fields.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tenax/io/state_file.hpp"

namespace tenax::testing {

namespace fs = std::filesystem;

constexpr const char* kGrid = "40";
constexpr int kSteps = 60;

struct Outcome {
  int exit_code = -1;
  std::string events;  // the run's events.jsonl
};

class Heat2dRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("tenax-heat2d-runs-" + std::to_string(::getpid()));
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

}  // namespace tenax::testing
