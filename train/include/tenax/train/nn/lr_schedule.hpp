/// Learning-rate schedules as pure functions of the optimizer's step count: lr_at(step) depends
/// on nothing else, so a resumed run needs only Optimizer::steps_taken() (already in the
/// optimizer's state_dict) to continue the schedule exactly; the schedule itself is rebuilt from
/// its configuration. Use: `opt.set_lr(schedule.lr_at(opt.steps_taken())); opt.step();`.
/// @file
/// `step` is the number of optimizer steps already taken (0 for the first update), as PyTorch's
/// scheduler.last_epoch after one scheduler.step() per optimizer.step().
///
/// Warmup is PyTorch's LinearLR(start_factor, end_factor = 1, total_iters = W) applied to the
/// base rate for the first W steps, as SequentialLR([LinearLR, main], milestones = [W]) does:
/// ```
/// lr_at(s) = base_lr * (start_factor + (1 - start_factor) * s / W)     for s < W
/// ```
/// (start_factor in (0, 1], PyTorch's default 1/3), so lr_at(0) = start_factor * base_lr and the
/// main schedule starts at s = W with t = s - W:
/// ```
/// constant:  base_lr
/// cosine:    min_lr + (base_lr - min_lr) * (1 + cos(pi * t / (T - W))) / 2 for s < T, and
///            min_lr from s = T on (T = total_steps; CosineAnnealingLR(T_max = T - W, eta_min
///            = min_lr) in closed form, held at its minimum instead of rising again)
/// step:      base_lr * gamma^floor(t / every)  (StepLR(step_size = every, gamma))
/// ```
///
/// Errors are UsageError naming the value, the expectation and the fix. Immutable, so safe to
/// share between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tenax::train::nn {

/// The linear warmup that precedes every schedule (PyTorch's LinearLR, see the file
/// description).
struct Warmup {
  std::int64_t steps = 0;           ///< W >= 0 (0: no warmup)
  double start_factor = 1.0 / 3.0;  ///< of base_lr at step 0, in (0, 1]
};

/// A learning rate as a pure function of the step count (see the file description). Built by
/// the factories below, which check their arguments (base_lr finite and >= 0, warmup.steps
/// >= 0, warmup.start_factor in (0, 1], and each factory's own; UsageError otherwise).
/// Immutable afterwards.
class LrSchedule {
 public:
  /// The main schedule after the warmup.
  enum class Kind {
    constant,  ///< base_lr
    cosine,    ///< cosine annealing from base_lr to min_lr at total_steps
    step       ///< base_lr multiplied by gamma every `every` steps
  };

  /// base_lr after the warmup.
  [[nodiscard]] static LrSchedule constant(double base_lr, Warmup warmup = {});
  /// total_steps > warmup.steps; min_lr finite and >= 0.
  [[nodiscard]] static LrSchedule cosine(double base_lr, std::int64_t total_steps,
                                         double min_lr = 0.0, Warmup warmup = {});
  /// every >= 1; gamma finite and >= 0 (PyTorch's default 0.1).
  [[nodiscard]] static LrSchedule step_decay(double base_lr, std::int64_t every, double gamma = 0.1,
                                             Warmup warmup = {});

  /// The learning rate of the update made after `step` steps (step >= 0, UsageError otherwise).
  [[nodiscard]] double lr_at(std::int64_t step) const;

  /// @name Configuration
  ///@{

  /// The kind, base rate and warmup the schedule was built with.
  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  [[nodiscard]] double base_lr() const noexcept { return base_lr_; }
  [[nodiscard]] const Warmup& warmup() const noexcept { return warmup_; }
  ///@}

  /// The spec form, e.g. "cosine:warmup=100,start_factor=0.333333,min_lr=1e-05,total_steps=1000".
  [[nodiscard]] std::string describe() const;

 private:
  LrSchedule(Kind kind, double base_lr, Warmup warmup);

  Kind kind_;
  double base_lr_;
  Warmup warmup_;
  std::int64_t total_steps_ = 0;  ///< cosine
  double min_lr_ = 0.0;           ///< cosine
  std::int64_t every_ = 1;        ///< step
  double gamma_ = 0.1;            ///< step
};

/// A schedule from a spec "kind" or "kind:key=value,key=value" with kind and keys
/// ```
/// constant   warmup, start_factor
/// cosine     warmup, start_factor, min_lr          (decays to min_lr at total_steps)
/// step       every (required), gamma, warmup, start_factor
/// ```
/// e.g. "constant", "cosine:warmup=100,min_lr=1e-5", "step:every=1000,gamma=0.1,warmup=10".
/// base_lr is the optimizer's configured rate; total_steps the length of the run (used by
/// cosine only). UsageError listing the kinds or the kind's keys for an unknown one, and for a
/// repeated key, a malformed or out-of-range value, or a step spec without every.
[[nodiscard]] LrSchedule parse_lr_schedule(std::string_view spec, double base_lr,
                                           std::int64_t total_steps);

}  // namespace tenax::train::nn
