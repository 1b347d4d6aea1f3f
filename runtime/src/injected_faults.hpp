// The faults a run injects into itself (RunnerOptions::faults or TENAX_FAULTS): which item fires
// at which step on this rank, and the state poisoning of nan@step and inf@step. An attempt that
// a supervisor restarted (TENAX_RESTART_COUNT > 0) never ends its own process again, so that a
// kill@step item does not kill every attempt. One idea: the Runner's fault injection.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "tenax/core/fault_injection.hpp"
#include "tenax/core/state_dict.hpp"

namespace tenax::runtime::detail {

class InjectedFaults {
 public:
  // `plan`: the run's plan (nullptr: the process's, from TENAX_FAULTS), for `rank`.
  InjectedFaults(const FaultPlan* plan, int rank);
  InjectedFaults(const InjectedFaults&) = delete;  // fired_ points into plan_
  InjectedFaults& operator=(const InjectedFaults&) = delete;

  // True when the plan asks for `kind` at step `step_number`. An item S[xM] fires M times at
  // step S (for oom: M attempts of the step in a row), then never again in this process.
  bool fires(FaultKind kind, std::int64_t step_number);

  // What the checkpoint store may inject: the plan less its kill items in a restarted attempt.
  [[nodiscard]] FaultPlan& checkpoint_plan() noexcept { return checkpoint_plan_; }

  // Writes a non-finite `value` into the first element of the first floating tensor of `state`
  // (the tensors are the workload's own, shared by the StateDict).
  static void poison(const StateDict& state, double value);

  // Flips one bit (bit 3: a mantissa bit of every floating dtype, a change of a few units in the
  // last place) of the middle element of the first floating tensor of `state`, as silent data
  // corruption would; says what it flipped ("" when the state has no floating tensor).
  static std::string flip_bit(const StateDict& state);

 private:
  FaultPlan plan_;             // the items for this rank
  FaultPlan checkpoint_plan_;  // what the checkpoint store may inject
  bool may_end_process_;
  std::map<const FaultSpec*, std::uint64_t> fired_;  // times each item fired here
};

}  // namespace tenax::runtime::detail
