/// A model's parameters in an HDF5 file, as the bundled training programs write them
/// (`--output`) and start from them (`--init`). @file
/// One dataset `/params/<name>` per entry of the model's state_dict(), named and laid out as
/// PyTorch's state_dict() (`/params/fc0.weight` [out, in], `/params/blocks.0.ln1.bias`), so that
/// h5py reads them into a torch model with `model.load_state_dict({k: torch.tensor(v[()]) for k,
/// v in f["params"].items()})`, and a file written from PyTorch that way starts a tenax run.
#pragma once

#include <filesystem>

#include "tenax/core/state_dict.hpp"
#include "tenax/train/nn/module.hpp"

namespace tenax::train::nn {

/// The entries of model.state_dict() as `params/<name>` host tensors (copies), in state-dict
/// order, for io::write_state_file (or io::write_datasets) beside any entries of the caller's
/// own (a loss history).
[[nodiscard]] StateDict parameter_file_entries(const Module& model);

/// Loads `/params/<name>` of the HDF5 file `path` into every parameter and buffer of `model`
/// (Module::load_state_dict: shapes checked, other floating dtypes converted, nothing changed
/// unless every entry fits). UsageError naming the file and the entry when the file lacks one of
/// the model's entries, when it holds a `/params/` dataset the model does not have (a file of
/// another model: starting from a part of it is refused) or when a shape differs; IoError when
/// the file is missing or not HDF5.
void load_parameter_file(Module& model, const std::filesystem::path& path);

}  // namespace tenax::train::nn
