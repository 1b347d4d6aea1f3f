#include "tenax/runtime/event_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "tenax/core/error.hpp"

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
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_io("cannot open the event log", path, errno);
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

std::string EventLog::format(std::string_view event, std::initializer_list<Field> fields,
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
  append(event, fields, event != "step");
}

void EventLog::append(std::string_view event, std::initializer_list<Field> fields, bool durable) {
  const std::string line = format(event, fields, true);
  // One write of the whole line: O_APPEND makes it atomic with respect to other appenders.
  const ssize_t written = ::write(fd_, line.data(), line.size());
  if (written != static_cast<ssize_t>(line.size())) {
    throw_io("cannot append to the event log", path_, written < 0 ? errno : ENOSPC);
  }
  if (durable && ::fdatasync(fd_) != 0) throw_io("cannot sync the event log", path_, errno);
}

}  // namespace tenax::runtime
