// The model tutorial's job (docs/tutorial-model.md): a model of one's own, a module, learns to
// predict the next byte of a text. A TrainingWorkload trains it: the model, the batch of a step
// and the loss of a micro-batch are all the job says; the Runner checkpoints, resumes and backs
// off as for any job.
#include <tenax/tenax.hpp>

#include <cstdio>
#include <vector>

namespace ad = tenax::train::autodiff;
namespace nn = tenax::train::nn;
namespace train = tenax::train;

// Each byte's successor from the byte alone: an embedding, a LayerNorm and a two-layer MLP.
class NextByte final : public nn::Module {
 public:
  NextByte(std::int64_t width, std::uint64_t seed, tenax::Device device)
      : Module("NextByte"),
        embed_(256, width, tenax::DType::f32, device, seed, 0, 0.02),
        norm_(width, tenax::DType::f32, device),
        hidden_(width, 4 * width, tenax::DType::f32, device, seed, embed_.end_offset()),
        out_(4 * width, 256, tenax::DType::f32, device, seed, hidden_.end_offset()) {
    register_module("embed", embed_);  // its state: embed.weight, norm.weight, ...
    register_module("norm", norm_);
    register_module("hidden", hidden_);
    register_module("out", out_);
  }

  // bytes [batch, T] -> logits of the next byte [batch, T, 256]
  ad::Variable forward(const tenax::Tensor& bytes) const {
    const ad::Variable h = norm_.forward(embed_.forward(bytes));
    return out_.forward(ad::gelu(hidden_.forward(h)));
  }

 private:
  nn::Embedding embed_;
  nn::LayerNorm norm_;
  nn::Linear hidden_, out_;
};

int main(int argc, char** argv) {
  tenax::app::App app("model", "a model of one's own learns the next byte of a text",
                      {.steps = 300, .checkpoint_every = 50});
  auto& data = app.setting("data", "/usr/share/games/fortunes/songs-poems", "the text");
  auto& width = app.setting("width", std::int64_t{32}, "the model's width").at_least(1);
  auto& batch = app.setting("batch", std::int64_t{16}, "windows per step").at_least(1);
  const tenax::app::TrainingSettings training(app, {.optimizer = "adamw", .lr = 3e-3});
  return app.main(argc, argv, [&](tenax::app::Job& job) {
    constexpr std::int64_t kT = 32;               // bytes a window predicts
    const train::ByteText text(data(), kT, 0.1);  // the last tenth held out
    NextByte model(width(), 1, job.device());
    train::SampleOrder order(text.windows(train::TextPart::training), 1, true);

    train::TrainingJob spec;
    spec.batch = [&](std::int64_t step) {  // a function of the step alone: nothing to save
      std::vector<std::int64_t> windows;
      for (std::int64_t r = 0; r < batch(); ++r)
        windows.push_back(order.sample(step * batch() + r));
      return train::Batch{text.batch(train::TextPart::training, windows).to(job.device())};
    };
    spec.loss = [&](const train::Batch& b, const ad::LossOptions& options) {
      const tenax::Tensor bytes = tenax::ops::narrow(b[0], 1, 0, kT);
      const tenax::Tensor next = tenax::ops::narrow(b[0], 1, 1, kT + 1);
      return ad::cross_entropy(model.forward(bytes), next, options);
    };
    const std::int64_t steps = job.runner_options().total_steps;
    train::TrainingWorkload workload(model, spec,
                                     {.batch = batch(),
                                      .steps = steps,
                                      .terms_per_sample = kT,
                                      .recipe = training.recipe(steps),
                                      .comm = &job.comm(),
                                      .device = job.device()});
    const tenax::runtime::RunResult result = job.run(workload);
    if (result.status == tenax::runtime::RunStatus::completed) {
      std::printf("model: loss %.4f\n", workload.last().loss);
    }
    return result.exit_code;
  });
}
