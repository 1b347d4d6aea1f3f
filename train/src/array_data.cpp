// read_array_data: /x and /y of an HDF5 file, every rule checked before training sees a sample.
#include "tenax/train/array_data.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/io/dataset_file.hpp"
#include "tenax/kernels/ops.hpp"

namespace tenax::train {
namespace {

// The class count as the caller names it: its flag ("--classes"), or read_array_data's argument.
std::string classes_setting(std::string_view flag) {
  return flag.empty() ? std::string("classes") : std::string(flag);
}

// That setting given the value `count`: "--classes 5" or "classes = 5 (read_array_data)".
std::string classes_given(std::string_view flag, std::int64_t count) {
  return flag.empty() ? "classes = " + std::to_string(count) + " (read_array_data)"
                      : std::string(flag) + " " + std::to_string(count);
}

// "f64[12]": a dataset's dtype and shape.
std::string kind(const Tensor& t) {
  return std::string(to_string(t.dtype())) + to_string(t.shape());
}

// The first non-finite value of a [N, d] f32 tensor, named by sample and column.
void expect_finite(const std::string& file, const char* dataset, const Tensor& values) {
  const float* data = values.data_as<float>();
  const std::int64_t columns = values.shape()[1];
  for (std::int64_t k = 0; k < values.numel(); ++k) {
    if (std::isfinite(data[k])) continue;
    throw UsageError(file + ": /" + dataset + "[" + std::to_string(k / columns) + ", " +
                         std::to_string(k % columns) + "] (sample " + std::to_string(k / columns) +
                         ") is " + std::to_string(data[k]),
                     "replace or drop that sample: training needs finite inputs and targets (or "
                     "read the file with NonFiniteValues::keep and skip the steps that read it: "
                     "RunnerOptions::repeated_anomaly = skip)");
  }
}

}  // namespace

ArrayData read_array_data(const std::filesystem::path& path, std::int64_t classes,
                          std::string_view classes_flag, NonFiniteValues non_finite) {
  const bool refuse = non_finite == NonFiniteValues::refuse;
  const std::string file = path.string();
  const std::string setting = classes_setting(classes_flag);
  TENAX_EXPECTS(classes >= 0, UsageError, classes_given(classes_flag, classes) + " for " + file,
                "give the number of classes (>= 2), or 0 to take the largest label + 1");
  ArrayData d;
  const Tensor x = io::read_dataset(path, "x");
  const Tensor y = io::read_dataset(path, "y");
  TENAX_EXPECTS(
      x.shape().rank() == 2 && x.shape()[0] >= 1 && x.shape()[1] >= 1 && is_floating(x.dtype()),
      UsageError, file + ": /x is " + kind(x),
      "store the inputs as /x of shape [N, d_in] (float32), N and d_in >= 1");
  d.x = x.dtype() == DType::f32 ? x : ops::cast(x, DType::f32);
  if (refuse) expect_finite(file, "x", d.x);
  const std::int64_t n = x.shape()[0];
  if (y.dtype() == DType::i64 || y.dtype() == DType::i32) {
    TENAX_EXPECTS(
        y.shape() == Shape{n}, UsageError,
        file + ": /y holds integer labels of shape " + to_string(y.shape()) + " for /x of shape " +
            to_string(x.shape()),
        "store one int64 class label per sample: /y of shape [" + std::to_string(n) + "]");
    d.y = Tensor::empty(Shape{n}, DType::i64);
    std::int64_t* labels = d.y.data_as<std::int64_t>();
    std::int64_t largest = 0;  // the sample with the largest label
    for (std::int64_t i = 0; i < n; ++i) {
      labels[i] = y.dtype() == DType::i64 ? y.data_as<std::int64_t>()[i]
                                          : std::int64_t{y.data_as<std::int32_t>()[i]};
      TENAX_EXPECTS(labels[i] >= 0, UsageError,
                    file + ": label " + std::to_string(labels[i]) + " of sample " +
                        std::to_string(i) + " is negative",
                    "number the classes 0, 1, ..., C-1");
      TENAX_EXPECTS(
          classes == 0 || labels[i] < classes, UsageError,
          file + ": label " + std::to_string(labels[i]) + " of sample " + std::to_string(i) +
              " is outside the " + std::to_string(classes) + " classes of " + setting,
          "number the classes 0, 1, ..., " + std::to_string(classes - 1) + ", or raise " + setting);
      if (labels[i] > labels[largest]) largest = i;
    }
    d.classes = classes > 0 ? classes : labels[largest] + 1;
    // A stray label would build a model of a million classes and end in an out-of-memory report
    // that never mentions labels: more classes than samples is refused unless given.
    TENAX_EXPECTS(classes > 0 || d.classes <= n, UsageError,
                  file + ": label " + std::to_string(labels[largest]) + " of sample " +
                      std::to_string(largest) + " implies " + std::to_string(d.classes) +
                      " classes for " + std::to_string(n) + " samples",
                  "correct that label, or give " + classes_given(classes_flag, d.classes) +
                      " if the data really has that many classes");
    TENAX_EXPECTS(d.classes >= 2, UsageError,
                  file + ": the labels name only " + std::to_string(d.classes) + " class",
                  "classification needs at least two classes");
  } else {
    TENAX_EXPECTS(y.shape().rank() == 2 && y.shape()[0] == n && is_floating(y.dtype()), UsageError,
                  file + ": /y is " + kind(y) + " for /x of shape " + to_string(x.shape()),
                  "store regression targets as /y of shape [" + std::to_string(n) +
                      ", d_out] (float32), or class labels as int64 [" + std::to_string(n) + "]");
    TENAX_EXPECTS(classes == 0, UsageError,
                  classes_given(classes_flag, classes) + " with regression targets in " + file,
                  "give no class count, or store class labels as int64 /y of shape [N]");
    d.y = y.dtype() == DType::f32 ? y : ops::cast(y, DType::f32);
    if (refuse) expect_finite(file, "y", d.y);
  }
  return d;
}

ArrayData ArrayData::subset(std::span<const std::int64_t> rows) const {
  const auto b = static_cast<std::int64_t>(rows.size());
  const std::int64_t inputs = d_in();
  const std::int64_t targets = classification() ? 1 : d_out();
  ArrayData part;
  part.classes = classes;
  part.x = Tensor::empty(Shape{b, inputs}, DType::f32);
  part.y = classification() ? Tensor::empty(Shape{b}, DType::i64)
                            : Tensor::empty(Shape{b, targets}, DType::f32);
  for (std::int64_t r = 0; r < b; ++r) {
    const std::int64_t row = rows[static_cast<std::size_t>(r)];
    TENAX_EXPECTS(row >= 0 && row < size(), UsageError,
                  "ArrayData::subset: rows[" + std::to_string(r) + "] is " + std::to_string(row) +
                      ", outside the set's " + std::to_string(size()) + " samples",
                  "pass sample indices in [0, " + std::to_string(size()) +
                      ") (a SampleOrder over this set gives them)");
    std::copy_n(x.data_as<float>() + row * inputs, inputs, part.x.data_as<float>() + r * inputs);
    if (classification()) {
      part.y.data_as<std::int64_t>()[r] = y.data_as<std::int64_t>()[row];
    } else {
      std::copy_n(y.data_as<float>() + row * targets, targets,
                  part.y.data_as<float>() + r * targets);
    }
  }
  return part;
}

}  // namespace tenax::train
