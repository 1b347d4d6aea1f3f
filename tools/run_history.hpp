// What a run directory's event logs say happened (events.jsonl and events-rank-<r>.jsonl, the
// format of runtime/event_log.hpp): the steps each rank took with their time, memory and the
// workload's metrics, the telemetry samples, every event that changed the run, and the faults
// the run survived with the work each one cost. `tenax report` draws it; it is read-only and
// works on a run that is still going, one that crashed, and a log with torn lines.
//
// Work lost by a fault, counted from the log alone:
//  - steps recomputed: the steps computed again after going back to a checkpoint, as the Runner
//    counts them. After a rollback: every step from the checkpoint to the anomalous one, that one
//    included (it was computed, found bad and is computed again: "rolled back to the checkpoint
//    of step 40 (1 steps to compute again)" for a NaN at step 41). After a process ended (a kill,
//    a crash, a restart): the steps it committed after the checkpoint the next one resumed from;
//    the step under way when it died (a kill "at step 400" comes before step 400 is computed)
//    had not been computed and is not counted;
//  - compute lost: the seconds those steps took (their step lines);
//  - downtime: from the last line of a process that ended to the first line of the next one
//    (restart delay, start-up, loading the checkpoint).
// An out-of-memory retry or backoff loses no step (the step is taken again with the same bits);
// the time of the failed attempt is counted as compute lost.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tenax::tools {

// One committed step of one rank (an "event":"step" line).
struct StepRecord {
  std::int64_t step = 0;
  double time = 0.0;             // seconds since the epoch
  double seconds = 0.0;          // this rank's time for the whole step (every phase)
  double slowest_seconds = 0.0;  // the slowest rank's compute time (its step less its waits)
  int slowest_rank = 0;
  std::int64_t micro_batch = 0;
  double allocated = 0.0;  // bytes of the device pool
  double reserved = 0.0;
  std::map<std::string, double> metrics;  // the workload's step_metrics(), "metric_" stripped
  std::string digest;  // the agreed state digest, at the steps the ranks digested ("" elsewhere)
  int process = 0;  // which process of the run took it (0, 1, ... in log order)
};

// One telemetry sample: its numeric fields (pool_*, host_rss, gpu_*, step_rate, ...).
struct TelemetryRecord {
  double time = 0.0;
  std::int64_t step = 0;
  std::string trigger;
  std::map<std::string, double> values;
};

// A line that is neither a step nor a telemetry sample, in a form to show: its kind, when, and
// its other fields as text.
struct RunEvent {
  std::string kind;
  double time = 0.0;
  std::optional<std::int64_t> step;
  std::vector<std::pair<std::string, std::string>> fields;
  // The value of a field, or "" when the line has none.
  [[nodiscard]] std::string field(const std::string& name) const;
};

// A fault the run met, what tenax did, and what it cost.
struct SurvivedFault {
  std::string what;    // "out of memory at step 12", "process killed (SIGKILL) after step 40"
  std::string action;  // what tenax did about it
  std::optional<std::int64_t> step;
  double time = 0.0;
  std::int64_t steps_recomputed = 0;
  double compute_lost_seconds = 0.0;
  double downtime_seconds = 0.0;
  bool recovered = true;  // false: the run stopped on it (or was not resumed yet)
  std::string marker;     // the chart marker kind (see marker_kinds())
};

struct RankHistory {
  int rank = 0;
  std::filesystem::path log;
  std::vector<StepRecord> steps;
  std::vector<TelemetryRecord> telemetry;
  std::vector<RunEvent> events;
  std::int64_t skipped_lines = 0;  // torn or foreign lines
};

struct RunHistory {
  std::filesystem::path run_dir;
  std::vector<RankHistory> ranks;  // rank 0 first; only ranks with a log
  std::vector<SurvivedFault> faults;
  std::vector<std::string> metric_names;  // every metric rank 0's steps report, sorted
  std::string status;  // the last exit's status, or "running or ended without an exit line"
  std::string status_message;
  bool ended = false;  // the last process wrote an exit line
  std::optional<std::int64_t> total_steps;
  std::int64_t last_step = 0;
  int processes = 0;  // started or resumed processes
  double first_time = 0.0;
  double last_time = 0.0;
  int world_size = 1;

  [[nodiscard]] std::int64_t steps_recomputed() const;
  [[nodiscard]] double compute_lost_seconds() const;
  [[nodiscard]] double downtime_seconds() const;
};

// One line of an event log, parsed: a step, a telemetry sample or another event; nullopt for a
// line that is not a whole JSON object with an "event" member (torn, or not tenax's). A step's
// `process` is left 0: it is the reader's to count.
using HistoryLine = std::variant<StepRecord, TelemetryRecord, RunEvent>;
[[nodiscard]] std::optional<HistoryLine> parse_history_line(std::string_view text, int rank);

// The event logs of a run directory by rank: events.jsonl (rank 0, listed whether or not it
// exists yet) and each events-rank-<r>.jsonl present, sorted by rank.
[[nodiscard]] std::vector<std::pair<int, std::filesystem::path>> event_logs(
    const std::filesystem::path& run_dir);

// Reads every event log of the run directory. Throws UsageError when `run_dir` is not a
// directory or has no events.jsonl, IoError when a log cannot be read.
[[nodiscard]] RunHistory read_run_history(const std::filesystem::path& run_dir);

// The marker kinds a report draws, in legend order: {kind, label, colour}.
struct MarkerKind {
  const char* kind;
  const char* label;
  const char* colour;
};
[[nodiscard]] const std::vector<MarkerKind>& marker_kinds();
// The marker kind of an event line ("" for events not marked on the charts).
[[nodiscard]] std::string marker_of(const RunEvent& event);

}  // namespace tenax::tools
