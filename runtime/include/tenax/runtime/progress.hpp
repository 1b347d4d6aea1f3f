/// Progress reporting of the step loop on stderr: on a terminal one line rewritten in place
/// (step/total, rate, ETA, memory), at most four times a second; otherwise a plain log line at
/// every tenth of the run, so that log files stay short. @file
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tenax::runtime {

enum class ProgressMode;

/// The progress display of one run of the step loop (Runner makes it). Writes to stderr; not
/// thread-safe.
class Progress {
 public:
  /// `mode`: ProgressMode::terminal draws the in-place line, log writes log lines, quiet
  /// nothing, automatic the line when stderr is a terminal and log lines otherwise.
  /// `total_steps`: the step the run ends at; `first_step`: the step it starts (or resumes)
  /// from, where the rate's count begins.
  Progress(ProgressMode mode, std::int64_t total_steps, std::int64_t first_step);
  /// Reports that the run reached `step`, with `reserved_bytes` of memory reserved by the
  /// device's pool (shown as memory). Prints only when due: on a terminal at most every 250 ms,
  /// otherwise at each further tenth of total_steps; the last step always prints.
  void update(std::int64_t step, std::size_t reserved_bytes);
  /// Ends the in-place line (terminal mode) so later output starts on a fresh line.
  void finish();
  /// Erases the in-place line (terminal mode) so that a message printed now takes its place
  /// instead of being glued to it; the next update() draws it again below the message.
  void clear_line();

  /// "step 120/1000 (12.0%)  35.2 steps/s  ETA 25 s  memory 1.2 GiB"
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
