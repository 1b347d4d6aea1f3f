#include "tenax/train/nn/lr_schedule.hpp"

#include <cmath>
#include <numbers>
#include <string>
#include <string_view>

#include "tenax/core/error.hpp"
#include "tenax/core/key_values.hpp"
#include "tenax/core/text.hpp"

namespace tenax::train::nn {
namespace {

using tenax::format_number;

constexpr std::string_view kKinds[] = {"constant", "cosine", "step"};
constexpr std::string_view kConstantKeys[] = {"warmup", "start_factor"};
constexpr std::string_view kCosineKeys[] = {"warmup", "start_factor", "min_lr"};
constexpr std::string_view kStepKeys[] = {"every", "gamma", "warmup", "start_factor"};

void check_rate(std::string_view who, std::string_view name, double value) {
  TENAX_EXPECTS(std::isfinite(value) && value >= 0.0, UsageError,
                std::string(who) + ": " + std::string(name) + " = " + format_number(value) +
                    " but it must be finite and >= 0",
                "pass a finite non-negative " + std::string(name));
}

}  // namespace

LrSchedule::LrSchedule(Kind kind, double base_lr, Warmup warmup)
    : kind_(kind), base_lr_(base_lr), warmup_(warmup) {
  constexpr std::string_view who = "nn::LrSchedule";
  check_rate(who, "base_lr", base_lr);
  TENAX_EXPECTS(
      warmup.steps >= 0, UsageError,
      "nn::LrSchedule: warmup = " + std::to_string(warmup.steps) + " steps but it must be >= 0",
      "pass the number of warmup steps (0 for none)");
  TENAX_EXPECTS(warmup.start_factor > 0.0 && warmup.start_factor <= 1.0, UsageError,
                "nn::LrSchedule: start_factor = " + format_number(warmup.start_factor) +
                    " but it must lie in (0, 1] (as PyTorch's LinearLR requires)",
                "pass the fraction of base_lr to start the warmup at, e.g. 0.01");
}

LrSchedule LrSchedule::constant(double base_lr, Warmup warmup) {
  return {Kind::constant, base_lr, warmup};
}

LrSchedule LrSchedule::cosine(double base_lr, std::int64_t total_steps, double min_lr,
                              Warmup warmup) {
  LrSchedule s(Kind::cosine, base_lr, warmup);
  check_rate("nn::LrSchedule::cosine", "min_lr", min_lr);
  TENAX_EXPECTS(total_steps > warmup.steps, UsageError,
                "nn::LrSchedule::cosine: total_steps = " + std::to_string(total_steps) +
                    " but the decay needs more steps than the warmup (" +
                    std::to_string(warmup.steps) + ")",
                "pass the run's total number of optimizer steps, above the warmup");
  s.total_steps_ = total_steps;
  s.min_lr_ = min_lr;
  return s;
}

LrSchedule LrSchedule::step_decay(double base_lr, std::int64_t every, double gamma, Warmup warmup) {
  LrSchedule s(Kind::step, base_lr, warmup);
  TENAX_EXPECTS(
      every >= 1, UsageError,
      "nn::LrSchedule::step_decay: every = " + std::to_string(every) + " but it must be >= 1",
      "pass the number of steps between decays, e.g. every=1000");
  check_rate("nn::LrSchedule::step_decay", "gamma", gamma);
  s.every_ = every;
  s.gamma_ = gamma;
  return s;
}

double LrSchedule::lr_at(std::int64_t step) const {
  TENAX_EXPECTS(step >= 0, UsageError,
                "nn::LrSchedule::lr_at: step = " + std::to_string(step) + " but it must be >= 0",
                "pass Optimizer::steps_taken()");
  const std::int64_t w = warmup_.steps;
  if (step < w) {
    const double f = warmup_.start_factor;
    return base_lr_ * (f + (1.0 - f) * static_cast<double>(step) / static_cast<double>(w));
  }
  const std::int64_t t = step - w;
  switch (kind_) {
    case Kind::constant:
      return base_lr_;
    case Kind::cosine: {
      const std::int64_t span = total_steps_ - w;
      if (t >= span) return min_lr_;
      const double phase = std::numbers::pi * static_cast<double>(t) / static_cast<double>(span);
      return min_lr_ + (base_lr_ - min_lr_) * (1.0 + std::cos(phase)) / 2.0;
    }
    case Kind::step:
      return base_lr_ * std::pow(gamma_, static_cast<double>(t / every_));
  }
  return base_lr_;
}

std::string LrSchedule::describe() const {
  std::string text = std::string(kKinds[static_cast<int>(kind_)]) +
                     ":warmup=" + std::to_string(warmup_.steps) +
                     ",start_factor=" + format_number(warmup_.start_factor);
  if (kind_ == Kind::cosine) {
    text += ",min_lr=" + format_number(min_lr_) + ",total_steps=" + std::to_string(total_steps_);
  } else if (kind_ == Kind::step) {
    text += ",every=" + std::to_string(every_) + ",gamma=" + format_number(gamma_);
  }
  return text;
}

LrSchedule parse_lr_schedule(std::string_view spec, double base_lr, std::int64_t total_steps) {
  const std::size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const std::string_view rest =
      colon == std::string_view::npos ? std::string_view() : spec.substr(colon + 1);
  const std::string who = "parse_lr_schedule(\"" + std::string(spec) + "\")";
  std::span<const std::string_view> keys;
  if (kind == "constant") {
    keys = kConstantKeys;
  } else if (kind == "cosine") {
    keys = kCosineKeys;
  } else if (kind == "step") {
    keys = kStepKeys;
  } else {
    throw UsageError(
        who + ": unknown schedule kind '" + std::string(kind) + "'",
        "use one of: " + join_names(kKinds) + ", optionally followed by ':key=value,...'");
  }
  Warmup warmup;
  double min_lr = 0.0;
  double gamma = 0.1;
  std::int64_t every = 0;
  for (const KeyValue& kv : split_key_values(who, rest, keys)) {
    if (kv.key == "warmup") {
      warmup.steps = parse_integer_value(who, kv);
    } else if (kv.key == "every") {
      every = parse_integer_value(who, kv);
    } else if (kv.key == "start_factor") {
      warmup.start_factor = parse_real_value(who, kv);
    } else if (kv.key == "min_lr") {
      min_lr = parse_real_value(who, kv);
    } else {
      gamma = parse_real_value(who, kv);
    }
  }
  if (kind == "constant") return LrSchedule::constant(base_lr, warmup);
  if (kind == "cosine") return LrSchedule::cosine(base_lr, total_steps, min_lr, warmup);
  TENAX_EXPECTS(every >= 1, UsageError,
                who + ": the step schedule needs every=<steps between decays> (>= 1)",
                "add every=N, e.g. \"step:every=1000,gamma=0.1\"");
  return LrSchedule::step_decay(base_lr, every, gamma, warmup);
}

}  // namespace tenax::train::nn
