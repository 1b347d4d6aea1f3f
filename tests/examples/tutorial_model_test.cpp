// docs/tutorial-model.md cannot go stale: it shows docs/tutorial/model.cpp as it is, and the
// program it builds learns (its loss ends below the text's unigram entropy), is killed at step 121
// and resumed from the checkpoint of step 100 to the same bits (model, AdamW's state, every
// step's loss), with the report the page describes, and its state carries the module's names.
#include <gtest/gtest.h>

#include <string>

#include "examples/tutorial_runs.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;
using testing::final_checkpoint;
using testing::fresh_run_dir;

testing::CommandOutput model(const fs::path& run_dir, const std::string& flags = "") {
  return testing::run_tutorial(TUTORIAL_MODEL_PATH, run_dir, flags);
}

TEST(TutorialModel, ThePageShowsTheProgramAsItIs) {
  testing::expect_linked_page_quoting("tutorial-model.md", "tutorial/model.cpp");
}

TEST(TutorialModel, LearnsAndResumesToTheSameBits) {
  const fs::path whole = fresh_run_dir("model-whole");
  const testing::CommandOutput trained = model(whole);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string said = testing::line_starting(trained.output, "model: loss ");
  ASSERT_FALSE(said.empty()) << trained.output;
  EXPECT_LT(std::stod(said.substr(12)), 3.0) << "below the text's 3.28 nats of unigram entropy";
  const io::LoadedCheckpoint expected = final_checkpoint(whole);
  EXPECT_EQ(expected.step, 300);
  for (const char* name :
       {"workload/model/embed.weight", "workload/model/norm.bias", "workload/model/hidden.weight",
        "workload/model/out.bias", "workload/training/optimizer/step"}) {
    EXPECT_TRUE(expected.state.contains(name)) << name;
  }
  EXPECT_EQ(expected.state.tensor("workload/loss").numel(), 300);

  const fs::path killed = fresh_run_dir("model-killed");
  testing::expect_resumed_as_whole(TUTORIAL_MODEL_PATH, killed, 121, 100, "model: ", said, expected,
                                   "20 steps recomputed", "loss");
  // Another model on resume is refused, naming the change.
  const testing::CommandOutput wider = model(killed, "--steps 310 --width 64");
  EXPECT_EQ(wider.exit_code, 1) << wider.output;
  EXPECT_NE(wider.output.find("width: 32 -> 64"), std::string::npos) << wider.output;
  fs::remove_all(whole);
  fs::remove_all(killed);
}

}  // namespace
}  // namespace tenax
