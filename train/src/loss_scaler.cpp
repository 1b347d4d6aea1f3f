#include "tenax/train/loss_scaler.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>

#include "tenax/core/error.hpp"
#include "tenax/core/key_values.hpp"

namespace tenax::train {
namespace {

constexpr const char* kStateKeys =
    "scale, growth_tracker, hysteresis_left, overflow_streak, skipped_steps";

// Shortest text that reads back as the same double.
std::string number_text(double value) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

constexpr std::string_view kKeyList[] = {"init",       "growth", "backoff", "interval",
                                         "hysteresis", "min",    "max",     "on_min"};
constexpr std::string_view kWho = "loss scaler options";

// One "key=value" entry parsed into `options` (the key is one of kKeyList).
void apply_option(LossScalerOptions& options, const KeyValue& kv) {
  const auto real = [&] { return parse_real_value(kWho, kv); };
  if (kv.key == "init") {
    options.init_scale = real();
  } else if (kv.key == "growth") {
    options.growth_factor = real();
  } else if (kv.key == "backoff") {
    options.backoff_factor = real();
  } else if (kv.key == "interval") {
    options.growth_interval = parse_integer_value(kWho, kv);
  } else if (kv.key == "hysteresis") {
    options.hysteresis = static_cast<int>(std::clamp<std::int64_t>(
        parse_integer_value(kWho, kv), 0, std::numeric_limits<int>::max()));
  } else if (kv.key == "min") {
    options.min_scale = real();
  } else if (kv.key == "max") {
    options.max_scale = real();
  } else if (kv.value == "error") {  // on_min
    options.on_min = MinScalePolicy::error;
  } else if (kv.value == "skip") {
    options.on_min = MinScalePolicy::skip;
  } else if (kv.value == "clamp") {
    options.on_min = MinScalePolicy::clamp;
  } else {
    throw UsageError("loss scaler option 'on_min=" + std::string(kv.value) + "' is not a policy",
                     "use on_min=error, on_min=skip or on_min=clamp");
  }
}

}  // namespace

std::string_view to_string(MinScalePolicy policy) noexcept {
  switch (policy) {
    case MinScalePolicy::error:
      return "error";
    case MinScalePolicy::skip:
      return "skip";
    case MinScalePolicy::clamp:
      return "clamp";
  }
  return "unknown";
}

void validate_loss_scaler_options(const LossScalerOptions& o) {
  const std::string exact = " (powers of two keep scaling exact)";
  TENAX_EXPECTS(std::isfinite(o.growth_factor) && o.growth_factor > 1, UsageError,
                "loss scaler growth factor (growth=) is " + number_text(o.growth_factor),
                "use a factor > 1, e.g. growth=2" + exact);
  TENAX_EXPECTS(o.backoff_factor > 0 && o.backoff_factor < 1, UsageError,
                "loss scaler backoff factor (backoff=) is " + number_text(o.backoff_factor),
                "use a factor in (0, 1), e.g. backoff=0.5" + exact);
  TENAX_EXPECTS(o.growth_interval >= 1, UsageError,
                "loss scaler growth interval (interval=) is " + std::to_string(o.growth_interval),
                "use a count of clean steps >= 1, e.g. interval=2000");
  TENAX_EXPECTS(o.hysteresis >= 1, UsageError,
                "loss scaler hysteresis (hysteresis=) is " + std::to_string(o.hysteresis),
                "use a count of consecutive overflows >= 1 (1 backs off at every overflow)");
  TENAX_EXPECTS(
      std::isfinite(o.min_scale) && o.min_scale > 0 && std::isfinite(o.max_scale) &&
          std::isfinite(o.init_scale) && o.min_scale <= o.init_scale && o.init_scale <= o.max_scale,
      UsageError,
      "loss scaler scales are min=" + number_text(o.min_scale) +
          ", init=" + number_text(o.init_scale) + ", max=" + number_text(o.max_scale),
      "use finite scales with 0 < min <= init <= max, e.g. min=1,init=65536,max=16777216" + exact);
  TENAX_EXPECTS(o.on_min == MinScalePolicy::error || o.on_min == MinScalePolicy::skip ||
                    o.on_min == MinScalePolicy::clamp,
                UsageError, "loss scaler on_min policy is not error, skip or clamp",
                "set LossScalerOptions::on_min to one of the MinScalePolicy values");
}

LossScalerOptions parse_loss_scaler_options(std::string_view text) {
  LossScalerOptions options;
  for (const KeyValue& kv : split_key_values(kWho, text, kKeyList)) apply_option(options, kv);
  validate_loss_scaler_options(options);
  return options;
}

DynamicLossScaler::DynamicLossScaler(LossScalerOptions options) : options_(options) {
  validate_loss_scaler_options(options_);
  scale_ = options_.init_scale;
  hysteresis_left_ = options_.hysteresis;
}

ScalerUpdate DynamicLossScaler::update(bool found_nonfinite, std::int64_t step) {
  ScalerUpdate result;
  result.scale_before = scale();
  result.scale_after = scale();
  if (!options_.enabled) return result;

  if (!found_nonfinite) {
    overflow_streak_ = 0;
    hysteresis_left_ = options_.hysteresis;
    // >= rather than ==: a tracker loaded from a run with a longer interval still grows.
    if (++growth_tracker_ >= options_.growth_interval) {
      growth_tracker_ = 0;
      const double grown = std::min(scale_ * options_.growth_factor, options_.max_scale);
      result.grew = grown != scale_;
      scale_ = grown;
    }
    result.scale_after = scale_;
    return result;
  }

  // Decided first and committed after, so that the error leaves the scaler as it was.
  const std::int64_t streak = overflow_streak_ + 1;
  double next_scale = scale_;
  std::int64_t next_left = hysteresis_left_;
  bool skip = true;
  if (hysteresis_left_ > 1) {
    --next_left;
  } else if (scale_ > options_.min_scale) {
    next_scale = std::max(scale_ * options_.backoff_factor, options_.min_scale);
    result.backed_off = true;
  } else if (options_.on_min == MinScalePolicy::error) {
    throw OverflowError(
        "the f16 loss scale reached its minimum (" + number_text(options_.min_scale) + ") after " +
            std::to_string(streak) + " consecutive overflowing steps, at step " +
            std::to_string(step) + ": the gradients hold Inf/NaN even at the smallest scale",
        "use bf16 or f32 as the training precision (a wider exponent range), lower the learning "
        "rate, set TrainerOptions::detect_anomaly to find the op that makes the Inf/NaN, and "
        "check the data for Inf/NaN or extreme values (LossScalerOptions::on_min = skip or "
        "clamp goes on instead)");
  } else if (options_.on_min == MinScalePolicy::clamp) {
    skip = false;
  }
  overflow_streak_ = streak;
  growth_tracker_ = 0;
  hysteresis_left_ = next_left;
  scale_ = next_scale;
  if (skip) ++skipped_steps_;
  result.skip_step = skip;
  result.scale_after = scale_;
  return result;
}

StateDict DynamicLossScaler::state_dict() const {
  StateDict state;
  state.set("scale", scale_);
  state.set("growth_tracker", growth_tracker_);
  state.set("hysteresis_left", hysteresis_left_);
  state.set("overflow_streak", overflow_streak_);
  state.set("skipped_steps", skipped_steps_);
  return state;
}

void DynamicLossScaler::load_state_dict(const StateDict& state) {
  const std::string fix =
      std::string("load what DynamicLossScaler::state_dict() saved (entries ") + kStateKeys + ")";
  for (const auto& [name, value] : state.entries()) {
    const bool known = name == "scale" || name == "growth_tracker" || name == "hysteresis_left" ||
                       name == "overflow_streak" || name == "skipped_steps";
    TENAX_EXPECTS(known, UsageError, "loss scaler state has an unknown entry '" + name + "'", fix);
  }
  auto entry = [&](const char* name) -> const StateDict::Value& {
    TENAX_EXPECTS(state.contains(name), UsageError,
                  std::string("loss scaler state has no entry '") + name + "'", fix);
    return state.at(name);
  };
  auto count = [&](const char* name) {
    const auto* value = std::get_if<std::int64_t>(&entry(name));
    TENAX_EXPECTS(value != nullptr && *value >= 0, UsageError,
                  std::string("loss scaler state entry '") + name + "' is not an integer >= 0",
                  fix);
    return *value;
  };
  const auto* scale = std::get_if<double>(&entry("scale"));
  TENAX_EXPECTS(scale != nullptr && std::isfinite(*scale) && *scale > 0, UsageError,
                "loss scaler state entry 'scale' is not a finite real > 0" +
                    (scale != nullptr ? " (it is " + number_text(*scale) + ")" : std::string()),
                fix);
  const std::int64_t growth_tracker = count("growth_tracker");
  const std::int64_t hysteresis_left = count("hysteresis_left");
  TENAX_EXPECTS(hysteresis_left >= 1, UsageError,
                "loss scaler state entry 'hysteresis_left' is 0; it counts down from the "
                "hysteresis option to 1",
                fix);
  const std::int64_t overflow_streak = count("overflow_streak");
  const std::int64_t skipped_steps = count("skipped_steps");
  scale_ = std::clamp(*scale, options_.min_scale, options_.max_scale);
  growth_tracker_ = growth_tracker;
  hysteresis_left_ = std::min<std::int64_t>(hysteresis_left, options_.hysteresis);
  overflow_streak_ = overflow_streak;
  skipped_steps_ = skipped_steps;
}

}  // namespace tenax::train
