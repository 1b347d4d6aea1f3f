#include "tenax/train/training_workload.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/train/nn/optimizer.hpp"

namespace tenax::train {
namespace {

void check_options(const TrainingWorkloadOptions& o) {
  const auto need = [](bool ok, const std::string& cause, const std::string& fix) {
    TENAX_EXPECTS(ok, UsageError, "TrainingWorkload: " + cause, fix);
  };
  need(o.batch >= 1, "batch = " + std::to_string(o.batch) + " but a step needs a sample",
       "pass the global batch in samples, >= 1");
  need(o.micro_batch >= 0 && o.micro_batch <= o.batch,
       "micro_batch = " + std::to_string(o.micro_batch) + " for a batch of " +
           std::to_string(o.batch),
       "pass 0 (the whole batch) or a micro-batch in [1, batch]");
  need(o.grain >= 0 && o.grain <= o.batch,
       "grain = " + std::to_string(o.grain) + " for a batch of " + std::to_string(o.batch),
       "pass 0 (the default) or a grain in [1, batch]");
  need(o.steps >= 0, "steps = " + std::to_string(o.steps) + " is negative",
       "pass the run's length in optimizer steps, >= 0");
  need(o.evaluate_every >= 0,
       "evaluate_every = " + std::to_string(o.evaluate_every) + " is negative",
       "pass 0 (no evaluation during the run) or the number of steps between evaluations");
  need(std::isfinite(o.terms_per_sample) && o.terms_per_sample >= 1,
       "terms_per_sample = " + format_number(o.terms_per_sample) +
           " but every sample adds at least one term to the loss",
       "pass 1 for a label per sample, or the positions (outputs) of a sample");
}

std::vector<nn::ParameterGroup> groups_of(const nn::Module& model, WeightDecayOn on) {
  if (on == WeightDecayOn::matrices) return nn::weight_decay_groups(model);
  std::vector<nn::ParameterGroup> all;
  all.push_back({model.parameters(), true});
  return all;
}

}  // namespace

TrainingWorkload::TrainingWorkload(nn::Module model, TrainingJob job,
                                   TrainingWorkloadOptions options)
    : model_(std::move(model)), job_(std::move(job)), options_(std::move(options)) {
  check_options(options_);
  TENAX_EXPECTS(job_.batch && job_.loss, UsageError,
                "TrainingWorkload: the job has no batch or no loss function",
                "give TrainingJob::batch (the batch of a step) and TrainingJob::loss (the loss of "
                "a micro-batch)");
  divisor_ = static_cast<double>(options_.batch) * options_.terms_per_sample;
  TrainingRecipe recipe = options_.recipe;
  TrainerOptions& trainer = recipe.trainer;
  trainer.batch = options_.batch;
  grain_ = options_.grain > 0 ? options_.grain : std::min<std::int64_t>(options_.batch, 8);
  trainer.grain = grain_;
  trainer.loss_divisor = divisor_;
  trainer.comm = options_.comm;
  if (options_.comm != nullptr) trainer.rank = options_.comm->rank();
  if (recipe.total_steps == 0) recipe.total_steps = options_.steps;
  training_ = std::make_unique<Training>(groups_of(model_, options_.weight_decay_on), recipe);
  loss_history_ = Tensor::empty(Shape{std::max<std::int64_t>(options_.steps, 1)}, DType::f64);
}

TrainingWorkload::~TrainingWorkload() = default;

void TrainingWorkload::init() {
  loss_count_ = 0;
  skipped_ = 0;
}

std::int64_t TrainingWorkload::work_units() const { return options_.batch; }

void TrainingWorkload::step(std::int64_t step, std::int64_t micro_batch) {
  if (loss_count_ >= loss_history_.numel()) {  // a run longer than planned: room for more
    Tensor grown = Tensor::empty(Shape{2 * loss_history_.numel()}, DType::f64);
    ops::copy(grown.slice(0, loss_count_), loss_history_.slice(0, loss_count_));
    loss_history_ = std::move(grown);
  }
  const std::int64_t cap = options_.micro_batch > 0 ? options_.micro_batch : options_.batch;
  const Batch batch = job_.batch(step);
  TENAX_EXPECTS(!batch.empty(), UsageError,
                "TrainingWorkload: the batch of step " + std::to_string(step) +
                    " holds no tensors, so there are no samples to split into micro-batches",
                "return the step's samples from TrainingJob::batch: one or more tensors with "
                "TrainingWorkloadOptions::batch samples on their first axis");
  for (const Tensor& t : batch) {
    TENAX_EXPECTS(t.defined() && t.shape().rank() >= 1 && t.shape()[0] == options_.batch,
                  UsageError,
                  "TrainingWorkload: the batch of step " + std::to_string(step) + " holds " +
                      (t.defined() ? t.describe() : std::string("an undefined tensor")) + ", not " +
                      std::to_string(options_.batch) + " samples on its first axis",
                  "return the step's samples, TrainingWorkloadOptions::batch of them, on the "
                  "first axis of every tensor");
  }
  staged_step_ = step;
  const autodiff::LossOptions loss_options{.divisor = divisor_};
  staged_ =
      training_->step(step, std::min(micro_batch, cap), [&](std::int64_t begin, std::int64_t end) {
        Batch micro;
        micro.reserve(batch.size());
        for (const Tensor& t : batch) micro.push_back(t.slice(begin, end));
        return job_.loss(micro, loss_options);
      });
  staged_val_loss_.reset();
  staged_val_sums_.reset();
  const bool last_step = options_.steps > 0 && step + 1 == options_.steps;
  if (options_.evaluate_every > 0 && ((step + 1) % options_.evaluate_every == 0 || last_step)) {
    // This rank's grains now (an out-of-memory backs it off with the step); the ranks' sums meet
    // in combine_step, after the agreement, where every rank is known to take part.
    staged_val_sums_ = validation_grain_sums();
  }
}

double TrainingWorkload::evaluate() { return combined_validation_loss(validation_grain_sums()); }

TrainingWorkload::GrainRange TrainingWorkload::validation_grains(int rank) const {
  const int ranks = options_.comm != nullptr ? options_.comm->size() : 1;
  const std::int64_t samples = validation_[0].shape()[0];
  const std::int64_t grains = (samples + grain_ - 1) / grain_;
  return {grains * rank / ranks, grains * (rank + 1) / ranks};
}

std::vector<double> TrainingWorkload::validation_grain_sums() {
  TENAX_EXPECTS(static_cast<bool>(job_.validation), UsageError,
                "TrainingWorkload::evaluate: the job has no validation set",
                "give TrainingJob::validation (the held-out samples)");
  if (validation_.empty()) validation_ = job_.validation();
  TENAX_EXPECTS(!validation_.empty() && validation_[0].defined() &&
                    validation_[0].shape().rank() >= 1 && validation_[0].shape()[0] >= 1,
                UsageError, "TrainingWorkload::evaluate: the validation set is empty",
                "return at least one sample from TrainingJob::validation");
  const std::int64_t samples = validation_[0].shape()[0];
  const autodiff::LossOptions sum_options{.divisor = 1.0};  // each grain's loss sum
  const autodiff::NoGradScope no_grad;
  // In evaluation mode (no dropout), back to training mode however it ends.
  struct EvalMode {
    nn::Module& model;
    bool was_training;
    ~EvalMode() { model.train(was_training); }
  } mode{model_, model_.is_training()};
  model_.eval();
  const GrainRange mine = validation_grains(options_.comm != nullptr ? options_.comm->rank() : 0);
  std::vector<double> sums;
  for (std::int64_t g = mine.first; g < mine.last; ++g) {
    const std::int64_t begin = g * grain_;
    const std::int64_t end = std::min(samples, begin + grain_);
    Batch micro;
    for (const Tensor& t : validation_) micro.push_back(t.slice(begin, end));
    sums.push_back(ops::sum(job_.loss(micro, sum_options).value()));
  }
  return sums;
}

double TrainingWorkload::combined_validation_loss(const std::vector<double>& mine) {
  const std::int64_t samples = validation_[0].shape()[0];
  const double per_sample = static_cast<double>(samples) * options_.terms_per_sample;
  if (options_.comm == nullptr || options_.comm->size() == 1) {
    double total = 0;
    for (const double sum : mine) total += sum;
    return total / per_sample;
  }
  // Every rank's grain sums gathered (slots of the largest share), then added in grain order:
  // the single rank's sum, bit for bit, whatever the number of ranks.
  runtime::Communicator& comm = *options_.comm;
  const int ranks = comm.size();
  // The shares assume one validation set: ranks holding different ones are refused on every
  // rank (each sees every count) before sums of different sizes are gathered.
  std::vector<std::int64_t> counts(static_cast<std::size_t>(ranks));
  comm.all_gather_bytes(std::as_bytes(std::span<const std::int64_t>(&samples, 1)),
                        std::as_writable_bytes(std::span<std::int64_t>(counts)));
  for (int r = 1; r < ranks; ++r) {
    TENAX_EXPECTS(counts[static_cast<std::size_t>(r)] == counts[0], UsageError,
                  "TrainingWorkload: the validation set has " + std::to_string(counts[0]) +
                      " samples on rank 0 and " +
                      std::to_string(counts[static_cast<std::size_t>(r)]) + " on rank " +
                      std::to_string(r),
                  "return the same validation set on every rank from TrainingJob::validation "
                  "(each rank evaluates its share of it)");
  }
  std::int64_t slots = 0;
  for (int r = 0; r < ranks; ++r) {
    const GrainRange range = validation_grains(r);
    slots = std::max(slots, range.last - range.first);
  }
  std::vector<double> send(static_cast<std::size_t>(slots), 0.0);
  std::copy(mine.begin(), mine.end(), send.begin());
  std::vector<double> all(static_cast<std::size_t>(slots * ranks));
  comm.all_gather_bytes(std::as_bytes(std::span<const double>(send)),
                        std::as_writable_bytes(std::span<double>(all)));
  double total = 0;
  for (int r = 0; r < ranks; ++r) {
    const GrainRange range = validation_grains(r);
    for (std::int64_t g = range.first; g < range.last; ++g) {
      total += all[static_cast<std::size_t>(r * slots + g - range.first)];
    }
  }
  return total / per_sample;
}

std::optional<std::string> TrainingWorkload::combine_step() {
  std::optional<std::string> anomaly = training_->combine();
  if (!anomaly) staged_ = training_->last_result();
  if (!anomaly && staged_val_sums_) {
    staged_val_loss_ = combined_validation_loss(*staged_val_sums_);
    staged_val_sums_.reset();
  }
  return anomaly;
}

void TrainingWorkload::commit_step() {
  training_->commit();
  const TrainStepResult& result = *staged_;
  loss_history_.data_as<double>()[loss_count_++] = result.loss;
  if (result.scaler.skip_step) ++skipped_;
  last_ = result;
  if (staged_val_loss_) val_loss_ = staged_val_loss_;
  published_val_loss_ = staged_val_loss_.has_value();
  staged_.reset();
  if (job_.committed) job_.committed(staged_step_, last_);
}

void TrainingWorkload::discard_step() {
  training_->discard();
  staged_.reset();
  staged_val_loss_.reset();
  staged_val_sums_.reset();
}

StateDict TrainingWorkload::save_state() const {
  StateDict state;
  state.merge("model", model_.state_dict());
  state.merge("training", training_->state_dict());
  state.set("loss", loss_history_.slice(0, loss_count_));  // a view: written before the next step
  state.set("skipped_steps", skipped_);
  Tensor skipped_batches =
      Tensor::empty(Shape{static_cast<std::int64_t>(skipped_batches_.size())}, DType::i64);
  std::copy(skipped_batches_.begin(), skipped_batches_.end(),
            skipped_batches.data_as<std::int64_t>());
  state.set("skipped_batches", skipped_batches);
  if (val_loss_) state.set("val_loss", *val_loss_);
  return state;
}

void TrainingWorkload::load_state(const StateDict& state) {
  // What the workload itself saved, checked before anything changes.
  for (const auto& [name, value] : state.entries()) {
    const bool known = name.starts_with("model/") || name.starts_with("training/") ||
                       name == "loss" || name == "skipped_steps" || name == "skipped_batches" ||
                       name == "val_loss";
    TENAX_EXPECTS(known, UsageError,
                  "TrainingWorkload: the saved state holds an entry '" + name +
                      "' that a TrainingWorkload does not write",
                  "resume from a checkpoint written by a TrainingWorkload");
  }
  const Tensor& loss = state.tensor("loss");
  TENAX_EXPECTS(loss.dtype() == DType::f64 && loss.shape().rank() == 1, UsageError,
                "TrainingWorkload: the saved loss history is " + loss.describe(),
                "resume from a checkpoint written by a TrainingWorkload");
  const std::int64_t skipped = state.integer("skipped_steps");
  TENAX_EXPECTS(skipped >= 0 && skipped <= loss.numel(), UsageError,
                "TrainingWorkload: the saved count of skipped steps is " + std::to_string(skipped) +
                    " for " + std::to_string(loss.numel()) + " steps taken",
                "resume from a checkpoint written by a TrainingWorkload");
  const Tensor skipped_batches = state.tensor("skipped_batches").to(Device::cpu());
  TENAX_EXPECTS(skipped_batches.dtype() == DType::i64 && skipped_batches.shape().rank() == 1,
                UsageError,
                "TrainingWorkload: the saved skipped_batches is " + skipped_batches.describe(),
                "resume from a checkpoint written by a TrainingWorkload");
  const std::optional<double> val_loss =
      state.contains("val_loss") ? std::optional<double>(state.real("val_loss")) : std::nullopt;
  // The model's and the training's loaders each check everything before changing anything; a
  // refused later part puts the model back.
  const StateDict model_before = model_.state_dict().clone();
  model_.load_state_dict(state.scope("model"));
  try {
    training_->load_state_dict(state.scope("training"));
  } catch (...) {
    model_.load_state_dict(model_before);
    throw;
  }
  if (loss.numel() >= loss_history_.numel()) {  // a checkpoint of a longer run
    loss_history_ = Tensor::empty(Shape{loss.numel() + 1}, DType::f64);
  }
  loss_count_ = loss.numel();
  ops::copy(loss_history_.slice(0, loss_count_), loss.to(Device::cpu()));
  skipped_ = skipped;
  skipped_batches_.assign(skipped_batches.data_as<std::int64_t>(),
                          skipped_batches.data_as<std::int64_t>() + skipped_batches.numel());
  val_loss_ = val_loss;
  if (loss_count_ > 0) last_.loss = loss_history_.data_as<double>()[loss_count_ - 1];
}

bool TrainingWorkload::skip_step(std::int64_t step) {
  training_->discard();
  staged_.reset();
  staged_val_loss_.reset();
  staged_val_sums_.reset();
  skipped_batches_.push_back(step);
  return true;
}

std::string TrainingWorkload::describe_step(std::int64_t step) const {
  if (job_.describe) return job_.describe(step);
  const std::int64_t first = step * options_.batch;
  return "samples " + std::to_string(first) + ".." + std::to_string(first + options_.batch - 1) +
         " of the sample order";
}

std::vector<runtime::StepMetric> TrainingWorkload::step_metrics() const {
  std::vector<runtime::StepMetric> metrics{
      {"loss", last_.loss}, {"grad_norm", last_.grad_norm}, {"lr", last_.lr}};
  if (training_->precision().uses_loss_scaling()) {
    metrics.push_back({"loss_scale", last_.scaler.scale_after});
  }
  if (published_val_loss_) metrics.push_back({"val_loss", *val_loss_});
  return metrics;
}

std::vector<double> TrainingWorkload::losses() const {
  const double* first = loss_history_.data_as<double>();
  return {first, first + loss_count_};
}

Tensor TrainingWorkload::loss_curve() const {
  Tensor curve = Tensor::empty(Shape{loss_count_}, DType::f32);
  const double* losses = loss_history_.data_as<double>();
  float* out = curve.data_as<float>();
  for (std::int64_t k = 0; k < loss_count_; ++k) out[k] = static_cast<float>(losses[k]);
  return curve;
}

}  // namespace tenax::train
