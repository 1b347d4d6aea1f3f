// End-to-end runs of the train_mlp example: it learns both tasks in every precision; f16
// overflow is skipped and the loss scale backs off and grows back; out-of-memory errors at every
// allocation of a step and a real memory limit leave the final parameters bitwise unchanged; a
// run killed at random steps and resumed by the supervisor ends bitwise equal to the
// uninterrupted run in every precision; micro-batches change nothing; the output and input file
// layouts; anomaly mode names the op that made a NaN; bad flags are refused with the fix.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "examples/program_runs.hpp"
#include "tenax/io/dataset_file.hpp"
#include "tenax/io/state_file.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using Training = testing::ProgramRun;

// A small, fast configuration: 512-sample spirals, batch 64 in grains of 8, and a 2x16 MLP.
constexpr const char* kSmallData =
    "--samples 512 --batch 64 --grain 8 --lr 0.01 --checkpoint-every 4";
const std::string kSmall = std::string(kSmallData) + " --layers 16,16 --steps 12";

class TrainMlp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { runs_ = new testing::ProgramRuns(TRAIN_MLP_PATH, "train-mlp"); }
  static void TearDownTestSuite() {
    delete runs_;
    runs_ = nullptr;
  }

  // Runs train_mlp with `args` (and --json) in its own run directory, writing `name`.h5 (under
  // `tenax run` when supervised), with TENAX_FAULTS=`faults` and extra environment `environment`.
  static Training run(const std::string& name, const std::string& args, bool supervised = false,
                      const std::string& faults = "", const std::string& environment = "") {
    return runs_->run(name, "--json " + args, supervised, faults, environment);
  }
  static fs::path output_of(const std::string& name) { return runs_->output_of(name); }
  static const fs::path& root() { return runs_->root(); }
  static void expect_bitwise_equal(const std::string& reference, const std::string& other,
                                   const std::string& what) {
    runs_->expect_bitwise_equal(reference, other, what);
  }

  static inline testing::ProgramRuns* runs_ = nullptr;
};

TEST_F(TrainMlp, ReachesTheStatedLossOnBothTasksInEveryPrecision) {
  // Stated targets after 400 steps: spirals cross-entropy below 0.05 (from ln 2 = 0.69),
  // regression MSE below 0.015 (the targets have variance ~0.3, the noise 0.0025).
  for (const std::string precision : {"f32", "f16", "bf16"}) {
    const Training spirals = run("spirals-" + precision,
                                 "--task spirals --samples 1024 --layers 32,32 --batch 128 "
                                 "--steps 400 --lr 0.03 --checkpoint-every 0 --precision " +
                                     precision);
    ASSERT_EQ(spirals.exit_code, 0) << spirals.output;
    EXPECT_LT(spirals.summary.value("final_loss", 9.0), 0.05) << precision << "\n"
                                                              << spirals.output;
    const Training regression = run("regression-" + precision,
                                    "--task regression --samples 1024 --layers 32,32 "
                                    "--batch 128 --steps 400 --lr 0.03 --checkpoint-every 0 "
                                    "--precision " +
                                        precision);
    ASSERT_EQ(regression.exit_code, 0) << regression.output;
    EXPECT_LT(regression.summary.value("final_loss", 9.0), 0.015) << precision << "\n"
                                                                  << regression.output;
  }
}

TEST_F(TrainMlp, MicroBatchesOfWholeGrainsChangeNothing) {
  for (const std::string precision : {"f32", "f16", "bf16"}) {
    const std::string args = std::string(kSmall) + " --precision " + precision;
    ASSERT_EQ(run("micro-ref-" + precision, args).exit_code, 0);
    for (const std::string micro : {"32", "16", "8", "20"}) {
      const std::string name = "micro-" + micro + "-" + precision;
      const Training split = run(name, args + " --micro-batch " + micro);
      ASSERT_EQ(split.exit_code, 0) << split.output;
      expect_bitwise_equal("micro-ref-" + precision, name, "micro-batch " + micro);
    }
  }
}

