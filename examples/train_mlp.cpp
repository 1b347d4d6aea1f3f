// train_mlp: trains a multilayer perceptron as a resumable job under the Runner, in f32, f16 or
// bf16 (f32 master weights), with gradient accumulation that an out-of-memory backoff does not
// change, dynamic loss scaling for f16, and optional anomaly mode.
//
// Data: a deterministic synthetic set drawn from the Philox generator (--task regression: a
// smooth function of two inputs, d_out 1; --task spirals: two interleaved spirals, 2 classes),
// or the user's own (--data FILE.h5 with /x [N, d_in] float32 and /y: [N, d_out] float32 for
// regression, [N] int64 labels for classification; train::read_array_data reads and checks it).
// Optimizer step k uses the global batch positions k*B .. k*B+B-1 of train::SampleOrder: the
// data in a Philox permutation drawn per epoch (--shuffle, the default) or in file order
// (--no-shuffle).
//
// Losses are PyTorch's defaults: MSE (mean over the batch and the outputs) and cross-entropy
// (mean over the batch), both computed in f32. --output writes the final parameters as
// /params/fc<i>.weight [out, in] and /params/fc<i>.bias [out] (nn.Linear's names and layout) and
// the loss of every optimizer step as /loss (float32); --init reads parameters in that layout.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tenax/app/app.hpp"
#include "tenax/app/problem_size.hpp"
#include "tenax/app/training_settings.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/text.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/dataset_file.hpp"
#include "tenax/io/run_config.hpp"
#include "tenax/io/state_file.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/runtime/runner.hpp"
#include "tenax/train/array_data.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/nn/linear.hpp"
#include "tenax/train/nn/parameter_file.hpp"
#include "tenax/train/precision.hpp"
#include "tenax/train/sample_order.hpp"
#include "tenax/train/synthetic_data.hpp"
#include "tenax/train/training.hpp"
#include "tenax/train/training_workload.hpp"

