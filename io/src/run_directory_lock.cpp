#include "tenax/io/run_directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"

namespace tenax::io {
namespace {

namespace fs = std::filesystem;

// What acquire() reads of a holder's description: a description is about 150 bytes, and a
// hostile or corrupt file must not make the refusal read without bound.
constexpr std::size_t kMaxDescriptionBytes = 4096;
constexpr std::size_t kMaxValueBytes = 256;

// A value as it may appear in a description and in a message: printable ASCII only (a newline
// would forge another key, an escape sequence would reach the user's terminal), bounded.
std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, kMaxValueBytes)) {
    out += c >= 0x20 && c <= 0x7e ? c : '?';
  }
  return out;
}

// The error for `errnum` from `what` on `subject`: a directory the user cannot use is a usage
// error (retrying will not help), anything else an I/O error; both name the fix.
[[noreturn]] void throw_errno(const std::string& what, const fs::path& subject,
                              const fs::path& run_dir, int errnum) {
  std::string cause = what + " " + subject.string() + ": " + std::strerror(errnum);
  const std::string r = run_dir.string();
  switch (errnum) {
    case EACCES:
    case EPERM:
      throw UsageError(std::move(cause),
                       "pass a --run-dir you can write, or give yourself write permission on " + r);
    case EROFS:
      throw UsageError(std::move(cause),
                       r + " is on a read-only filesystem: pass a --run-dir on a writable one");
    case ENOTDIR:
    case EEXIST:
    case EISDIR:
      throw UsageError(std::move(cause),
                       "a file stands where tenax needs a directory or the other way round: "
                       "remove it, or pass another --run-dir");
    case ELOOP:
      throw UsageError(std::move(cause),
                       "the lock file must not be a symbolic link (tenax would overwrite what it "
                       "points to): remove " +
                           subject.string());
    case ENAMETOOLONG:
      throw UsageError(std::move(cause), "pass a shorter --run-dir");
    case ENOSPC:
    case EDQUOT:
      throw IoError(std::move(cause), "free space (or quota) on the filesystem of " + r);
    case ENOLCK:
    case EOPNOTSUPP:
    case EINVAL:
      throw IoError(std::move(cause),
                    "the filesystem of " + r +
                        " does not support file locks (flock): pass a --run-dir on a local "
                        "filesystem or one with lock support");
    default:
      throw IoError(std::move(cause), "check " + r + " and its filesystem");
  }
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return printable(name);
}

// The command name of this process (what `ps` shows), for a caller that gave no program name.
std::string command_name() {
  char name[64] = {};
  const int fd = ::open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "unknown program";
  const ssize_t n = ::read(fd, name, sizeof name - 1);
  ::close(fd);
  std::string_view text(name, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.remove_suffix(1);
  return text.empty() ? "unknown program" : printable(text);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  char text[32] = {};
  if (::gmtime_r(&now, &parts) == nullptr ||
      std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts) == 0) {
    return "unknown";
  }
  return text;
}

std::string read_description(int fd) {
  std::string text(kMaxDescriptionBytes, '\0');
  std::size_t size = 0;
  while (size < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + size, text.size() - size, static_cast<off_t>(size));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size += static_cast<std::size_t>(n);
  }
  text.resize(size);
  return text;
}

// True when the description can be the current holder's: it names a pid, and not one of this
// host that has ended (the words of a killed holder, still in the file while the new holder has
// locked it but not yet written its own).
bool plausible(const LockHolder& holder, const std::string& this_host) {
  if (holder.pid <= 0 || holder.pid > std::numeric_limits<pid_t>::max()) return false;
  if (holder.host != this_host) return true;
  return ::kill(static_cast<pid_t>(holder.pid), 0) == 0 || errno != ESRCH;
}

// The holder's description as the refusal reports it, or nothing when the file does not say
// who holds the lock. A holder writes its description right after it takes the lock, so an empty
// or stale one is read again for a short while.
std::optional<LockHolder> read_holder(int fd) {
  const std::string this_host = host_name();
  for (int attempt = 0; attempt < 50; ++attempt) {
    const LockHolder holder = RunDirectoryLock::parse_holder(read_description(fd));
    if (plausible(holder, this_host)) return holder;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

[[noreturn]] void throw_in_use(const fs::path& run_dir, const fs::path& file, int rank,
                               const std::optional<LockHolder>& holder) {
  const std::string fix = "wait for that job to end or stop it, or pass another --run-dir";
  if (!holder) {
    throw UsageError("run directory " + run_dir.string() + " is in use by another job (rank " +
                         std::to_string(rank) + "); its lock file " + file.string() +
                         " does not say which process holds it (its description is missing, "
                         "stale or unreadable)",
                     fix);
  }
  std::string details = "pid " + std::to_string(holder->pid);
  if (!holder->host.empty()) details += " on host " + holder->host;
  details += ", rank " + std::to_string(holder->rank >= 0 ? holder->rank : rank);
  if (!holder->started.empty()) details += ", since " + holder->started;
  throw UsageError("run directory " + run_dir.string() + " is in use by " +
                       (holder->program.empty() ? std::string("another job") : holder->program) +
                       " (" + details + ")",
                   fix);
}

}  // namespace

fs::path RunDirectoryLock::lock_file(const fs::path& run_dir, int rank) {
  return run_dir / "locks" / ("rank-" + std::to_string(rank) + ".lock");
}

std::string RunDirectoryLock::describe(const LockHolder& holder) {
  return "pid=" + std::to_string(holder.pid) + "\nhost=" + printable(holder.host) +
         "\nstarted=" + printable(holder.started) + "\nprogram=" + printable(holder.program) +
         "\nrank=" + std::to_string(holder.rank) + "\n";
}

LockHolder RunDirectoryLock::parse_holder(std::string_view text) {
  LockHolder holder;
  auto integer = [](std::string_view value, std::int64_t& out) {
    const std::int64_t parsed = parse_whole<std::int64_t>(value).value_or(-1);
    if (parsed >= 0) out = parsed;
  };
  text = text.substr(0, kMaxDescriptionBytes);
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const std::size_t equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, equals);
    const std::string_view value = line.substr(equals + 1);
    if (key == "pid") {
      integer(value, holder.pid);
      if (holder.pid == 0) holder.pid = -1;
    } else if (key == "rank") {
      integer(value, holder.rank);
    } else if (key == "host") {
      holder.host = printable(value);
    } else if (key == "started") {
      holder.started = printable(value);
    } else if (key == "program") {
      holder.program = printable(value);
    }
  }
  return holder;
}