TEST_F(TrainMlp, OverflowedStepsAreSkippedAndTheScaleBacksOffAndGrowsBack) {
  // Full batch without shuffling: every step sees the same data, so the loss of a step is a
  // function of the parameters alone. Scale 1024, growth after 4 clean steps: steps 1-4 clean
  // (x2 -> 2048), 5 and 6 overflow (-> 1024 -> 512), 7-10 clean (-> 1024).
  const std::string args =
      "--samples 64 --batch 64 --grain 8 --layers 16 --steps 10 --no-shuffle --precision f16 "
      "--checkpoint-every 0 --loss-scaler init=1024,interval=4";
  const Training clean = run("overflow-none", args);
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_EQ(clean.summary.value("skipped_steps", -1), 0);
  EXPECT_EQ(clean.summary.value("loss_scale", 0.0), 4096.0) << "grew after steps 4 and 8";

  const Training skipped = run("overflow-5-6", args, false, "overflow@step=5,overflow@step=6");
  ASSERT_EQ(skipped.exit_code, 0) << skipped.output;
  EXPECT_EQ(skipped.summary.value("skipped_steps", -1), 2);
  EXPECT_EQ(skipped.summary.value("loss_scale", 0.0), 1024.0) << skipped.output;
  // The Trainer told the Runner, with no code in the program: the console says each skip and
  // each raise of the scale, the closing line counts them, and the event log has them.
  for (const char* said :
       {"step 5 skipped: the gradients overflowed (injected by overflow@step); loss scale "
        "2048 -> 1024",
        "step 6 skipped: the gradients overflowed (injected by overflow@step); loss scale "
        "1024 -> 512",
        "step 4: loss scale raised 1024 -> 2048", "step 10: loss scale raised 512 -> 1024",
        "completed at step 10: 2 steps skipped on overflow, 2 loss-scale raises"}) {
    EXPECT_NE(skipped.output.find(said), std::string::npos) << said << "\n" << skipped.output;
  }
  std::ifstream log(root() / "overflow-5-6" / "events.jsonl");
  std::vector<json> told;
  for (std::string line; std::getline(log, line);) {
    const json event = json::parse(line);
    if (event["event"] == "step_skipped" || event["event"] == "loss_scale_changed") {
      told.push_back(event);
    }
  }
  ASSERT_EQ(told.size(), 4u);
  EXPECT_EQ(told[1]["event"], "step_skipped");
  EXPECT_EQ(told[1]["step"], 5);
  EXPECT_EQ(told[1]["injected"], true);
  EXPECT_EQ(told[1]["loss_scale"], 1024.0);
  EXPECT_EQ(told[3]["event"], "loss_scale_changed");
  EXPECT_EQ(told[3]["step"], 10);
  const StateDict with = io::read_state_file(output_of("overflow-5-6"));
  const StateDict without = io::read_state_file(output_of("overflow-none"));
  const float* loss = with.tensor("loss").data_as<float>();
  const float* reference = without.tensor("loss").data_as<float>();
  for (int k = 0; k < 5; ++k) EXPECT_EQ(loss[k], reference[k]) << "step " << k + 1;
  // Steps 5 and 6 changed nothing: steps 6 and 7 see the parameters step 5 saw.
  EXPECT_EQ(std::memcmp(&loss[5], &loss[4], sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(&loss[6], &loss[4], sizeof(float)), 0);
  EXPECT_NE(loss[7], loss[6]) << "step 7 was taken";
}

TEST_F(TrainMlp, OverflowAtTheMinimumScaleStopsWithAdviceAndLosesNothing) {
  const std::string args = std::string(kSmall) + " --precision f16 --loss-scaler init=1,min=1";
  ASSERT_EQ(run("min-scale-ref", args).exit_code, 0);
  const Training stopped = run("min-scale", args, false, "overflow@step=7");
  EXPECT_EQ(stopped.exit_code, 1);
  for (const char* part :
       {"overflow", "minimum", "the training precision (--precision)",
        "TrainerOptions::detect_anomaly (--detect-anomaly)", "checkpointed at step 6"}) {
    EXPECT_NE(stopped.output.find(part), std::string::npos) << part << "\n" << stopped.output;
  }
  // Run again once the cause is gone: it resumes at step 6 and ends as if never stopped.
  const fs::path dir = root() / "min-scale";
  const std::string resume =
      std::string(TRAIN_MLP_PATH) + " --device cpu --progress quiet --run-dir " + dir.string() +
      " --output " + output_of("min-scale").string() + " " + args + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(resume.c_str()), 0);
  expect_bitwise_equal("min-scale-ref", "min-scale", "resumed after the overflow stop");
}

