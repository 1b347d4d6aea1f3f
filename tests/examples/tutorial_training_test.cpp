// docs/tutorial-training.md cannot go stale: it shows docs/tutorial/fit.cpp as it is, and the
// program it builds trains (the loss falls far below its first value), is killed part-way and
// resumed to the same bits (weights, Adam's moments and step count), refuses a resume with
// another model, and accepts another learning rate when asked to, as the page says.
#include <gtest/gtest.h>

#include <string>

#include "examples/tutorial_runs.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;
using testing::final_checkpoint;
using testing::fresh_run_dir;
using testing::read_text;

const fs::path kSource = TENAX_SOURCE_DIR;

testing::CommandOutput fit(const fs::path& run_dir, const std::string& flags = "") {
  return testing::run_tutorial(TUTORIAL_FIT_PATH, run_dir, flags);
}

TEST(TutorialTraining, ThePageShowsTheProgramAsItIs) {
  testing::expect_linked_page_quoting("tutorial-training.md", "tutorial/fit.cpp");
}

// A whole run learns: the loss of its last step is a small fraction of the first step's (both read
// from the checkpoints, not the console). Killed at step 321 and resumed from the checkpoint of
// step 300, it ends with every bit of the uninterrupted run's state, and the report says what it
// cost.
TEST(TutorialTraining, LearnsAndResumesToTheSameBits) {
  const fs::path one = fresh_run_dir("fit-one");
  const testing::CommandOutput first_step = fit(one, "--steps 1");
  ASSERT_EQ(first_step.exit_code, 0) << first_step.output;
  const double first_loss = final_checkpoint(one).state.real("workload/loss");
  EXPECT_GT(first_loss, 1e-2) << "the untrained student should be far from the teacher";

  const fs::path whole = fresh_run_dir("fit-whole");
  const testing::CommandOutput trained = fit(whole);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_NE(trained.output.find("tenax: completed at step 600: no faults"), std::string::npos)
      << trained.output;
  const std::string said = testing::line_starting(trained.output, "fit: loss ");
  EXPECT_FALSE(said.empty()) << trained.output;
  const io::LoadedCheckpoint expected = final_checkpoint(whole);
  EXPECT_EQ(expected.step, 600);
  const double last_loss = expected.state.real("workload/loss");
  EXPECT_LT(last_loss, 1e-4);
  EXPECT_LT(last_loss, first_loss / 100) << "first " << first_loss << ", last " << last_loss;
  EXPECT_EQ(expected.state.integer("workload/training/optimizer/step"), 600);

  const fs::path killed = fresh_run_dir("fit-killed");
  testing::expect_resumed_as_whole(TUTORIAL_FIT_PATH, killed, 321, 300, "fit: ", said, expected,
                                   "20 steps recomputed", "loss");
  fs::remove_all(one);
  fs::remove_all(whole);
  fs::remove_all(killed);
}

// The settings the page names: another model on resume is refused; another learning rate is
// refused unless allowed, and then used.
TEST(TutorialTraining, AResumeKeepsTheModelAndMayChangeTheLearningRate) {
  const fs::path dir = fresh_run_dir("fit-flags");
  ASSERT_EQ(fit(dir, "--steps 20").exit_code, 0);
  const testing::CommandOutput wider = fit(dir, "--steps 40 --width 64");
  EXPECT_EQ(wider.exit_code, 1) << wider.output;
  EXPECT_NE(wider.output.find("width: 32 -> 64"), std::string::npos) << wider.output;
  const testing::CommandOutput slower = fit(dir, "--steps 40 --lr 0.001");
  EXPECT_EQ(slower.exit_code, 1) << slower.output;
  EXPECT_NE(slower.output.find("pass --allow-config-change lr"), std::string::npos)
      << slower.output;
  const testing::CommandOutput allowed = fit(dir, "--steps 40 --lr 0.001 --allow-config-change lr");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_NE(allowed.output.find("completed at step 40"), std::string::npos) << allowed.output;
  EXPECT_DOUBLE_EQ(final_checkpoint(dir).state.real("workload/training/optimizer/lr"), 0.001);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tenax
