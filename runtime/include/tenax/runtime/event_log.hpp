// EventLog: RUN_DIR/events.jsonl, one JSON object per line, one line per step and per event
// (oom_retry, backoff, regrow, anomaly, rollback, checkpoint_written, checkpoint_skipped, resumed,
// fault, restart, exit). Every line reaches the kernel with one write(2) on an O_APPEND descriptor,
// so it survives the process being killed right after, and concurrent writers (a job and its
// supervisor) never interleave within a line; lines that mark a decision (everything but the
// per-step records) are also fdatasync'ed, so they survive a machine crash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

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

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  // The line append() writes, without the time stamp when `with_time` is false (for tests).
  [[nodiscard]] static std::string format(std::string_view event,
                                          std::initializer_list<Field> fields, bool with_time);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace tenax::runtime
