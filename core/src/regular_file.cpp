#include "tenax/core/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "tenax/core/error.hpp"

namespace tenax {
namespace {

FileKind kind_of(mode_t mode) noexcept {
  if (S_ISREG(mode)) return FileKind::regular;
  if (S_ISDIR(mode)) return FileKind::directory;
  if (S_ISLNK(mode)) return FileKind::symlink;
  if (S_ISFIFO(mode)) return FileKind::fifo;
  if (S_ISCHR(mode)) return FileKind::character_device;
  if (S_ISBLK(mode)) return FileKind::block_device;
  if (S_ISSOCK(mode)) return FileKind::socket;
  return FileKind::other;
}

std::string not_regular(const std::filesystem::path& path, FileKind kind) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "'" + string + ...
  std::string text = "'";
  text += path.string();
  text += "' is ";
  text += describe(kind);
  text += ", not a regular file";
  return text;
}

[[noreturn]] void throw_errno(std::string cause, std::string fix, int errnum) {
  switch (classify_errno(errnum)) {
    case FaultClass::out_of_memory:
      throw OutOfMemoryError(std::move(cause), std::move(fix));
    case FaultClass::usage:
      throw UsageError(std::move(cause), std::move(fix));
    case FaultClass::io:
      throw IoError(std::move(cause), std::move(fix));
    default:
      throw EnvironmentError(std::move(cause), std::move(fix));
  }
}

}  // namespace

std::string_view describe(FileKind kind) noexcept {
  switch (kind) {
    case FileKind::missing:
      return "nothing";
    case FileKind::regular:
      return "a regular file";
    case FileKind::directory:
      return "a directory";
    case FileKind::symlink:
      return "a symbolic link";
    case FileKind::fifo:
      return "a FIFO";
    case FileKind::character_device:
      return "a character device";
    case FileKind::block_device:
      return "a block device";
    case FileKind::socket:
      return "a socket";
    case FileKind::other:
      break;
  }
  return "an unknown kind of file";
}

FileKind file_kind(const std::filesystem::path& path, bool follow_symlinks) noexcept {
  struct stat status {};
  const int rc = follow_symlinks ? ::stat(path.c_str(), &status) : ::lstat(path.c_str(), &status);
  return rc == 0 ? kind_of(status.st_mode) : FileKind::missing;
}

FileDescriptor::FileDescriptor(FileDescriptor&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

int FileDescriptor::release() noexcept { return std::exchange(fd_, -1); }

OpenedFile try_open_regular_file(const std::filesystem::path& path, int flags, Symlinks symlinks,
                                 mode_t mode) {
  OpenedFile opened;
  const bool follow = symlinks == Symlinks::follow;
  // Looked at before the open, so that a device is never opened at all (opening some has
  // effects); the fstat below closes the race with a file swapped in between.
  const FileKind before = file_kind(path, follow);
  if (before != FileKind::missing && before != FileKind::regular) {
    opened.kind = before;
    opened.problem = not_regular(path, before);
    return opened;
  }
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW), mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int error = errno;
    // ELOOP from O_NOFOLLOW, ENXIO from a FIFO opened for writing without a reader: name what
    // is there rather than the errno.
    const FileKind now = file_kind(path, follow);
    if (now != FileKind::missing && now != FileKind::regular) {
      opened.kind = now;
      opened.problem = not_regular(path, now);
      return opened;
    }
    opened.error = error;
    opened.problem = "cannot open '" + path.string() + "': " + std::strerror(error);
    return opened;
  }
  FileDescriptor owned(fd);
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    opened.error = errno;
    opened.problem = "cannot inspect '" + path.string() + "': " + std::strerror(opened.error);
    return opened;
  }
  opened.kind = kind_of(status.st_mode);
  if (opened.kind != FileKind::regular) {
    opened.problem = not_regular(path, opened.kind);
    return opened;
  }
  if ((flags & O_NONBLOCK) == 0) {
    const int status_flags = ::fcntl(fd, F_GETFL);
    if (status_flags >= 0) (void)::fcntl(fd, F_SETFL, status_flags & ~O_NONBLOCK);
  }
  opened.fd = std::move(owned);
  return opened;
}

FileDescriptor open_regular_file(const std::filesystem::path& path, int flags, Symlinks symlinks,
                                 std::string_view fix, mode_t mode) {
  OpenedFile opened = try_open_regular_file(path, flags, symlinks, mode);
  if (opened.ok()) return std::move(opened.fd);
  if (opened.error == 0) throw UsageError(std::move(opened.problem), std::string(fix));
  throw_errno(std::move(opened.problem), std::string(fix), opened.error);
}

