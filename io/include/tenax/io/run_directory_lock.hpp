/// RunDirectoryLock: a run directory belongs to one job at a time.
/// @file
/// Each rank of a job takes `RUN_DIR/locks/rank-<r>.lock` with flock(LOCK_EX | LOCK_NB) before it
/// touches anything else in the directory, and keeps it until the job is done with the directory.
/// A second job started on the same directory (the same --run-dir typed twice, a supervisor
/// restarting a job whose first attempt still runs) is refused at once with the holder's pid,
/// host, rank, program and start time, instead of both writing the same checkpoints.
///
/// Why flock: the kernel drops the lock when the last descriptor of its open file description
/// closes, so a job that dies in any way (kill -9 included) leaves no stale lock behind, and no
/// clean-up or "is that pid still alive" guess is needed. The file is opened O_CLOEXEC, so
/// programs the job starts later (exec) do not hold it; a child made by fork() without exec
/// shares the description and holds the lock for as long as it lives.
///
/// A lock conflicts with every other open of the file, in this process too: two
/// RunDirectoryLocks on the same rank and directory cannot both be held (which is also what lets
/// tests exercise the refusal in one process). Different ranks use different files, so the ranks
/// of one job (processes, or threads of one process) do not conflict with each other.
///
/// The lock file holds its holder's description as key=value lines (pid, host, started in
/// ISO-8601 UTC, program, rank), written after the lock is taken (truncate, then write) and
/// cleared (the file truncated to empty, not deleted) when it is released. The refusal reads at
/// most 4 KiB of it and treats it as untrusted: a description that is missing (a holder that died
/// before writing it) or garbage still gives a clear message. The description is only information;
/// the flock alone decides.
///
/// flock works on local filesystems and, on Linux, on NFS (emulated with byte-range locks); a
/// filesystem without locking support is reported as such.
///
/// Thread-safety: acquire() may be called from any thread. One RunDirectoryLock object must not
/// be used (moved, released) by two threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tenax::io {

/// What a lock file says about its holder; the fields a description lacks are empty or -1.
struct LockHolder {
  std::int64_t pid = -1;   ///< the holder's process id
  std::int64_t rank = -1;  ///< the rank it locked
  std::string host;        ///< the host name it runs on
  std::string started;     ///< when it took the lock, UTC, e.g. "2025-01-31T12:00:00Z"
  std::string program;     ///< the program name it gave (or its command name)
};

/// The exclusive lock of one rank on a run directory, held from acquire() until release(),
/// destruction or the end of the process. Movable, not copyable.
class RunDirectoryLock {
 public:
  /// Holds nothing.
  RunDirectoryLock() noexcept = default;

  /// Creates `run_dir` and its locks/ folder when missing and takes the lock of `rank`, then
  /// writes this process's description into it (an empty `program` is recorded as this
  /// process's command name). Throws UsageError "run directory R is in use by PROGRAM (pid P on
  /// host H, rank r, since T)" when another holder has it; UsageError for an empty `run_dir`, a
  /// negative rank, or a run directory that cannot be used (a file in its place, no permission,
  /// a read-only filesystem, a locks/ folder that is a symbolic link, a lock file that is a
  /// symbolic link or not a regular file) and
  /// IoError for other system failures (a full disk, a filesystem without flock), each with the
  /// errno text and a fix. Never blocks on the lock (a holder's description that is missing or
  /// stale is re-read for up to about half a second before the refusal).
  [[nodiscard]] static RunDirectoryLock acquire(const std::filesystem::path& run_dir, int rank,
                                                std::string_view program);

  /// Takes over `other`'s lock; `other` then holds nothing.
  RunDirectoryLock(RunDirectoryLock&& other) noexcept;
  /// Releases the lock this object holds, then takes over `other`'s; `other` then holds nothing.
  RunDirectoryLock& operator=(RunDirectoryLock&& other) noexcept;
  RunDirectoryLock(const RunDirectoryLock&) = delete;             ///< not copyable
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;  ///< not copyable
  /// Releases the lock, as release() does.
  ~RunDirectoryLock();

  /// Clears the description and drops the lock; does nothing when nothing is held.
  void release() noexcept;

  /// Whether this object holds a lock.
  [[nodiscard]] bool held() const noexcept { return fd_ >= 0; }
  /// The lock file (empty when nothing is held).
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  /// `RUN_DIR/locks/rank-<r>.lock`, built lexically (any rank is formatted, nothing is checked).
  [[nodiscard]] static std::filesystem::path lock_file(const std::filesystem::path& run_dir,
                                                       int rank);

  /// The description a holder writes: `key=value` lines for pid, host, started, program and
  /// rank, each ending with a newline; string values are cut to 256 bytes and every byte outside
  /// printable ASCII becomes '?'.
  [[nodiscard]] static std::string describe(const LockHolder& holder);
  /// What a description says, read as untrusted text: at most 4 KiB are looked at, only the
  /// known keys are kept, string values as describe() would write them, and a pid or rank that
  /// is not a non-negative integer (or a pid of 0) is left at -1. Never fails.
  [[nodiscard]] static LockHolder parse_holder(std::string_view text);

 private:
  RunDirectoryLock(int fd, std::filesystem::path path) noexcept : fd_(fd), path_(std::move(path)) {}

  int fd_ = -1;
  std::filesystem::path path_;
};

}  // namespace tenax::io
