/// TrainingWorkload: a training job as the Runner runs it, built from a model, the batch of each
/// step and the loss of a micro-batch -- the wiring of optimizer, schedule, loss scaler,
/// gradient accumulation, data-parallel exchange, checkpointed state and metrics done once. @file
/// A job gives:
///  - the model (an nn::Module: its parameters are trained, its state dict checkpointed);
///  - `batch(step)`: the global batch of optimizer step `step` (counted from 0), a list of
///    tensors with the batch's samples on their first axis (inputs, targets, labels), on the
///    workload's device. Draw the samples from the step alone (SampleOrder, ByteText): then a
///    resumed run, a run on other ranks and a run after an out-of-memory backoff see the same
///    batches, and nothing about the data needs saving;
///  - `loss(micro_batch, options)`: the loss of a micro-batch, the rows [begin, end) of every
///    tensor of the batch, reduced with `options` (pass them to the loss op: their divisor makes
///    the micro-batches' losses add up to the mean over the global batch).
///
/// The workload does the rest the Workload contract's way (runtime/workload.hpp): step() runs the
/// batch in micro-batches of whole grains through a Training (training.hpp) and stages the
/// update; combine_step() combines the ranks' gradients; commit_step() applies it and records the
/// loss; discard_step() drops it. Out-of-memory backoff, NaN rollback, f16 overflow skips, resume
/// and elastic resume come from the Runner and the Trainer with the same bits for any micro-batch
/// and any number of ranks (the model's ops must be grain-wise: autodiff's linear, layer_norm,
/// embedding and losses are). Its state: the model's state dict under `model/`, the optimizer's
/// and loss scaler's under `training/`, and the loss of every step so far (`loss`).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tenax/core/device.hpp"
#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/runtime/workload.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/nn/module.hpp"
#include "tenax/train/training.hpp"

namespace tenax::runtime {
class Communicator;
}  // namespace tenax::runtime

namespace tenax::train {

/// The tensors of a batch (or of a micro-batch), samples on the first axis of each.
using Batch = std::vector<Tensor>;

/// What a training job computes (see the file description).
struct TrainingJob {
  /// The global batch of optimizer step `step` (counted from 0), on the workload's device.
  std::function<Batch(std::int64_t step)> batch;
  /// The loss of a micro-batch of that batch, reduced with `options`.
  std::function<autodiff::Variable(const Batch& micro_batch, const autodiff::LossOptions& options)>
      loss;
  /// The validation set, samples on the first axis (optional): evaluated with `loss`, without
  /// gradients, every TrainingWorkloadOptions::evaluate_every steps and by evaluate(). Asked for
  /// once, when first evaluated.
  std::function<Batch()> validation;
  /// What step `step` reads, for the messages about it (optional): e.g. the data rows of its
  /// samples. Without it: "samples kB..kB+B-1 of the sample order".
  std::function<std::string(std::int64_t step)> describe;
  /// Called after each step is committed with its result (optional): a job's own log line. It
  /// runs inside the commit, so it must not allocate from the memory pool.
  std::function<void(std::int64_t step, const TrainStepResult& result)> committed;
};

/// Which parameters the optimizer's weight decay applies to.
enum class WeightDecayOn : std::uint8_t {
  all,      ///< every parameter (torch.optim over model.parameters())
  matrices  ///< parameters of two or more axes only (nn::weight_decay_groups: GPT-2's practice)
};

/// The sizes of a training run and how it steps; the constructor checks them (UsageError naming
/// the option, the value and the fix).
struct TrainingWorkloadOptions {
  std::int64_t batch = 0;  ///< samples of an optimizer step, all ranks together (>= 1)
  /// Samples per micro-batch at most (>= 1, at most `batch`; 0: the whole batch). The Runner may
  /// lower it further on out-of-memory; a micro-batch is a whole number of grains.
  std::int64_t micro_batch = 0;
  /// Samples per grain (grain.hpp; 0: min(batch, 8)): the unit that fixes the summation order, so
  /// the bits do not depend on the micro-batch as long as it is a multiple of the grain.
  std::int64_t grain = 0;
  std::int64_t steps = 0;  ///< the run's length in optimizer steps (>= 0)
  /// Terms of the loss per sample: 1 for a label, the positions of a sequence, the outputs of a
  /// regression. The loss divisor is batch * terms_per_sample (finite, >= 1).
  double terms_per_sample = 1;
  /// The optimizer, schedule and precision (the TrainerOptions' batch, grain, loss divisor and
  /// communicator are set from the fields above).
  TrainingRecipe recipe;
  WeightDecayOn weight_decay_on = WeightDecayOn::matrices;  ///< see WeightDecayOn
  /// Evaluate the validation set after every this many steps (and after the last), its loss the
  /// step's `val_loss` metric; 0: never (evaluate() still works).
  std::int64_t evaluate_every = 0;
  runtime::Communicator* comm = nullptr;  ///< the data-parallel ranks (nullptr: one)
  Device device = Device::cpu();          ///< where the model lives and the batches are
};

/// The Workload of a training job (see the file description). Not copyable or movable; hold it
/// where the Runner can reach it for the whole run.
class TrainingWorkload final : public runtime::Workload {
 public:
  /// `model` is a handle to the job's model (the workload trains its parameters in place).
  TrainingWorkload(nn::Module model, TrainingJob job, TrainingWorkloadOptions options);
  TrainingWorkload(const TrainingWorkload&) = delete;
  TrainingWorkload& operator=(const TrainingWorkload&) = delete;
  ~TrainingWorkload() override;

  /// @name The Workload contract (runtime/workload.hpp)
  ///@{