void require_output_path(const std::filesystem::path& path, std::string_view what) {
  TENAX_EXPECTS(!path.empty(), UsageError, std::string(what) + " is empty",
                "give the path of the file to write");
  const FileKind kind = file_kind(path);
  TENAX_EXPECTS(
      kind == FileKind::missing || kind == FileKind::regular, UsageError,
      std::string(what) + " " + path.string() + " is " + std::string(describe(kind)) +
          ", not a regular file",
      "give the path of a regular file (a new one, or one to replace): tenax writes a file "
      "whole and renames it into place, so it never writes into " +
          std::string(describe(kind)) + " or replaces one" +
          (kind == FileKind::symlink ? " (remove the link, or give the path it points to)" : ""));
}

void require_output_path_before_the_job(const std::filesystem::path& path, std::string_view what) {
  TENAX_EXPECTS(path.empty() || (path.filename() != "." && path.filename() != ".."), UsageError,
                std::string(what) + " " + path.string() + " names no file",
                "give a file name, e.g. " + (path / "out.h5").lexically_normal().string());
  require_output_path(path, what);
  // A path "dir/" has an empty file name: its parent is dir itself, a directory refused above
  // when it exists.
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  const FileKind folder_kind = file_kind(folder, /*follow_symlinks=*/true);
  TENAX_EXPECTS(folder_kind == FileKind::directory, UsageError,
                std::string(what) + " " + path.string() + ": the directory " + folder.string() +
                    (folder_kind == FileKind::missing
                         ? " does not exist"
                         : " is " + std::string(describe(folder_kind)) + ", not a directory"),
                "create it first, or give a path in an existing directory");
}

void replace_file(const std::filesystem::path& path, std::string_view what,
                  const std::function<void(const std::filesystem::path& temporary)>& write) {
  require_output_path(path, what);
  const std::filesystem::path temporary =
      path.string() + ".tmp-" + std::to_string(static_cast<long long>(::getpid()));
  const std::string fix =
      "give " + std::string(what) + " a path in a directory you can write, on a disk with room";
  // A leftover of a crashed write of this pid (a name nothing else uses) goes first; unlink
  // removes a symbolic link itself, never what it points to, and fails on a directory.
  if (file_kind(temporary) != FileKind::missing) (void)::unlink(temporary.c_str());
  {
    const OpenedFile created =
        try_open_regular_file(temporary, O_WRONLY | O_CREAT | O_EXCL, Symlinks::refuse, 0644);
    if (!created.ok()) {
      std::string cause = "cannot write " + path.string() + ": " + created.problem;
      if (created.error == 0) throw UsageError(std::move(cause), fix);
      throw_errno(std::move(cause), fix, created.error);
    }
  }
  try {
    write(temporary);
    // Checked again: the rename would replace whatever stands at `path` now.
    require_output_path(path, what);
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
      const int error = errno;
      throw_errno("cannot move " + temporary.string() + " into place at " + path.string() + ": " +
                      std::strerror(error),
                  fix, error);
    }
  } catch (...) {
    // The temporary is this call's own file (created above with O_EXCL); nothing else goes.
    (void)::unlink(temporary.c_str());
    throw;
  }
}

void replace_file_contents(const std::filesystem::path& path, std::string_view what,
                           std::string_view bytes) {
  replace_file(path, what, [&](const std::filesystem::path& temporary) {
    FileDescriptor fd =
        open_regular_file(temporary, O_WRONLY | O_TRUNC, Symlinks::refuse,
                          "give " + std::string(what) + " a path in a directory you can write");
    std::string_view rest = bytes;
    while (!rest.empty()) {
      const ssize_t n = ::write(fd.get(), rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int error = n < 0 ? errno : ENOSPC;
        throw_errno("cannot write " + path.string() + ": " + std::strerror(error),
                    "free space on the disk of " + path.string() + ", or give " +
                        std::string(what) + " another path",
                    error);
      }
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    // close() reports deferred write errors on some filesystems (NFS).
    if (::close(fd.release()) != 0) {
      const int error = errno;
      throw_errno(
          "cannot write " + path.string() + ": " + std::strerror(error),
          "check the disk of " + path.string() + ", or give " + std::string(what) + " another path",
          error);
    }
  });
}

}  // namespace tenax
