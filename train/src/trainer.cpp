#include "tenax/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "tenax/core/error.hpp"
#include "tenax/core/profiler.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/step_notices.hpp"
#include "tenax/train/autodiff/anomaly.hpp"
#include "tenax/train/autodiff/grain.hpp"
#include "tenax/train/gradient_exchange.hpp"

namespace tenax::train {

Trainer::Trainer(std::vector<autodiff::Variable> params, nn::Optimizer& optimizer,
                 DynamicLossScaler& scaler, const nn::LrSchedule& schedule, TrainerOptions options)
    : params_(std::move(params)),
      optimizer_(optimizer),
      scaler_(scaler),
      schedule_(schedule),
      options_(options) {
  TENAX_EXPECTS(options_.batch >= 1, UsageError,
                "Trainer: batch is " + std::to_string(options_.batch),
                "use a global batch of at least one row");
  TENAX_EXPECTS(options_.grain >= 0 && options_.grain <= options_.batch, UsageError,
                "Trainer: grain is " + std::to_string(options_.grain) + " rows for a batch of " +
                    std::to_string(options_.batch),
                "use a grain between 1 and the batch (0: the whole batch)");
  TENAX_EXPECTS(options_.clip_grad_norm >= 0 && options_.loss_divisor >= 0, UsageError,
                "Trainer: clip_grad_norm " + std::to_string(options_.clip_grad_norm) +
                    " and loss_divisor " + std::to_string(options_.loss_divisor) +
                    " must not be negative",
                "use 0 to turn clipping off and for the default divisor (the batch)");
  TENAX_EXPECTS(!params_.empty(), UsageError, "Trainer: no parameters",
                "pass the model's parameters (e.g. MLP::parameters())");
  for (const autodiff::Variable& p : params_) {
    TENAX_EXPECTS(p.defined() && p.requires_grad() && p.grad().defined(), UsageError,
                  "Trainer: a parameter is undefined or has no gradient",
                  "pass Variables made by Variable::parameter");
  }
  if (options_.grain == 0) options_.grain = options_.batch;
  grain_count_ = (options_.batch + options_.grain - 1) / options_.grain;
  grains_ = {0, grain_count_};
  if (parallel()) {
    const std::int64_t grains = grain_count_;
    TENAX_EXPECTS(grains >= options_.comm->size(), UsageError,
                  "Trainer: a batch of " + std::to_string(options_.batch) + " rows is " +
                      std::to_string(grains) + " grain(s) of " + std::to_string(options_.grain) +
                      " rows, fewer than the " + std::to_string(options_.comm->size()) + " ranks",
                  "use a batch of at least one grain per rank (or a smaller grain, or fewer "
                  "ranks)");
    grains_ = detail::grains_of_rank(grain_count_, options_.comm->size(), options_.comm->rank());
  }
}

bool Trainer::parallel() const noexcept {
  return options_.comm != nullptr && options_.comm->size() > 1;
}

Trainer::~Trainer() = default;
Trainer::Pending::Pending() = default;
Trainer::Pending::Pending(Pending&&) noexcept = default;
Trainer::Pending& Trainer::Pending::operator=(Pending&&) noexcept = default;
Trainer::Pending::~Pending() = default;

std::string Trainer::describe_grains() const {
  const auto text = [](std::int64_t v) { return std::to_string(v); };
  return "grains [" + text(grains_.first) + ", " + text(grains_.end) + ") of every step's " +
         text(grain_count_) + " (rows [" + text(grains_.first * options_.grain) + ", " +
         text(std::min(options_.batch, grains_.end * options_.grain)) + ") of the batch of " +
         text(options_.batch) + ")";
}

std::int64_t Trainer::effective_micro_batch(std::int64_t micro_batch) const {
  const std::int64_t grains = std::max<std::int64_t>(1, micro_batch / options_.grain);
  return std::min(options_.batch, grains * options_.grain);
}

namespace {

// +Inf in a gradient's first element, as an f16 overflow would leave (overflow@step=S).
void poison_first_element(const Tensor& g) {
  ops::fill(g.reshape(Shape{g.numel()}).slice(0, 1), std::numeric_limits<double>::infinity());
}

// True when overflow@step=S asks for an overflow at the step being taken (S = step + 1): from
// the plan passed to Trainer::step, or else from the run's own (the Runner's StepContext, which
// reads TENAX_FAULTS and --inject), so a job needs no wiring for it.
bool overflow_injected(const FaultPlan* faults, std::int64_t step) {
  if (faults != nullptr) {
    return faults->should_fire(FaultKind::overflow, FaultPoint::step,
                               static_cast<std::uint64_t>(step + 1));
  }
  return runtime::current_step() == step + 1 && runtime::step_injects(FaultKind::overflow);
}

// Clears the thread's tape when a micro-batch throws, so that the next attempt starts clean.
struct TapeGuard {
  bool armed = true;
  ~TapeGuard() {
    if (armed) autodiff::Tape::clear();
  }
};

}  // namespace

TrainStepResult Trainer::step(std::int64_t step, std::int64_t micro_batch,
                              const MicroBatchLoss& loss, const FaultPlan* faults) {
  TENAX_EXPECTS(micro_batch >= 1, UsageError,
                "Trainer::step: micro-batch of " + std::to_string(micro_batch) + " rows",
                "use a micro-batch of at least one row");
  TrainStepResult result;
  staged_.reset();
  pending_.reset();
  for (const autodiff::Variable& p : params_) p.zero_grad();

  // Constant over the accumulation window: it changes only in scaler_.update() below.
  const double scale = scaler_.scale();
  const std::int64_t rows = effective_micro_batch(micro_batch);
  std::optional<autodiff::DetectAnomalyScope> anomaly_scope;
  if (options_.detect_anomaly) anomaly_scope.emplace();
  const std::int64_t first_row = grains_.first * options_.grain;
  const std::int64_t end_row = std::min(options_.batch, grains_.end * options_.grain);
  {
    TapeGuard guard;
    autodiff::GrainScope grains(options_.grain);
    for (std::int64_t begin = first_row; begin < end_row; begin += rows) {
      const std::int64_t end = std::min(end_row, begin + rows);
      autodiff::set_anomaly_context({step + 1, result.micro_batches, options_.rank});
      autodiff::GrainScope::set_row_offset(begin);
      std::optional<profiling::Span> forward(std::in_place, "forward", step + 1);
      const autodiff::Variable micro_loss = loss(begin, end);
      TENAX_EXPECTS(micro_loss.defined() && micro_loss.requires_grad(), UsageError,
                    "Trainer::step: the loss function returned a Variable without a gradient",
                    "compute the loss from the model's parameters with autodiff ops, outside "
                    "any NoGradScope");
      const double value = ops::sum(micro_loss.value());
      if (!std::isfinite(value)) {
        throw AnomalyError("non-finite loss (" + std::to_string(value) + ") at step " +
                               std::to_string(step + 1) + ", micro-batch " +
                               std::to_string(result.micro_batches) + " (rows " +
                               std::to_string(begin) + ".." + std::to_string(end - 1) + ")",
                           "set TrainerOptions::detect_anomaly to name the op that made it; lower "
                           "the learning rate or check the input data");
      }
      forward.reset();
      {
        const profiling::Span backward("backward", step + 1);
        autodiff::backward(micro_loss, scale);
      }
      ++result.micro_batches;
    }
    guard.armed = false;
    const double divisor =
        options_.loss_divisor > 0 ? options_.loss_divisor : static_cast<double>(options_.batch);
    if (parallel()) {
      // The exchange needs every rank: it waits for combine(), after the ranks agreed that
      // every step succeeded; what it needs is acquired now (a failure here is this rank's).
      Pending pending;
      pending.step = step;
      // An injected overflow (overflow@step=S, possibly on one rank) goes into this rank's
      // share before the exchange, as a real one would, so every rank sees it in the combined
      // gradients and takes the same decision.
      const bool overflow = overflow_injected(faults, step);
      pending.injected = overflow;
      pending.divisor = divisor;
      pending.result = result;
      pending.grain_losses = autodiff::GrainScope::grain_losses();
      // The most any rank computes (rank 0's share): the loss records have one size everywhere.
      const GrainRange first = detail::grains_of_rank(grain_count_, options_.comm->size(), 0);
      pending.most_grains = first.end - first.first;
      if (options_.reduction == GradientReduction::fast) {
        autodiff::GrainScope::finish_gradients();
        if (overflow) poison_first_element(params_.front().grad());
        pending.fast = std::make_unique<detail::FastExchange>(params_);
      } else {
        TENAX_EXPECTS(autodiff::GrainScope::plain_gradients() == 0, UsageError,
                      "Trainer: " + std::to_string(autodiff::GrainScope::plain_gradients()) +
                          " parameter gradient(s) came from ops that are not grain-wise, which "
                          "the exact reduction across ranks cannot combine",
                      "use grain-wise ops (autodiff::linear) for every parameter, or "
                      "TrainerOptions::reduction = GradientReduction::fast");
        std::vector<autodiff::GrainScope::GradientTree> trees =
            autodiff::GrainScope::take_gradients();
        if (overflow && !trees.empty()) poison_first_element(trees.front().values.front());
        pending.exact = std::make_unique<detail::ExactExchange>(*options_.comm, std::move(trees),
                                                                grain_count_, params_);
      }
      pending_ = std::move(pending);
      return result;
    }
    autodiff::GrainScope::finish_gradients();
    result.loss = autodiff::GrainScope::loss_sum() / divisor;
  }
  return decide(step, overflow_injected(faults, step), result);
}

std::optional<std::string> Trainer::combine() {
  if (!pending_) return std::nullopt;
  Pending pending = std::move(*pending_);
  pending_.reset();
  {
    const profiling::Span span("all_reduce", pending.step + 1);
    if (pending.exact) {
      pending.exact->run(*options_.comm);
    } else {
      pending.fast->run(*options_.comm);
    }
  }
  TrainStepResult result = pending.result;
  result.loss = detail::global_loss_sum(*options_.comm, pending.grain_losses, pending.most_grains) /
                pending.divisor;
  try {
    // An injected overflow went into the gradients before the exchange.
    last_ = decide(pending.step, /*inject_overflow=*/false, result);
    if (staged_) staged_->injected = pending.injected;
  } catch (const AnomalyError& e) {
    // Found in the combined gradients: alike on every rank.
    return e.fix().empty() ? e.cause() : e.cause() + " -- fix: " + e.fix();
  }
  return std::nullopt;
}

TrainStepResult Trainer::decide(std::int64_t step, bool inject_overflow, TrainStepResult result) {
  const double scale = scaler_.scale();
  if (inject_overflow) poison_first_element(params_.front().grad());

  // The fused pass: unscale, count non-finite values, sum squares; parameters in a fixed order.
  std::int64_t nonfinite = 0;
  double sum_of_squares = 0;
  for (const autodiff::Variable& p : params_) {
    const ops::UnscaleReport report = ops::unscale_and_measure(p.grad(), scale);
    nonfinite += report.nonfinite_count;
    sum_of_squares += report.sum_of_squares;
  }
  result.grad_norm =
      nonfinite > 0 ? std::numeric_limits<double>::infinity() : std::sqrt(sum_of_squares);
  if (nonfinite > 0 && !scaler_.enabled()) {
    throw AnomalyError(std::to_string(nonfinite) + " non-finite gradient values at step " +
                           std::to_string(step + 1) + " without loss scaling",
                       "set TrainerOptions::detect_anomaly to name the op that made them; lower "
                       "the learning rate, clip gradients (TrainerOptions::clip_grad_norm) or "
                       "check the data");
  }
  // The scaler's decision is taken on a copy and the optimizer step waits for commit(): until
  // then only the gradients have changed (Workload's step/commit contract).
  DynamicLossScaler decided = scaler_;
  if (nonfinite > 0) {
    result.scaler = decided.update(true, step + 1);
    if (!result.scaler.skip_step) {
      // A scaler that takes the step anyway (on_min=clamp at the minimum scale) leaves the
      // gradients to the anomaly policy, and this step changes nothing.
      throw AnomalyError(std::to_string(nonfinite) + " non-finite gradient values at step " +
                             std::to_string(step + 1) + " at the minimum loss scale " +
                             std::to_string(result.scaler.scale_before) + " (on_min=clamp)",
                         "set TrainerOptions::detect_anomaly to name the op that made them; "
                         "lower the learning rate or use bf16 as the training precision");
    }
    staged_ = Staged{decided, false, 1.0, 0.0, inject_overflow};
    last_ = result;
    return result;
  }
  result.scaler = decided.update(false, step + 1);

  double clip = 1.0;
  if (options_.clip_grad_norm > 0 && result.grad_norm > options_.clip_grad_norm) {
    // torch.nn.utils.clip_grad_norm_: max_norm / (total_norm + 1e-6), only ever shrinking.
    clip = options_.clip_grad_norm / (result.grad_norm + 1e-6);
  }
  result.lr = schedule_.lr_at(optimizer_.steps_taken());
  staged_ = Staged{decided, true, clip, result.lr, false};
  last_ = result;
  return result;
}

void Trainer::commit() {
  TENAX_EXPECTS(staged_.has_value(), UsageError, "Trainer::commit with no step computed",
                "call Trainer::step first (once per commit)");
  const double before = scaler_.scale();
  scaler_ = staged_->scaler;
  // What changed the run is told to it (a skipped step, a loss-scale raise): the Runner says it
  // on the console, logs it and counts it; nothing is told outside a Runner's step.
  using Kind = runtime::StepNotice::Kind;
  if (!staged_->apply) {
    runtime::notify_step({Kind::step_skipped, scaler_.scale(), before, staged_->injected});
  } else if (scaler_.scale() != before) {
    runtime::notify_step({Kind::loss_scale_changed, scaler_.scale(), before, false});
  }
  if (staged_->apply) {
    optimizer_.set_lr(staged_->lr);
    optimizer_.step(staged_->clip);
  }
  staged_.reset();
}

void Trainer::discard() noexcept {
  staged_.reset();
  pending_.reset();
}

}  // namespace tenax::train