TEST_F(TrainMlp, OutOfMemoryAtEveryAllocationOfAStepChangesNothing) {
  for (const std::string precision : {"f32", "f16"}) {
    const std::string args = std::string(kSmall) + " --micro-batch 32 --precision " + precision;
    const std::string reference = "oom-ref-" + precision;
    const Training ref = run(reference, args);
    ASSERT_EQ(ref.exit_code, 0) << ref.output;
    const std::int64_t first = ref.summary["step_allocations"].value("first", 0);
    const std::int64_t last = ref.summary["step_allocations"].value("last", 0);
    ASSERT_GT(first, 0) << ref.output;
    ASSERT_GE(last, first);
    for (std::int64_t n = first; n <= last; ++n) {
      // x2: the retry at the same micro-batch fails too, so the micro-batch is halved.
      const std::string name = "oom-" + precision + "-" + std::to_string(n);
      const Training faulty = run(name, args, false, "oom@alloc=" + std::to_string(n) + "x2");
      ASSERT_EQ(faulty.exit_code, 0) << "allocation " << n << "\n" << faulty.output;
      expect_bitwise_equal(reference, name, "oom at allocation " + std::to_string(n));
      fs::remove_all(root() / name);
    }
  }
}

TEST_F(TrainMlp, RealMemoryLimitBacksOffAndEndsBitwiseEqual) {
  const std::string args =
      "--samples 2048 --layers 256,256 --batch 1024 --grain 64 --steps 3 --checkpoint-every 0";
  const Training unlimited = run("limit-ref", args);
  ASSERT_EQ(unlimited.exit_code, 0) << unlimited.output;
  EXPECT_EQ(unlimited.summary.value("micro_batch", 0), 1024);
  // 4 MiB: the activations of a 1024-row micro-batch do not fit beside the parameters, the
  // optimizer state and the gradient trees (up to log2(16 grains) + 1 partial gradients per
  // parameter, grain.hpp); those of 128 rows do.
  const Training limited = run("limit-3m", args, false, "", "TENAX_MEMORY_LIMIT=4MiB");
  ASSERT_EQ(limited.exit_code, 0) << limited.output;
  EXPECT_LT(limited.summary.value("micro_batch", 0), 1024) << "it backed off";
  expect_bitwise_equal("limit-ref", "limit-3m", "4 MiB limit");
  // Growing the micro-batch back after every clean step runs out of memory again and backs off
  // again: more work, the same bits.
  const Training regrown =
      run("limit-regrow", args + " --regrow-after 1", false, "", "TENAX_MEMORY_LIMIT=4MiB");
  ASSERT_EQ(regrown.exit_code, 0) << regrown.output;
  EXPECT_NE(regrown.output.find("micro-batch doubled"), std::string::npos) << regrown.output;
  expect_bitwise_equal("limit-ref", "limit-regrow", "4 MiB limit with regrowth");
}

