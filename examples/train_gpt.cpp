// train_gpt: a small GPT learns a text byte by byte (vocabulary 256) as a job that never loses a
// step: kill it, resume it, run it on other ranks or micro-batches -- the same bits.
//
// The model is GPT-2's pre-LayerNorm transformer (nn::GptModel); the data is any byte file, its
// last --val-fraction held out and evaluated under the Runner every --eval-every steps. Sample r
// of step k is a window of --context + 1 bytes: drawn from a Philox permutation of the training
// windows per epoch, or with --sequential at offset ((k B + r) T) mod (len - T - 1), so that an
// outside reference can feed the same batches. --output writes /params/<name> (PyTorch's names
// and layouts) and the loss of every step (/loss); --init starts from such a file.
#include <tenax/tenax.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace ad = tenax::train::autodiff;
namespace nn = tenax::train::nn;
namespace rt = tenax::runtime;
namespace train = tenax::train;
using tenax::Tensor;

struct Settings {
  explicit Settings(tenax::app::App& app)
      : data(app.setting("data", "/usr/share/games/fortunes/songs-poems", "the text, any file")
                 .free_to_change()  // recorded by its contents
                 .expect([](const std::string& path) { return !path.empty(); },
                         "a file's path, not empty")),
        val_fraction(app.setting("val-fraction", 0.1, "the held-out tail of the file (0: none)")
                         .at_least(0.0)
                         .at_most(0.5)),
        sequential(app.setting("sequential", false,
                               "sample r of step k at offset ((k B + r) T) mod (len - T - 1)")),
        layers(app.setting("layers", std::int64_t{4}, "transformer blocks").at_least(1)),
        d_model(
            app.setting("d-model", std::int64_t{128}, "the residual stream's width").at_least(1)),
        heads(app.setting("heads", std::int64_t{4}, "attention heads (dividing --d-model)")
                  .at_least(1)),
        context(app.setting("context", std::int64_t{64}, "T: bytes a sample predicts").at_least(1)),
        batch(app.setting("batch", std::int64_t{32}, "samples per optimizer step").at_least(1)),
        micro_batch(app.setting("micro-batch", std::int64_t{0},
                                "samples per forward pass (0: the batch); halved on out-of-memory")
                        .at_least(0)
                        .not_recorded()),
        dropout(app.setting("dropout", 0.0,
                            "dropout probability after the embeddings and on the "
                            "residual branches (0: none)")
                    .at_least(0.0)
                    .expect([](const double& p) { return p < 1; }, "a probability below 1")),
        weight_decay(app.setting("weight-decay", 0.01,
                                 "AdamW's decoupled weight decay (of the "
                                 "weight matrices and embeddings)")
                         .at_least(0.0)),
        warmup(app.setting("warmup", std::int64_t{0}, "steps of linear learning-rate warmup")
                   .at_least(0)),
        eval_every(app.setting("eval-every", std::int64_t{50},
                               "evaluate the held-out text every N steps (0: at the end only)")
                       .at_least(0)
                       .not_recorded()),
        seed(app.setting("seed", std::uint64_t{0}, "seed of the weights and the sample order")),
        init(app.setting("init", "", "start from this HDF5 file's /params (--output's layout)")
                 .empty_means("weights drawn from --seed")
                 .free_to_change()),
        output(
            app.setting("output", "", "write /params/<name>, /loss and /val_loss to this HDF5 file")
                .empty_means("no output file")
                .not_recorded()),
        sample(app.setting("sample", std::int64_t{0}, "print N bytes generated after training")
                   .at_least(0)
                   .not_recorded()),
        prompt(app.setting("prompt", "The ", "the start of --sample's text").not_recorded()),
        training(app, {.optimizer = "adamw", .lr = 1e-3}) {}

  tenax::app::Setting<std::string>& data;
  tenax::app::Setting<double>& val_fraction;
  tenax::app::Setting<bool>& sequential;
  tenax::app::Setting<std::int64_t>&layers, &d_model, &heads, &context, &batch, &micro_batch;
  tenax::app::Setting<double>&dropout, &weight_decay;
  tenax::app::Setting<std::int64_t>&warmup, &eval_every;
  tenax::app::Setting<std::uint64_t>& seed;
  tenax::app::Setting<std::string>&init, &output;
  tenax::app::Setting<std::int64_t>& sample;
  tenax::app::Setting<std::string>& prompt;
  tenax::app::TrainingSettings training;
};

