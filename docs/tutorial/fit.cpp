// The training tutorial's job (docs/tutorial-training.md): a small network learns a function from
// samples. The inputs are drawn from a seed and the targets made by a "teacher" network of fixed
// random weights, so the data set is the same in every process; a student MLP fits it on the mean
// squared error. train::Training takes each optimizer step whole or not at all, with the same bits
// at any micro-batch; the Runner checkpoints, resumes and rolls back.
#include <tenax/tenax.hpp>

#include <algorithm>
#include <cstdio>

namespace rt = tenax::runtime;
namespace train = tenax::train;
namespace nn = tenax::train::nn;
namespace ad = tenax::train::autodiff;

class Fit final : public rt::Workload {
 public:
  Fit(std::int64_t samples, std::int64_t width, std::uint64_t seed,
      const train::TrainingRecipe& recipe, tenax::Device device)
      : x_(tenax::Tensor::empty({samples, 2}, tenax::DType::f32, device)),
        student_({2, width, width, 1}, nn::Activation::tanh, tenax::DType::f32, device, seed),
        training_(student_.parameters(), recipe),
        batch_(recipe.trainer.batch) {
    tenax::ops::random_uniform(x_, seed + 1, 0, -1.0, 1.0);  // inputs in [-1, 1]^2
    const nn::MLP teacher({2, 8, 1}, nn::Activation::tanh, tenax::DType::f32, device, seed + 2);
    const ad::NoGradScope no_tape;
    y_ = teacher.forward(ad::Variable::constant(x_)).value();
  }

  void init() override {}  // the student's weights were drawn from the seed when it was built
  std::int64_t work_units() const override { return batch_; }

  // One optimizer step on the batch of `step` (the data set in order, batch after batch),
  // staged: parameters and optimizer change only in commit_step().
  void step(std::int64_t step, std::int64_t micro_batch) override {
    const std::int64_t first = step * batch_ % x_.shape()[0];
    training_.step(step, micro_batch, [&](std::int64_t begin, std::int64_t end) {
      const ad::Variable x = ad::Variable::constant(x_.slice(first + begin, first + end));
      const ad::Variable y = ad::Variable::constant(y_.slice(first + begin, first + end));
      return ad::mse_loss(student_.forward(x), y, {.divisor = static_cast<double>(batch_)});
    });
  }
  void commit_step() override {
    training_.commit();
    loss_ = training_.last_result().loss;
  }
  void discard_step() override { training_.discard(); }

  tenax::StateDict save_state() const override {
    tenax::StateDict state;
    state.merge("model", student_.state_dict());
    state.merge("training", training_.state_dict());  // the optimizer's moments, step count...
    state.set("loss", loss_);
    return state;
  }
  void load_state(const tenax::StateDict& state) override {
    student_.load_state_dict(state.scope("model"));
    training_.load_state_dict(state.scope("training"));
    loss_ = state.real("loss");
  }
  std::vector<rt::StepMetric> step_metrics() const override { return {{"loss", loss_}}; }
  tenax::Device device() const override { return x_.device(); }
  double loss() const { return loss_; }

 private:
  tenax::Tensor x_, y_;  // the data set: inputs [samples, 2], targets [samples, 1]
  nn::MLP student_;
  train::Training training_;  // optimizer, learning-rate schedule, loss scaler and Trainer
  std::int64_t batch_;
  double loss_ = 0;  // of the last step
};

int main(int argc, char** argv) {
  tenax::app::App app("fit", "a small network fitted to a teacher network's samples",
                      {.steps = 600, .checkpoint_every = 50});
  auto& batches = app.setting("batches", std::int64_t{16}, "batches in the data set").at_least(1);
  auto& batch = app.setting("batch", std::int64_t{256}, "samples per step").at_least(1);
  auto& width = app.setting("width", std::int64_t{32}, "the student's hidden width").at_least(1);
  auto& seed = app.setting("seed", std::uint64_t{1}, "seed of the data and the weights");
  const tenax::app::TrainingSettings training(app, {.lr = 1e-2});  // --optimizer, --lr, ...
  return app.main(argc, argv, [&](tenax::app::Job& job) {
    train::TrainingRecipe recipe = training.recipe(job.runner_options().total_steps);
    recipe.trainer.batch = batch();
    recipe.trainer.grain = std::min<std::int64_t>(batch(), 32);  // rows summed in a fixed order
    Fit fit(batches() * batch(), width(), seed(), recipe, job.device());
    const rt::RunResult result = job.run(fit);
    if (result.status == rt::RunStatus::completed) std::printf("fit: loss %.3e\n", fit.loss());
    return result.exit_code;
  });
}