TEST_F(TrainMlp, KilledAtRandomStepsAndResumedEndsBitwiseEqualInEveryPrecision) {
  std::mt19937 random(20261129);
  for (const std::string precision : {"f32", "f16", "bf16"}) {
    const std::string args = std::string(kSmall) + " --precision " + precision;
    const std::string reference = "kill-ref-" + precision;
    ASSERT_EQ(run(reference, args).exit_code, 0);
    for (int trial = 0; trial < 2; ++trial) {
      const int step = std::uniform_int_distribution<int>(2, 12)(random);
      const std::string faults = "kill@step=" + std::to_string(step);
      const std::string name = "kill-" + precision + "-" + std::to_string(step);
      const Training resumed = run(name, args, true, faults);
      ASSERT_EQ(resumed.exit_code, 0) << faults << "\n" << resumed.output;
      expect_bitwise_equal(reference, name, precision + " " + faults);
    }
  }
}

TEST_F(TrainMlp, OutputLayoutIsPyTorchsAndInitAndDataReadIt) {
  const std::string small = std::string(kSmallData) + " --layers 16,8";
  ASSERT_EQ(run("layout", small + " --steps 12").exit_code, 0);
  const StateDict out = io::read_state_file(output_of("layout"));
  EXPECT_EQ(out.tensor("params/fc0.weight").shape(), (Shape{16, 2}));
  EXPECT_EQ(out.tensor("params/fc0.bias").shape(), (Shape{16}));
  EXPECT_EQ(out.tensor("params/fc1.weight").shape(), (Shape{8, 16}));
  EXPECT_EQ(out.tensor("params/fc2.weight").shape(), (Shape{2, 8}));
  EXPECT_EQ(out.tensor("params/fc2.bias").shape(), (Shape{2}));
  EXPECT_EQ(out.tensor("loss").shape(), (Shape{12}));
  EXPECT_EQ(out.tensor("loss").dtype(), DType::f32);

  // Own data (plain HDF5 datasets) and a starting point from the first run's output.
  const fs::path data = root() / "data.h5";
  Tensor x = Tensor::empty(Shape{256, 2}, DType::f32);
  Tensor y = Tensor::empty(Shape{256}, DType::i64);
  for (std::int64_t i = 0; i < 256; ++i) {
    x.data_as<float>()[2 * i] = static_cast<float>(i % 16) / 16.0f - 0.5f;
    x.data_as<float>()[2 * i + 1] = static_cast<float>(i / 16) / 16.0f - 0.5f;
    y.data_as<std::int64_t>()[i] = (i % 16 < 8) == (i / 16 < 8) ? 1 : 0;
  }
  io::write_datasets(data, {{"x", x}, {"y", y}});
  const Training own = run("own-data", small + " --steps 12 --data " + data.string() + " --init " +
                                           output_of("layout").string());
  ASSERT_EQ(own.exit_code, 0) << own.output;
  // --init with no steps reproduces the given parameters exactly.
  const Training copy =
      run("init-copy", small + " --steps 0 --init " + output_of("layout").string());
  ASSERT_EQ(copy.exit_code, 0) << copy.output;
  const StateDict copied = io::read_state_file(output_of("init-copy"));
  for (const char* name : {"params/fc0.weight", "params/fc1.bias", "params/fc2.weight"}) {
    const Tensor& a = out.tensor(name);
    const Tensor& b = copied.tensor(name);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0) << name;
  }
  // A shape that does not fit the model is refused with both shapes named.
  const Training wrong = run(
      "init-wrong", std::string(kSmallData) + " --layers 8 --init " + output_of("layout").string());
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.output.find("fc0.weight"), std::string::npos) << wrong.output;
  // A file with a parameter the model does not have is another model's: refused, not ignored.
  std::vector<std::pair<std::string, Tensor>> datasets;
  for (const char* name : {"params/fc0.weight", "params/fc0.bias", "params/fc1.weight",
                           "params/fc1.bias", "params/fc2.weight", "params/fc2.bias"}) {
    datasets.emplace_back(name, out.tensor(name));
  }
  datasets.emplace_back("params/fc3.weight", out.tensor("params/fc2.weight"));
  const fs::path extra = root() / "extra-layer.h5";
  io::write_datasets(extra, datasets);
  const Training extra_run = run("init-extra", small + " --steps 0 --init " + extra.string());
  EXPECT_EQ(extra_run.exit_code, 1) << extra_run.output;
  EXPECT_NE(extra_run.output.find("holds /params/fc3.weight, which the model does not have"),
            std::string::npos)
      << extra_run.output;
}

