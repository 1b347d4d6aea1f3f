/// The settings of a training loop, declared by the training component itself: the optimizer
/// and its options, the learning rate and its schedule, the precision and the f16 loss scaler,
/// gradient clipping and anomaly mode. With the default names:
/// @code
///   --optimizer adamw --lr 3e-3 --optimizer.options beta2=0.99,wd=1e-4
///   --schedule cosine:warmup=100,min_lr=1e-5 --precision f16 --loss-scaler init=1024
///   --clip-grad-norm 1 --detect-anomaly
/// @endcode
/// Their resume policy is the training's: what the advice after an overflow or an anomaly
/// suggests changing is safe to change with `--allow-config-change` (the learning rate, the
/// clipping, the loss scaler, the precision among f32, f16 and bf16, all of which keep f32 master
/// weights); the optimizer, its options and the schedule must match; anomaly mode is not
/// recorded. Under a cosine schedule, which spans the run, `--steps` changes the rate of every
/// step still to run, so it becomes safe to change rather than free. recipe() turns the values
/// into a train::TrainingRecipe, from which train::Training builds the loop's parts.
/// @file
#pragma once

#include <cstdint>
#include <string>

#include "tenax/app/app.hpp"
#include "tenax/app/setting.hpp"
#include "tenax/train/training.hpp"

namespace tenax::app {

/// The flags' names, for a program that keeps its own (train_mlp: `--optimizer-options`).
struct TrainingSettingNames {
  std::string optimizer = "optimizer";                  ///< sgd, adam or adamw
  std::string lr = "lr";                                ///< the base learning rate
  std::string optimizer_options = "optimizer.options";  ///< the optimizer's key=value options
  std::string schedule = "schedule";                    ///< the learning-rate schedule
  std::string precision = "precision";                  ///< f32, f16 or bf16
  std::string loss_scaler = "loss-scaler";              ///< the f16 loss scaler's options
  std::string clip_grad_norm = "clip-grad-norm";        ///< the gradient norm's bound
  std::string detect_anomaly = "detect-anomaly";        ///< anomaly mode
};

/// The defaults of a program's training.
struct TrainingDefaults {
  std::string optimizer = "adam";     ///< sgd, adam or adamw
  double lr = 1e-3;                   ///< > 0
  std::string optimizer_options;      ///< e.g. "momentum=0.9" for sgd
  std::string schedule = "constant";  ///< constant, cosine:... or step:...
  std::string precision = "f32";      ///< f32, f16 or bf16
  double clip_grad_norm = 0;          ///< 0: no clipping
};

/// A training loop's settings, declared on an App (see the file). Declare it with the program's
/// other settings, before App::main.
class TrainingSettings {
 public:
  /// Declares the settings on `app`, under the current section.
  TrainingSettings(App& app, const TrainingDefaults& defaults = {},
                   TrainingSettingNames names = {});

  /// The recipe from the settings for a run of `total_steps` optimizer steps (the cosine
  /// schedule's length): optimizer, rate, schedule, precision, loss scaler, and the Trainer's
  /// clipping and anomaly mode. The caller adds the rest of TrainerOptions (batch, grain, loss
  /// divisor, communicator).
  [[nodiscard]] train::TrainingRecipe recipe(std::int64_t total_steps) const;
  /// The precision's dtypes (compute, master) and whether it scales the loss.
  [[nodiscard]] train::PrecisionPolicy precision() const;

 private:
  TrainingSettingNames names_;
  Setting<std::string>& optimizer_;
  Setting<double>& lr_;
  Setting<std::string>& optimizer_options_;
  Setting<std::string>& schedule_;
  Setting<std::string>& precision_;
  Setting<std::string>& loss_scaler_;
  Setting<double>& clip_grad_norm_;
  Setting<bool>& detect_anomaly_;
};

}  // namespace tenax::app
