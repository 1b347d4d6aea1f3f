// `tenax watch RUN_DIR`: the job's `nvidia-smi -l 1`. A live terminal view that follows the run's
// event logs (events.jsonl and, on several ranks, each events-rank-<r>.jsonl, read as they grow;
// the format of runtime/event_log.hpp) and shows each rank's step and step time, and the
// step, rate and ETA, the workload's metrics (loss, residual, ...), step time and micro-batch,
// memory (the pool and the host's RSS), the device's temperature, utilisation and power where
// NVML gave them, the faults so far and the last events. It redraws in place on a terminal and
// prints a block only when something changed otherwise; it ends when the run ends.
//
// When the run ends: an exit line whose status stops the job for good (completed, out_of_memory,
// anomaly, overflow), or the supervisor's exit line. A job that exits for a restart (status
// restart) or after a stop signal (interrupted) may be resumed, so the watch goes on waiting and
// says so. A run directory without events.jsonl yet is waited for.
//
// Exit statuses: 0 when the run completed, 1 when it ended otherwise, 2 for a usage error (no
// such directory, a bad flag value). Ctrl-C stops the watch, never the job.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "run_history.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace tenax::tools {

// The lines appended to a log since the last call: whole lines only (a line still being
// written waits for its newline). A log that shrank (replaced) is read again from the start.
class LogFollower {
 public:
  // `max_read`: the most bytes one new_lines() call reads (a huge log is caught up with in
  // steps, never in one allocation).
  explicit LogFollower(std::filesystem::path path, std::size_t max_read = std::size_t{64} << 20)
      : path_(std::move(path)), max_read_(max_read) {}
  [[nodiscard]] std::vector<std::string> new_lines();
  // Whether the file held more than the last new_lines() read.
  [[nodiscard]] bool behind() const noexcept { return size_seen_ > offset_; }
  [[nodiscard]] bool exists() const;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  std::size_t max_read_;
  std::uint64_t offset_ = 0;
  std::uint64_t size_seen_ = 0;
  std::string partial_;
};

// Every whole line the log holds now, read in steps of the follower's max_read, each given to
// `consume` (a watch of a 200 MB log starts from its end, not from its first 64 MiB).
void read_all_new_lines(LogFollower& follower,
                        const std::function<void(const std::string&)>& consume);

// What the view shows, updated line by line.
class WatchState {
 public:
  // A line of rank 0's log (events.jsonl): the status, step, metrics, memory and events.
  void consume(const std::string& line);
  // A line of rank `rank`'s own log (events-rank-<r>.jsonl, r >= 1): its steps feed the ranks
  // rows (step and median step time of each rank, the slowest marked), its warnings the events
  // list and count. Rank 0's log alone decides the status and when the run ends.
  void consume_rank(int rank, const std::string& line);
  // The view's lines at wall time `now` (seconds since the epoch), `events` last events listed.
  [[nodiscard]] std::vector<std::string> render(double now, int events) const;
  // The run ended for good (see the header comment); its final status.
  [[nodiscard]] bool ended() const noexcept { return ended_; }
  [[nodiscard]] bool completed() const noexcept { return status_ == "completed"; }
  [[nodiscard]] std::int64_t lines() const noexcept { return lines_; }

 private:
  std::int64_t lines_ = 0;
  std::int64_t skipped_ = 0;
  std::optional<StepRecord> last_step_;
  std::vector<std::pair<double, std::int64_t>> recent_;  // (time, step) of the last steps
  std::vector<double> recent_seconds_;                   // step times of the last steps
  std::optional<TelemetryRecord> telemetry_;
  struct OtherRank {
    std::optional<std::int64_t> step;
    std::vector<double> recent_seconds;
  };
  std::map<int, OtherRank> other_ranks_;  // ranks >= 1 that have a log
  std::vector<RunEvent> events_;          // the last ones
  std::optional<std::int64_t> total_steps_;
  int processes_ = 0;
  int world_ = 1;
  std::string status_ = "waiting for the first line";
  std::string detail_;
  bool open_ = false;
  bool ended_ = false;
  std::int64_t ooms_ = 0;
  std::int64_t rollbacks_ = 0;
  std::int64_t resumes_ = 0;
  std::int64_t faults_ = 0;
  std::int64_t skipped_steps_ = 0;
  std::int64_t warnings_ = 0;
};

struct WatchOptions {
  double interval_seconds = 1.0;  // between refreshes, in [0.05, 3600]
  int events = 8;                 // last events listed, in [0, 100]
  bool once = false;              // draw once and return
  bool terminal = false;          // redraw in place (else: a block when something changed)
};

// Follows RUN_DIR/events.jsonl (and, on several ranks, each events-rank-<r>.jsonl as it appears)
// until the run ends (or once); returns the exit status. Throws
// UsageError for a directory that does not exist or bad options.
[[nodiscard]] int run_watch(const std::filesystem::path& run_dir, const WatchOptions& options,
                            std::ostream& out);

// Adds the `watch` subcommand to the CLI; running it stores its exit status in `exit_code`.
void add_watch_command(CLI::App& app, int& exit_code);

}  // namespace tenax::tools