TEST_F(TrainMlp, AnomalyModeNamesTheOpThatMadeTheNan) {
  const fs::path data = root() / "nan-data.h5";
  Tensor x = Tensor::empty(Shape{64, 2}, DType::f32);
  Tensor y = Tensor::empty(Shape{64, 1}, DType::f32);
  for (std::int64_t i = 0; i < 64; ++i) {
    x.data_as<float>()[2 * i] = static_cast<float>(i) / 64.0f;
    x.data_as<float>()[2 * i + 1] = 1.0f;
    y.data_as<float>()[i] = static_cast<float>(i % 3);
  }
  // Finite inputs that overflow in the first layer (a NaN in the data is refused at load, see
  // NonFiniteDataIsRefusedAtLoadNamingTheSample): for every unit of fc0 one of samples 37 and 38
  // meets |w0| + |w1| times the largest float, and with 64 units some unit exceeds 1.
  const float largest = std::numeric_limits<float>::max();
  x.data_as<float>()[2 * 37] = largest;
  x.data_as<float>()[2 * 37 + 1] = largest;
  x.data_as<float>()[2 * 38] = largest;
  x.data_as<float>()[2 * 38 + 1] = -largest;
  io::write_datasets(data, {{"x", x}, {"y", y}});
  const std::string args = "--data " + data.string() +
                           " --batch 64 --grain 8 --micro-batch 16 --no-shuffle --steps 3 "
                           "--layers 64 --activation relu --checkpoint-every 0";
  const Training detected = run("anomaly-on", args + " --detect-anomaly");
  EXPECT_NE(detected.exit_code, 0);
  for (const char* part : {"forward pass of op linear", "tag fc0", "step 1", "micro-batch 2",
                           "rank 0", "created them from finite inputs"}) {
    EXPECT_NE(detected.output.find(part), std::string::npos) << part << "\n" << detected.output;
  }
  // Without anomaly mode the non-finite loss still stops the step: the Runner rolls back and
  // gives up after its retries, naming the step.
  const Training plain = run("anomaly-off", args);
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_NE(plain.output.find("non-finite loss"), std::string::npos) << plain.output;
}

