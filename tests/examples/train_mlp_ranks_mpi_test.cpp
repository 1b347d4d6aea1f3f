// train_mlp across ranks (data parallel): each of `mpirun -np N` processes computes its share of
// every step's grains, and the gradients are combined by the pairwise tree over the global grain
// index (--reduction exact). For f32, f16 and bf16, every N gives the single-process parameters
// and loss history bit for bit; an out-of-memory on one rank (its micro-batch backs off alone)
// and a rank killed under the supervisor change nothing; a run killed on R ranks resumes on
// R' != R (the state is replicated) with the same bits; --reduction fast runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mpi_example_runs.hpp"

#ifndef TRAIN_MLP_PATH
#define TRAIN_MLP_PATH ""
#endif

namespace tenax {
namespace {

class TrainMlpRanks : public testing::MpiExampleRuns {
 protected:
  TrainMlpRanks() : MpiExampleRuns(TRAIN_MLP_PATH) {}

  // The default spirals model; batch 256 in grains of 32: 8 grains, so 3 ranks get 3, 3 and 2.
  int run(const std::string& name, int ranks, const std::string& extra = "",
          bool supervised = false) {
    return run_program(name, ranks,
                       "--device cpu --progress log --steps 24 --checkpoint-every 5 --run-dir " +
                           dir(name).string() + " --output " + (dir(name) / "model.h5").string() +
                           " " + extra,
                       supervised);
  }
  // Every parameter and the loss history, as written by --output.
  std::vector<std::vector<double>> model(const std::string& name) {
    std::vector<std::vector<double>> out;
    for (const char* entry : {"params/fc0.weight", "params/fc0.bias", "params/fc1.weight",
                              "params/fc1.bias", "params/fc2.weight", "params/fc2.bias", "loss"}) {
      out.push_back(values(name, "model.h5", entry));
    }
    return out;
  }
};

TEST_F(TrainMlpRanks, EveryNumberOfRanksGivesTheSingleProcessModelInEveryPrecision) {
  for (const std::string precision : {"f32", "f16", "bf16"}) {
    SCOPED_TRACE(precision);
    const std::string one = precision + "-np1";
    ASSERT_EQ(run(one, 1, "--precision " + precision), 0) << log(one);
    const auto expected = model(one);
    ASSERT_FALSE(expected.front().empty()) << log(one);
    ASSERT_EQ(expected.back().size(), 24u);
    for (const int ranks : {2, 3, 4}) {
      const std::string name = precision + "-np" + std::to_string(ranks);
      ASSERT_EQ(run(name, ranks, "--precision " + precision), 0) << log(name);
      EXPECT_EQ(model(name), expected) << ranks << " ranks";
      // Each rank computed its share of the 8 grains only, not the whole batch.
      if (ranks == 3) {
        for (const char* share : {"[rank 0/3]: data parallel: grains [0, 3) of every step's 8",
                                  "[rank 1/3]: data parallel: grains [3, 6)",
                                  "[rank 2/3]: data parallel: grains [6, 8)"}) {
          EXPECT_NE(log(name).find(share), std::string::npos) << share << "\n" << log(name);
        }
      }
    }
  }
}

TEST_F(TrainMlpRanks, AnOutOfMemoryOnOneRankBacksOffThatRankAndChangesNothing) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  // Rank 2 of 3 runs out of memory at step 7: every rank computes the step again.
  ASSERT_EQ(run("oom", 3, "--inject oom@step=7:rank=2"), 0) << log("oom");
  EXPECT_EQ(model("oom"), model("one"));
  EXPECT_NE(log("oom").find("out of memory at step 7 on rank 2"), std::string::npos) << log("oom");
  // Rank 1 of 2 alone fails three allocations inside a step (set on that rank only: an
  // allocation count is the process's): a retry, then two micro-batch backoffs on that rank.
  const std::string args =
      "--device cpu --progress log --steps 24 --checkpoint-every 5 --run-dir " +
      dir("alloc").string() + " --output " + (dir("alloc") / "model.h5").string();
  ASSERT_EQ(run_command("alloc", launcher() + " -np 1 " + program() + " " + args +
                                     " : -np 1 env TENAX_FAULTS=oom@alloc=300x3 " + program() +
                                     " " + args),
            0)
      << log("alloc");
  EXPECT_EQ(model("alloc"), model("one"));
  EXPECT_NE(log("alloc").find("micro-batch halved"), std::string::npos) << log("alloc");
}

TEST_F(TrainMlpRanks, ARankKilledMidRunIsRestartedAndTheModelIsUnchanged) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  ASSERT_EQ(run("kill", 3, "--inject kill@step=13:rank=1", true), 0) << log("kill");
  EXPECT_EQ(model("kill"), model("one"));
  EXPECT_NE(log("kill").find("resumed from the checkpoint of step 10"), std::string::npos)
      << log("kill");
}

