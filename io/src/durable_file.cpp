#include "durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/io/checksum.hpp"

namespace tenax::io::detail {
namespace {

// Closes a descriptor on scope exit unless released; close errors on the success path are
// checked explicitly by the callers that care (writers).
class Fd {
 public:
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const noexcept { return fd_; }
  int release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

Fd open_or_throw(const std::filesystem::path& path, int flags, mode_t mode = 0) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_errno("cannot open", path, errno);
  return Fd(fd);
}

// A regular file opened without blocking (a FIFO or device in its place is refused, never
// waited on): UsageError naming what is there, or the errno's error as throw_errno() says.
Fd open_regular_or_throw(const std::filesystem::path& path, int flags, Symlinks symlinks,
                         mode_t mode = 0) {
  OpenedFile opened = try_open_regular_file(path, flags, symlinks, mode);
  if (!opened.ok() && opened.error == 0) {
    throw UsageError(opened.problem,
                     "give the path of a regular file (tenax reads and writes only regular "
                     "files; remove what stands in its place)");
  }
  if (!opened.ok()) throw_errno("cannot open", path, opened.error);
  return Fd(opened.fd.release());
}

}  // namespace

void throw_errno(std::string_view operation, const std::filesystem::path& path, int errnum) {
  const std::string cause =
      std::string(operation) + " '" + path.string() + "': " + std::strerror(errnum);
  const bool full = errnum == ENOSPC || errnum == EDQUOT;
  const std::string fix =
      full ? "free disk space (or raise the quota), or put the run directory on a filesystem "
             "with room; checkpoints committed before are intact"
           : "check the filesystem (permissions, mount, health in dmesg); checkpoints committed "
             "before are intact";
  switch (classify_errno(errnum)) {
    case FaultClass::out_of_memory:
      throw OutOfMemoryError(cause, "free host memory; checkpoints committed before are intact");
    case FaultClass::usage:
      throw UsageError(cause, fix);
    default:
      throw IoError(cause, fix);
  }
}

void fsync_path(const std::filesystem::path& path, bool directory) {
  Fd fd = directory ? open_or_throw(path, O_RDONLY | O_DIRECTORY)
                    : open_regular_or_throw(path, O_RDONLY, Symlinks::refuse);
  if (::fsync(fd.get()) != 0) throw_errno("cannot fsync", path, errno);
}

void rename_path(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) throw_errno("cannot rename", from, errno);
}

void write_file_synced(const std::filesystem::path& path, std::string_view bytes) {
  Fd fd = open_regular_or_throw(path, O_WRONLY | O_CREAT | O_TRUNC, Symlinks::refuse, 0644);
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("cannot write", path, n < 0 ? errno : EIO);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fsync(fd.get()) != 0) throw_errno("cannot fsync", path, errno);
  // close() reports deferred write errors on some filesystems (NFS).
  if (::close(fd.release()) != 0) throw_errno("cannot close", path, errno);
}

namespace {

// Hashes the file behind `fd` with pread, so that it does not move a file position another
// thread may share.
FileDigest digest_descriptor(int fd, const std::filesystem::path& path) {
  std::vector<unsigned char> buffer(std::size_t{4} << 20);
  Xxh64 hash;
  FileDigest result;
  while (true) {
    const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(result.size));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("cannot read", path, errno);
    if (n == 0) break;
    hash.update(buffer.data(), static_cast<std::size_t>(n));
    result.size += static_cast<std::uint64_t>(n);
  }
  result.digest = hash.digest();
  return result;
}

}  // namespace

FileDigest digest_file(const std::filesystem::path& path) {
  // A link is followed (a user's input file may be one) but only to a regular file: a FIFO
  // would hang the open, a pipe fail pread with "Illegal seek", /dev/zero never end.
  Fd fd = open_regular_or_throw(path, O_RDONLY, Symlinks::follow);
  // Ask for the whole file at once: the kernel then streams it from the disk at full speed while
  // this thread hashes, and a reader of the same file on another thread (the loader) finds the
  // pages already in the cache. Only advice: a failure changes nothing but speed.
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_WILLNEED);
  return digest_descriptor(fd.get(), path);
}

FileDigest fsync_and_digest(const std::filesystem::path& path) {
  Fd fd = open_regular_or_throw(path, O_RDONLY, Symlinks::refuse);
  // fsync mostly waits for the disk while the hash is CPU work on pages that are still in the
  // page cache: done side by side, the digest costs nothing the fsync does not already take.
  FileDigest digest;
  std::exception_ptr digest_error;
  std::thread hasher([&] {
    try {
      digest = digest_descriptor(fd.get(), path);
    } catch (...) {
      digest_error = std::current_exception();
    }
  });
  const int synced = ::fsync(fd.get());
  const int sync_errno = errno;
  hasher.join();
  if (synced != 0) throw_errno("cannot fsync", path, sync_errno);
  if (digest_error) std::rethrow_exception(digest_error);
  return digest;
}

std::string read_small_file(const std::filesystem::path& path, std::size_t limit) {
  Fd fd = open_regular_or_throw(path, O_RDONLY, Symlinks::refuse);
  std::string text;
  char chunk[8192];
  while (true) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("cannot read", path, errno);
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > limit) {
      throw IoError("'" + path.string() + "' is larger than " + std::to_string(limit) +
                        " bytes, too large for what it should be",
                    "the file is corrupt or not written by tenax; use an older checkpoint");
    }
    text.append(chunk, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace tenax::io::detail
