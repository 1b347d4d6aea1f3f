#include "tenax/runtime/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "tenax/core/error.hpp"
#include "tenax/core/memory/memory_stats.hpp"
#include "tenax/runtime/runner.hpp"

namespace tenax::runtime {

Progress::Progress(ProgressMode mode, std::int64_t total_steps, std::int64_t first_step)
    : total_(total_steps),
      first_step_(first_step),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {
  quiet_ = mode == ProgressMode::quiet;
  terminal_ = mode == ProgressMode::terminal ||
              (mode == ProgressMode::automatic && ::isatty(STDERR_FILENO) == 1);
  next_log_step_ = first_step + std::max<std::int64_t>(1, total_steps / 10);
}

std::string Progress::format(std::int64_t step, std::int64_t total, double steps_per_second,
                             std::size_t reserved_bytes) {
  char line[160];
  const double percent = total > 0 ? 100.0 * static_cast<double>(step) / total : 100.0;
  const double eta =
      steps_per_second > 0 ? static_cast<double>(total - step) / steps_per_second : 0.0;
  std::snprintf(line, sizeof line, "step %lld/%lld (%.1f%%)  %.1f steps/s  ETA %.0f s  memory %s",
                static_cast<long long>(step), static_cast<long long>(total), percent,
                steps_per_second, eta, format_bytes(reserved_bytes).c_str());
  return line;
}

void Progress::update(std::int64_t step, std::size_t reserved_bytes) {
  if (quiet_) return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(step - first_step_) / elapsed : 0.0;
  if (terminal_) {
    if (now - last_print_ < std::chrono::milliseconds(250) && step != total_) return;
    std::fprintf(stderr, "\r\033[K%s", format(step, total_, rate, reserved_bytes).c_str());
    line_open_ = true;
  } else {
    if (step < next_log_step_ && step != total_) return;
    next_log_step_ = step + std::max<std::int64_t>(1, total_ / 10);
    std::fprintf(stderr, "tenax: %s\n", format(step, total_, rate, reserved_bytes).c_str());
  }
  last_print_ = now;
}

void Progress::clear_line() {
  if (!line_open_) return;
  std::fputs("\r\033[K", stderr);
  line_open_ = false;
  last_print_ = start_ - std::chrono::seconds(1);  // the next update redraws it at once
}

void Progress::finish() {
  if (line_open_) std::fputc('\n', stderr);
  line_open_ = false;
}

ProgressMode parse_progress_mode(std::string_view text) {
  if (text == "auto") return ProgressMode::automatic;
  if (text == "terminal") return ProgressMode::terminal;
  if (text == "log") return ProgressMode::log;
  if (text == "quiet") return ProgressMode::quiet;
  throw UsageError("--progress " + std::string(text) + " is not a progress mode",
                   "use auto, terminal, log or quiet");
}

}  // namespace tenax::runtime