namespace {

using tenax::Device;
using tenax::DType;
using tenax::StateDict;
using tenax::UsageError;
namespace autodiff = tenax::train::autodiff;
namespace nn = tenax::train::nn;
namespace ops = tenax::ops;
namespace runtime = tenax::runtime;
namespace train = tenax::train;

// train_mlp's settings, each declared once: the flag, its check, its help and what a resume may
// change. Free: --steps (unless the learning-rate schedule is stretched over the run's length,
// cosine, where it changes the rate of every step still to run: then safe), and the files' paths
// (their contents are recorded as digests). Safe with --allow-config-change: what the advice after
// an overflow or an anomaly suggests changing on a resume (--lr, --clip-grad-norm, --loss-scaler,
// --precision among f32, f16 and bf16, all of which keep f32 master weights). The data, the
// model, the batch and its order, the optimizer and the schedule never change. The micro-batch is
// not recorded: whole grains give the same bits at any micro-batch.
struct Settings {
  explicit Settings(tenax::app::App& app)
      : task(app.setting("task", "spirals",
                         "regression (smooth function of 2 inputs) or spirals (2 classes)")
                 .one_of({"regression", "spirals"})
                 .recorded_when([this] { return synthetic(); })),
        samples(app.setting("samples", std::int64_t{4096}, "size of the synthetic data set")
                    .at_least(1)
                    .recorded_when([this] { return synthetic(); })),
        noise(app.setting("noise", 0.05, "standard deviation of the synthetic data's noise")
                  .at_least(0.0)
                  .recorded_when([this] { return synthetic(); })),
        data(app.setting("data", "",
                         "train on this HDF5 file: /x [N, d_in] float32, /y [N, d_out] float32 "
                         "(regression) or [N] int64 (classification)")
                 .empty_means("the synthetic data of --task")
                 .free_to_change()
                 .recorded_when([this] { return !synthetic(); })),
        classes(app.setting("classes", std::int64_t{0},
                            "number of classes of --data's integer labels (0: the largest label + "
                            "1, at most the number of samples)")
                    .expect([](const std::int64_t& c) { return c == 0 || c >= 2; },
                            "0 (the largest label + 1) or a class count of at least 2")
                    .recorded_when([this] { return !synthetic() && classes() > 0; })),
        init(
            app.setting("init", "", "start from the parameters of this HDF5 file (--output layout)")
                .empty_means("parameters drawn from --seed")
                .free_to_change()
                .recorded_when([this] { return !init().empty(); })),
        layers(app.setting("layers", "64,64", "hidden widths, comma-separated (\"\" for none)")),
        activation(app.setting("activation", "tanh", "relu, gelu, tanh or sigmoid")
                       .one_of({"relu", "gelu", "tanh", "sigmoid"})),
        batch(app.setting("batch", std::int64_t{256}, "global batch (samples per optimizer step)")
                  .at_least(1)),
        micro_batch(app.setting("micro-batch", std::int64_t{0},
                                "samples per forward/backward pass (0: the batch); rounded down to "
                                "whole grains; halved by itself when memory runs out")
                        .at_least(0)
                        .not_recorded()),
        grain(app.setting("grain", std::int64_t{32},
                          "samples per gradient grain: gradients are summed grain by grain in a "
                          "fixed order, so any micro-batch that is a multiple of it gives the same "
                          "bits; also the smallest micro-batch of the backoff")
                  .at_least(1)
                  .not_recorded()),  // recorded as the grain that runs (record_also)
        shuffle(app.setting("shuffle", true,
                            "visit the data in a Philox permutation per epoch (--no-shuffle: in "
                            "file order)")),
        reduction(app.setting("reduction", "exact",
                              "on several ranks, how gradients are combined: exact (the "
                              "single-process bits for any number of ranks) or fast (the native "
                              "all-reduce; bits depend on the number of ranks)")
                      .one_of({"exact", "fast"})
                      .sets_option("TrainerOptions::reduction")),
        seed(app.setting("seed", std::uint64_t{0}, "seed of data, initialisation and shuffling")),
        // The optimizer, rate, schedule, precision, loss scaler, clipping and anomaly mode: the
        // training component's own settings (train_mlp keeps --optimizer-options).
        training(app, {.lr = 1e-2}, {.optimizer_options = "optimizer-options"}),
        regrow_after(
            app.setting("regrow-after", std::int64_t{0},
                        "double a backed-off micro-batch again after this many clean steps "
                        "(0: never)")
                .at_least(0)
                .not_recorded()),
        log_every(
            app.setting("log-every", std::int64_t{0}, "print the loss every N steps (0: never)")
                .at_least(0)
                .not_recorded()),
        output(app.setting("output", "",
                           "write /params/fc<i>.weight, /params/fc<i>.bias and /loss to this HDF5 "
                           "file")
                   .empty_means("no output file")
                   .not_recorded()),
        json(app.setting("json", false, "print a JSON summary as the last line").not_recorded()),
        steps(*app.standard().steps) {
    // --steps 0 writes the initial (or --init) parameters without training.
    steps.at_least(0);
  }

  [[nodiscard]] bool synthetic() const { return data().empty(); }
  // The grain that runs: never more than the batch.
  [[nodiscard]] std::int64_t grain_run() const { return std::min(grain(), batch()); }

