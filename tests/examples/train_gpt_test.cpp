// End-to-end runs of the train_gpt example: it matches the same model trained by PyTorch 1.13
// (tests/examples/train_gpt_reference.py) step by step; it learns (the held-out loss falls below
// the unigram entropy); micro-batches, a kill and resume, an out-of-memory backoff and an injected
// NaN change no bit in f32, bf16 and f16; an f16 overflow is skipped; the output holds PyTorch's
// names; bad sizes are refused naming them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "examples/program_runs.hpp"
#include "tenax/io/state_file.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;

// The text every run reads (installed by scripts/install-deps.sh).
constexpr const char* kText = "/usr/share/games/fortunes/songs-poems";
// A small model on short windows: 32 samples in 4 grains of 8.
const std::string kSmall = std::string("--data ") + kText +
                           " --layers 2 --d-model 32 --heads 2 --context 16 --batch 32 --steps 12 "
                           "--checkpoint-every 4 --eval-every 6";

class TrainGpt : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { runs_ = new testing::ProgramRuns(TRAIN_GPT_PATH, "train-gpt"); }
  static void TearDownTestSuite() {
    delete runs_;
    runs_ = nullptr;
  }
  static std::vector<double> losses(const std::string& name) {
    const Tensor loss =
        ops::cast(io::read_state_file(runs_->output_of(name)).tensor("loss"), DType::f64);
    return {loss.data_as<double>(), loss.data_as<double>() + loss.numel()};
  }
  static inline testing::ProgramRuns* runs_ = nullptr;
};

TEST_F(TrainGpt, MatchesPyTorchStepByStep) {
  // 50 steps of a 2-layer, d 64, 4-head model on T 32 in f32 with AdamW: PyTorch draws the
  // weights and writes them; train_gpt starts from them on the same --sequential batches.
  const fs::path init = runs_->root() / "torch-init.h5";
  const fs::path expected = runs_->root() / "torch-losses.txt";
  const std::string sizes =
      "--steps 50 --layers 2 --d-model 64 --heads 4 --context 32 --batch 8 --lr 0.001 "
      "--weight-decay 0.01 --val-fraction 0.1";
  const std::string script =
      std::string(TENAX_SOURCE_DIR) + "/tests/examples/train_gpt_reference.py";
  const std::string python = "/usr/bin/python3 " + script + " " + kText + " " + init.string() +
                             " " + expected.string() + " " + sizes;
  ASSERT_EQ(std::system(python.c_str()), 0)
      << python << "\n(needs python3-torch and python3-h5py: scripts/install-deps.sh --for-tests)";
  const testing::ProgramRun run =
      runs_->run("torch", std::string("--data ") + kText + " " + sizes + " --sequential --init " +
                              init.string() + " --optimizer adamw --eval-every 0");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream in(expected);
  std::vector<double> want;
  for (double v; in >> v;) want.push_back(v);
  const std::vector<double> got = losses("torch");
  ASSERT_EQ(got.size(), 50u);
  ASSERT_EQ(want.size(), 50u);
  for (std::size_t k = 0; k < 50; ++k) {
    EXPECT_NEAR(got[k], want[k], 1e-4 * std::fabs(want[k])) << "step " << k;
  }
}

TEST_F(TrainGpt, LearnsTheTextBelowItsUnigramEntropy) {
  const testing::ProgramRun run =
      runs_->run("learn", std::string("--data ") + kText +
                              " --layers 2 --d-model 64 --heads 4 --context 32 --batch 16 "
                              "--steps 300 --eval-every 100 --checkpoint-every 0 --sample 40");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // "... validation loss V, unigram entropy H nats"
  const std::size_t at = run.output.find("validation loss ");
  ASSERT_NE(at, std::string::npos) << run.output;
  const double validation = std::stod(run.output.substr(at + 16));
  const double entropy = std::stod(run.output.substr(run.output.find("unigram entropy ") + 16));
  EXPECT_LT(validation, entropy - 0.5) << run.output;
  EXPECT_NE(run.output.find("The "), std::string::npos) << "the sample starts with the prompt";
}

TEST_F(TrainGpt, MicroBatchesKillsBackoffAndNansChangeNoBitInEveryPrecision) {
  for (const std::string precision : {"f32", "bf16", "f16"}) {
    SCOPED_TRACE(precision);
    const std::string args = kSmall + " --precision " + precision;
    const std::string reference = "ref-" + precision;
    const testing::ProgramRun ref = runs_->run(reference, args);
    ASSERT_EQ(ref.exit_code, 0) << ref.output;
    for (const std::string micro : {"8", "16"}) {
      const std::string name = "micro-" + micro + "-" + precision;
      ASSERT_EQ(runs_->run(name, args + " --micro-batch " + micro).exit_code, 0);
      runs_->expect_bitwise_equal(reference, name, "--micro-batch " + micro);
    }
    const testing::ProgramRun killed = runs_->run("kill-" + precision, args, true, "kill@step=7");
    ASSERT_EQ(killed.exit_code, 0) << killed.output;
    runs_->expect_bitwise_equal(reference, "kill-" + precision, "killed at step 7 and resumed");
    const testing::ProgramRun oom = runs_->run("oom-" + precision, args, false, "oom@step=5x2");
    ASSERT_EQ(oom.exit_code, 0) << oom.output;
    EXPECT_NE(oom.output.find("micro-batch halved"), std::string::npos) << oom.output;
    runs_->expect_bitwise_equal(reference, "oom-" + precision, "out of memory at step 5");
    const testing::ProgramRun nan = runs_->run("nan-" + precision, args, false, "nan@step=6");
    ASSERT_EQ(nan.exit_code, 0) << nan.output;
    EXPECT_NE(nan.output.find("rolled back"), std::string::npos) << nan.output;
    runs_->expect_bitwise_equal(reference, "nan-" + precision, "a NaN at step 6");
  }
}

