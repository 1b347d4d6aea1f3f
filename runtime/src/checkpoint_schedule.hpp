// When the next checkpoint is due: every `every` steps and/or every `seconds` seconds, counted
// from the last checkpoint (written or attempted). Each rank evaluates its own clock; the ranks
// then agree (any rank's trigger makes the checkpoint due on all), so a time trigger that fires
// on one rank a step before another's never splits the job.
#pragma once

#include <chrono>
#include <cstdint>

namespace tenax::runtime::detail {

class CheckpointSchedule {
 public:
  CheckpointSchedule(std::int64_t every, double seconds) : every_(every), seconds_(seconds) {}

  [[nodiscard]] bool due(std::int64_t step) const {
    if (every_ > 0 && step - last_step_ >= every_) return true;
    if (seconds_ > 0) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - last_time_).count();
      return elapsed >= seconds_;
    }
    return false;
  }
  // A checkpoint of `step` was written or attempted (a failed one is not retried at once).
  void checkpointed(std::int64_t step) {
    last_step_ = step;
    last_time_ = std::chrono::steady_clock::now();
  }
  // The state now at `step` came from a checkpoint (resume, rollback): the schedule restarts.
  void restored(std::int64_t step) { checkpointed(step); }

 private:
  std::int64_t every_;
  double seconds_;
  std::int64_t last_step_ = -1;
  std::chrono::steady_clock::time_point last_time_ = std::chrono::steady_clock::now();
};

}  // namespace tenax::runtime::detail
