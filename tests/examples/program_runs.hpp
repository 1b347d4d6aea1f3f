// Runs of an example program in a temporary folder of the test suite's own: each run in its own
// run directory, optionally under the supervisor (`tenax run`) and with injected faults, its
// output file read back for bitwise comparisons. Shared by the training examples' tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tenax/io/state_file.hpp"

namespace tenax::testing {

// What a run printed and how it ended.
struct ProgramRun {
  int exit_code = -1;
  std::string output;      // stdout and stderr
  nlohmann::json summary;  // the last line that is a JSON object (null when none)
};

class ProgramRuns {
 public:
  // `program`: the path of the example; `folder`: a name for the suite's temporary folder.
  ProgramRuns(std::string program, const std::string& folder)
      : program_(std::move(program)),
        root_(std::filesystem::temp_directory_path() /
              ("tenax-" + folder + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ~ProgramRuns() { std::filesystem::remove_all(root_); }
  ProgramRuns(const ProgramRuns&) = delete;
  ProgramRuns& operator=(const ProgramRuns&) = delete;

  // Runs the program with `args` in its own run directory, writing output_of(name) (under
  // `tenax run` when supervised), with TENAX_FAULTS=`faults` and extra environment `environment`.
  ProgramRun run(const std::string& name, const std::string& args, bool supervised = false,
                 const std::string& faults = "", const std::string& environment = "") const {
    const std::filesystem::path dir = root_ / name;
    std::filesystem::remove_all(dir);
    std::string command = environment + " TENAX_FAULTS='" + faults + "' ";
    if (supervised) {
      command += std::string(TENAX_CLI_PATH) +
                 " run --restart-delay 0 --max-restarts 5 --run-dir " + dir.string() + " -- ";
    }
    command += program_ + " --device cpu --progress quiet --run-dir " + dir.string() +
               " --output " + output_of(name).string() + " " + args;
    const std::filesystem::path log = root_ / (name + ".log");
    command += " >" + log.string() + " 2>&1";
    const int status = std::system(command.c_str());
    ProgramRun result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream in(log);
    result.output.assign(std::istreambuf_iterator<char>(in), {});
    std::istringstream lines(result.output);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("{\"")) result.summary = nlohmann::json::parse(line, nullptr, false);
    }
    return result;
  }

  [[nodiscard]] std::filesystem::path output_of(const std::string& name) const {
    return root_ / (name + ".h5");
  }
  [[nodiscard]] const std::filesystem::path& root() const { return root_; }

  // Every dataset of a run's output file, as raw bytes by name.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> contents(
      const std::string& name) const {
    std::vector<std::pair<std::string, std::string>> out;
    const StateDict state = io::read_state_file(output_of(name));
    for (const auto& [key, value] : state.entries()) {
      const Tensor& t = std::get<Tensor>(value);
      out.emplace_back(key, std::string(static_cast<const char*>(t.data()), t.nbytes()));
    }
    return out;
  }

  void expect_bitwise_equal(const std::string& reference, const std::string& other,
                            const std::string& what) const {
    const auto want = contents(reference);
    const auto got = contents(other);
    ASSERT_EQ(want.size(), got.size()) << what;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(want[i].first, got[i].first) << what;
      EXPECT_TRUE(want[i].second == got[i].second)
          << what << ": " << want[i].first << " differs from the reference run";
    }
  }

 private:
  std::string program_;
  std::filesystem::path root_;
};

}  // namespace tenax::testing
