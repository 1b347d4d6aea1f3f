// What the library's own components (the Trainer) tell the run about the step being taken,
// without the workload passing anything by hand: while the Runner steps on a thread, a
// StepContext is current there; a component asks it whether a fault is injected at this step
// (overflow@step) and tells it what it did to the run (a step skipped on overflow, a loss-scale
// change). The Runner says each on the console, writes it to the event log and counts it in the
// closing line. Outside a Runner's step there is no current context and nothing is told.
// One idea: the channel from a component to the run.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "injected_faults.hpp"

namespace tenax::runtime::detail {

struct StepNotice {
  enum class Kind : std::uint8_t { step_skipped, loss_scale_changed };
  Kind kind = Kind::step_skipped;
  double loss_scale = 0;           // the scale after the step
  double previous_loss_scale = 0;  // the scale before it
  bool injected = false;           // the overflow behind it was injected (overflow@step)
};

class StepContext {
 public:
  explicit StepContext(InjectedFaults& faults) : faults_(faults) {}
  StepContext(const StepContext&) = delete;
  StepContext& operator=(const StepContext&) = delete;

  // Makes `context` current on this thread for the step `step` (counted from 1) until the
  // scope ends; the notices of an earlier step are dropped.
  class Scope {
   public:
    Scope(StepContext& context, std::int64_t step);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StepContext* previous_;
  };

  // The context of the Runner stepping on this thread, or nullptr.
  [[nodiscard]] static StepContext* current() noexcept;

  // The step being taken (counted from 1).
  [[nodiscard]] std::int64_t step() const noexcept { return step_; }
  // True when the run's fault plan asks for `kind` at the step being taken (once per item).
  bool injects(FaultKind kind) { return faults_.fires(kind, step_); }
  // Records a notice; allocates nothing and never throws (it is called while a step commits).
  // Beyond the capacity of one step, further notices are counted in dropped() only.
  void notify(const StepNotice& notice) noexcept;

  [[nodiscard]] std::span<const StepNotice> notices() const noexcept {
    return {notices_.data(), count_};
  }
  [[nodiscard]] std::size_t dropped() const noexcept { return dropped_; }

 private:
  InjectedFaults& faults_;
  std::int64_t step_ = 0;
  std::array<StepNotice, 8> notices_{};
  std::size_t count_ = 0;
  std::size_t dropped_ = 0;
};

}  // namespace tenax::runtime::detail
