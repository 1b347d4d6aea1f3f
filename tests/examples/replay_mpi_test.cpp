// `tenax replay` on the example programs: a clean run of heat2d, poisson and train_mlp on 1 and
// 3 ranks replays from a checkpoint on 1 and on 2 ranks with the same bits; a bit flipped into
// one rank's share of heat2d's sharded field (which no other rank holds, so the run cannot see
// it) is found by the replay at the step it happened; and the replay refuses what it cannot
// compare (no such checkpoint, another program, a changed configuration), never writing the run
// directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mpi_example_runs.hpp"

#ifndef HEAT2D_PATH
#define HEAT2D_PATH ""
#define POISSON_PATH ""
#define TRAIN_MLP_PATH ""
#endif

namespace tenax {
namespace {

namespace fs = std::filesystem;

class Replay : public testing::MpiExampleRuns {
 protected:
  Replay() : MpiExampleRuns("") {}

  struct Program {
    std::string name;
    std::string path;
    std::string arguments;  // a short run with checkpoints every 4 steps (poisson: 4 x 10 its)
  };
  static std::vector<Program> programs() {
    return {{"heat2d", HEAT2D_PATH, "--n 24 --steps 12 --checkpoint-every 4"},
            {"poisson", POISSON_PATH,
             "--n 32 --tol 1e-12 --max-iters 120 --iterations-per-step 10 --checkpoint-every 4"},
            {"train_mlp", TRAIN_MLP_PATH, "--steps 12 --checkpoint-every 4"}};
  }
  // The program on `ranks` processes in dir(name), its output in log(name).
  int run_on(const std::string& name, const Program& p, int ranks, const std::string& extra = "") {
    const std::string launch = ranks > 1 ? launcher() + " -np " + std::to_string(ranks) + " " : "";
    return run_command(name, launch + p.path + " --device cpu --progress log " + p.arguments +
                                 " --run-dir " + dir(name).string() + " " + extra);
  }
  // `tenax replay` of dir(run) with `arguments`, its output in log(name).
  int replay(const std::string& name, const std::string& run, const std::string& arguments) {
    return run_command(
        name, std::string(TENAX_CLI_PATH) + " replay " + dir(run).string() + " " + arguments);
  }
  // Every file of a directory with its bytes: a replay must leave the run directory as it was.
  static std::string snapshot(const fs::path& dir) {
    std::string all;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      all += entry.path().string() + ":" + std::string(std::istreambuf_iterator<char>(in), {});
    }
    return all;
  }
};

TEST_F(Replay, CleanRunsOfEveryProgramReproduceOnOneAndTwoRanks) {
  for (const Program& p : programs()) {
    for (const int ranks : {1, 3}) {
      const std::string run = p.name + "-np" + std::to_string(ranks);
      SCOPED_TRACE(run);
      ASSERT_EQ(run_on(run, p, ranks), 0) << log(run);
      const std::string before = snapshot(dir(run));
      for (const int replay_ranks : {1, 2}) {
        const std::string name = run + "-replay" + std::to_string(replay_ranks);
        const std::string command = replay_ranks == 1 ? p.path : launcher() + " -np 2 " + p.path;
        ASSERT_EQ(replay(name, run, "--from 4 -- " + command), 0) << log(name);
        EXPECT_NE(log(name).find("same bits: steps 5..8 reproduce"), std::string::npos)
            << log(name);
      }
      EXPECT_EQ(snapshot(dir(run)), before) << "the replay wrote into the run directory";
    }
  }
}

TEST_F(Replay, AFlipInOneRanksShareOfASharedFieldIsFoundAtItsStep) {
  const Program heat = programs()[0];
  // Rank 1's rows of the field: the other ranks hold no copy, so the run completes unaware.
  ASSERT_EQ(run_on("flip", heat, 3, "--digest-every 1 --inject bitflip@step=6:rank=1"), 0)
      << log("flip");
  EXPECT_NE(log("flip").find("injected bit flip after step 6"), std::string::npos) << log("flip");
  EXPECT_EQ(replay("replay", "flip", "--from 4 -- " + heat.path), 1) << log("replay");
  EXPECT_NE(log("replay").find("diverged at step 6 (state digest"), std::string::npos)
      << log("replay");
  EXPECT_NE(log("replay").find("first differing tensor 'u': max difference"), std::string::npos)
      << log("replay");
  // Step 5 came before the flip: it reproduces.
  EXPECT_EQ(replay("before", "flip", "--from 4 --steps 1 -- " + heat.path), 0) << log("before");
  EXPECT_NE(log("before").find("same bits: steps 5..5 reproduce (1 digest compared)"),
            std::string::npos)
      << log("before");
  // Digested at checkpoints only, the replay narrows it to the stretch between two digests.
  ASSERT_EQ(run_on("sparse", heat, 1, "--digest-every 0 --inject bitflip@step=6"), 0)
      << log("sparse");
  EXPECT_EQ(replay("sparse-replay", "sparse", "--from 4 -- " + heat.path), 1)
      << log("sparse-replay");
  EXPECT_NE(log("sparse-replay").find("diverged after step 4 and by step 8"), std::string::npos)
      << log("sparse-replay");
}

TEST_F(Replay, WhatCannotBeComparedIsRefused) {
  const Program heat = programs()[0];
  ASSERT_EQ(run_on("run", heat, 1), 0) << log("run");
  const std::string before = snapshot(dir("run"));
  EXPECT_EQ(replay("missing", "run", "--from 5 -- " + heat.path), 2) << log("missing");
  EXPECT_NE(log("missing").find("no checkpoint of step 5 (its committed checkpoints: 4, 8, 12)"),
            std::string::npos)
      << log("missing");
  EXPECT_EQ(replay("other", "run", "--from 4 -- " + std::string(POISSON_PATH)), 2) << log("other");
  EXPECT_NE(log("other").find("was made by 'heat2d', not by 'poisson'"), std::string::npos)
      << log("other");
  EXPECT_EQ(replay("changed", "run", "--from 4 -- " + heat.path + " --n 40"), 2) << log("changed");
  EXPECT_NE(log("changed").find("n: 24 -> 40"), std::string::npos) << log("changed");
  EXPECT_EQ(replay("end", "run", "--from 12 -- " + heat.path), 2) << log("end");
  EXPECT_NE(log("end").find("nothing to replay after step 12"), std::string::npos) << log("end");
  EXPECT_EQ(replay("negative", "run", "--from -1 -- " + heat.path), 2) << log("negative");
  EXPECT_EQ(run_command("nodir", std::string(TENAX_CLI_PATH) + " replay " +
                                     (dir("run") / "nothere").string() + " --from 4"),
            2);
  EXPECT_NE(log("nodir").find("is not a run directory"), std::string::npos) << log("nodir");
  EXPECT_EQ(snapshot(dir("run")), before);
}

}  // namespace
}  // namespace tenax
