/// Dynamic loss scaling for f16 training, with the semantics and defaults of PyTorch's
/// torch.amp.GradScaler, plus DeepSpeed-style hysteresis and a floor and ceiling on the scale.
/// @file
/// Use: multiply the loss by scale() before the backward pass, check the (unscaled) gradients for
/// Inf/NaN, then call update(found_nonfinite, step) once per optimizer step; when it says
/// skip_step, drop the gradients and do not step the optimizer. The scale changes only in update(),
/// so it is constant within a gradient-accumulation window.
///
/// Rule, one update() per optimizer step:
///  - overflow (found_nonfinite): the step is skipped and the growth tracker resets to 0. After
///    `hysteresis` consecutive overflowing steps (1, the default, is PyTorch's behaviour: every
///    overflow) the scale is multiplied by backoff_factor, not below min_scale, and every further
///    consecutive overflow backs off again; a clean step restores the hysteresis. When a backoff is
///    due and the scale is already at min_scale, on_min decides (see MinScalePolicy).
///  - clean step: the growth tracker counts it; after growth_interval consecutive clean steps the
///    scale is multiplied by growth_factor, not above max_scale, and the tracker resets to 0.
/// Powers of two for init_scale, the factors and the bounds keep scaling exact (multiplying by a
/// power of two changes only the exponent); other values work but round.
///
/// Disabled (bf16 or f32 training, see precision.hpp): scale() is 1 and update() never skips a step
/// nor changes anything; a non-finite gradient there is not an overflow but an anomaly, which the
/// anomaly policy handles (rollback), not the scaler.
///
/// Not thread-safe: one scaler per training loop.
#pragma once

#include <cstdint>
#include <string_view>

#include "tenax/core/state_dict.hpp"

namespace tenax::train {

/// What happens when a backoff is due and the scale is already at min_scale.
enum class MinScalePolicy {
  error,  ///< throw OverflowError: training cannot make progress with f16 (the default)
  skip,   ///< keep skipping overflowing steps at the minimum scale, never stop
  clamp,  ///< stay at the minimum but stop skipping: the step is taken (skip_step false), so its
          ///< non-finite gradients reach the anomaly policy (rollback), as under bf16/f32
};

/// The scaler's settings (parse_loss_scaler_options() reads them from text); the ranges below
/// are checked by validate_loss_scaler_options().
struct LossScalerOptions {
  double init_scale = 65536;            ///< the first scale: 2^16, GradScaler's default
  double growth_factor = 2;             ///< the scale's factor at a growth, > 1
  double backoff_factor = 0.5;          ///< the scale's factor at a backoff, in (0, 1)
  std::int64_t growth_interval = 2000;  ///< clean steps between growths, >= 1
  int hysteresis = 1;                   ///< consecutive overflows before a backoff, >= 1
  double min_scale = 1;                 ///< the floor of the scale, finite and > 0
  double max_scale = 16777216;          ///< 2^24; min_scale <= init_scale <= max_scale, finite
  MinScalePolicy on_min = MinScalePolicy::error;  ///< what a backoff due at min_scale does
  bool enabled = true;  ///< false: scale 1, update() never skips (bf16/f32)
};

/// What one update() decided.
struct ScalerUpdate {
  bool skip_step = false;   ///< drop this step's gradients, do not step the optimizer
  bool backed_off = false;  ///< the scale went down (by backoff_factor, not below min_scale)
  bool grew = false;        ///< the scale went up (by growth_factor, not above max_scale)
  double scale_before = 1;  ///< scale() when update() was called
  double scale_after = 1;   ///< scale() after it: the scale for the next step's loss
};

/// Throws UsageError naming the first option out of range, its value and the accepted range.
void validate_loss_scaler_options(const LossScalerOptions& options);

/// Parses "init=65536,growth=2,backoff=0.5,interval=2000,hysteresis=2,min=1,max=16777216,
/// on_min=error|skip|clamp" (any subset, in any order, separated by commas; "" gives the defaults)
/// and validates the result. Throws UsageError for an unknown or repeated key (listing the keys), a
/// value that is not a number of the key's kind, or options out of range.
[[nodiscard]] LossScalerOptions parse_loss_scaler_options(std::string_view text);

/// "error", "skip" or "clamp".
[[nodiscard]] std::string_view to_string(MinScalePolicy policy) noexcept;

/// The loss scale of one training loop and its update rule (see the file's rule). Its state
/// (state_dict()) belongs in the checkpoint, so that a resumed run goes on with the same scale.
class DynamicLossScaler {
 public:
  /// Throws UsageError for options out of range (see validate_loss_scaler_options).
  explicit DynamicLossScaler(LossScalerOptions options = {});

  /// The factor to multiply the loss by: 1 when disabled.
  [[nodiscard]] double scale() const noexcept { return options_.enabled ? scale_ : 1.0; }
  /// LossScalerOptions::enabled: false for bf16 or f32 training.
  [[nodiscard]] bool enabled() const noexcept { return options_.enabled; }
  /// The options given at construction.
  [[nodiscard]] const LossScalerOptions& options() const noexcept { return options_; }

  /// Applies the rule above for the optimizer step `step` (used in messages) whose gradients were
  /// found to hold Inf/NaN (`found_nonfinite`) or not. Throws OverflowError (fault class overflow)
  /// when a backoff is due at min_scale under MinScalePolicy::error; the scaler is then unchanged.
  [[nodiscard]] ScalerUpdate update(bool found_nonfinite, std::int64_t step);

  /// Clean steps since the last growth or overflow.
  [[nodiscard]] std::int64_t growth_tracker() const noexcept { return growth_tracker_; }
  /// Overflowing steps in a row up to now (0 after a clean step).
  [[nodiscard]] std::int64_t consecutive_overflows() const noexcept { return overflow_streak_; }
  /// Steps update() told to skip since the run began (resumes with the state).
  [[nodiscard]] std::int64_t skipped_steps() const noexcept { return skipped_steps_; }

  /// The state to checkpoint: scale (real), growth_tracker, hysteresis_left, overflow_streak and
  /// skipped_steps (integers).
  [[nodiscard]] StateDict state_dict() const;
  /// Restores a state_dict(). Strict: throws UsageError naming the entry for a missing entry, an
  /// unknown one, one of the wrong kind, or a value that no scaler can hold (a scale that is not
  /// finite and positive, a negative count, hysteresis_left below 1). A scale outside
  /// [min_scale, max_scale] and a hysteresis_left above the hysteresis of the current options are
  /// clamped into range, so that a run may resume with new options. Unchanged on error.
  void load_state_dict(const StateDict& state);

 private:
  LossScalerOptions options_;
  double scale_ = 1;
  std::int64_t growth_tracker_ = 0;
  std::int64_t hysteresis_left_ = 1;
  std::int64_t overflow_streak_ = 0;
  std::int64_t skipped_steps_ = 0;
};

}  // namespace tenax::train
