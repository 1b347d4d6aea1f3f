// The anomaly policy: a NaN/Inf in the state (or an AnomalyError from a step) on any rank rolls
// every rank back to the same checkpoint; max_retries rollbacks in a row without getting past
// the failing step stop the run. Only getting past the furthest step found anomalous ends the
// streak: the steps redone between the checkpoint and that step are healthy every time. The
// same step failing again before the streak ended is a repeat: deterministic (the same data, the
// same arithmetic), so no rollback could help; the Runner stops or skips the step
// (RunnerOptions::repeated_anomaly).
#pragma once

#include <algorithm>
#include <cstdint>

namespace tenax::runtime::detail {

class AnomalyPolicy {
 public:
  explicit AnomalyPolicy(int max_retries) : max_retries_(max_retries) {}

  enum class Verdict { roll_back, repeated, exhausted };

  // An agreed anomaly at `step`: roll back, a repeat of the last anomaly's step, or the rollbacks
  // allowed spent.
  [[nodiscard]] Verdict on_anomaly(std::int64_t step) {
    const bool again = in_a_row_ > 0 && step == last_;
    ++in_a_row_;
    furthest_ = std::max(furthest_, step);
    last_ = step;
    if (again) return Verdict::repeated;
    return in_a_row_ <= max_retries_ ? Verdict::roll_back : Verdict::exhausted;
  }
  void on_healthy(std::int64_t step) {
    if (step > furthest_) in_a_row_ = 0;
  }
  // The failing step was skipped: the run got past it.
  void on_skipped() { in_a_row_ = 0; }
  [[nodiscard]] int max_retries() const noexcept { return max_retries_; }

 private:
  int max_retries_;
  int in_a_row_ = 0;
  std::int64_t furthest_ = -1;
  std::int64_t last_ = -1;  // the step of the last anomaly
};

}  // namespace tenax::runtime::detail
