/// StepTimes: the wall times of a process's last steps, kept in a bounded ring, and their median:
/// what a program prints as its speed ("0.92 ms per step (median of 300)"). @file
/// Bounded: a run of any length holds at most kKept times (8 KiB). Not thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tenax::runtime {

/// The last kKept step times of this process (see the file).
class StepTimes {
 public:
  static constexpr std::size_t kKept = 1024;  ///< times kept: the newest replace the oldest

  /// Marks the start of a step (a later stop() times it).
  void start() noexcept { start_ = std::chrono::steady_clock::now(); }
  /// Records the seconds since start().
  void stop() {
    add(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  /// Records one step's seconds.
  void add(double seconds) {
    if (times_.size() < kKept) {
      times_.push_back(seconds);
    } else {
      times_[next_] = seconds;
    }
    next_ = (next_ + 1) % kKept;
  }
  /// The median of the times kept (the upper one of an even count); 0 when none.
  [[nodiscard]] double median() const {
    if (times_.empty()) return 0.0;
    std::vector<double> sorted = times_;
    const auto middle = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
    std::nth_element(sorted.begin(), middle, sorted.end());
    return *middle;
  }
  /// How many times median() is taken over (at most kKept).
  [[nodiscard]] std::size_t count() const noexcept { return times_.size(); }

 private:
  std::chrono::steady_clock::time_point start_;
  std::vector<double> times_;
  std::size_t next_ = 0;
};

}  // namespace tenax::runtime
