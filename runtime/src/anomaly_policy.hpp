// The anomaly policy: a NaN/Inf in the state (or an AnomalyError from a step) on any rank rolls
// every rank back to the same checkpoint; max_retries rollbacks in a row without getting past
// the failing step stop the run. Only getting past the furthest step found anomalous ends the
// streak: the steps redone between the checkpoint and that step are healthy every time.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tenax::runtime::detail {

class AnomalyPolicy {
 public:
  explicit AnomalyPolicy(int max_retries) : max_retries_(max_retries) {}

  // An agreed anomaly at `step`: true when the run may roll back, false when it must stop.
  [[nodiscard]] bool on_anomaly(std::int64_t step) {
    ++in_a_row_;
    furthest_ = std::max(furthest_, step);
    return in_a_row_ <= max_retries_;
  }
  void on_healthy(std::int64_t step) {
    if (step > furthest_) in_a_row_ = 0;
  }
  [[nodiscard]] int max_retries() const noexcept { return max_retries_; }

 private:
  int max_retries_;
  int in_a_row_ = 0;
  std::int64_t furthest_ = -1;
};

}  // namespace tenax::runtime::detail
