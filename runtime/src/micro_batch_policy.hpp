// The out-of-memory policy and its regrowth, one rank's view: both act on the rank's learned
// micro-batch, which is saved in its checkpoints.
//
// Out of memory in a step: this rank proposes retry (the device cache is emptied first), then
// backoff (micro-batch halved), then, at min_micro_batch, stop. The ranks agree on the most
// severe proposal; every rank discards its staged step and computes it again, and only the ranks
// that ran out of memory apply their own proposal (the results do not depend on the
// micro-batch, so ranks with different micro-batches still compute the same bits).
//
// Regrowth (regrow_after = K > 0): K committed, healthy steps in a row without an out-of-memory
// error at a micro-batch below work_units() double it, up to work_units().
#pragma once

#include <algorithm>
#include <cstdint>

#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime::detail {

class MicroBatchPolicy {
 public:
  MicroBatchPolicy(std::int64_t min_micro_batch, std::int64_t regrow_after)
      : min_(min_micro_batch), regrow_after_(regrow_after) {}

  [[nodiscard]] std::int64_t micro_batch() const noexcept { return micro_batch_; }
  [[nodiscard]] std::int64_t clean_steps() const noexcept { return clean_steps_; }
  void reset(std::int64_t micro_batch, std::int64_t clean_steps) {
    micro_batch_ = micro_batch;
    clean_steps_ = clean_steps;
    cache_emptied_ = false;
    step_had_oom_ = false;
  }

  // A new step begins (not a retry of the same one).
  void begin_step() {
    cache_emptied_ = false;
    step_had_oom_ = false;
  }

  // This rank's proposal after running out of memory.
  [[nodiscard]] StepDecision on_out_of_memory() const {
    return !cache_emptied_       ? StepDecision::retry
           : micro_batch_ > min_ ? StepDecision::backoff
                                 : StepDecision::stop;
  }

  // What this rank does before computing the step again, when it ran out of memory and proposed
  // `mine`. Returns the event to log ("oom_retry" or "backoff").
  const char* apply(StepDecision mine) {
    step_had_oom_ = true;
    clean_steps_ = 0;
    if (mine == StepDecision::retry) {
      cache_emptied_ = true;
      return "oom_retry";
    }
    micro_batch_ = std::max(min_, micro_batch_ / 2);
    cache_emptied_ = false;
    return "backoff";
  }

  // After a committed, healthy step: whether the micro-batch doubled (then `previous` holds the
  // old value). `last_step` means no step follows, so growing is pointless.
  bool after_clean_step(std::int64_t full, bool last_step, std::int64_t& previous) {
    if (regrow_after_ <= 0 || micro_batch_ >= full) {
      clean_steps_ = 0;
      return false;
    }
    if (step_had_oom_) return false;
    ++clean_steps_;
    if (clean_steps_ < regrow_after_ || last_step) return false;
    previous = micro_batch_;
    micro_batch_ = micro_batch_ > full / 2 ? full : micro_batch_ * 2;
    return true;
  }
  void grown() { clean_steps_ = 0; }

 private:
  std::int64_t min_;
  std::int64_t regrow_after_;
  std::int64_t micro_batch_ = 1;
  std::int64_t clean_steps_ = 0;
  bool cache_emptied_ = false;
  bool step_had_oom_ = false;
};

}  // namespace tenax::runtime::detail