// A NaN in --data was found only as a non-finite loss after three rollbacks, naming no sample;
// a stray label built a model of a million classes. Both are refused at load, naming the sample.
// The bad-data policy: a NaN planted in one sample of the data makes the step that reads it fail
// at every try. Refused at load by default (the fix names the way to skip); with
// --on-repeated-anomaly skip the step fails, is rolled back once, fails again with the same
// samples and is skipped for good, naming them; the run trains on the rest, the closing line
// counts it, and the report lists it among the faults the run survived.
TEST_F(TrainMlp, ABatchWithANanSampleIsSkippedOnceNamingItsSamples) {
  Tensor x = Tensor::empty(Shape{256, 2}, DType::f32);
  Tensor y = Tensor::empty(Shape{256}, DType::i64);
  for (std::int64_t i = 0; i < 256; ++i) {
    x.data_as<float>()[2 * i] = static_cast<float>(i % 16) / 16.0f - 0.5f;
    x.data_as<float>()[2 * i + 1] = static_cast<float>(i / 16) / 16.0f - 0.5f;
    y.data_as<std::int64_t>()[i] = (i % 16 < 8) == (i / 16 < 8) ? 1 : 0;
  }
  x.data_as<float>()[2 * 37 + 1] = std::nanf("");  // read by step 2: rows 32..63 in file order
  const fs::path data = root() / "one-nan.h5";
  io::write_datasets(data, {{"x", x}, {"y", y}});
  const std::string args = "--data " + data.string() +
                           " --batch 32 --grain 8 --no-shuffle --steps 4 --layers 8 "
                           "--checkpoint-every 1";
  const Training refused = run("nan-refused", args);
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  for (const char* part : {"/x[37, 1] (sample 37) is nan", "--on-repeated-anomaly"}) {
    EXPECT_NE(refused.output.find(part), std::string::npos) << part << "\n" << refused.output;
  }

  const Training skipped = run("nan-skipped", args + " --on-repeated-anomaly skip");
  ASSERT_EQ(skipped.exit_code, 0) << skipped.output;
  for (const char* part :
       {"step 2 (samples 32..63 of the data order: rows 32, 33, 34, 35, 36, 37, 38",
        "failed again after a rollback, with the same inputs: non-finite loss", "skipped it",
        "1 step skipped after a repeated anomaly"}) {
    EXPECT_NE(skipped.output.find(part), std::string::npos) << part << "\n" << skipped.output;
  }
  EXPECT_EQ(skipped.summary.value("skipped_batches", -1), 1) << skipped.output;
  EXPECT_EQ(skipped.summary.value("steps", -1), 3) << "steps 1, 3 and 4 trained";
  const std::string report_command =
      std::string(TENAX_CLI_PATH) + " report " + (root() / "nan-skipped").string() + " 2>&1";
  std::string report;
  if (FILE* pipe = ::popen(report_command.c_str(), "r")) {
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
      report.append(buffer, n);
    }
    EXPECT_EQ(::pclose(pipe), 0) << report;
  }
  const std::string page = [&] {
    std::ifstream in(root() / "nan-skipped" / "report.html");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  EXPECT_NE(page.find("skipped the step for good"), std::string::npos) << report;
  EXPECT_NE(page.find("rows 32, 33, 34, 35, 36, 37"), std::string::npos);
}

TEST_F(TrainMlp, NonFiniteDataAndStrayLabelsAreRefusedAtLoadNamingTheSample) {
  Tensor x = Tensor::empty(Shape{64, 2}, DType::f32);
  Tensor y = Tensor::empty(Shape{64, 1}, DType::f32);
  Tensor labels = Tensor::empty(Shape{64}, DType::i64);
  for (std::int64_t i = 0; i < 64; ++i) {
    x.data_as<float>()[2 * i] = static_cast<float>(i) / 64.0f;
    x.data_as<float>()[2 * i + 1] = 1.0f;
    y.data_as<float>()[i] = static_cast<float>(i % 3);
    labels.data_as<std::int64_t>()[i] = i % 2;
  }
  const std::string args = " --batch 16 --steps 2 --layers 8 --checkpoint-every 0";
  const auto refused = [&](const std::string& name, const std::string& flags,
                           const std::vector<std::string>& parts) {
    const Training run_ = run(name, flags + args);
    EXPECT_EQ(run_.exit_code, 1) << run_.output;
    for (const std::string& part : parts) {
      EXPECT_NE(run_.output.find(part), std::string::npos) << part << "\n" << run_.output;
    }
    EXPECT_EQ(run_.output.find("rolling back"), std::string::npos) << run_.output;
  };

  const fs::path nan_x = root() / "nan-x-data.h5";  // not nan-x.h5, the run's --output
  Tensor poisoned = x.clone();
  poisoned.data_as<float>()[2 * 37 + 1] = std::nanf("");
  io::write_datasets(nan_x, {{"x", poisoned}, {"y", y}});
  refused("nan-x", "--data " + nan_x.string(), {"/x[37, 1] (sample 37) is nan"});

  const fs::path inf_y = root() / "inf-y-data.h5";
  Tensor targets = y.clone();
  targets.data_as<float>()[5] = -std::numeric_limits<float>::infinity();
  io::write_datasets(inf_y, {{"x", x}, {"y", targets}});
  refused("inf-y", "--data " + inf_y.string(), {"/y[5, 0] (sample 5) is -inf"});

  const fs::path stray = root() / "stray-label.h5";
  Tensor strayed = labels.clone();
  strayed.data_as<std::int64_t>()[17] = 1'000'000;
  io::write_datasets(stray, {{"x", x}, {"y", strayed}});
  refused(
      "stray", "--data " + stray.string(),
      {"label 1000000 of sample 17 implies 1000001 classes for 64 samples", "--classes 1000001"});
  refused("stray-classes", "--classes 2 --data " + stray.string(),
          {"label 1000000 of sample 17 is outside the 2 classes of --classes"});
  const fs::path regression = root() / "regression.h5";
  io::write_datasets(regression, {{"x", x}, {"y", y}});
  refused("classes-regression", "--classes 3 --data " + regression.string(),
          {"--classes 3 with regression targets"});

  // --classes above the largest label + 1 is honoured: a 5-class model on labels 0 and 1.
  const fs::path two = root() / "two-labels.h5";
  io::write_datasets(two, {{"x", x}, {"y", labels}});
  const Training five = run("five-classes", "--classes 5 --data " + two.string() + args);
  ASSERT_EQ(five.exit_code, 0) << five.output;
  EXPECT_EQ(io::read_state_file(output_of("five-classes")).tensor("params/fc1.bias").numel(), 5);
}

