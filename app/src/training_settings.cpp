#include "tenax/app/training_settings.hpp"

#include <algorithm>
#include <utility>

#include "tenax/train/nn/lr_schedule.hpp"
#include "tenax/train/nn/optimizer.hpp"

namespace tenax::app {
namespace {

// The optimizers' names as one_of takes them.
std::vector<std::string> optimizer_choices() {
  std::vector<std::string> names;
  for (const std::string_view name : train::nn::optimizer_names()) names.emplace_back(name);
  return names;
}

}  // namespace

TrainingSettings::TrainingSettings(App& app, const TrainingDefaults& defaults,
                                   TrainingSettingNames names)
    : names_(std::move(names)),
      optimizer_(
          app.setting(names_.optimizer, defaults.optimizer, "the optimizer: sgd, adam or adamw")
              .one_of(optimizer_choices())
              .sets_option("TrainingRecipe::optimizer")),
      lr_(app.setting(names_.lr, defaults.lr, "the learning rate (the schedule's base)")
              .above(0.0)
              .safe_to_change()
              .sets_option("the learning rate")
              .sets_option("TrainingRecipe::lr")),
      optimizer_options_(
          app.setting(names_.optimizer_options, defaults.optimizer_options,
                      "the optimizer's options as key=value text: momentum, nesterov, dampening "
                      "and wd (sgd); beta1, beta2, eps and wd (adam, adamw)")
              .sets_option("TrainingRecipe::optimizer_options")),
      schedule_(app.setting(names_.schedule, defaults.schedule,
                            "the learning-rate schedule: constant, cosine:warmup=W,min_lr=M "
                            "(decays over the run's steps) or step:every=N,gamma=G[,warmup=W]")
                    .expect(
                        [](const std::string& spec) {
                          // Throws naming the kind or key at fault; the length is checked by
                          // recipe() against the run's.
                          (void)train::nn::parse_lr_schedule(spec, 1.0, std::int64_t{1} << 40);
                          return true;
                        },
                        "a learning-rate schedule")
                    .sets_option("TrainingRecipe::schedule")),
      precision_(app.setting(names_.precision, defaults.precision,
                             "f32, f16 (dynamic loss scaling) or bf16; master weights stay f32")
                     .one_of({"f32", "f16", "bf16"})
                     .safe_to_change()
                     .sets_option("the training precision")
                     .sets_option("TrainingRecipe::precision")),
      loss_scaler_(app.setting(names_.loss_scaler, "",
                               "the f16 loss scaler: init=65536,growth=2,backoff=0.5,interval="
                               "2000,hysteresis=1,min=1,max=16777216,on_min=error|skip|clamp")
                       .expect(
                           [](const std::string& text) {
                             (void)train::parse_loss_scaler_options(text);  // names the key
                             return true;
                           },
                           "loss scaler options")
                       .safe_to_change()
                       .sets_option("LossScalerOptions::on_min")
                       .sets_option("TrainingRecipe::loss_scaler")
                       .recorded_when([this] { return precision_() == "f16"; })),
      clip_grad_norm_(app.setting(names_.clip_grad_norm, defaults.clip_grad_norm,
                                  "the bound of the gradients' 2-norm (0: no clipping)")
                          .at_least(0.0)
                          .safe_to_change()
                          .sets_option("TrainerOptions::clip_grad_norm")),
      detect_anomaly_(app.setting(names_.detect_anomaly, false,
                                  "check every op's output and gradients for NaN/Inf and name the "
                                  "op that made one (slower)")
                          .not_recorded()
                          .sets_option("TrainerOptions::detect_anomaly")) {
  Setting<std::int64_t>* steps = app.standard().steps;
  if (steps != nullptr) {
    app.on_parsed([this, steps] {
      if (schedule_().starts_with("cosine")) steps->safe_to_change();
    });
  }
}

train::TrainingRecipe TrainingSettings::recipe(std::int64_t total_steps) const {
  train::TrainingRecipe recipe;
  recipe.optimizer = optimizer_();
  recipe.lr = lr_();
  recipe.optimizer_options = optimizer_options_();
  recipe.schedule = schedule_();
  recipe.total_steps = total_steps;
  recipe.precision = train::parse_precision(precision_());
  recipe.loss_scaler = train::parse_loss_scaler_options(loss_scaler_());
  recipe.trainer.clip_grad_norm = clip_grad_norm_();
  recipe.trainer.detect_anomaly = detect_anomaly_();
  return recipe;
}

train::PrecisionPolicy TrainingSettings::precision() const {
  return {train::parse_precision(precision_())};
}

}  // namespace tenax::app
