// train_gpt across ranks (data parallel): `mpirun -np N` processes each compute their share of
// every step's grains, combined by the pairwise tree over the global grain index, and their share
// of the validation grains. In f32, bf16 and f16, N = 1..4 give the single-process model, loss
// history and validation loss bit for bit; a run killed on 4
// ranks resumes on 2 (elastic) with the same bits; an out-of-memory on one rank changes nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mpi_example_runs.hpp"

#ifndef TRAIN_GPT_PATH
#define TRAIN_GPT_PATH ""
#endif

namespace tenax {
namespace {

class TrainGptRanks : public testing::MpiExampleRuns {
 protected:
  TrainGptRanks() : MpiExampleRuns(TRAIN_GPT_PATH) {}

  // A small model; batch 32 in grains of 8: 4 grains, so 3 ranks get 2, 1 and 1.
  int run(const std::string& name, int ranks, const std::string& extra = "",
          bool supervised = false) {
    return run_program(name, ranks,
                       "--device cpu --progress log --data /usr/share/games/fortunes/songs-poems "
                       "--layers 2 --d-model 32 --heads 2 --context 16 --batch 32 --steps 12 "
                       "--eval-every 6 --checkpoint-every 4 --run-dir " +
                           dir(name).string() + " --output " + (dir(name) / "model.h5").string() +
                           " " + extra,
                       supervised);
  }
  // A few parameters of every kind, the loss history and the last validation loss (each rank
  // evaluates its share of the held-out grains), as written by --output.
  std::vector<std::vector<double>> model(const std::string& name) {
    std::vector<std::vector<double>> out;
    for (const char* entry :
         {"params/tok_emb.weight", "params/pos_emb.weight", "params/blocks.0.ln1.weight",
          "params/blocks.0.attn.qkv.weight", "params/blocks.1.mlp.proj.bias", "params/ln_f.bias",
          "params/head.weight", "loss", "val_loss"}) {
      out.push_back(values(name, "model.h5", entry));
    }
    return out;
  }
};

TEST_F(TrainGptRanks, EveryNumberOfRanksGivesTheSingleProcessModelInEveryPrecision) {
  for (const std::string precision : {"f32", "bf16", "f16"}) {
    SCOPED_TRACE(precision);
    const std::string one = precision + "-np1";
    ASSERT_EQ(run(one, 1, "--precision " + precision), 0) << log(one);
    const auto expected = model(one);
    ASSERT_FALSE(expected.front().empty()) << log(one);
    ASSERT_EQ(expected[expected.size() - 2].size(), 12u);  // the loss of every step
    ASSERT_EQ(expected.back().size(), 1u);                 // the last validation loss
    for (const int ranks : {2, 3, 4}) {
      const std::string name = precision + "-np" + std::to_string(ranks);
      ASSERT_EQ(run(name, ranks, "--precision " + precision), 0) << log(name);
      EXPECT_EQ(model(name), expected) << ranks << " ranks";
    }
  }
}

TEST_F(TrainGptRanks, KilledOnFourRanksAndResumedOnTwoEndsBitwiseEqual) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  EXPECT_NE(run("elastic", 4, "--inject kill@step=10:rank=1"), 0) << log("elastic");
  ASSERT_EQ(run("elastic", 2), 0) << log("elastic");
  EXPECT_NE(log("elastic").find("resumed from the checkpoint of step 8"), std::string::npos)
      << log("elastic");
  EXPECT_EQ(model("elastic"), model("one"));
}

TEST_F(TrainGptRanks, AnOutOfMemoryOnOneRankChangesNothing) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  ASSERT_EQ(run("oom", 3, "--inject oom@step=7:rank=2"), 0) << log("oom");
  EXPECT_EQ(model("oom"), model("one"));
  EXPECT_NE(log("oom").find("out of memory at step 7 on rank 2"), std::string::npos) << log("oom");
}

}  // namespace
}  // namespace tenax
