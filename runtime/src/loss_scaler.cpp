#include "tenax/runtime/loss_scaler.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "tenax/core/error.hpp"

namespace tenax::runtime {
namespace {

constexpr const char* kKeys = "init, growth, backoff, interval, hysteresis, min, max, on_min";
constexpr const char* kStateKeys =
    "scale, growth_tracker, hysteresis_left, overflow_streak, skipped_steps";

// Shortest text that reads back as the same double.
std::string number_text(double value) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

// The value of a "key=value" option item as a T (double or std::int64_t).
template <class T>
T option_number(std::string_view key, std::string_view value) {
  T parsed{};
  const char* last = value.data() + value.size();
  const std::from_chars_result result = std::from_chars(value.data(), last, parsed);
  constexpr bool kWhole = std::is_integral_v<T>;
  TENAX_EXPECTS(!value.empty() && result.ec == std::errc() && result.ptr == last, UsageError,
                "loss scaler option '" + std::string(key) + "=" + std::string(value) +
                    "' does not hold a " + (kWhole ? "whole number" : "number"),
                "write " + std::string(key) + "=" + (kWhole ? "2000" : "65536") + " or similar");
  return parsed;
}

// One "key=value" item of the option text parsed into `options`.
void apply_option(LossScalerOptions& options, std::string_view key, std::string_view value) {
  auto real = [&](double& field) { field = option_number<double>(key, value); };
  auto whole = [&](std::int64_t& field) { field = option_number<std::int64_t>(key, value); };
  if (key == "init") {
    real(options.init_scale);
  } else if (key == "growth") {
    real(options.growth_factor);
  } else if (key == "backoff") {
    real(options.backoff_factor);
  } else if (key == "interval") {
    whole(options.growth_interval);
  } else if (key == "hysteresis") {
    std::int64_t hysteresis = 0;
    whole(hysteresis);
    options.hysteresis =
        static_cast<int>(std::clamp<std::int64_t>(hysteresis, 0, std::numeric_limits<int>::max()));
  } else if (key == "min") {
    real(options.min_scale);
  } else if (key == "max") {
    real(options.max_scale);
  } else if (key == "on_min") {
    if (value == "error") {
      options.on_min = MinScalePolicy::error;
    } else if (value == "skip") {
      options.on_min = MinScalePolicy::skip;
    } else if (value == "clamp") {
      options.on_min = MinScalePolicy::clamp;
    } else {
      throw UsageError("loss scaler option 'on_min=" + std::string(value) + "' is not a policy",
                       "use on_min=error, on_min=skip or on_min=clamp");
    }
  } else {
    throw UsageError("unknown loss scaler option '" + std::string(key) + "'",
                     std::string("use key=value items with keys among: ") + kKeys);
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
  std::vector<std::string_view> seen;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const std::size_t equals = item.find('=');
    TENAX_EXPECTS(
        equals != std::string_view::npos, UsageError,
        "loss scaler option '" + std::string(item) + "' has no value",
        std::string("write key=value items separated by commas, with keys among: ") + kKeys);
    const std::string_view key = item.substr(0, equals);
    TENAX_EXPECTS(std::find(seen.begin(), seen.end(), key) == seen.end(), UsageError,
                  "loss scaler option '" + std::string(key) + "' is given twice",
                  "give each key once");
    seen.push_back(key);
    apply_option(options, key, item.substr(equals + 1));
  }
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
        "train with --precision bf16 or f32 (wider exponent range), lower the learning rate, "
        "run with --detect-anomaly to find the op that makes the Inf/NaN, and check the data "
        "for Inf/NaN or extreme values (loss scaler on_min=skip or on_min=clamp goes on instead)");
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

}  // namespace tenax::runtime