// Dropout masks are keyed by (seed, step, global sample, element): micro-batches and a kill
// change no bit with dropout on either, and validation runs without it.
TEST_F(TrainGpt, WithDropoutMicroBatchesAndAKillChangeNoBit) {
  const std::string args = kSmall + " --dropout 0.2";
  ASSERT_EQ(runs_->run("drop-ref", args).exit_code, 0);
  ASSERT_EQ(runs_->run("drop-micro", args + " --micro-batch 8").exit_code, 0);
  runs_->expect_bitwise_equal("drop-ref", "drop-micro", "--dropout 0.2 --micro-batch 8");
  const testing::ProgramRun killed = runs_->run("drop-kill", args, true, "kill@step=7");
  ASSERT_EQ(killed.exit_code, 0) << killed.output;
  runs_->expect_bitwise_equal("drop-ref", "drop-kill", "--dropout 0.2, killed at step 7");
  ASSERT_EQ(runs_->run("no-drop", kSmall).exit_code, 0);
  EXPECT_NE(losses("drop-ref"), losses("no-drop")) << "dropout changes the training";
}

TEST_F(TrainGpt, AnF16OverflowSkipsTheStep) {
  const testing::ProgramRun run =
      runs_->run("overflow", kSmall + " --precision f16", false, "overflow@step=4");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("skipped"), std::string::npos) << run.output;
}

TEST_F(TrainGpt, TheOutputHoldsPyTorchsNamesAndLayouts) {
  ASSERT_EQ(runs_->run("layout", kSmall).exit_code, 0);
  const StateDict out = io::read_state_file(runs_->output_of("layout"));
  const std::pair<const char*, Shape> expected[] = {{"params/tok_emb.weight", {256, 32}},
                                                    {"params/pos_emb.weight", {16, 32}},
                                                    {"params/blocks.0.ln1.weight", {32}},
                                                    {"params/blocks.0.ln1.bias", {32}},
                                                    {"params/blocks.0.attn.qkv.weight", {96, 32}},
                                                    {"params/blocks.0.attn.qkv.bias", {96}},
                                                    {"params/blocks.0.attn.proj.weight", {32, 32}},
                                                    {"params/blocks.1.ln2.bias", {32}},
                                                    {"params/blocks.1.mlp.fc.weight", {128, 32}},
                                                    {"params/blocks.1.mlp.proj.weight", {32, 128}},
                                                    {"params/ln_f.weight", {32}},
                                                    {"params/head.weight", {256, 32}},
                                                    {"loss", {12}}};
  for (const auto& [name, shape] : expected) {
    ASSERT_TRUE(out.contains(name)) << name;
    EXPECT_EQ(out.tensor(name).shape(), shape) << name;
  }
  EXPECT_FALSE(out.contains("params/head.bias"));
  // --init reads it back: 0 further steps change nothing.
  const testing::ProgramRun again = runs_->run(
      "layout-init", kSmall + " --init " + runs_->output_of("layout").string() + " --steps 1");
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

TEST_F(TrainGpt, BadSizesAreRefusedNamingThem) {
  const testing::ProgramRun heads = runs_->run("bad-heads", kSmall + " --heads 3");
  EXPECT_NE(heads.exit_code, 0);
  EXPECT_NE(heads.output.find("d_model = 32 is not a multiple of 3 heads"), std::string::npos)
      << heads.output;
  const testing::ProgramRun context = runs_->run("bad-context", kSmall + " --context 0");
  EXPECT_NE(context.exit_code, 0);
  EXPECT_NE(context.output.find("--context"), std::string::npos) << context.output;
  // Sizes that cannot fit are refused before anything is allocated, naming them.
  for (const char* size : {" --layers 100000", " --batch 100000000000", " --d-model 1000000"}) {
    const testing::ProgramRun huge = runs_->run("too-big", kSmall + size);
    EXPECT_NE(huge.exit_code, 0) << size;
    EXPECT_NE(huge.output.find(std::string(size).substr(1, std::string(size).find(' ', 1) - 1)),
              std::string::npos)
        << huge.output;
    EXPECT_NE(huge.output.find("use fewer --layers"), std::string::npos) << huge.output;
  }
  const testing::ProgramRun missing = runs_->run("bad-data", kSmall + " --data /no/such/text");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("/no/such/text"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace tenax
