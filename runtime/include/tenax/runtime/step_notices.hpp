/// The channel from a component that runs inside a step (the Trainer, or a job's own) to the run
/// taking it. @file
/// While the Runner steps on a thread, a component asks whether the run's fault plan injects a
/// fault at this step, and tells the run what it did to it (a step skipped on overflow, a
/// loss-scale change): the Runner says each notice on the console, writes it to the event log
/// and counts it in the closing line, so the workload passes nothing by hand. Outside a Runner's
/// step (a component used on its own, a test) there is no run: nothing is injected and nothing is
/// told. Each thread has its own current step (the ranks of a threaded job step on their own
/// threads).
#pragma once

#include <cstdint>

#include "tenax/core/fault_injection.hpp"

namespace tenax::runtime {

/// What a component tells the run about the step being taken.
struct StepNotice {
  /// What happened.
  enum class Kind : std::uint8_t {
    step_skipped,       ///< the optimizer step was not applied (gradients overflowed)
    loss_scale_changed  ///< the loss scale changed without a skipped step (it grew)
  };
  Kind kind = Kind::step_skipped;  ///< what happened
  double loss_scale = 0;           ///< the loss scale after the step
  double previous_loss_scale = 0;  ///< the loss scale before it
  bool injected = false;           ///< the overflow behind it was injected (`overflow@step`)
};

/// The step the Runner is taking on this thread, counted from 1; 0 outside a Runner's step.
[[nodiscard]] std::int64_t current_step() noexcept;

/// True when the run's fault plan (RunnerOptions::faults, TENAX_FAULTS, `--inject`) asks for
/// `kind` at the step being taken on this thread; each plan item fires as often as it says, then
/// no more. False outside a Runner's step.
[[nodiscard]] bool step_injects(FaultKind kind);

/// Tells the run taking a step on this thread what `notice` says. Allocates nothing and never
/// throws (it is called while a step commits); beyond eight notices in one step, further ones
/// are counted as dropped. Does nothing outside a Runner's step.
void notify_step(const StepNotice& notice) noexcept;

}  // namespace tenax::runtime
