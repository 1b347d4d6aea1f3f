/// Trainer: one optimizer step of mixed-precision training with gradient accumulation, done so
/// that no step is ever half-taken.
/// @file
/// A step over a global batch of `batch` rows (per rank) runs:
///  1. every parameter gradient set to zero;
///  2. the batch in micro-batches of `micro_batch` rows (rounded down to whole grains), in order,
///     inside a GrainScope of `grain` rows (autodiff/grain.hpp): for each, the user's function
///     returns the loss of rows [begin, end) (its share of the global mean: divide by the global
///     count, see LossOptions::divisor), and backward() runs seeded with the loss scale. The scale
///     is read once before the first micro-batch, so it is constant within the window;
///  3. one fused pass per parameter (ops::unscale_and_measure) that divides the gradient by the
///     scale, counts non-finite values and sums squares for the gradient norm: the gradients are
///     read once;
///  4. the loss scaler's decision: on overflow the step is skipped (parameters, optimizer moments,
///     optimizer step count and therefore the learning-rate schedule stay bitwise as they were);
///  5. otherwise the learning rate of the schedule at the optimizer's step count, and the
///     optimizer step with the clipping coefficient folded in (no extra pass).
/// Because grains are summed in a fixed order, the result does not depend on `micro_batch`: an
/// out-of-memory backoff (micro-batch halved, accumulation doubled) changes nothing bit for bit.
/// With a communicator of R ranks (options.comm), each rank runs steps 1-2 on its grains, then
/// the gradients and the loss are combined across the ranks (exact: the pairwise tree over the
/// global grain index, the single-process bits for every R) and steps 3-5 run on every rank on
/// the same gradients, so every rank takes the same decision. The user's function sees global
/// row indices, so the samples of a step are the same whatever R is.
///
/// Failure semantics (the Workload contract): steps 1-3 touch only gradients, the scaler and the
/// optimizer do not allocate, so an error thrown by step() (out of memory in a micro-batch, an
/// anomaly) leaves parameters, optimizer and scaler state as they were; the tape is cleared. A
/// non-finite loss, or a non-finite gradient without loss scaling (bf16, f32) or at the minimum
/// scale under on_min=clamp (the scaler's state is then restored), throws
/// AnomalyError naming the step and micro-batch (the Runner's anomaly policy rolls back); in
/// anomaly mode (detect_anomaly) the first op that produced a NaN/Inf throws
/// autodiff::AnomalyDetected with its full report instead.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tenax/core/fault_injection.hpp"
#include "tenax/train/autodiff/variable.hpp"
#include "tenax/train/loss_scaler.hpp"
#include "tenax/train/nn/lr_schedule.hpp"
#include "tenax/train/nn/optimizer.hpp"

namespace tenax::runtime {
class Communicator;
}  // namespace tenax::runtime

namespace tenax::train {

namespace detail {
class ExactExchange;
class FastExchange;
}  // namespace detail

/// Grains [first, end) of a step's batch (grain g holds rows [g grain, (g + 1) grain)).
struct GrainRange {
  std::int64_t first = 0;  ///< the first grain
  std::int64_t end = 0;    ///< one past the last
};

/// How data-parallel ranks combine their gradients (gradient_exchange.hpp in the runtime):
/// exact gives the single-process bits for any number of ranks; fast uses the communicator's
/// native all-reduce sum (its bits depend on the number of ranks).
enum class GradientReduction : std::uint8_t { exact, fast };

/// What a Trainer's steps are; the constructor checks them (UsageError naming the option).
struct TrainerOptions {
  std::int64_t batch = 0;  ///< the global batch of a step, rows (all ranks together)
  std::int64_t grain = 0;  ///< rows per grain; 0: the whole batch (no backoff invariance)
  /// The loss's divisor (the count the user's loss function divides by): the trainer reports the
  /// step's loss as the sum over grains divided by it. 0: `batch`.
  double loss_divisor = 0;
  double clip_grad_norm = 0;    ///< maximum gradient 2-norm; 0: no clipping
  bool detect_anomaly = false;  ///< autodiff anomaly mode during the step
  int rank = 0;                 ///< for anomaly reports
  /// Data parallel: with a communicator of several ranks, rank r computes its share of the
  /// batch's grains (contiguous, as even as possible; the batch needs at least one grain per
  /// rank) and the gradients and the loss are combined across the ranks by combine() after
  /// every step(), so every rank takes the same step. nullptr or one rank: the whole batch here.
  runtime::Communicator* comm = nullptr;
  /// How the ranks combine their gradients (several ranks only). exact needs every parameter
  /// gradient to come from grain-wise ops (UsageError in step() otherwise).
  GradientReduction reduction = GradientReduction::exact;
};

/// What one Trainer step computed and what commit() will do.
struct TrainStepResult {
  double loss = 0;       ///< mean loss of the global batch (f64 of the grain sums)
  double grad_norm = 0;  ///< 2-norm of the unscaled gradients before clipping (inf on overflow)
  double lr = 0;         ///< learning rate used (0 when skipped)
  std::int64_t micro_batches = 0;  ///< micro-batches this rank ran (its grains only)
  ScalerUpdate scaler;             ///< the loss scaler's decision (skip_step: nothing was updated)
};

/// The optimizer step of the file, staged and committed in the two calls of the Workload
/// contract. It keeps references to the optimizer, the scaler, the schedule and the
/// communicator (options.comm), which must outlive it. One Trainer per training loop; not
/// thread-safe.
class Trainer {
 public:
  /// The loss of rows [begin, end) of the step's global batch, computed with autodiff ops from the
  /// parameters (a Variable that requires grad, one element).
  using MicroBatchLoss = std::function<autodiff::Variable(std::int64_t begin, std::int64_t end)>;