  tenax::app::Setting<std::string>& task;
  tenax::app::Setting<std::int64_t>& samples;
  tenax::app::Setting<double>& noise;
  tenax::app::Setting<std::string>& data;
  tenax::app::Setting<std::int64_t>& classes;
  tenax::app::Setting<std::string>& init;
  tenax::app::Setting<std::string>& layers;
  tenax::app::Setting<std::string>& activation;
  tenax::app::Setting<std::int64_t>& batch;
  tenax::app::Setting<std::int64_t>& micro_batch;
  tenax::app::Setting<std::int64_t>& grain;
  tenax::app::Setting<bool>& shuffle;
  tenax::app::Setting<std::string>& reduction;
  tenax::app::Setting<std::uint64_t>& seed;
  tenax::app::TrainingSettings training;
  tenax::app::Setting<std::int64_t>& regrow_after;
  tenax::app::Setting<std::int64_t>& log_every;
  tenax::app::Setting<std::string>& output;
  tenax::app::Setting<bool>& json;
  tenax::app::Setting<std::int64_t>& steps;
};

// ---- data ----

using tenax::train::ArrayData;

std::vector<std::int64_t> parse_layers(const std::string& text) {
  std::vector<std::int64_t> widths;
  for (std::size_t at = 0; !text.empty() && at <= text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::optional<std::int64_t> width = tenax::parse_whole<std::int64_t>(item);
    TENAX_EXPECTS(width && *width >= 1, UsageError,
                  "--layers " + text + ": '" + item + "' is not a positive width",
                  "give the hidden widths as a comma-separated list, e.g. --layers 64,64 (empty "
                  "for a linear model)");
    widths.push_back(*width);
    at = comma + 1;
  }
  return widths;
}

// ---- the job: the model, the batch of a step, its loss ----

// The global batch of optimizer step `step`: samples k B .. k B + B - 1 of the order, on the
// device, inputs in the compute dtype; targets f32 (regression) or i64 labels.
train::Batch gather(const ArrayData& data, train::SampleOrder& order, std::int64_t step,
                    std::int64_t b, DType compute, Device device) {
  const ArrayData part = data.subset(order.samples(step * b, b));
  return {(compute == DType::f32 ? part.x : ops::cast(part.x, compute)).to(device),
          part.y.to(device)};
}

std::uint64_t allocations_served(Device device) {
  return static_cast<std::uint64_t>(tenax::memory_stats(device).active_blocks.total);
}

// The smallest footprint of the model and of a step, checked before anything is allocated: every
// parameter with its gradient (4 bytes each; optimizers add their moments), and the step's
// global batch, gathered whole (inputs and targets, 4 bytes each). --layers 50000,50000 or
// --batch 100000000000 is refused here, naming the settings, instead of after gigabytes or
// after a futile micro-batch backoff (the batch is gathered whole at any micro-batch).
void expect_model_fits(const Settings& o, const ArrayData& data,
                       const std::vector<std::int64_t>& widths, Device device) {
  const long double parameters = nn::MLP::parameters_of(widths);
  const long double bytes =
      8.0L * parameters +
      4.0L * static_cast<long double>(o.batch()) *
          static_cast<long double>(data.d_in() + (data.classification() ? 2 : data.d_out()));
  const std::string what = "--layers " + (o.layers().empty() ? std::string("\"\"") : o.layers()) +
                           " (" + tenax::format_bytes(static_cast<double>(8.0L * parameters)) +
                           " of parameters and gradients) with --batch " +
                           std::to_string(o.batch());
  const std::string fix = "use narrower --layers or a smaller --batch";
  TENAX_EXPECTS(bytes < 0x1p62L, tenax::OutOfMemoryError,
                what + " needs more bytes than 64 bits count", fix);
  tenax::app::expect_fits_memory(device, static_cast<std::int64_t>(bytes), what, fix);
}

int run(const Settings& o, tenax::app::Job& job) {
  TENAX_EXPECTS(o.classes() == 0 || !o.data().empty(),
                UsageError,  // the one check between settings
                "--classes " + std::to_string(o.classes()) + " without --data",
                "the synthetic tasks fix their classes (spirals: 2): drop --classes");
  const Device device = job.device();
  // A run that skips the steps that fail again (a bad sample) keeps non-finite data.
  const bool skips = job.runner_options().repeated_anomaly == runtime::RepeatedAnomaly::skip;
  ArrayData data =
      o.data().empty()
          ? (o.task() == "regression" ? train::regression_data(o.samples(), o.noise(), o.seed())
                                      : train::spirals_data(o.samples(), o.noise(), o.seed()))
          : train::read_array_data(
                o.data(), o.classes(), "--classes",
                skips ? train::NonFiniteValues::keep : train::NonFiniteValues::refuse);
  tenax::runtime::Communicator* comm = &job.comm();
  std::vector<std::int64_t> widths{data.d_in()};
  for (std::int64_t w : parse_layers(o.layers())) widths.push_back(w);
  widths.push_back(data.d_out());
  expect_model_fits(o, data, widths, device);
  // Data with NaN or Inf makes the steps that read it fail at every try: refused here, unless
  // the run skips such steps (--on-repeated-anomaly skip), which then names their samples.
  const std::int64_t bad =
      ops::count_nonfinite(data.x) + (data.classification() ? 0 : ops::count_nonfinite(data.y));
  if (bad > 0) {
    const std::string what =
        std::to_string(bad) + " non-finite value(s) in the " +
        (o.data().empty() ? "synthetic data (" + o.noise.given() + " overflows f32's range)"
                          : "data of --data " + o.data());
    TENAX_EXPECTS(skips, UsageError, what,
                  o.data().empty() ? "give --noise a standard deviation the data can hold, e.g. 0.1"
                                   : "clean the data file (every input and target must be "
                                     "finite), or skip the steps that read them: "
                                     "--on-repeated-anomaly skip");
    if (comm->rank() == 0) {
      std::fprintf(stderr,
                   "train_mlp: %s: the steps that read them will fail and be skipped "
                   "(--on-repeated-anomaly skip)\n",
                   what.c_str());
    }
  }
  const train::PrecisionPolicy policy = o.training.precision();
  nn::MLP mlp(widths, nn::parse_activation(o.activation()), policy.master_dtype(), device,
              o.seed());
  if (!o.init().empty()) nn::load_parameter_file(mlp, o.init());
  train::SampleOrder order(data.size(), o.seed(), o.shuffle());

  // Allocation numbers of the second step taken in this process (for fault-injection tests:
  // oom@alloc=N with N in that range fails inside a training step).
  std::uint64_t allocations_before = 0;
  std::int64_t steps_in_process = 0;
  std::pair<std::uint64_t, std::uint64_t> step_allocations{0, 0};
  const bool speaks = comm->rank() == 0;
  train::TrainingJob spec;
  spec.batch = [&](std::int64_t step) {
    allocations_before = allocations_served(device);
    return gather(data, order, step, o.batch(), policy.compute_dtype(), device);
  };
  spec.loss = [&](const train::Batch& b, const autodiff::LossOptions& options) {
    const autodiff::Variable out = mlp.forward(autodiff::Variable::constant(b[0]));
    if (data.classification()) return autodiff::cross_entropy(out, b[1], options);
    return autodiff::mse_loss(out, autodiff::Variable::constant(b[1]), options);
  };
  spec.describe = [&](std::int64_t step) { return order.describe(step * o.batch(), o.batch()); };
  spec.committed = [&](std::int64_t step, const train::TrainStepResult& result) {
    if (++steps_in_process == 2)
      step_allocations = {allocations_before + 1, allocations_served(device)};
    if (speaks && o.log_every() > 0 && (step + 1) % o.log_every() == 0) {
      std::fprintf(stderr, "train_mlp: step %lld loss %.6g grad-norm %.4g lr %.4g scale %g%s\n",
                   static_cast<long long>(step + 1), result.loss, result.grad_norm, result.lr,
                   result.scaler.scale_after, result.scaler.skip_step ? " (skipped)" : "");
    }
  };
  train::TrainingRecipe recipe = o.training.recipe(o.steps());
  recipe.trainer.reduction =
      o.reduction() == "fast" ? train::GradientReduction::fast : train::GradientReduction::exact;
  // What the losses divide by: the samples of the global batch (times the outputs for MSE, whose
  // mean is over both).
  train::TrainingWorkload workload(
      mlp, spec,
      {.batch = o.batch(),
       .micro_batch = o.micro_batch(),
       .grain = o.grain_run(),
       .steps = o.steps(),
       .terms_per_sample = data.classification() ? 1.0 : static_cast<double>(data.d_out()),
       .recipe = recipe,
       .weight_decay_on = train::WeightDecayOn::all,
       .comm = comm,
       .device = device});
  runtime::RunnerOptions options = job.runner_options();
  options.min_micro_batch = o.grain_run();
  // --micro-batch rounded down to whole grains (one at least), as the trainer runs it.
  options.max_micro_batch =
      o.micro_batch() == 0
          ? o.batch()
          : std::min(o.batch(),
                     std::max(options.min_micro_batch,
                              o.micro_batch() / options.min_micro_batch * options.min_micro_batch));
  options.regrow_micro_batch_after = o.regrow_after();
  if (comm->size() > 1) {  // which share of every step each rank computes, said once by each
    std::fprintf(stderr, "train_mlp [rank %d/%d]: data parallel: %s, --reduction %s\n",
                 comm->rank(), comm->size(),
                 workload.training().trainer().describe_grains().c_str(), o.reduction().c_str());
  }
  const auto write_output = [&] {
    StateDict out = nn::parameter_file_entries(mlp);
    out.set("loss", workload.loss_curve());
    tenax::io::write_state_file(o.output(), out, {});
  };
  if (o.steps() == 0) {
    // No training: the initial (or --init) parameters, written out. No run to checkpoint.
    if (comm->rank() == 0 && !o.output().empty()) write_output();
    std::printf("train_mlp: --steps 0: the initial parameters%s, nothing trained\n",
                o.output().empty() ? "" : (" written to " + o.output()).c_str());
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  const runtime::RunResult result = job.run(workload, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result.status != runtime::RunStatus::completed) return result.exit_code;
  if (comm->rank() != 0) return 0;  // every rank holds the same model; rank 0 reports
  if (!o.output().empty()) write_output();
  const std::vector<double> losses = workload.losses();
  const double final_loss = losses.empty() ? 0.0 : losses.back();
  std::printf(
      "train_mlp: %s, %lld parameters, %s on %s: %lld steps, final loss %.6g, %lld skipped, "
      "micro-batch %lld\n",
      o.data().empty() ? o.task().c_str() : o.data().c_str(),
      static_cast<long long>(mlp.parameter_count()),
      std::string(train::to_string(policy.precision)).c_str(), tenax::to_string(device).c_str(),
      static_cast<long long>(losses.size()), final_loss,
      static_cast<long long>(workload.skipped_steps()), static_cast<long long>(result.micro_batch));
  if (o.json()) {
    std::printf(
        "{\"steps\":%lld,\"final_loss\":%.9g,\"skipped_steps\":%lld,\"skipped_batches\":%lld,"
        "\"micro_batch\":%lld,\"seconds\":%.6f,\"loss_scale\":%g,\"step_allocations\":"
        "{\"first\":%llu,\"last\":%llu}}\n",
        static_cast<long long>(losses.size()), final_loss,
        static_cast<long long>(workload.skipped_steps()),
        static_cast<long long>(workload.skipped_batches().size()),
        static_cast<long long>(result.micro_batch), seconds, workload.last().scaler.scale_after,
        static_cast<unsigned long long>(step_allocations.first),
        static_cast<unsigned long long>(step_allocations.second));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tenax::app::App app("train_mlp",
                      "trains an MLP as a resumable job (f32, f16 or bf16 with f32 master "
                      "weights), with gradient accumulation that survives out-of-memory backoff "
                      "unchanged",
                      {.steps = 300, .checkpoint_every = 50, .divides_work_across_ranks = true});
  const Settings settings(app);
  app.output_file(settings.output);
  // The grain that runs is recorded; input files by their contents too.
  app.record_also([&](tenax::io::ConfigWriter& c) { c.set("grain", settings.grain_run()); });
  app.record_file_digest(settings.data, "data_xxh64");
  app.record_file_digest(settings.init, "init_xxh64");
  return app.main(argc, argv, [&](tenax::app::Job& job) { return run(settings, job); });
}
