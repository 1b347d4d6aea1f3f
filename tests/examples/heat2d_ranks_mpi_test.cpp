// heat2d across ranks: the grid's rows divided among `mpirun -np N` processes with a halo row
// exchanged with each neighbour every step. The field must be bitwise the single-process one
// for every N, through an out-of-memory backoff on every rank and through a rank killed at a
// random moment under the supervisor.
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
                       "--device cpu --progress log --n 37 --steps 60 --checkpoint-every 10 "
                       "--run-dir " +
                           dir(name).string() + " --output " + (dir(name) / "final.h5").string() +
                           " " + extra,
                       supervised, environment);
  }
  std::vector<double> field(const std::string& name) { return values(name, "final.h5", "u"); }
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
}

TEST_F(Heat2dRanks, ARankKilledMidRunIsRestartedAndTheFieldIsUnchanged) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  ASSERT_EQ(run("kill", 2, "--inject kill@step=23:rank=1", true), 0) << log("kill");
  EXPECT_EQ(field("kill"), field("one"));
  EXPECT_NE(log("kill").find("resumed from the checkpoint of step 20"), std::string::npos)
      << log("kill");
}

TEST_F(Heat2dRanks, ImplicitSchemesOnSeveralRanksAreRefusedWithTheFix) {
  EXPECT_EQ(run("cn", 2, "--scheme cn"), 1) << log("cn");
  EXPECT_NE(log("cn").find("on one rank"), std::string::npos) << log("cn");
}

}  // namespace
}  // namespace tenax