  /// params: the optimizer's parameters (their gradients are what the fused pass reads). The
  /// optimizer, scaler and schedule are referenced, not copied: their state is the caller's to
  /// save and load. UsageError for inconsistent options (naming the option and the fix), no
  /// parameters, a parameter without a gradient, or, with several ranks, a batch of fewer
  /// grains than ranks.
  Trainer(std::vector<autodiff::Variable> params, nn::Optimizer& optimizer,
          DynamicLossScaler& scaler, const nn::LrSchedule& schedule, TrainerOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// One optimizer step (`step` is the state's step count before it, from 0; reports and
  /// injected faults name the step being taken, step + 1, as the Runner does) in micro-batches of
  /// at most `micro_batch` rows. `overflow@step=S` (S = step + 1) writes +Inf into the first
  /// gradient before the fused pass, as an f16 overflow would: from `faults` when given, else
  /// from the run's own plan (TENAX_FAULTS, a job's --inject) when a Runner is taking the step.
  /// A step skipped on overflow and a raise of the loss scale are told to that Runner by
  /// commit(): its console, event log (`step_skipped`, `loss_scale_changed`) and closing line
  /// say them, with no code in the workload.
  ///
  /// The step is computed and staged: the returned result says what commit() will do (the
  /// scaler's decision, the learning rate), but parameters, optimizer and scaler are unchanged
  /// until commit() applies it (the optimizer step and the scaler update, neither of which
  /// allocates or throws for memory); discard() drops it (a peer rank's step failed).
  ///
  /// With several ranks (options.comm), step() computes this rank's grains and acquires what the
  /// exchange needs, but the gradients are combined by combine(): the returned result then holds
  /// only micro_batches, and last_result() the rest after combine().
  ///
  /// Throws AnomalyError for a non-finite loss or gradient (see the file), OverflowError when
  /// the scaler reaches its minimum under MinScalePolicy::error, UsageError for a micro-batch
  /// below 1 row or a loss function that returns a Variable without a gradient, and whatever a
  /// micro-batch throws (out of memory); parameters, optimizer and scaler are then as they were.
  TrainStepResult step(std::int64_t step, std::int64_t micro_batch, const MicroBatchLoss& loss,
                       const FaultPlan* faults = nullptr);
  /// With several ranks: combines the gradients and the loss across the ranks (collective: every
  /// rank calls it after every rank's step() succeeded; it allocates nothing that can run out)
  /// and stages the step as step() does on one rank. Returns the anomaly that makes the step
  /// unusable (a non-finite gradient without loss scaling, found alike on every rank), or
  /// nothing. A no-op on one rank. Throws OverflowError, as step() does, when the combined
  /// gradients overflow at the minimum scale under MinScalePolicy::error.
  [[nodiscard]] std::optional<std::string> combine();
  /// The grains [first, end) of every step's batch this rank computes (all of them on one rank).
  [[nodiscard]] const GrainRange& grains() const noexcept { return grains_; }
  /// grains() in words, for a rank's start-up line: "grains [3, 6) of every step's 8 (rows
  /// [96, 192) of the batch of 256)".
  [[nodiscard]] std::string describe_grains() const;
  /// The result of the last step staged (by step() on one rank, by combine() on several).
  [[nodiscard]] const TrainStepResult& last_result() const noexcept { return last_; }
  /// Applies the step staged by the last successful step(). UsageError when none is staged.
  void commit();
  /// Drops the staged step; the gradients are left as they are (the next step zeroes them).
  void discard() noexcept;

  /// Rows actually used per micro-batch for a requested micro-batch: rounded down to a whole
  /// number of grains, at least one grain, at most the batch.
  [[nodiscard]] std::int64_t effective_micro_batch(std::int64_t micro_batch) const;

 private:
  std::vector<autodiff::Variable> params_;
  nn::Optimizer& optimizer_;
  DynamicLossScaler& scaler_;
  const nn::LrSchedule& schedule_;
  TrainerOptions options_;
  struct Staged {
    DynamicLossScaler scaler;  ///< the scaler after this step's update
    bool apply = false;        ///< false: the step is skipped (overflow)
    double clip = 1;
    double lr = 0;
    bool injected = false;  ///< the step's overflow was injected (overflow@step)
  };
  std::optional<Staged> staged_;
  /// Several ranks: a step computed here, waiting for combine().
  struct Pending {
    std::int64_t step = 0;
    double divisor = 1;
    TrainStepResult result;
    std::vector<double> grain_losses;
    std::int64_t most_grains = 0;
    bool injected = false;  ///< an overflow was injected into this rank's share
    std::unique_ptr<detail::ExactExchange> exact;
    std::unique_ptr<detail::FastExchange> fast;
    Pending();
    Pending(Pending&&) noexcept;
    Pending& operator=(Pending&&) noexcept;
    ~Pending();
  };
  std::optional<Pending> pending_;
  TrainStepResult last_;
  std::int64_t grain_count_ = 0;  ///< grains per step, all ranks together
  GrainRange grains_;             ///< this rank's
  [[nodiscard]] bool parallel() const noexcept;

  /// Steps 3-5 on the accumulated gradients: the fused pass, the scaler's decision, the staging.
  TrainStepResult decide(std::int64_t step, bool inject_overflow, TrainStepResult result);
};

}  // namespace tenax::train
