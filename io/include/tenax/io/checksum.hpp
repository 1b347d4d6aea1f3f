/// XXH64 (xxHash, 64-bit): the checksum of every dataset in a tenax state file and the digest of
/// every file in a checkpoint's commit record. Chosen because it is well known (xxhsum, Python's
/// xxhash, zstd and many databases use it), fast (several GB/s per core, so verifying a checkpoint
/// costs little next to reading it) and has published test vectors. It detects accidental
/// corruption, not tampering. @file
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tenax::io {

/// XXH64 of `size` bytes at `data` with `seed`. Never throws; data may be null when size is 0.
[[nodiscard]] std::uint64_t xxh64(const void* data, std::size_t size,
                                  std::uint64_t seed = 0) noexcept;

/// Incremental XXH64: update() with the bytes in any pieces, digest() gives the same value as
/// xxh64() of their concatenation. digest() does not change the state. Not thread-safe.
class Xxh64 {
 public:
  /// An empty input hashed with `seed` (0 for the digests tenax stores).
  explicit Xxh64(std::uint64_t seed = 0) noexcept;
  /// Appends `size` bytes at `data` (may be null when size is 0).
  void update(const void* data, std::size_t size) noexcept;
  /// XXH64 of every byte appended so far.
  [[nodiscard]] std::uint64_t digest() const noexcept;

 private:
  std::uint64_t lanes_[4];
  std::uint64_t seed_;
  std::uint64_t total_ = 0;
  unsigned char pending_[32];
  std::size_t pending_size_ = 0;
};

/// `value` as 16 lower-case hex digits, most significant first (zero-padded), the form the commit
/// record and `tenax ckpt` show.
[[nodiscard]] std::string to_hex64(std::uint64_t value);
/// Parses exactly 16 lower-case hex digits into `value`; returns false, leaving `value` as it
/// was, for anything else (upper case, another length, a sign or prefix).
[[nodiscard]] bool parse_hex64(std::string_view text, std::uint64_t& value) noexcept;

/// XXH64 of a whole file's bytes (e.g. to record which input a run was started with). Throws
/// IoError naming the file and the errno reason when it cannot be read.
[[nodiscard]] std::uint64_t xxh64_file(const std::filesystem::path& path);

}  // namespace tenax::io