// N bytes drawn one after the other from the model's next-byte distribution, after the prompt.
std::string generate(nn::GptModel& model, const Settings& o, tenax::Device device) {
  std::string text = o.prompt().empty() ? std::string(" ") : o.prompt();
  const ad::NoGradScope no_grad;
  model.eval();  // no dropout
  for (std::int64_t i = 0; i < o.sample(); ++i) {
    const auto t = std::min<std::int64_t>(static_cast<std::int64_t>(text.size()), o.context());
    Tensor tokens = Tensor::empty({1, t}, tenax::DType::i64);
    for (std::int64_t j = 0; j < t; ++j) {
      tokens.data_as<std::int64_t>()[j] = static_cast<unsigned char>(text[text.size() - t + j]);
    }
    const Tensor logits = model.forward(tokens.to(device), tenax::DType::f32).value();
    const Tensor last = tenax::ops::narrow(logits, 1, t - 1, t).reshape({1, 256});
    Tensor p = Tensor::empty({1, 256}, tenax::DType::f64);
    tenax::ops::softmax(tenax::ops::cast(last, tenax::DType::f64).to(tenax::Device::cpu()), 1, p);
    Tensor u = Tensor::empty({1}, tenax::DType::f64);
    tenax::ops::random_uniform(u, o.seed() + 1, static_cast<std::uint64_t>(i));
    int byte = 0;
    for (double cumulative = p.data_as<double>()[0];
         byte < 255 && cumulative <= u.data_as<double>()[0];) {
      cumulative += p.data_as<double>()[++byte];
    }
    text.push_back(static_cast<char>(byte));
  }
  return text;
}

// The smallest footprint of the run, checked before anything is allocated: the parameters with
// their gradients and AdamW's two moments (16 bytes each), one grain's (8 samples') activations
// (about 24 d per position and block, and the attention weights three times: heads T^2 per sample
// and block; 4 bytes each) and a step's token ids. --layers 100000 or --batch 1e11 is refused here,
// naming the settings, instead of after a long initialisation or a failed allocation.
void expect_fits(const Settings& o, tenax::Device device) {
  const long double d = o.d_model(), t = o.context(), layers = o.layers(), b = o.batch();
  const long double parameters = 2 * 256 * d + t * d + layers * (12 * d * d + 13 * d) + 2 * d;
  const long double grain = std::min<long double>(b, 8);
  const long double bytes =
      16 * parameters + grain * layers * (24 * t * d + 3 * o.heads() * t * t) * 4 + b * (t + 1) * 8;
  const std::string what =
      o.layers.given() + ", " + o.d_model.given() + ", " + o.context.given() + ", " +
      o.batch.given() + " (" +
      std::to_string(static_cast<long long>(std::min<long double>(parameters, 9e18L))) +
      " parameters)";
  const std::string fix =
      "use fewer --layers, a smaller --d-model or --context, or a smaller --batch";
  TENAX_EXPECTS(bytes < 0x1p62L, tenax::OutOfMemoryError,
                what + " needs more bytes than 64 bits count", fix);
  tenax::app::expect_fits_memory(device, static_cast<std::int64_t>(bytes), what, fix);
}

