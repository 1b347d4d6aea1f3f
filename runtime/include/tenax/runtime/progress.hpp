// Progress reporting of the step loop on stderr: on a terminal one line rewritten in place
// (step/total, rate, ETA, memory), at most four times a second; otherwise a plain log line at
// every tenth of the run, so that log files stay short.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tenax::runtime {

enum class ProgressMode;

class Progress {
 public:
  Progress(ProgressMode mode, std::int64_t total_steps, std::int64_t first_step);
  void update(std::int64_t step, std::size_t reserved_bytes);
  // Ends the in-place line (terminal mode) so later output starts on a fresh line.
  void finish();
  // Erases the in-place line (terminal mode) so that a message printed now takes its place
  // instead of being glued to it; the next update() draws it again below the message.
  void clear_line();

  // "step 120/1000 (12.0%)  35.2 steps/s  ETA 25 s  memory 1.2 GiB"
  [[nodiscard]] static std::string format(std::int64_t step, std::int64_t total,
                                          double steps_per_second, std::size_t reserved_bytes);

 private:
  bool terminal_ = false;
  bool quiet_ = false;
  bool line_open_ = false;
  std::int64_t total_ = 0;
  std::int64_t first_step_ = 0;
  std::int64_t next_log_step_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
};

}  // namespace tenax::runtime
