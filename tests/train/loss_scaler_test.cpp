// DynamicLossScaler against torch.amp.GradScaler's update rule, step by step; hysteresis; the
// min/max bounds and each MinScalePolicy; the disabled scaler; the state round trip (also through
// a state file); option parsing and validation.
#include "tenax/train/loss_scaler.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/io/state_file.hpp"

namespace tenax::train {
namespace {

// torch.amp.GradScaler's _amp_update_scale_, transcribed: the oracle for hysteresis 1 and bounds
// that are never reached.
struct GradScalerReference {
  double scale;
  double growth;
  double backoff;
  std::int64_t interval;
  std::int64_t tracker = 0;

  void update(bool found_inf) {
    if (found_inf) {
      scale *= backoff;
      tracker = 0;
    } else if (tracker + 1 == interval) {
      scale *= growth;
      tracker = 0;
    } else {
      ++tracker;
    }
  }
};

LossScalerOptions small_options() {
  LossScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 3;
  o.min_scale = 1.0 / 1024;
  o.max_scale = 1 << 20;
  return o;
}

// A fixed pseudo-random sequence of overflow flags, about one in four steps overflowing, with
// runs of clean steps long enough to grow.
std::vector<bool> scripted_overflows(std::size_t n) {
  std::vector<bool> out;
  std::uint32_t x = 12345;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out.push_back((x >> 28) < 4);
  }
  return out;
}

template <class F>
void expect_usage_error(F&& f, std::initializer_list<std::string> words) {
  try {
    f();
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    for (const auto& word : words) {
      EXPECT_NE(message.find(word), std::string::npos) << "'" << word << "' not in: " << message;
    }
  }
}

// Every option of `got` equals the same option of `want`.
void expect_options(const LossScalerOptions& got, const LossScalerOptions& want) {
  EXPECT_EQ(got.init_scale, want.init_scale);
  EXPECT_EQ(got.growth_factor, want.growth_factor);
  EXPECT_EQ(got.backoff_factor, want.backoff_factor);
  EXPECT_EQ(got.growth_interval, want.growth_interval);
  EXPECT_EQ(got.hysteresis, want.hysteresis);
  EXPECT_EQ(got.min_scale, want.min_scale);
  EXPECT_EQ(got.max_scale, want.max_scale);
  EXPECT_EQ(got.on_min, want.on_min);
  EXPECT_EQ(got.enabled, want.enabled);
}

TEST(LossScaler, DefaultsAreGradScalers) {
  expect_options(LossScalerOptions{}, {.init_scale = 65536.0,
                                       .growth_factor = 2.0,
                                       .backoff_factor = 0.5,
                                       .growth_interval = 2000,
                                       .hysteresis = 1,
                                       .min_scale = 1.0,
                                       .max_scale = 16777216.0,
                                       .on_min = MinScalePolicy::error,
                                       .enabled = true});
  const DynamicLossScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(LossScaler, FollowsTheGradScalerRuleStepByStep) {
  LossScalerOptions o = small_options();
  o.min_scale = std::ldexp(1.0, -500);  // bounds this sequence never reaches
  o.max_scale = std::ldexp(1.0, 500);
  DynamicLossScaler scaler(o);
  GradScalerReference reference{1024, 2, 0.5, 3};
  std::int64_t skipped = 0;
  std::int64_t step = 0;
  for (const bool overflow : scripted_overflows(400)) {
    ++step;
    const double before = reference.scale;
    reference.update(overflow);
    const ScalerUpdate u = scaler.update(overflow, step);
    skipped += overflow ? 1 : 0;
    ASSERT_EQ(u.skip_step, overflow) << "step " << step;
    ASSERT_EQ(u.scale_before, before) << "step " << step;
    ASSERT_EQ(u.scale_after, reference.scale) << "step " << step;
    ASSERT_EQ(scaler.scale(), reference.scale) << "step " << step;
    ASSERT_EQ(scaler.growth_tracker(), reference.tracker) << "step " << step;
    ASSERT_EQ(u.backed_off, overflow) << "step " << step;
    ASSERT_EQ(u.grew, reference.scale > before) << "step " << step;
  }
  EXPECT_EQ(scaler.skipped_steps(), skipped);
  EXPECT_GT(skipped, 50);
}

TEST(LossScaler, GrowsAfterExactlyTheIntervalAndOverflowResetsTheTracker) {
  DynamicLossScaler scaler(small_options());  // interval 3
  EXPECT_FALSE(scaler.update(false, 1).grew);
  EXPECT_FALSE(scaler.update(false, 2).grew);
  EXPECT_EQ(scaler.growth_tracker(), 2);
  ScalerUpdate u = scaler.update(false, 3);
  EXPECT_TRUE(u.grew);
  EXPECT_FALSE(u.skip_step);
  EXPECT_EQ(u.scale_before, 1024);
  EXPECT_EQ(u.scale_after, 2048);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  // Two clean steps, an overflow (tracker back to 0), then three more clean steps to grow.
  (void)scaler.update(false, 4);
  (void)scaler.update(false, 5);
  u = scaler.update(true, 6);
  EXPECT_TRUE(u.skip_step);
  EXPECT_TRUE(u.backed_off);
  EXPECT_EQ(u.scale_after, 1024);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_EQ(scaler.consecutive_overflows(), 1);
  EXPECT_FALSE(scaler.update(false, 7).grew);
  EXPECT_EQ(scaler.consecutive_overflows(), 0);
  EXPECT_FALSE(scaler.update(false, 8).grew);
  EXPECT_TRUE(scaler.update(false, 9).grew);
  EXPECT_EQ(scaler.scale(), 2048);
}

TEST(LossScaler, HysteresisBacksOffOnlyAfterConsecutiveOverflows) {
  LossScalerOptions o = small_options();
  o.hysteresis = 3;
  DynamicLossScaler scaler(o);
  // Two overflows: skipped, no backoff; a clean step restores the hysteresis.
  for (std::int64_t s = 1; s <= 2; ++s) {
    const ScalerUpdate u = scaler.update(true, s);
    EXPECT_TRUE(u.skip_step);
    EXPECT_FALSE(u.backed_off);
    EXPECT_EQ(scaler.scale(), 1024);
  }
  EXPECT_FALSE(scaler.update(false, 3).skip_step);
  EXPECT_FALSE(scaler.update(true, 4).backed_off);
  EXPECT_FALSE(scaler.update(true, 5).backed_off);
  // The third in a row backs off, and so does every further one in the same run.
  ScalerUpdate u = scaler.update(true, 6);
  EXPECT_TRUE(u.skip_step);
  EXPECT_TRUE(u.backed_off);
  EXPECT_EQ(scaler.scale(), 512);
  u = scaler.update(true, 7);
  EXPECT_TRUE(u.backed_off);
  EXPECT_EQ(scaler.scale(), 256);
  EXPECT_EQ(scaler.consecutive_overflows(), 4);
  EXPECT_EQ(scaler.skipped_steps(), 6);
  // Clean again: the next backoff waits for three overflows once more.
  EXPECT_FALSE(scaler.update(false, 8).skip_step);
  EXPECT_FALSE(scaler.update(true, 9).backed_off);
  EXPECT_FALSE(scaler.update(true, 10).backed_off);
  EXPECT_TRUE(scaler.update(true, 11).backed_off);
  EXPECT_EQ(scaler.scale(), 128);
}

TEST(LossScaler, ScaleStaysWithinMinAndMax) {
  LossScalerOptions o;
  o.init_scale = 3;
  o.min_scale = 1;
  o.max_scale = 10;
  o.growth_interval = 1;
  o.on_min = MinScalePolicy::skip;
  DynamicLossScaler scaler(o);
  EXPECT_EQ(scaler.update(false, 1).scale_after, 6);
  ScalerUpdate u = scaler.update(false, 2);  // 12 clamped to 10
  EXPECT_TRUE(u.grew);
  EXPECT_EQ(u.scale_after, 10);
  u = scaler.update(false, 3);  // at the maximum: no growth, the tracker still resets
  EXPECT_FALSE(u.grew);
  EXPECT_EQ(u.scale_after, 10);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_EQ(scaler.update(true, 4).scale_after, 5);
  EXPECT_EQ(scaler.update(true, 5).scale_after, 2.5);
  u = scaler.update(true, 6);  // 1.25
  EXPECT_EQ(u.scale_after, 1.25);
  u = scaler.update(true, 7);  // 0.625 clamped to 1
  EXPECT_TRUE(u.backed_off);
  EXPECT_EQ(u.scale_after, 1);
}

TEST(LossScaler, AtTheMinimumTheErrorPolicyThrowsAnOverflowErrorWithTheFix) {
  LossScalerOptions o = small_options();
  o.init_scale = 4;
  o.min_scale = 1;
  DynamicLossScaler scaler(o);
  (void)scaler.update(false, 10);
  EXPECT_EQ(scaler.update(true, 11).scale_after, 2);
  EXPECT_EQ(scaler.update(true, 12).scale_after, 1);  // reaching the minimum is fine
  try {
    (void)scaler.update(true, 13);
    ADD_FAILURE() << "no OverflowError";
  } catch (const OverflowError& e) {
    EXPECT_EQ(e.fault_class(), FaultClass::overflow);
    const std::string cause = e.cause();
    EXPECT_NE(cause.find("minimum (1)"), std::string::npos) << cause;
    EXPECT_NE(cause.find("after 3 consecutive overflowing steps"), std::string::npos) << cause;
    EXPECT_NE(cause.find("at step 13"), std::string::npos) << cause;
    const std::string fix = e.fix();
    for (const char* word :
         {"bf16 or f32 as the training precision", "learning rate",
          "TrainerOptions::detect_anomaly", "check the data", "LossScalerOptions::on_min"}) {
      EXPECT_NE(fix.find(word), std::string::npos) << "'" << word << "' not in: " << fix;
    }
  }
  // Unchanged by the throw.
  EXPECT_EQ(scaler.scale(), 1);
  EXPECT_EQ(scaler.consecutive_overflows(), 2);
  EXPECT_EQ(scaler.skipped_steps(), 2);
}

TEST(LossScaler, AtTheMinimumTheSkipPolicyKeepsSkipping) {
  LossScalerOptions o = small_options();
  o.init_scale = 2;
  o.min_scale = 1;
  o.on_min = MinScalePolicy::skip;
  DynamicLossScaler scaler(o);
  (void)scaler.update(true, 1);
  for (std::int64_t s = 2; s <= 20; ++s) {
    const ScalerUpdate u = scaler.update(true, s);
    EXPECT_TRUE(u.skip_step);
    EXPECT_FALSE(u.backed_off);
    EXPECT_EQ(u.scale_after, 1);
  }
  EXPECT_EQ(scaler.skipped_steps(), 20);
  EXPECT_EQ(scaler.consecutive_overflows(), 20);
  // Clean steps grow it again.
  for (std::int64_t s = 21; s <= 23; ++s) (void)scaler.update(false, s);
  EXPECT_EQ(scaler.scale(), 2);
}

TEST(LossScaler, AtTheMinimumTheClampPolicyStaysAndStopsSkipping) {
  LossScalerOptions o = small_options();
  o.init_scale = 2;
  o.min_scale = 1;
  o.hysteresis = 2;
  o.on_min = MinScalePolicy::clamp;
  DynamicLossScaler scaler(o);
  EXPECT_TRUE(scaler.update(true, 1).skip_step);   // hysteresis
  EXPECT_TRUE(scaler.update(true, 2).backed_off);  // to the minimum
  // At the minimum, a due backoff takes the step instead: the anomaly policy gets the NaN.
  ScalerUpdate u = scaler.update(true, 3);
  EXPECT_FALSE(u.skip_step);
  EXPECT_FALSE(u.backed_off);
  EXPECT_EQ(u.scale_after, 1);
  EXPECT_EQ(scaler.skipped_steps(), 2);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(LossScaler, DisabledScalesByOneAndNeverSkips) {
  LossScalerOptions o = small_options();
  o.enabled = false;
  DynamicLossScaler scaler(o);
  EXPECT_FALSE(scaler.enabled());
  EXPECT_EQ(scaler.scale(), 1);
  for (std::int64_t s = 1; s <= 10; ++s) {
    const ScalerUpdate u = scaler.update(s % 2 == 0, s);
    EXPECT_FALSE(u.skip_step);
    EXPECT_FALSE(u.backed_off);
    EXPECT_FALSE(u.grew);
    EXPECT_EQ(u.scale_before, 1);
    EXPECT_EQ(u.scale_after, 1);
  }
  EXPECT_EQ(scaler.scale(), 1);
  EXPECT_EQ(scaler.skipped_steps(), 0);
  // Even the error policy at a minimum of 1 never fires: there is no overflow to act on.
  o.init_scale = 1;
  o.min_scale = 1;
  DynamicLossScaler at_min(o);
  EXPECT_NO_THROW((void)at_min.update(true, 1));
}

TEST(LossScaler, StateRoundTripContinuesIdentically) {
  LossScalerOptions o = small_options();
  o.hysteresis = 2;
  const std::vector<bool> flags = scripted_overflows(300);
  DynamicLossScaler original(o);
  for (std::size_t i = 0; i < 137; ++i) (void)original.update(flags[i], std::int64_t(i) + 1);
  ASSERT_GT(original.growth_tracker() + original.consecutive_overflows(), 0);

  // Through a state file, as a checkpoint carries it.
  const auto path = std::filesystem::temp_directory_path() /
                    ("tenax-loss-scaler-" + std::to_string(::getpid()) + ".h5");
  io::write_state_file(path, original.state_dict(), {});
  const StateDict loaded = io::read_state_file(path);
  std::filesystem::remove(path);

  DynamicLossScaler resumed(o);
  resumed.load_state_dict(loaded);
  EXPECT_EQ(resumed.scale(), original.scale());
  EXPECT_EQ(resumed.skipped_steps(), original.skipped_steps());
  for (std::size_t i = 137; i < flags.size(); ++i) {
    const ScalerUpdate a = original.update(flags[i], std::int64_t(i) + 1);
    const ScalerUpdate b = resumed.update(flags[i], std::int64_t(i) + 1);
    ASSERT_EQ(a.skip_step, b.skip_step) << i;
    ASSERT_EQ(a.backed_off, b.backed_off) << i;
    ASSERT_EQ(a.grew, b.grew) << i;
    ASSERT_EQ(a.scale_after, b.scale_after) << i;
  }
  EXPECT_EQ(resumed.scale(), original.scale());
  EXPECT_EQ(resumed.growth_tracker(), original.growth_tracker());
  EXPECT_EQ(resumed.consecutive_overflows(), original.consecutive_overflows());
  EXPECT_EQ(resumed.skipped_steps(), original.skipped_steps());
}

TEST(LossScaler, LoadingIsStrict) {
  DynamicLossScaler scaler(small_options());
  const StateDict good = scaler.state_dict();
  auto with = [&](const char* name, StateDict::Value value) {
    StateDict s = good;
    s.set(name, std::move(value));
    return s;
  };
  auto without = [&](const char* name) {
    StateDict s;
    for (const auto& [key, value] : good.entries()) {
      if (key != name) s.set(key, value);
    }
    return s;
  };
  expect_usage_error([&] { scaler.load_state_dict(without("scale")); }, {"no entry 'scale'"});
  expect_usage_error([&] { scaler.load_state_dict(without("skipped_steps")); },
                     {"'skipped_steps'"});
  expect_usage_error([&] { scaler.load_state_dict(with("extra", std::int64_t{1})); },
                     {"unknown entry 'extra'", "growth_tracker"});
  expect_usage_error([&] { scaler.load_state_dict(with("scale", std::int64_t{4})); },
                     {"'scale'", "finite real"});
  expect_usage_error(
      [&] { scaler.load_state_dict(with("scale", std::numeric_limits<double>::infinity())); },
      {"'scale'", "inf"});
  expect_usage_error([&] { scaler.load_state_dict(with("scale", -2.0)); }, {"'scale'"});
  expect_usage_error([&] { scaler.load_state_dict(with("growth_tracker", std::int64_t{-1})); },
                     {"'growth_tracker'", ">= 0"});
  expect_usage_error([&] { scaler.load_state_dict(with("overflow_streak", 1.5)); },
                     {"'overflow_streak'"});
  expect_usage_error([&] { scaler.load_state_dict(with("hysteresis_left", std::int64_t{0})); },
                     {"'hysteresis_left'"});
  EXPECT_EQ(scaler.scale(), 1024);  // unchanged by the failed loads
  // A scale outside the current bounds is clamped into them.
  scaler.load_state_dict(with("scale", 1e30));
  EXPECT_EQ(scaler.scale(), small_options().max_scale);
}

TEST(LossScaler, ParsesOptions) {
  expect_options(
      parse_loss_scaler_options(
          "init=1024,growth=4,backoff=0.25,interval=100,hysteresis=2,min=0.5,max=4096,on_min=skip"),
      {.init_scale = 1024,
       .growth_factor = 4,
       .backoff_factor = 0.25,
       .growth_interval = 100,
       .hysteresis = 2,
       .min_scale = 0.5,
       .max_scale = 4096,
       .on_min = MinScalePolicy::skip});
  EXPECT_EQ(parse_loss_scaler_options("on_min=clamp").on_min, MinScalePolicy::clamp);
  EXPECT_EQ(parse_loss_scaler_options("on_min=error,").on_min, MinScalePolicy::error);
  const LossScalerOptions defaults = parse_loss_scaler_options("");
  EXPECT_EQ(defaults.init_scale, 65536);
  EXPECT_EQ(defaults.growth_interval, 2000);
  EXPECT_EQ(to_string(MinScalePolicy::clamp), "clamp");
}

TEST(LossScaler, OptionErrorsNameTheKeyAndTheFix) {
  const std::string keys = "init, growth, backoff, interval, hysteresis, min, max, on_min";
  expect_usage_error([] { (void)parse_loss_scaler_options("scale=2"); }, {"'scale'", keys});
  expect_usage_error([] { (void)parse_loss_scaler_options("init"); }, {"'init'", "no value", keys});
  expect_usage_error([] { (void)parse_loss_scaler_options("init=1,init=2"); }, {"twice"});
  expect_usage_error([] { (void)parse_loss_scaler_options("init=big"); }, {"'init=big'", "number"});
  expect_usage_error([] { (void)parse_loss_scaler_options("interval=1.5"); },
                     {"'interval=1.5'", "whole number"});
  expect_usage_error([] { (void)parse_loss_scaler_options("on_min=ignore"); },
                     {"'on_min=ignore'", "skip", "clamp"});
  // Validation.
  expect_usage_error([] { (void)parse_loss_scaler_options("growth=1"); }, {"growth", "> 1"});
  expect_usage_error([] { (void)parse_loss_scaler_options("backoff=1"); }, {"backoff", "(0, 1)"});
  expect_usage_error([] { (void)parse_loss_scaler_options("backoff=0"); }, {"backoff"});
  expect_usage_error([] { (void)parse_loss_scaler_options("interval=0"); }, {"interval", ">= 1"});
  expect_usage_error([] { (void)parse_loss_scaler_options("hysteresis=0"); }, {"hysteresis"});
  expect_usage_error([] { (void)parse_loss_scaler_options("min=100,init=10"); },
                     {"min=100", "init=10", "min <= init <= max", "powers of two"});
  expect_usage_error([] { (void)parse_loss_scaler_options("max=100"); }, {"max=100"});
  expect_usage_error([] { (void)parse_loss_scaler_options("min=0,init=1"); }, {"min=0"});
  expect_usage_error([] { (void)parse_loss_scaler_options("max=inf"); }, {"finite"});
  LossScalerOptions bad;
  bad.growth_factor = std::nan("");
  EXPECT_THROW((void)DynamicLossScaler(bad), UsageError);
}

}  // namespace
}  // namespace tenax::train
