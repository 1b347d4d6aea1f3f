// Private to io/src: POSIX file operations with the durability the checkpoint protocol needs,
// each failure turned into the tenax error of its errno class (classify_errno).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tenax::io::detail {

// Throws the error for `errnum` from `operation` on `path`: IoError for disk-full and I/O
// errors (and anything unclassified), OutOfMemoryError for ENOMEM, UsageError for EINVAL.
[[noreturn]] void throw_errno(std::string_view operation, const std::filesystem::path& path,
                              int errnum);

// fsync of a file or directory (directories make renames and creations durable).
void fsync_path(const std::filesystem::path& path, bool directory);

// rename(2), atomic within one filesystem.
void rename_path(const std::filesystem::path& from, const std::filesystem::path& to);

// Creates or truncates `path` with `bytes`, fsyncs it and closes it. `path` must be a regular
// file or nothing (never a symbolic link): UsageError otherwise.
void write_file_synced(const std::filesystem::path& path, std::string_view bytes);

// XXH64 of the file's bytes, and its size. A symbolic link is followed to a regular file only;
// anything else (a FIFO, a device) is a UsageError, refused without blocking.
struct FileDigest {
  std::uint64_t size = 0;
  std::uint64_t digest = 0;
};
[[nodiscard]] FileDigest digest_file(const std::filesystem::path& path);
// fsync of a regular file and its digest, the two overlapped; the digest is of the bytes being
// made durable (the page cache the fsync writes back). A regular file, not through a link.
[[nodiscard]] FileDigest fsync_and_digest(const std::filesystem::path& path);

// The whole file when it has at most `limit` bytes; throws IoError otherwise (UsageError when it
// is not a regular file, or a symbolic link).
[[nodiscard]] std::string read_small_file(const std::filesystem::path& path, std::size_t limit);

}  // namespace tenax::io::detail
