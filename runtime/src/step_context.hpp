// The run's side of the channel of tenax/runtime/step_notices.hpp: while the Runner steps on a
// thread, a StepContext is current there; the public functions of that header ask it whether a
// fault is injected at this step and hand it the notices of the components, which the Runner says
// on the console, writes to the event log and counts in the closing line.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "injected_faults.hpp"
#include "tenax/runtime/step_notices.hpp"

namespace tenax::runtime::detail {

using runtime::StepNotice;

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