TEST_F(TrainMlpRanks, KilledOnSomeRanksAndResumedOnOthersEndsBitwiseEqual) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  // Killed on 4 ranks after the checkpoint of step 10, resumed on 2; killed on 2 after step 15,
  // resumed on 3; killed on 3 after step 20, finished on 1.
  EXPECT_NE(run("elastic", 4, "--inject kill@step=13:rank=1"), 0) << log("elastic");
  EXPECT_NE(run("elastic", 2, "--inject kill@step=17:rank=0"), 0) << log("elastic");
  EXPECT_NE(log("elastic").find("resumed from the checkpoint of step 10"), std::string::npos)
      << log("elastic");
  EXPECT_NE(run("elastic", 3, "--inject kill@step=22:rank=2"), 0) << log("elastic");
  EXPECT_NE(log("elastic").find("resumed from the checkpoint of step 15"), std::string::npos)
      << log("elastic");
  ASSERT_EQ(run("elastic", 1), 0) << log("elastic");
  EXPECT_NE(log("elastic").find("resumed from the checkpoint of step 20"), std::string::npos)
      << log("elastic");
  EXPECT_EQ(model("elastic"), model("one"));
}

TEST_F(TrainMlpRanks, AnOverflowOnOneRankSkipsTheStepOnEveryRank) {
  // f16: the overflow of rank 1's gradients reaches every rank through the exchange, so every
  // rank skips step 9 and backs off its scale, as one process does.
  ASSERT_EQ(run("one", 1, "--precision f16 --inject overflow@step=9"), 0) << log("one");
  ASSERT_EQ(run("overflow", 3, "--precision f16 --inject overflow@step=9:rank=1"), 0)
      << log("overflow");
  EXPECT_EQ(model("overflow"), model("one"));
}

TEST_F(TrainMlpRanks, ABitFlippedOnOneRankIsCaughtAtItsStepRolledBackAndChangesNothing) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  // 3 ranks: the majority names rank 1 at step 12, the run rolls back to step 10 and ends with
  // the clean bits. 2 ranks: both are suspect, the same rollback.
  ASSERT_EQ(run("three", 3, "--digest-every 1 --inject bitflip@step=12:rank=1"), 0) << log("three");
  EXPECT_EQ(model("three"), model("one"));
  EXPECT_NE(log("three").find("[rank 0/3]: silent data corruption at step 12: rank 1 computed a "
                              "state that differs from the other 2 ranks'"),
            std::string::npos)
      << log("three");
  EXPECT_NE(log("three").find("rolled back to the checkpoint of step 10"), std::string::npos);
  ASSERT_EQ(run("two", 2, "--digest-every 1 --inject bitflip@step=12:rank=0"), 0) << log("two");
  EXPECT_EQ(model("two"), model("one"));
  EXPECT_NE(log("two").find("no majority tells which is right (ranks 0 and 1 are suspect)"),
            std::string::npos)
      << log("two");
  // A flip at both computations of step 12 on rank 1: the second stops the run naming it.
  EXPECT_EQ(run("twice", 3, "--digest-every 1 --inject bitflip@step=12x2:rank=1"), 1)
      << log("twice");
  EXPECT_NE(log("twice").find("rank 1 computed a wrong state twice (rank 1 on host "),
            std::string::npos)
      << log("twice");
  EXPECT_NE(log("twice").find("fix: exclude that node from the job (Slurm: --exclude="),
            std::string::npos)
      << log("twice");
}

TEST_F(TrainMlpRanks, TheFastReductionRunsAndStaysClose) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  ASSERT_EQ(run("fast", 3, "--reduction fast"), 0) << log("fast");
  const auto exact = model("one");
  const auto fast = model("fast");
  ASSERT_EQ(fast.back().size(), exact.back().size());
  EXPECT_NEAR(fast.back().back(), exact.back().back(), 1e-4) << "final loss";
  EXPECT_EQ(run("bad", 2, "--reduction quick"), 1) << log("bad");
  EXPECT_NE(log("bad").find("--reduction quick: not one of exact, fast"), std::string::npos)
      << log("bad");
}

}  // namespace
}  // namespace tenax
