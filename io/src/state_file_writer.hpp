// Private to io/src: the HDF5 writer behind write_state_file, shared with write_datasets.
#pragma once

#include <filesystem>

#include "tenax/core/state_dict.hpp"
#include "tenax/io/state_file.hpp"

namespace tenax::io::detail {

// Writes `state` to `path` in place (created, or truncated when it is a regular file; anything
// else there is a UsageError, and a partial file is left to the caller, which writes a temporary
// of its own: replace_file, or the checkpoint store's protocol), one
// contiguous dataset per entry with groups made from '/' in the names. With `metadata` it is a
// state file (root and per-dataset attributes as state_file.hpp describes); with nullptr a plain
// file of the datasets alone, no attribute anywhere. Throws as write_state_file.
void write_hdf5_file(const std::filesystem::path& path, const StateDict& state,
                     const FileMetadata* metadata);

}  // namespace tenax::io::detail
