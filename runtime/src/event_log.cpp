#include "tenax/runtime/event_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/runtime/run_events.hpp"

namespace tenax::runtime {
namespace {

[[noreturn]] void throw_io(const std::string& what, const std::filesystem::path& path, int errnum) {
  std::string cause = what + " " + path.string() + ": " + std::strerror(errnum);
  std::string fix = errnum == ENOSPC ? "free space on the run directory's filesystem"
                                     : "check that the run directory exists and is writable";
  if (classify_errno(errnum) == FaultClass::io) throw IoError(std::move(cause), std::move(fix));
  throw EnvironmentError(std::move(cause), std::move(fix));
}

}  // namespace

EventLog::EventLog(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  // Never through a symbolic link (appending would write to whatever it points to) and never
  // into a FIFO or a device: only a regular file of the run directory.
  OpenedFile opened =
      try_open_regular_file(path, O_RDWR | O_CREAT | O_APPEND, Symlinks::refuse, 0644);
  if (!opened.ok() && opened.error == 0) {
    throw UsageError("the event log " + opened.problem,
                     "remove it (tenax creates " + path.filename().string() +
                         " itself, as a regular file), or pass another --run-dir");
  }
  if (!opened.ok()) throw_io("cannot open the event log", path, opened.error);
  fd_ = opened.fd.release();
  // A file cut short by a full disk or a crash ends mid-line: the next event starts a new one.
  const off_t size = ::lseek(fd_, 0, SEEK_END);
  char last = '\n';
  torn_ = size > 0 && ::pread(fd_, &last, 1, size - 1) == 1 && last != '\n';
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

std::string EventLog::format(std::string_view event, std::span<const Field> fields,
                             bool with_time) {
  nlohmann::ordered_json line;
  line["event"] = event;
  if (with_time) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    line["time"] = std::chrono::duration<double>(now).count();
  }
  for (const auto& [key, value] : fields) {
    std::visit([&](const auto& v) { line[std::string(key)] = v; }, value);
  }
  return line.dump() + "\n";
}

void EventLog::append(std::string_view event, std::initializer_list<Field> fields) {
  append(event, fields, event != event::step);
}

void EventLog::append(std::string_view event, std::initializer_list<Field> fields, bool durable) {
  append(event, std::span<const Field>(fields.begin(), fields.size()), durable);
}

void EventLog::append(std::string_view event, std::span<const Field> fields, bool durable) {
  std::string line(torn_ ? 1 : 0, '\n');  // a torn last line ends before this one begins
  line += format(event, fields, true);
  // One write of the whole line: O_APPEND makes it atomic with respect to other appenders.
  const ssize_t written = ::write(fd_, line.data(), line.size());
  if (written != static_cast<ssize_t>(line.size())) {
    const int errnum = written < 0 ? errno : ENOSPC;
    // A partial write left a torn line; nothing written leaves the file as it was.
    if (written > 0) torn_ = line[static_cast<std::size_t>(written) - 1] != '\n';
    throw_io("cannot append to the event log", path_, errnum);
  }
  torn_ = false;
  if (durable && ::fdatasync(fd_) != 0) throw_io("cannot sync the event log", path_, errno);
}

EventLines read_events(const std::filesystem::path& path) {
  // Not through a symbolic link, and only a regular file: a link to /dev/zero or a FIFO in the
  // log's place would otherwise be read without end or hang.
  OpenedFile opened = try_open_regular_file(path, O_RDONLY, Symlinks::refuse);
  if (!opened.ok() && opened.error == 0) {
    throw UsageError("the event log " + opened.problem, "remove it: a run directory's " +
                                                            path.filename().string() +
                                                            " is a regular file that tenax writes");
  }
  if (!opened.ok()) throw_io("cannot read the event log", path, opened.error);
  EventLines events;
  std::string line;
  bool overlong = false;  // the line being read passed kMaxEventLineBytes: skipped at its end
  const auto end_line = [&] {
    if (overlong) {
      ++events.skipped;
    } else if (!line.empty()) {
      const nlohmann::json parsed =
          nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_object() && parsed.contains("event") && parsed["event"].is_string()) {
        events.lines.push_back(std::move(line));
      } else {
        ++events.skipped;
      }
    }
    line.clear();
    overlong = false;
  };
  std::vector<char> chunk(std::size_t{64} << 10);
  while (true) {
    const ssize_t n = ::read(opened.fd.get(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_io("cannot read the event log", path, errno);
    if (n == 0) break;
    std::string_view rest(chunk.data(), static_cast<std::size_t>(n));
    while (!rest.empty()) {
      const std::size_t newline = rest.find('\n');
      const std::string_view piece = rest.substr(0, newline);
      if (!overlong && line.size() + piece.size() > kMaxEventLineBytes) {
        overlong = true;
        line.clear();
        line.shrink_to_fit();
      }
      if (!overlong) line.append(piece);
      if (newline == std::string_view::npos) break;
      end_line();
      rest.remove_prefix(newline + 1);
    }
  }
  end_line();
  return events;
}

}  // namespace tenax::runtime
