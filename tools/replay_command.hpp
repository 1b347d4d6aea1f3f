// `tenax replay RUN_DIR --from STEP`: re-executes a stretch of a run from one of its checkpoints
// (on this machine, another device or another number of ranks) and compares the state digests
// step by step with those the run logged. The run directory is only read: the replay runs in a
// scratch directory of its own.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace tenax::tools {

struct ReplayOptions {
  std::filesystem::path run_dir;
  std::int64_t from = -1;   // the checkpoint's step
  std::int64_t steps = 0;   // steps to replay; 0: to the run's next checkpoint
  std::string device;       // --device for the program ("": the program's own default)
  double tolerance = 1e-6;  // relative: the bound when the devices compared are not bit-exact
  bool keep = false;        // keep the scratch directory
  std::vector<std::string> command;  // the program (and its launcher); empty: beside `tenax`
};

// Exit status: 0 the same bits (or within the tolerance across devices), 1 diverged, 2 a
// refusal (UsageError: no such checkpoint, another program, a replay that could not start).
[[nodiscard]] int run_replay(const ReplayOptions& options, std::ostream& out);

void add_replay_command(CLI::App& app, int& exit_code);

}  // namespace tenax::tools
