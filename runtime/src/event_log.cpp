#include "tenax/runtime/event_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tenax/core/error.hpp"
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
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_io("cannot open the event log", path, errno);
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
  std::ifstream in(path);
  if (!in) throw_io("cannot read the event log", path, errno != 0 ? errno : ENOENT);
  EventLines events;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() && parsed.contains("event") && parsed["event"].is_string()) {
      events.lines.push_back(std::move(line));
    } else {
      ++events.skipped;
    }
  }
  return events;
}

}  // namespace tenax::runtime
