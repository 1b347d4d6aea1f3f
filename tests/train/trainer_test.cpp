// The Trainer's step: a skipped (overflowed) step changes nothing bitwise; the scale backs off
// and grows back as GradScaler does; an error inside a micro-batch leaves parameters, optimizer
// and scaler as they were; micro-batches of whole grains give identical results; a non-finite
// loss or an unscaled non-finite gradient is an AnomalyError; clipping and the reported norm;
// the schedule follows the optimizer's step count, not the attempted steps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/loss_scaler.hpp"
#include "tenax/train/nn/linear.hpp"
#include "tenax/train/nn/lr_schedule.hpp"
#include "tenax/train/nn/optimizer.hpp"
#include "tenax/train/trainer.hpp"
#include "train/trainer_ranks.hpp"

namespace tenax::train {
namespace {

TEST(Trainer, OverflowedStepsAreSkippedWithoutChangingAnything) {
  Training s(DType::f16, LossScalerOptions{.init_scale = 1024, .growth_interval = 3});
  const FaultPlan faults = FaultPlan::parse("overflow@step=4,overflow@step=5");
  std::vector<double> scales;
  for (std::int64_t step = 0; step < 9; ++step) {
    const std::string before = s.snapshot();
    const std::int64_t taken = s.optimizer.steps_taken();
    const TrainStepResult r = step_and_commit(s.trainer, step, kBatch, s.loss(), &faults);
    scales.push_back(s.scaler.scale());
    if (step == 3 || step == 4) {
      EXPECT_TRUE(r.scaler.skip_step) << "step " << step + 1;
      EXPECT_TRUE(r.scaler.backed_off);
      EXPECT_TRUE(std::isinf(r.grad_norm));
      EXPECT_EQ(s.snapshot(), before) << "a skipped step changed the model or the optimizer";
      EXPECT_EQ(s.optimizer.steps_taken(), taken);
    } else {
      EXPECT_FALSE(r.scaler.skip_step) << "step " << step + 1;
      EXPECT_NE(s.snapshot(), before);
      EXPECT_EQ(s.optimizer.steps_taken(), taken + 1);
    }
  }
  // 3 clean steps: x2; two overflows: x0.5 twice; 3 clean steps: x2; one more clean step.
  EXPECT_EQ(scales, (std::vector<double>{1024, 1024, 2048, 1024, 512, 512, 512, 1024, 1024}));
}

TEST(Trainer, AnErrorInsideAMicroBatchLeavesTheStateAsItWas) {
  Training s(DType::f16);
  (void)step_and_commit(s.trainer, 0, 8, s.loss());
  const std::string before = s.snapshot();
  const double scale = s.scaler.scale();
  int calls = 0;
  const Trainer::MicroBatchLoss failing = [&](std::int64_t begin, std::int64_t end) {
    if (++calls == 3) {
      throw OutOfMemoryError("injected in micro-batch 3", "none: a test");
    }
    return s.loss()(begin, end);
  };
  EXPECT_THROW((void)step_and_commit(s.trainer, 1, 8, failing), OutOfMemoryError);
  EXPECT_EQ(s.snapshot(), before);
  EXPECT_EQ(s.scaler.scale(), scale);
  EXPECT_EQ(autodiff::Tape::size(), 0u) << "the tape was cleared";
  // The retry (as the Runner makes it) takes the step normally.
  EXPECT_FALSE(step_and_commit(s.trainer, 1, 8, s.loss()).scaler.skip_step);
}

TEST(Trainer, MicroBatchesOfWholeGrainsGiveTheSameBits) {
  for (DType compute : {DType::f32, DType::f16, DType::bf16}) {
    Training whole(compute);
    Training split(compute);
    Training odd(compute);
    for (std::int64_t step = 0; step < 3; ++step) {
      const TrainStepResult a = step_and_commit(whole.trainer, step, kBatch, whole.loss());
      const TrainStepResult b = step_and_commit(split.trainer, step, 8, split.loss());
      const TrainStepResult c =
          step_and_commit(odd.trainer, step, 13, odd.loss());  // rounded to 12
      EXPECT_EQ(a.micro_batches, 1);
      EXPECT_EQ(b.micro_batches, 4);
      EXPECT_EQ(c.micro_batches, 3);
      EXPECT_EQ(std::memcmp(&a.loss, &b.loss, sizeof(double)), 0);
      EXPECT_EQ(std::memcmp(&a.loss, &c.loss, sizeof(double)), 0);
      EXPECT_EQ(std::memcmp(&a.grad_norm, &b.grad_norm, sizeof(double)), 0);
    }
    EXPECT_EQ(whole.snapshot(), split.snapshot()) << to_string(compute);
    EXPECT_EQ(whole.snapshot(), odd.snapshot()) << to_string(compute);
  }
}

TEST(Trainer, NonFiniteLossOrUnscaledGradientIsAnAnomaly) {
  Training s(DType::f32);
  const std::string before = s.snapshot();
  const Trainer::MicroBatchLoss nan_loss = [&](std::int64_t begin, std::int64_t end) {
    return autodiff::scale(s.loss()(begin, end), std::nan(""));
  };
  try {
    (void)step_and_commit(s.trainer, 4, 8, nan_loss);
    FAIL() << "no AnomalyError";
  } catch (const AnomalyError& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite loss"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("step 5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TrainerOptions::detect_anomaly"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(s.snapshot(), before);
  // Without loss scaling an overflowing gradient is not skipped but reported.
  const FaultPlan faults = FaultPlan::parse("overflow@step=1");
  EXPECT_THROW((void)step_and_commit(s.trainer, 0, 8, s.loss(), &faults), AnomalyError);
  EXPECT_EQ(s.snapshot(), before);
}

TEST(Trainer, AtTheMinimumScaleEachPolicyKeepsTheModelUnchanged) {
  const FaultPlan faults = FaultPlan::parse("overflow@step=2");
  for (MinScalePolicy policy :
       {MinScalePolicy::error, MinScalePolicy::skip, MinScalePolicy::clamp}) {
    Training s(DType::f16, LossScalerOptions{.init_scale = 1, .min_scale = 1, .on_min = policy});
    (void)step_and_commit(s.trainer, 0, kBatch, s.loss(), &faults);
    const std::string before = s.snapshot();
    const StateDict scaler_before = s.scaler.state_dict();
    switch (policy) {
      case MinScalePolicy::error:
        EXPECT_THROW((void)step_and_commit(s.trainer, 1, kBatch, s.loss(), &faults), OverflowError);
        break;
      case MinScalePolicy::skip:
        EXPECT_TRUE(step_and_commit(s.trainer, 1, kBatch, s.loss(), &faults).scaler.skip_step);
        break;
      case MinScalePolicy::clamp:  // the Inf gradients go to the anomaly policy, not the model
        EXPECT_THROW((void)step_and_commit(s.trainer, 1, kBatch, s.loss(), &faults), AnomalyError);
        EXPECT_EQ(s.scaler.state_dict().integer("growth_tracker"),
                  scaler_before.integer("growth_tracker"));
        break;
    }
    EXPECT_EQ(s.snapshot(), before) << to_string(policy);
    EXPECT_EQ(s.scaler.scale(), 1.0);
  }
}

TEST(Trainer, ClippingScalesTheUpdateAndTheNormIsReportedUnclipped) {
  Training plain(DType::f32);
  Training clipped(DType::f32, {}, 1e-3);
  const TrainStepResult a = step_and_commit(plain.trainer, 0, kBatch, plain.loss());
  const TrainStepResult b = step_and_commit(clipped.trainer, 0, kBatch, clipped.loss());
  EXPECT_EQ(a.grad_norm, b.grad_norm);
  EXPECT_GT(a.grad_norm, 1e-3) << "the clip is active";
  // The norm is the 2-norm of all gradients (after the step, grads are still the unscaled ones).
  double sum = 0;
  for (const auto& p : plain.params) sum += ops::dot(p.grad(), p.grad());
  EXPECT_NEAR(a.grad_norm, std::sqrt(sum), 1e-12 * a.grad_norm);
  // Adam normalises the gradient, so the first update hardly depends on its scale; the second
  // moment estimate does: exp_avg_sq shrinks by the clip factor squared.
  const StateDict sa = plain.optimizer.state_dict();
  const StateDict sb = clipped.optimizer.state_dict();
  const Tensor& va = sa.tensor("exp_avg_sq/0");
  const Tensor& vb = sb.tensor("exp_avg_sq/0");
  const double factor = 1e-3 / (a.grad_norm + 1e-6);
  EXPECT_NEAR(ops::sum(vb) / ops::sum(va), factor * factor, 1e-4 * factor * factor);
}

TEST(Trainer, TheScheduleFollowsTakenStepsNotAttemptedOnes) {
  Training s(DType::f16, LossScalerOptions{.init_scale = 1024});
  const nn::LrSchedule warmup = nn::LrSchedule::constant(1e-2, nn::Warmup{.steps = 10});
  Trainer trainer(s.params, s.optimizer, s.scaler, warmup,
                  TrainerOptions{.batch = kBatch, .grain = 4});
  const FaultPlan faults = FaultPlan::parse("overflow@step=2");
  std::vector<double> lrs;
  for (std::int64_t step = 0; step < 4; ++step) {
    lrs.push_back(step_and_commit(trainer, step, kBatch, s.loss(), &faults).lr);
  }
  EXPECT_EQ(lrs[0], warmup.lr_at(0));
  EXPECT_EQ(lrs[1], 0.0) << "skipped";
  EXPECT_EQ(lrs[2], warmup.lr_at(1));
  EXPECT_EQ(lrs[3], warmup.lr_at(2));
}

TEST(Trainer, RejectsInconsistentOptions) {
  Training s(DType::f32);
  EXPECT_THROW(Trainer(s.params, s.optimizer, s.scaler, s.schedule, TrainerOptions{.batch = 0}),
               UsageError);
  EXPECT_THROW(
      Trainer(s.params, s.optimizer, s.scaler, s.schedule, TrainerOptions{.batch = 8, .grain = 9}),
      UsageError);
  EXPECT_THROW(Trainer({}, s.optimizer, s.scaler, s.schedule, TrainerOptions{.batch = 8}),
               UsageError);
}

// Data parallel with the threads communicator: each rank computes its grains of the batch of
// 8 grains, and the exact reduction gives every rank the single-process model, bit for bit, at
// every number of ranks (3 ranks: 3, 3 and 2 grains); the fast one runs and stays close.
class TrainerRanks : public ::testing::TestWithParam<int> {};

TEST_P(TrainerRanks, EveryRankTakesTheSingleProcessStep) {
  check_every_rank_takes_the_single_process_step(GetParam(), Device::cpu());
}

TEST(TrainerRanksMisuse, ABatchOfFewerGrainsThanRanksIsRefused) {
  auto comms = make_thread_communicators(3, CommOptions{});
  try {
    Training t(DType::f32, {}, 0, comms[0].get());  // 32 rows in grains of 4: 8 grains, fine
    (void)t;
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
  auto many = make_thread_communicators(9, CommOptions{});
  try {
    Training t(DType::f32, {}, 0, many[0].get());
    FAIL() << "8 grains were split over 9 ranks";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than the 9 ranks"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, TrainerRanks, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace tenax::train
