/// ArrayData: a training set of arrays in an HDF5 file, read and checked whole: inputs /x and
/// targets /y, one row per sample. @file
/// /x is [N, d_in] of any floating dtype (converted to f32). /y is either integer class labels
/// [N] (int64 or int32: classification, labels in [0, C)) or [N, d_out] floating targets
/// (regression, converted to f32). Every input and target must be finite and every label a
/// class: a bad sample is refused at once, named by its index, instead of surfacing as a
/// non-finite loss many steps later. h5py writes such a file with
/// `f.create_dataset("x", data=X); f.create_dataset("y", data=y)`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "tenax/core/tensor.hpp"

namespace tenax::train {

/// Samples as host arrays (see the file).
struct ArrayData {
  Tensor x;                  ///< [N, d_in] f32
  Tensor y;                  ///< [N] i64 labels (classification) or [N, d_out] f32 targets
  std::int64_t classes = 0;  ///< the class count C (classification), 0 for regression

  /// Whether /y holds class labels.
  [[nodiscard]] bool classification() const noexcept { return classes > 0; }
  /// N.
  [[nodiscard]] std::int64_t size() const { return x.shape()[0]; }
  /// Inputs per sample.
  [[nodiscard]] std::int64_t d_in() const { return x.shape()[1]; }
  /// Outputs per sample: C for classification, the targets' width for regression.
  [[nodiscard]] std::int64_t d_out() const { return classification() ? classes : y.shape()[1]; }
  /// The samples `rows` in that order (a batch: rows = SampleOrder::samples(k B, B)), as a new
  /// set of the same kind on the host. UsageError naming the first row outside [0, size()).
  [[nodiscard]] ArrayData subset(std::span<const std::int64_t> rows) const;
};

/// What read_array_data does with a NaN or an infinity among the inputs or regression targets.
enum class NonFiniteValues : std::uint8_t {
  refuse,  ///< a UsageError naming the first one's sample (the default)
  /// kept as they are: every step whose batch holds such a sample fails, and a run that skips
  /// such steps (runtime::RunnerOptions::repeated_anomaly = skip) trains on the rest
  keep
};

/// Reads /x and /y of `path` (see the file). `classes`: the class count of a classification set,
/// or 0 to take the largest label + 1 (refused when that is more classes than samples, which a
/// stray label such as 1000000 among 0 and 1 would imply, or fewer than 2); must be 0 for
/// regression targets. `classes_flag` names the program's flag for `classes` in the fixes (e.g.
/// "--classes"), or is empty. Throws IoError when the file or a dataset cannot be read, and
/// UsageError naming the file, the dataset, the sample and the fix for a shape, a label that
/// breaks the rules or (`non_finite` = refuse) a non-finite value.
[[nodiscard]] ArrayData read_array_data(const std::filesystem::path& path, std::int64_t classes = 0,
                                        std::string_view classes_flag = {},
                                        NonFiniteValues non_finite = NonFiniteValues::refuse);

}  // namespace tenax::train
