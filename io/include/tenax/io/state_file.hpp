/// A StateDict in one HDF5 file: the unit a checkpoint stores per rank.
/// @file
/// Layout (format_version 1), readable by h5dump, h5py and any HDF5 >= 1.8 reader:
///  - Root attributes: format_version (int64), tenax_version (string), step, rank, world_size,
///    entry_count (int64), created (ISO 8601 UTC string), config (string: the run's
///    configuration as JSON text).
///  - One dataset per entry, at the entry's name; '/' in a name makes HDF5 groups, so
///    "solver/x" is dataset x in group solver. Every dataset carries the attributes kind
///    ("tensor", "integer", "real" or "string"), index (position in the StateDict, so the
///    reader restores insertion order) and checksum (XXH64 of the raw bytes, see checksum.hpp).
///  - Tensors: contiguous, unfiltered dataset of the tensor's shape (a scalar dataspace for
///    rank 0) with attributes dtype (tenax name, e.g. "bf16") and shape (int64 array). Types are
///    little-endian IEEE / two's complement; f16 is the IEEE binary16 type (h5py reads float16);
///    bf16 is stored as uint16 (its bit pattern) with dtype "bf16". Tensors on a CUDA device are
///    copied to the host first.
///  - Integers: scalar int64 dataset; reals: scalar float64 dataset; strings: scalar fixed-length
///    string dataset (null-padded, at least one byte) with attribute length (the exact byte
///    count, so strings holding any bytes round-trip).
/// All metadata is written in the checksummed HDF5 1.8 object formats, so that corrupted
/// metadata is caught by HDF5 itself and corrupted values by the per-dataset checksums.
///
/// Thread-safety: every HDF5 call in tenax goes through one process-wide mutex (the HDF5 build
/// in use need not be thread-safe), so calls from several threads are safe but serialised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenax/core/state_dict.hpp"

namespace tenax::io {

/// The format_version this build writes; read_state_file refuses any other (IoError).
inline constexpr std::int64_t kStateFileFormatVersion = 1;

/// What a state file says about itself besides its entries (its root attributes).
struct FileMetadata {
  std::int64_t step = 0;  ///< the step whose state the file holds
  int rank = 0;           ///< the rank that wrote it, in [0, world_size)
  int world_size = 1;     ///< ranks in the job that wrote it, >= 1
  std::string config;     ///< the run configuration, JSON text ("" when none)
  /// @name Written by the library
  ///@{

  /// Set by read_state_file from the file; write_state_file ignores these fields and writes
  /// kStateFileFormatVersion and tenax_version(). No time is written: a file is a function of
  /// its contents, so that two runs that computed the same data write files that compare equal
  /// whole (`h5diff`, `cmp` of the datasets); the file system's modification time says when.
  std::int64_t format_version = kStateFileFormatVersion;
  std::string tenax_version;
  /// The `created` attribute of a file written by an earlier tenax (UTC, e.g.
  /// "2025-01-31T12:00:00Z"); empty for files of this version.
  std::string created;
  ///@}
};

/// Limits the reader enforces before allocating, so a hostile or corrupt file cannot make it
/// allocate without bound.
struct ReadOptions {
  std::uint64_t max_bytes = std::uint64_t{64} << 30;     ///< total bytes of all entries
  std::size_t max_entries = std::size_t{1} << 20;        ///< entries (the file's entry_count)
  std::size_t max_string_bytes = std::size_t{64} << 20;  ///< per string entry or attribute
};

/// The version string written as tenax_version, e.g. "0.1.0".
[[nodiscard]] std::string_view tenax_version() noexcept;

/// Writes `state` to `path` whole: a new file beside it renamed over it (replace_file in
/// tenax/core/regular_file.hpp), so a failure leaves `path` as it was and removes only that
/// temporary. Does not fsync: the checkpoint store adds that (see checkpoint_store.hpp). An
/// existing `path` that is not a regular file (a device, a FIFO, a directory, a symbolic link)
/// is refused with a UsageError before anything is written. Throws UsageError for an undefined
/// tensor, metadata whose rank is outside [0, world_size), or a name that cannot be an HDF5 path
/// (empty, "." or ".." components, a NUL byte, more than 4096 bytes or 64 levels of '/', or an
/// entry whose name is a prefix scope of another, like "a" and "a/b"); IoError when the file
/// cannot be written.
void write_state_file(const std::filesystem::path& path, const StateDict& state,
                      const FileMetadata& metadata);

/// Writes one tensor as dataset `name` of a new file, with `attributes` as float64 attributes and
/// `text_attributes` as string attributes of that dataset: a result meant for other tools (h5py,
/// h5dump), e.g. a final field "u" (HDF5 path /u) with its time "t". The file is a state file of
/// one entry written with `metadata`, so read_state_file reads it back. `more` adds datasets
/// beside it without attributes (e.g. a solver's residual history). Throws UsageError for an
/// attribute name that state files reserve (kind, index, checksum, dtype, shape, length) or an
/// entry of `more` named `name`, otherwise as write_state_file (the file is replaced whole,
/// attributes included).
void write_tensor_file(const std::filesystem::path& path, std::string_view name,
                       const Tensor& tensor,
                       const std::vector<std::pair<std::string, double>>& attributes,
                       const FileMetadata& metadata = {},
                       const std::vector<std::pair<std::string, std::string>>& text_attributes = {},
                       const std::vector<std::pair<std::string, Tensor>>& more = {});

/// write_tensor_file for several tensors: one dataset each, every one with the same attributes
/// (the fields of one grid, /u and /v, with their time "t"). Throws as write_tensor_file.
void write_tensors_file(
    const std::filesystem::path& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::vector<std::pair<std::string, double>>& attributes,
    const FileMetadata& metadata = {},
    const std::vector<std::pair<std::string, std::string>>& text_attributes = {});

/// Reads a file written by write_state_file, treating it as hostile: every type, rank, shape and
/// size is checked against the file and `options` before anything is allocated, and every
/// entry's checksum is verified before the StateDict is returned. Tensors come back on the CPU.
/// `metadata`, when given, receives the root attributes. Throws IoError naming the file, the
/// entry and the reason for any inconsistency or HDF5 failure.
[[nodiscard]] StateDict read_state_file(const std::filesystem::path& path,
                                        FileMetadata* metadata = nullptr,
                                        const ReadOptions& options = {});

}  // namespace tenax::io
