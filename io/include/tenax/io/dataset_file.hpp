/// Plain HDF5 datasets as other tools write them (h5py, PyTorch users, simulation codes): read one
/// into a tensor, ask whether one exists, and write such files (for tools and tests).
/// @file
/// Unlike state files (state_file.hpp) these files carry no tenax attributes and no checksums, so
/// the reader cannot tell a flipped bit in the values from data; it does treat the file as
/// hostile: every type, rank, extent, layout and size is checked against the file and
/// ReadOptions::max_bytes before anything is allocated, links are followed only when they are
/// hard links inside the file, and raw data stored outside the file (external storage, virtual
/// datasets) is refused. HDF5 itself still parses the file's metadata and inflates gzip chunks
/// (a hostile chunk can make it allocate up to about 1000 times the chunk's stored size).
///
/// Accepted element types, in either byte order (converted to little-endian on reading):
/// float64, float32, float16 (IEEE binary16, what h5py writes for numpy.float16), int64 and
/// int32, read as DType f64, f32, f16, i64 and i32. Accepted layouts: compact, contiguous (an
/// unwritten dataset reads as its fill value), and chunked with at most 256 MiB per chunk and
/// only the deflate (gzip), shuffle and fletcher32 filters.
///
/// Dataset names are HDF5 paths inside the file ("u", "/u" or "fields/u"); a leading '/' is
/// optional. Thread-safety: every call takes the process-wide HDF5 lock (see state_file.hpp), so
/// calls from several threads are safe but serialised.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenax/core/tensor.hpp"
#include "tenax/io/state_file.hpp"

namespace tenax::io {

/// The dataset `name` of `file` as a CPU tensor of the dataset's shape (a scalar dataspace gives
/// rank 0) and type. Only options.max_bytes applies (to the dataset's size). Throws UsageError for
/// a name that cannot be an HDF5 path, IoError naming the file and the dataset when the file is
/// missing, unreadable, truncated or corrupt, when the dataset is missing (the message lists the
/// datasets the file holds, up to 20), is a group or a soft/external link, or has an element
/// type, rank (at most Shape::kMaxRank), size or layout the reader does not accept (the message
/// names what it found and what is accepted).
[[nodiscard]] Tensor read_dataset(const std::filesystem::path& file, std::string_view name,
                                  const ReadOptions& options = {});

/// Whether `file` holds a dataset `name` reached through hard links, i.e. one read_dataset would
/// find (its type, size and layout are not checked). Throws UsageError for a name that cannot be
/// an HDF5 path, IoError when the file is missing or not readable as HDF5.
[[nodiscard]] bool has_dataset(const std::filesystem::path& file, std::string_view name);

/// The datasets of a file, reached through hard links, depth first in name order
/// ("params/fc0/bias", "x").
struct DatasetListing {
  std::vector<std::string> names;  ///< full paths without a leading '/', at most max_names
  std::size_t datasets = 0;        ///< datasets seen, listed or not
  /// False when there are more datasets than max_names, or when the walk stopped early (more
  /// than 10000 links, groups nested deeper than 32, or an unreadable group).
  bool complete = true;
};

/// Lists the datasets of `file` (see DatasetListing). Throws IoError when the file is missing or
/// not readable as HDF5.
[[nodiscard]] DatasetListing list_datasets(const std::filesystem::path& file,
                                           std::size_t max_names = 1000);

/// Writes `datasets` to `file`, replaced whole as write_state_file does (a temporary renamed over
/// it; a non-regular `file` is refused with a UsageError), as
/// plain contiguous datasets of the tensors' shapes and types, in the given order, with groups
/// made from '/' in the names and no attribute anywhere, so that h5py, h5dump and read_dataset read
/// them. Tensors on a device are copied to the host first; bf16 is written as uint16 (its bit
/// pattern), u8 as uint8. Not fsync'ed. Throws UsageError for an undefined tensor,
/// a duplicate name or a name that cannot be an HDF5 path (empty, "." or ".." components, or a
/// name that is also the group of another, like "a" and "a/b"), IoError when the file cannot be
/// written.
void write_datasets(const std::filesystem::path& file,
                    const std::vector<std::pair<std::string, Tensor>>& datasets);

}  // namespace tenax::io
