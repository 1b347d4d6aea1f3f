// heat2d across ranks: FTCS divides the grid's rows among `mpirun -np N` processes with a halo
// row exchanged with each neighbour every step; Crank-Nicolson (and the other integrators)
// divides its points and solves with CG across the ranks. The field must be bitwise the
// single-process one for every N, through an out-of-memory backoff, through a rank killed under
// the supervisor, and through kills followed by resumes on other numbers of ranks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mpi_example_runs.hpp"

#ifndef HEAT2D_PATH
#define HEAT2D_PATH ""
#endif

namespace tenax {
namespace {

class Heat2dRanks : public testing::MpiExampleRuns {
 protected:
  Heat2dRanks() : MpiExampleRuns(HEAT2D_PATH) {}

  // heat2d on `ranks` processes (1: without mpirun); returns the exit status.
  int run(const std::string& name, int ranks, const std::string& extra = "",
          bool supervised = false, const std::string& environment = "") {
    return run_program(name, ranks,
                       "--device cpu --progress log --steps 60 --checkpoint-every 10 " + grid +
                           " --run-dir " + dir(name).string() + " --output " +
                           (dir(name) / "final.h5").string() + " " + extra,
                       supervised, environment);
  }
  std::vector<double> field(const std::string& name) { return values(name, "final.h5", "u"); }

  std::string grid = "--n 37";
};

TEST_F(Heat2dRanks, EveryNumberOfRanksGivesTheSingleProcessField) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  const std::vector<double> expected = field("one");
  ASSERT_EQ(expected.size(), 37u * 37u);
  for (const int ranks : {2, 3, 4}) {
    const std::string name = "np" + std::to_string(ranks);
    ASSERT_EQ(run(name, ranks), 0) << log(name);
    EXPECT_EQ(field(name), expected) << ranks << " ranks";
    EXPECT_NE(log(name).find("x " + std::to_string(ranks) + " ranks done"), std::string::npos)
        << log(name);
  }
}

TEST_F(Heat2dRanks, BlockedInPlaceStepsOnEveryRankGiveTheSameField) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  // Every rank's first step runs out of memory until its micro-batch (rows per block) is small.
  ASSERT_EQ(run("oom", 3, "--inject oom@step=2x3"), 0) << log("oom");
  EXPECT_EQ(field("oom"), field("one"));
  EXPECT_NE(log("oom").find("micro-batch halved"), std::string::npos) << log("oom");
  // Out of memory on one rank only: its peers do not wait for it inside a halo exchange (the
  // step's collectives run after the agreement); every rank computes the step again.
  ASSERT_EQ(run("oom1", 4, "--inject oom@step=5x2:rank=2 --comm-timeout 30"), 0) << log("oom1");
  EXPECT_EQ(field("oom1"), field("one"));
  EXPECT_NE(log("oom1").find("on rank 2"), std::string::npos) << log("oom1");
}

TEST_F(Heat2dRanks, ARankKilledMidRunIsRestartedAndTheFieldIsUnchanged) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  ASSERT_EQ(run("kill", 2, "--inject kill@step=23:rank=1", true), 0) << log("kill");
  EXPECT_EQ(field("kill"), field("one"));
  EXPECT_NE(log("kill").find("resumed from the checkpoint of step 20"), std::string::npos)
      << log("kill");
}

// Crank-Nicolson on a 100 x 100 grid: 10 000 points in three reduction blocks, so ranks hold
// ranges that end inside grid rows (and a fourth rank holds none).
constexpr const char* kCrankNicolson = "--scheme cn --dt 0.001";

TEST_F(Heat2dRanks, CrankNicolsonOnEveryNumberOfRanksGivesTheSingleProcessField) {
  grid = "--n 100";
  ASSERT_EQ(run("one", 1, kCrankNicolson), 0) << log("one");
  const std::vector<double> expected = field("one");
  ASSERT_EQ(expected.size(), 100u * 100u);
  for (const int ranks : {2, 3, 4}) {
    const std::string name = "np" + std::to_string(ranks);
    ASSERT_EQ(run(name, ranks, kCrankNicolson), 0) << log(name);
    EXPECT_EQ(field(name), expected) << ranks << " ranks";
  }
  // Out of memory on one rank: every rank computes the step again; nothing changes.
  ASSERT_EQ(
      run("oom", 3, std::string(kCrankNicolson) + " --inject oom@step=7:rank=2 --comm-timeout 30"),
      0)
      << log("oom");
  EXPECT_EQ(field("oom"), expected);
  EXPECT_NE(log("oom").find("out of memory"), std::string::npos) << log("oom");
}

// Killed on 4 ranks, resumed on 2 and killed again, resumed on 3 and killed again, finished on
// 1: the field is the uninterrupted single-process one, for FTCS (rows) and Crank-Nicolson
// (points).
TEST_F(Heat2dRanks, KilledAndResumedOnOtherNumbersOfRanksEndsWithTheSingleProcessField) {
  grid = "--n 100";
  for (const std::string scheme : {std::string("--scheme explicit"), std::string(kCrankNicolson)}) {
    SCOPED_TRACE(scheme);
    ASSERT_EQ(run("whole", 1, scheme), 0) << log("whole");
    const std::vector<double> expected = field("whole");
    const std::string args = "--device cpu --progress log --steps 60 --checkpoint-every 10 " +
                             grid + " " + scheme + " --run-dir " + dir("elastic").string() +
                             " --output " + (dir("elastic") / "final.h5").string();
    run_legs("elastic", args,
             {{4, "--inject kill@step=13:rank=2", ""},
              {2, "--inject kill@step=34:rank=1", "step 10, written by 4 rank(s), on 2"},
              {3, "--inject kill@step=47:rank=0", "step 30, written by 2 rank(s), on 3"},
              {1, "", "step 40, written by 3 rank(s), on 1"}});
    EXPECT_EQ(values("elastic", "final.h5", "u"), expected);
    std::filesystem::remove_all(dir("elastic"));
    std::filesystem::remove_all(dir("whole"));
  }
}

TEST_F(Heat2dRanks, TasksThatTheLauncherDidNotWireTogetherAreRefused) {
  // srun without PMI: two tasks, each of which MPI sees as a world of one. Before, one ran the
  // whole job alone and the other was told to wait for it.
  const std::string slurm = "SLURM_PROCID=0 SLURM_NTASKS=2";
  EXPECT_EQ(run("unwired", 1, "", false, slurm), 1) << log("unwired");
  EXPECT_NE(log("unwired").find("Slurm (srun) started 2 processes (SLURM_NTASKS=2), but MPI sees "
                                "one in this one"),
            std::string::npos)
      << log("unwired");
  EXPECT_NE(log("unwired").find("srun --mpi=pmix"), std::string::npos) << log("unwired");
  EXPECT_FALSE(std::filesystem::exists(dir("unwired") / "checkpoints")) << "it ran";
  // --comm single under the same launch.
  EXPECT_EQ(run("single", 1, "--comm single", false, slurm), 1) << log("single");
  EXPECT_NE(log("single").find("--comm single under a launcher of 2 processes (Slurm (srun))"),
            std::string::npos)
      << log("single");
}

}  // namespace
}  // namespace tenax
