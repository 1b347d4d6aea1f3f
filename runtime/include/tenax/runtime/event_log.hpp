// EventLog: RUN_DIR/events.jsonl, one JSON object per line, one line per step and per event
// (oom_retry, backoff, regrow, anomaly, rollback, checkpoint_written, checkpoint_skipped, resumed,
// fault, restart, exit). Every line reaches the kernel with one write(2) on an O_APPEND descriptor,
// so it survives the process being killed right after, and concurrent writers (a job and its
// supervisor) never interleave within a line; lines that mark a decision (everything but the
// per-step records) are also fdatasync'ed, so they survive a machine crash.
//
// A full disk can still cut a line short (a partial write). Such a torn line is never glued to
// the next event: a log opened on a file that does not end in a newline, or whose last append
// was cut short, starts its next line with one; readers (read_events) skip lines that are not
// whole JSON objects.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tenax::runtime {

class EventLog {
 public:
  using Value = std::variant<bool, std::int64_t, double, std::string>;
  using Field = std::pair<std::string_view, Value>;

  // Opens (creating if needed) `path` for appending; creates missing parent directories.
  // Throws IoError naming the path and the errno reason.
  explicit EventLog(const std::filesystem::path& path);
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;
  ~EventLog();

  // Appends {"event": <event>, "time": <seconds since the epoch>, <fields>...}. `durable` forces
  // fdatasync; by default only non-"step" events are made durable. Throws IoError on failure.
  void append(std::string_view event, std::initializer_list<Field> fields = {});
  void append(std::string_view event, std::initializer_list<Field> fields, bool durable);
  // Fields built at run time (a telemetry sample's, whose set depends on the device).
  void append(std::string_view event, std::span<const Field> fields, bool durable);

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  // The line append() writes, without the time stamp when `with_time` is false (for tests).
  [[nodiscard]] static std::string format(std::string_view event, std::span<const Field> fields,
                                          bool with_time);
  [[nodiscard]] static std::string format(std::string_view event,
                                          std::initializer_list<Field> fields, bool with_time) {
    return format(event, std::span<const Field>(fields.begin(), fields.size()), with_time);
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool torn_ = false;  // the file does not end with a newline: start the next line with one
};

// The whole lines of an event log: each a JSON object with an "event" member, in file order.
// `skipped` counts the lines that are not (torn by a full disk or a crash mid-write, or not
// JSON). Throws IoError when the file cannot be read.
struct EventLines {
  std::vector<std::string> lines;
  std::int64_t skipped = 0;
};
[[nodiscard]] EventLines read_events(const std::filesystem::path& path);

}  // namespace tenax::runtime