RunDirectoryLock RunDirectoryLock::acquire(const fs::path& run_dir, int rank,
                                           std::string_view program) {
  TENAX_EXPECTS(!run_dir.empty(), UsageError, "the run directory to lock is empty",
                "pass a --run-dir (e.g. --run-dir runs/heat2d)");
  TENAX_EXPECTS(rank >= 0, UsageError,
                "rank " + std::to_string(rank) + " of run directory " + run_dir.string(),
                "pass the communicator's rank (>= 0)");
  const fs::path locks = run_dir / "locks";
  // A symbolic link in the place of locks/ would put the lock files (created, truncated,
  // written) wherever it points: refused, as a lock file that is a link is below.
  struct stat locks_status {};
  if (::lstat(locks.c_str(), &locks_status) == 0 && S_ISLNK(locks_status.st_mode)) {
    throw UsageError("the run directory's locks folder " + locks.string() +
                         " is a symbolic link, not a directory",
                     "remove the link (tenax creates " + locks.string() +
                         " itself and would write its lock files wherever it points), or pass "
                         "another --run-dir");
  }
  std::error_code ec;
  (void)fs::status(run_dir, ec);
  if (ec.value() == ELOOP) {
    throw UsageError("the run directory " + run_dir.string() +
                         " is a loop of symbolic links (each points on to the next)",
                     "remove the links, or pass another --run-dir");
  }
  ec.clear();
  fs::create_directories(locks, ec);
  if (ec) {
    // create_directories reports "file exists" for a file in the way; say which path it is.
    // (Not the throwing forms: a run directory that is a loop of symbolic links made them throw
    // a bare filesystem_error, no path or fix said.)
    std::error_code probe;
    const fs::path subject =
        fs::exists(run_dir, probe) && !fs::is_directory(run_dir, probe) ? run_dir : locks;
    throw_errno("cannot create the run directory's locks folder, at", subject, run_dir,
                ec.value() == EEXIST ? ENOTDIR : ec.value());
  }
  const fs::path file = lock_file(run_dir, rank);
  // O_NOFOLLOW: the file is truncated and written below, so a symbolic link planted in its place
  // must not redirect that to another file. O_NONBLOCK: a FIFO in its place must not hang the
  // open (it is refused below).
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0) {
    const int error = errno;
    throw_errno("cannot open the lock file", file, run_dir, error);
  }
  // Closes the descriptor on every error until the lock is taken (nothing of the file is
  // changed before then: it may be another job's).
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } unlocked{fd};
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    const int error = errno;
    throw_errno("cannot inspect the lock file", file, run_dir, error);
  }
  if (!S_ISREG(status.st_mode)) {
    throw UsageError("the lock file " + file.string() + " is not a regular file",
                     "remove it (tenax creates it), or pass another --run-dir");
  }
  int locked = 0;
  do {
    locked = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (locked != 0 && errno == EINTR);
  if (locked != 0) {
    const int error = errno;
    if (error == EWOULDBLOCK) throw_in_use(run_dir, file, rank, read_holder(fd));
    throw_errno("cannot lock", file, run_dir, error);
  }
  unlocked.fd = -1;
  RunDirectoryLock lock(fd, file);  // from here on, an error clears the file and unlocks it

  LockHolder self;
  self.pid = ::getpid();
  self.rank = rank;
  self.host = host_name();
  self.started = utc_now();
  self.program = program.empty() ? command_name() : printable(program);
  const std::string text = describe(self);
  if (::ftruncate(fd, 0) != 0) {
    const int error = errno;
    throw_errno("cannot write the lock file", file, run_dir, error);
  }
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n =
        ::pwrite(fd, text.data() + written, text.size() - written, static_cast<off_t>(written));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;
      throw_errno("cannot write the lock file", file, run_dir, error);
    }
    written += static_cast<std::size_t>(n);
  }
  return lock;
}

RunDirectoryLock::RunDirectoryLock(RunDirectoryLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {
  other.path_.clear();
}

RunDirectoryLock& RunDirectoryLock::operator=(RunDirectoryLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

RunDirectoryLock::~RunDirectoryLock() { release(); }

void RunDirectoryLock::release() noexcept {
  if (fd_ < 0) return;
  // Cleared while still locked, so the next reader never mistakes this holder for a live one.
  (void)::ftruncate(fd_, 0);
  ::close(fd_);
  fd_ = -1;
  path_.clear();
}

}  // namespace tenax::io