  /// Nothing: the model is initialised by its constructor (or loaded by the caller).
  void init() override;
  /// The batch, in samples.
  [[nodiscard]] std::int64_t work_units() const override;
  /// Runs the step's micro-batches of at most `micro_batch` samples and stages the update.
  void step(std::int64_t step, std::int64_t micro_batch) override;
  /// The ranks' gradients combined (several ranks); an anomaly found on any rank is returned.
  [[nodiscard]] std::optional<std::string> combine_step() override;
  /// Applies the staged update and records the step's loss; allocates nothing.
  void commit_step() override;
  /// Drops the staged update.
  void discard_step() override;
  /// "model/...", "training/...", "loss" (the loss of every step taken so far), "skipped_steps",
  /// "skipped_batches" (the steps skipped for repeated anomalies) and, once evaluated,
  /// "val_loss".
  [[nodiscard]] StateDict save_state() const override;
  /// Restores a save_state() (strict).
  void load_state(const StateDict& state) override;
  /// Skips the step for good (a repeated anomaly, RunnerOptions::repeated_anomaly = skip): the
  /// model and optimizer stay as they are, no loss is recorded, and the step is listed in
  /// skipped_batches(). Always true.
  [[nodiscard]] bool skip_step(std::int64_t step) override;
  /// TrainingJob::describe, or the step's sample positions.
  [[nodiscard]] std::string describe_step(std::int64_t step) const override;
  /// True: every rank holds the whole model (a run resumes on any number of ranks).
  [[nodiscard]] bool replicated_state() const override { return true; }
  /// loss, grad_norm and lr of the last committed step, loss_scale under f16, and val_loss after
  /// a step that evaluated.
  [[nodiscard]] std::vector<runtime::StepMetric> step_metrics() const override;
  /// The options' device.
  [[nodiscard]] Device device() const override { return options_.device; }
  ///@}

  /// @name Results
  ///@{

  /// The loss of every committed step, in order (a step skipped for a repeated anomaly has none).
  [[nodiscard]] std::vector<double> losses() const;
  /// losses() as a host tensor f32 [steps], as a job writes its loss curve to a file (the /loss
  /// of train_mlp's and train_gpt's --output, which PyTorch references compare step by step).
  [[nodiscard]] Tensor loss_curve() const;
  /// The result of the last committed step (after a resume, only its loss is known until a step
  /// runs).
  [[nodiscard]] const TrainStepResult& last() const noexcept { return last_; }
  /// Steps skipped on f16 overflow so far.
  [[nodiscard]] std::int64_t skipped_steps() const noexcept { return skipped_; }
  /// The steps (counted from 0) skipped for good after a repeated anomaly, in order.
  [[nodiscard]] const std::vector<std::int64_t>& skipped_batches() const noexcept {
    return skipped_batches_;
  }
  /// The optimizer, schedule, loss scaler and Trainer.
  [[nodiscard]] Training& training() noexcept { return *training_; }
  /// The precision's dtypes (compute the forward pass in compute_dtype()).
  [[nodiscard]] const PrecisionPolicy& precision() const noexcept { return training_->precision(); }
  /// What the loss divides by: batch * terms_per_sample.
  [[nodiscard]] double loss_divisor() const noexcept { return divisor_; }
  /// The mean loss over the validation set (TrainingJob::validation) with the model as it is,
  /// in evaluation mode (Module::eval: no dropout), without gradients, one grain of samples at a
  /// time, the grains' sums added in order: the same bits for any micro-batch and any number of
  /// ranks, and memory for one grain only. On several ranks (TrainingWorkloadOptions::comm) each
  /// evaluates its share of the grains (a contiguous block) and the sums are gathered: a
  /// collective, which every rank calls. Inside a run, the evaluation every evaluate_every steps
  /// computes the shares within the step and gathers them when the step is combined. UsageError
  /// without a validation set.
  [[nodiscard]] double evaluate();
  /// The validation loss of the last evaluation in a step (nullopt before the first).
  [[nodiscard]] std::optional<double> validation_loss() const noexcept { return val_loss_; }
  ///@}

 private:
  nn::Module model_;
  TrainingJob job_;
  TrainingWorkloadOptions options_;
  double divisor_;
  std::int64_t grain_ = 1;  // samples per grain, as the Trainer runs them
  std::unique_ptr<Training> training_;
  Tensor loss_history_;  // f64 [steps], allocated once so that a commit never allocates
  std::int64_t loss_count_ = 0;
  std::int64_t skipped_ = 0;
  std::vector<std::int64_t> skipped_batches_;
  std::int64_t staged_step_ = 0;  // the step staged by step(), for TrainingJob::committed
  std::optional<TrainStepResult> staged_;
  TrainStepResult last_;
  struct GrainRange {
    std::int64_t first;  // grains [first, last) of the validation set
    std::int64_t last;
  };
  // Rank `rank`'s share of the validation grains (validation_ asked for).
  [[nodiscard]] GrainRange validation_grains(int rank) const;
  // This rank's validation grains' loss sums, in order (asks for the validation set once).
  [[nodiscard]] std::vector<double> validation_grain_sums();
  // The mean validation loss from every rank's grain sums (a collective on several ranks).
  [[nodiscard]] double combined_validation_loss(const std::vector<double>& mine);

  Batch validation_;                                    // asked for once
  std::optional<std::vector<double>> staged_val_sums_;  // this rank's share, from the step
  std::optional<double> staged_val_loss_;  // evaluated in the step, published by its commit
  std::optional<double> val_loss_;
  bool published_val_loss_ = false;  // the last committed step evaluated
};

}  // namespace tenax::train
