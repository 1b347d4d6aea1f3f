// Private to io/src: the HDF5 writer behind write_state_file, shared with write_datasets.
#pragma once

#include <filesystem>

#include "tenax/core/state_dict.hpp"
#include "tenax/io/state_file.hpp"

namespace tenax::io::detail {

// Writes `state` to `path` (created or truncated; a partial file is removed on failure), one
// contiguous dataset per entry with groups made from '/' in the names. With `metadata` it is a
// state file (root and per-dataset attributes as state_file.hpp describes); with nullptr a plain
// file of the datasets alone, no attribute anywhere. Throws as write_state_file.
void write_hdf5_file(const std::filesystem::path& path, const StateDict& state,
                     const FileMetadata* metadata);

}  // namespace tenax::io::detail
