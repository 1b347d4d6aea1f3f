// The time of one step, whole: from the start of its computation (every attempt of it) through
// the agreement on its outcome, the combination, the commit, the NaN scan and the workload's
// check. Its compute time is that less the time spent inside the communicator's calls (waits
// for peers, transfers), so that the slowest rank is the one that computes longest whatever
// phase its work runs in. One idea: the Runner's step timing.
#pragma once

#include <algorithm>
#include <chrono>

#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime::detail {

class StepClock {
 public:
  explicit StepClock(const Communicator& communicator)
      : communicator_(communicator),
        start_(std::chrono::steady_clock::now()),
        communicating_at_start_(communicator.seconds_communicating()) {}

  // Seconds since the step began.
  [[nodiscard]] double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  // elapsed() less the time spent in communicator calls since the step began.
  [[nodiscard]] double compute() const {
    const double communicating = communicator_.seconds_communicating() - communicating_at_start_;
    return std::max(0.0, elapsed() - communicating);
  }

 private:
  const Communicator& communicator_;
  std::chrono::steady_clock::time_point start_;
  double communicating_at_start_;
};

}  // namespace tenax::runtime::detail