// Every event that changes the run is a console line, and the closing line counts them (the
// rollback of an injected NaN was said only in events.jsonl); the micro-batch reported is the
// one that ran (--micro-batch 7 in grains of 8 runs 8; the summary said the batch, 64).
TEST_F(TrainMlp, EventsAreSaidOnTheConsoleAndTheMicroBatchReportedIsTheOneThatRan) {
  const Training nan =
      run("console-nan", std::string(kSmallData) + " --layers 16 --steps 12 --inject nan@step=6");
  ASSERT_EQ(nan.exit_code, 0) << nan.output;
  for (const char* line :
       {"tenax: anomaly at step 6", "tenax: rolled back to the checkpoint of step 4 (2 steps",
        "tenax: completed at step 12: 1 rollback (2 steps computed again)"}) {
    EXPECT_NE(nan.output.find(line), std::string::npos) << line << "\n" << nan.output;
  }
  const Training clean = run("console-clean", std::string(kSmallData) + " --layers 16 --steps 4");
  EXPECT_NE(clean.output.find("tenax: completed at step 4: no faults"), std::string::npos)
      << clean.output;

  const Training micro =
      run("micro-7", std::string(kSmallData) + " --layers 16 --steps 4 --micro-batch 7");
  ASSERT_EQ(micro.exit_code, 0) << micro.output;
  EXPECT_EQ(micro.summary.at("micro_batch"), 8) << micro.output;
  EXPECT_NE(micro.output.find("micro-batch 8"), std::string::npos) << micro.output;
  std::ifstream events(root() / "micro-7" / "events.jsonl");
  std::string started;
  std::getline(events, started);
  EXPECT_EQ(json::parse(started).at("micro_batch"), 8) << started;
  // Bits do not depend on the micro-batch: the same as the whole batch at once.
  const Training whole = run("micro-64", std::string(kSmallData) + " --layers 16 --steps 4");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  expect_bitwise_equal("micro-64", "micro-7", "--micro-batch 7 against the whole batch");
}

TEST_F(TrainMlp, BadFlagsAreRefusedWithTheFix) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--precision f8", "f32"},
      {"--task images", "--task images: not one of regression, spirals"},
      {"--layers 16,0", "--layers"},
      {"--optimizer rmsprop", "adamw"},
      {"--batch 0", "--batch"},
      {"--activation swish", "gelu"},
      {"--schedule linear", "cosine"},
      {"--loss-scaler growth_every=3", "interval"},
      {"--data /nonexistent.h5", "nonexistent"}};
  for (const auto& [flags, fix] : cases) {
    const Training bad = run("bad", std::string(kSmall) + " " + flags);
    EXPECT_NE(bad.exit_code, 0) << flags;
    EXPECT_NE(bad.output.find(fix), std::string::npos) << flags << "\n" << bad.output;
  }
}

}  // namespace
}  // namespace tenax
