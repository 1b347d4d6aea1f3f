/// EventLog: RUN_DIR/events.jsonl, one JSON object per line, one line per step and per event
/// (started, oom_retry, backoff, regrow, anomaly, rollback, checkpoint_written, checkpoint_failed,
/// checkpoint_skipped, resumed, fault, signal, exit, ...). Every line reaches the kernel with one
/// write(2) on an O_APPEND descriptor, so it survives the process being killed right after, and
/// concurrent writers (a job and its supervisor) never interleave within a line; lines that mark a
/// decision (everything but the per-step and telemetry records) are also fdatasync'ed, so they
/// survive a machine crash.
/// @file
/// A full disk can still cut a line short (a partial write). Such a torn line is never glued to
/// the next event: a log opened on a file that does not end in a newline, or whose last append
/// was cut short, starts its next line with one; readers (read_events) skip lines that are not
/// whole JSON objects.
#pragma once

#include <cstddef>
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

/// An open event log (`events.jsonl`) that appends one JSON line per call; see the file's
/// contract. Owns its file descriptor (closed on destruction); non-copyable. Not thread-safe:
/// one thread appends at a time (other processes may append to the same file).
class EventLog {
 public:
  /// A field's value, written as a JSON boolean, integer, number or string.
  using Value = std::variant<bool, std::int64_t, double, std::string>;
  /// One member of a line: its name and value. The name is only viewed: it must outlive the
  /// append() or format() call. Fields are written in the order given, after `event` and `time`.
  using Field = std::pair<std::string_view, Value>;

  /// Opens (creating if needed) `path` for appending; creates missing parent directories.
  /// Throws UsageError naming the path, what it is and the fix when it is not a regular file (a
  /// symbolic link is never followed: appending through one would write to any file it points
  /// to; a FIFO or a device is refused without blocking); IoError naming the path and the errno
  /// reason (EnvironmentError for an errno that is not an I/O fault) when it cannot be opened.
  explicit EventLog(const std::filesystem::path& path);
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;
  ~EventLog();

  /// Appends `{"event": EVENT, "time": SECONDS, FIELDS...}`, where SECONDS is the wall-clock
  /// time since the Unix epoch (a double). Only events other than `"step"` are made durable
  /// (fdatasync). Throws IoError on failure (a full disk, a failed sync; EnvironmentError for an
  /// errno that is not an I/O fault); a partial write leaves a torn line that the next append
  /// starts after.
  void append(std::string_view event, std::initializer_list<Field> fields = {});
  /// The same, with `durable` choosing whether the line is fdatasync'ed.
  void append(std::string_view event, std::initializer_list<Field> fields, bool durable);
  /// Fields built at run time (a telemetry sample's, whose set depends on the device).
  void append(std::string_view event, std::span<const Field> fields, bool durable);

  /// The log's file, as given to the constructor.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  /// The line append() writes (ending in a newline), without the time stamp when `with_time`
  /// is false (for tests).
  [[nodiscard]] static std::string format(std::string_view event, std::span<const Field> fields,
                                          bool with_time);
  /// The same, for fields written in place.
  [[nodiscard]] static std::string format(std::string_view event,
                                          std::initializer_list<Field> fields, bool with_time) {
    return format(event, std::span<const Field>(fields.begin(), fields.size()), with_time);
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool torn_ = false;  ///< the file does not end with a newline: start the next line with one
};

/// What read_events() found in an event log.
struct EventLines {
  /// The whole lines: each a JSON object with a string `"event"` member, in file order,
  /// without the newline.
  std::vector<std::string> lines;
  /// The non-empty lines that are not (torn by a full disk or a crash mid-write, or not JSON).
  std::int64_t skipped = 0;
};
/// The longest line read_events() reads; a longer one is counted as skipped, never accumulated.
inline constexpr std::size_t kMaxEventLineBytes = std::size_t{1} << 20;

/// Reads the event log at `path` (`RUN_DIR/events.jsonl`); empty lines are ignored, lines longer
/// than kMaxEventLineBytes are skipped (memory stays bounded whatever the file holds). Throws
/// UsageError (path, what it is, the fix) when `path` is not a regular file: a symbolic link is
/// not followed, a FIFO or device is refused without blocking; IoError when the file cannot be
/// opened or read (EnvironmentError for an errno that is not an I/O fault).
[[nodiscard]] EventLines read_events(const std::filesystem::path& path);

}  // namespace tenax::runtime