int run(const Settings& o, tenax::app::Job& job) {
  const tenax::Device device = job.device();
  expect_fits(o, device);
  const train::ByteText text(o.data(), o.context(), o.val_fraction());
  const nn::GptConfig config{.vocab = 256,
                             .context = o.context(),
                             .layers = o.layers(),
                             .d_model = o.d_model(),
                             .heads = o.heads(),
                             .dropout = o.dropout()};
  nn::GptModel model(config, tenax::DType::f32, device, o.seed());
  if (!o.init().empty()) nn::load_parameter_file(model, o.init());
  train::SampleOrder order(text.windows(train::TextPart::training), o.seed(), true);
  const tenax::DType compute = o.training.precision().compute_dtype();

  train::TrainingJob spec;
  spec.batch = [&](std::int64_t step) {
    std::vector<std::int64_t> offsets;
    for (std::int64_t r = 0; r < o.batch(); ++r) {
      const std::int64_t position = step * o.batch() + r;
      offsets.push_back(o.sequential() ? text.sequential_offset(position) : order.sample(position));
    }
    return train::Batch{text.batch(train::TextPart::training, offsets).to(device)};
  };
  spec.loss = [&](const train::Batch& b, const ad::LossOptions& options) {
    const std::int64_t t = o.context();
    const Tensor inputs = tenax::ops::narrow(b[0], 1, 0, t);
    const Tensor targets = tenax::ops::narrow(b[0], 1, 1, t + 1);
    return ad::cross_entropy(model.forward(inputs, compute), targets, options);
  };
  if (text.windows(train::TextPart::validation) > 0) {
    spec.validation = [&] {  // non-overlapping windows of the held-out tail
      std::vector<std::int64_t> offsets;
      for (std::int64_t at = 0; at < text.windows(train::TextPart::validation); at += o.context()) {
        offsets.push_back(at);
      }
      return train::Batch{text.batch(train::TextPart::validation, offsets).to(device)};
    };
  }
  train::TrainingRecipe recipe = o.training.recipe(job.runner_options().total_steps);
  std::string& options_text = recipe.optimizer_options;
  options_text =
      "wd=" + std::to_string(o.weight_decay()) + (options_text.empty() ? "" : "," + options_text);
  if (o.warmup() > 0) {
    recipe.schedule += (recipe.schedule.find(':') == std::string::npos ? ":warmup=" : ",warmup=") +
                       std::to_string(o.warmup());
  }
  train::TrainingWorkload workload(
      model, spec,
      {.batch = o.batch(),
       .micro_batch = o.micro_batch(),
       .steps = job.runner_options().total_steps,
       .terms_per_sample = static_cast<double>(o.context()),
       .recipe = recipe,
       .evaluate_every = spec.validation ? (o.eval_every() > 0 ? o.eval_every()
                                                               : job.runner_options().total_steps)
                                         : 0,
       .comm = &job.comm(),
       .device = device});
  rt::RunnerOptions options = job.runner_options();
  options.min_micro_batch = std::min<std::int64_t>(o.batch(), 8);
  const rt::RunResult result = job.run(workload, options);
  if (result.status != rt::RunStatus::completed || job.comm().rank() != 0) return result.exit_code;

  if (!o.output().empty()) {
    tenax::StateDict out = nn::parameter_file_entries(model);
    out.set("loss", workload.loss_curve());
    if (workload.validation_loss()) {
      Tensor val_loss = Tensor::empty({1}, tenax::DType::f64);
      val_loss.data_as<double>()[0] = *workload.validation_loss();
      out.set("val_loss", val_loss);
    }
    tenax::io::write_state_file(o.output(), out, {});
  }
  // The unigram entropy of the training bytes: what a model that ignores the context can reach.
  std::vector<double> counts(256, 0.0);
  for (std::int64_t i = 0; i < text.size(train::TextPart::training); ++i)
    counts[text.bytes()[i]] += 1;
  double entropy = 0;
  for (double c : counts) {
    if (c > 0)
      entropy -= c / text.size(train::TextPart::training) *
                 std::log(c / text.size(train::TextPart::training));
  }
  std::printf(
      "train_gpt: %lld parameters, final loss %.4f, validation loss %s, unigram entropy %.4f "
      "nats\n",
      static_cast<long long>(model.parameter_count()), workload.last().loss,
      workload.validation_loss() ? std::to_string(*workload.validation_loss()).c_str() : "-",
      entropy);
  if (o.sample() > 0) std::printf("%s\n", generate(model, o, device).c_str());
  return 0;
}

int main(int argc, char** argv) {
  tenax::app::App app("train_gpt", "trains a small GPT on a text, byte by byte, as a resumable job",
                      {.steps = 200, .checkpoint_every = 50, .divides_work_across_ranks = true});
  const Settings settings(app);
  app.output_file(settings.output);
  app.record_file_digest(settings.data, "data_xxh64");
  app.record_file_digest(settings.init, "init_xxh64");
  return app.main(argc, argv, [&](tenax::app::Job& job) { return run(settings, job); });
}
