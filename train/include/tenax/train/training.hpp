/// Training: what a training loop's optimizer step needs, built from one recipe and owned
/// together, so that a training job holds one member instead of five in the right order.
/// @file
/// A Training owns the optimizer (nn::make_optimizer), the learning-rate schedule
/// (nn::parse_lr_schedule over the run's length), the loss scaler (on for f16 only) and the
/// Trainer that steps them (trainer.hpp: mixed precision, gradient accumulation in grains,
/// data-parallel reduction, the step staged until commit). Its state (the optimizer's buffers and
/// step count, the scaler's scale and counters) is saved and loaded as one StateDict; the
/// schedule has no state of its own (the rate is a function of the optimizer's step count).
/// The app layer's TrainingSettings declares the recipe's flags (`--optimizer`, `--lr`,
/// `--schedule`, `--precision`, `--loss-scaler`, `--clip-grad-norm`, `--detect-anomaly`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tenax/core/state_dict.hpp"
#include "tenax/train/autodiff/variable.hpp"
#include "tenax/train/loss_scaler.hpp"
#include "tenax/train/nn/lr_schedule.hpp"
#include "tenax/train/nn/optimizer.hpp"
#include "tenax/train/precision.hpp"
#include "tenax/train/trainer.hpp"

namespace tenax::train {

/// How a training loop steps: the optimizer and its options, the schedule, the precision and its
/// loss scaling, and the Trainer's options. The constructor of Training checks it (UsageError
/// naming the option, the value and the fix).
struct TrainingRecipe {
  std::string optimizer = "adam";  ///< sgd, adam or adamw (nn::make_optimizer)
  double lr = 1e-3;                ///< the base learning rate (finite, > 0)
  /// The optimizer's other options, "key=value,..." (momentum, nesterov, beta1, beta2, eps, wd):
  /// nn::make_optimizer's keys, without lr.
  std::string optimizer_options;
  /// The schedule: "constant", "cosine:warmup=W,min_lr=M" or "step:every=N,gamma=G[,warmup=W]".
  std::string schedule = "constant";
  /// The run's length in optimizer steps: a cosine schedule decays to its end (>= 1 for cosine).
  std::int64_t total_steps = 0;
  Precision precision = Precision::f32;  ///< f16 turns the loss scaler on
  /// The f16 loss scaler's options; `enabled` is set from the precision.
  LossScalerOptions loss_scaler;
  /// The Trainer's options: batch, grain, loss divisor, clipping, anomaly mode, communicator.
  TrainerOptions trainer;
};

/// The optimizer, schedule, loss scaler and Trainer of one training loop (see the file). Not
/// copyable or movable (the Trainer refers to the others); hold it by value in the workload.
class Training {
 public:
  /// Builds every part for `params` (the model's parameters, in a fixed order).
  Training(std::vector<autodiff::Variable> params, const TrainingRecipe& recipe);
  /// As above over parameter groups: the optimizer's weight decay applies only to the groups
  /// that ask for it (nn::weight_decay_groups(model): not to biases and normalisation gains).
  Training(std::vector<nn::ParameterGroup> groups, const TrainingRecipe& recipe);
  Training(const Training&) = delete;
  Training& operator=(const Training&) = delete;

  /// Trainer::step (the step staged; see trainer.hpp).
  TrainStepResult step(std::int64_t step, std::int64_t micro_batch,
                       const Trainer::MicroBatchLoss& loss) {
    return trainer_.step(step, micro_batch, loss);
  }
  /// Trainer::combine (several ranks).
  [[nodiscard]] std::optional<std::string> combine() { return trainer_.combine(); }
  /// Trainer::commit: the staged step applied (nothing allocates).
  void commit() { trainer_.commit(); }
  /// Trainer::discard.
  void discard() noexcept { trainer_.discard(); }
  /// Trainer::last_result.
  [[nodiscard]] const TrainStepResult& last_result() const noexcept {
    return trainer_.last_result();
  }

  /// The Trainer (its grains, its effective micro-batch).
  [[nodiscard]] Trainer& trainer() noexcept { return trainer_; }
  /// The optimizer (its learning rate and step count).
  [[nodiscard]] const nn::Optimizer& optimizer() const noexcept { return *optimizer_; }
  /// The loss scaler (disabled unless the precision is f16).
  [[nodiscard]] const DynamicLossScaler& scaler() const noexcept { return scaler_; }
  /// The precision's dtypes: compute the forward pass in compute_dtype(), keep the model in
  /// master_dtype().
  [[nodiscard]] const PrecisionPolicy& precision() const noexcept { return precision_; }

  /// The state to checkpoint: "optimizer/..." and "scaler/..." entries.
  [[nodiscard]] StateDict state_dict() const;
  /// Restores a state_dict() (strict: UsageError naming a missing or mismatched entry).
  void load_state_dict(const StateDict& state);

 private:
  PrecisionPolicy precision_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  nn::LrSchedule schedule_;
  DynamicLossScaler scaler_;
  Trainer trainer_;  // last: it refers to the others
};

}  // namespace tenax::train
