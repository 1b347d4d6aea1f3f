/// Regular files only: the one rule by which tenax opens a file of a run directory, reads a file
/// a user names, and writes an output file.
/// @file
/// A path that is not a regular file is never used as one: a FIFO would hang the open or the
/// read (and SIGTERM with it), a device would be read without end (/dev/zero) or be replaced by
/// the output, a symbolic link planted in a run directory would redirect a write or a deletion to
/// a file outside it. So:
///  - opening (try_open_regular_file, open_regular_file) adds O_NONBLOCK, so that a FIFO or a
///    device does not block the open, and, unless symbolic links are followed on purpose,
///    O_NOFOLLOW; the descriptor is then checked with fstat to be a regular file (S_ISREG)
///    before anything is read or written, and O_NONBLOCK is cleared again;
///  - an output path (require_output_path, replace_file) that exists must be a regular file
///    (checked with lstat: a symbolic link is refused too), and is replaced whole, by a temporary
///    file in the same directory renamed over it: a failed write leaves it as it was, and nothing
///    but the temporary this process created is ever removed.
/// Errors name the path, what it is, what was expected and the fix.
///
/// Thread-safety: every function may be called from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace tenax {

/// What a path names, as lstat (or stat, following links) reports it.
enum class FileKind : std::uint8_t {
  missing,           ///< nothing (or a path that cannot be inspected)
  regular,           ///< a regular file
  directory,         ///< a directory
  symlink,           ///< a symbolic link (only when links are not followed)
  fifo,              ///< a FIFO (named pipe; also a pipe of a shell's process substitution)
  character_device,  ///< a character device (/dev/null, /dev/zero, a terminal)
  block_device,      ///< a block device (a disk)
  socket,            ///< a Unix socket
  other,             ///< any other kind
};

/// "a regular file", "a directory", "a symbolic link", "a FIFO", "a character device",
/// "a block device", "a socket", "nothing" (missing) or "an unknown kind of file".
[[nodiscard]] std::string_view describe(FileKind kind) noexcept;

/// What `path` is; a final symbolic link is followed only when `follow_symlinks` is true.
/// FileKind::missing when the path does not exist or cannot be inspected. Never throws.
[[nodiscard]] FileKind file_kind(const std::filesystem::path& path,
                                 bool follow_symlinks = false) noexcept;

/// An owned file descriptor, closed when it goes out of scope. Movable, not copyable.
class FileDescriptor {
 public:
  FileDescriptor() noexcept = default;
  /// Takes ownership of `fd` (-1: none).
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  /// Takes `other`'s descriptor; `other` holds none afterwards.
  FileDescriptor(FileDescriptor&& other) noexcept;
  /// Closes the held descriptor, then takes `other`'s.
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor();

  /// The descriptor, -1 when none is held.
  [[nodiscard]] int get() const noexcept { return fd_; }
  /// Whether a descriptor is held.
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  /// Gives up ownership and returns the descriptor.
  int release() noexcept;

 private:
  int fd_ = -1;
};

/// Whether a final symbolic link of a path is followed (to a regular file only) or refused.
enum class Symlinks : std::uint8_t {
  refuse,  ///< O_NOFOLLOW: files of a run directory, which tenax itself creates
  follow,  ///< a path the user gave (an input file), which may well be a link to a file
};

/// What try_open_regular_file() found: an open regular file, or why not.
struct OpenedFile {
  FileDescriptor fd;                  ///< valid on success
  FileKind kind = FileKind::missing;  ///< what the path is (FileKind::regular on success)
  int error = 0;  ///< errno of a failed open or fstat; 0 on success or when `kind` is wrong
  /// Empty on success; otherwise what is wrong, naming the path: "'P' is a FIFO, not a regular
  /// file" or "cannot open 'P': No such file or directory".
  std::string problem;
  /// Whether the file is open.
  [[nodiscard]] bool ok() const noexcept { return fd.valid(); }
};

/// Opens `path` with `flags` (O_RDONLY, O_WRONLY | O_CREAT | O_APPEND, ...; O_CLOEXEC is added)
/// and `mode` for a file it creates, without ever blocking (O_NONBLOCK until the descriptor is
/// known to be a regular file) and, with Symlinks::refuse, without following a final symbolic
/// link (O_NOFOLLOW). Anything but a regular file is refused: a path that lstat (stat with
/// Symlinks::follow) shows to be of another kind is not even opened. Never throws but
/// std::bad_alloc.
[[nodiscard]] OpenedFile try_open_regular_file(const std::filesystem::path& path, int flags,
                                               Symlinks symlinks, mode_t mode = 0644);

/// The same, throwing: UsageError "'P' is a FIFO, not a regular file" with `fix` when the path is
/// not a regular file (a symbolic link, with Symlinks::refuse); for a failed open, the error of
/// the errno's class (classify_errno: IoError for ENOENT, EACCES, ENOSPC...) with the errno text
/// and `fix`.
[[nodiscard]] FileDescriptor open_regular_file(const std::filesystem::path& path, int flags,
                                               Symlinks symlinks, std::string_view fix,
                                               mode_t mode = 0644);

/// Refuses an output path that exists and is not a regular file (lstat: a directory, a FIFO, a
/// device, a socket or a symbolic link such as /dev/stdout) before anything is written:
/// UsageError "`what` P is a character device, not a regular file" (`what` names the option,
/// e.g. "--output") with the fix. A missing path or a regular file passes. An empty path is a
/// UsageError too.
void require_output_path(const std::filesystem::path& path, std::string_view what);

/// require_output_path for a file a job writes when it ends, checked before it starts: also a
/// UsageError (naming `what`, the path and the fix) for a path that names no file ("." or "..")
/// and one whose directory does not exist or is not a directory -- so that a job learns of an
/// output it cannot write before it runs, not after. (A directory removed during the job is
/// the writer's IoError then.)
void require_output_path_before_the_job(const std::filesystem::path& path, std::string_view what);

/// Writes `path` whole: require_output_path(path, what), then `write(temporary)` on a new empty
/// file beside it (`path` + ".tmp-<pid>", created here with O_EXCL | O_NOFOLLOW; `write` fills
/// it, by name or by truncating it), then a rename over `path` (atomic, and a symbolic link or
/// device planted meanwhile is refused again first). On any failure the temporary is removed,
/// `path` is left as it was, and the exception propagates; nothing else is ever removed. No
/// fsync: callers that need durability sync the temporary inside `write`. Throws as
/// require_output_path, and IoError (by errno class) when the temporary cannot be created or
/// renamed.
void replace_file(const std::filesystem::path& path, std::string_view what,
                  const std::function<void(const std::filesystem::path& temporary)>& write);

/// replace_file() with `bytes` as the whole content.
void replace_file_contents(const std::filesystem::path& path, std::string_view what,
                           std::string_view bytes);

}  // namespace tenax
