// read_array_data: classification (int64 and int32 labels, the class count inferred or given)
// and regression sets read whole, other floating dtypes converted; every broken rule refused
// naming the file, the dataset, the sample and the fix (with the program's flag when given).
#include "tenax/train/array_data.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/io/dataset_file.hpp"

namespace tenax::train {
namespace {

namespace fs = std::filesystem;

class ArrayDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tenax-array-data-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    x_ = Tensor::empty({6, 2}, DType::f64);
    for (std::int64_t i = 0; i < 12; ++i) x_.data_as<double>()[i] = 0.5 * static_cast<double>(i);
    labels_ = Tensor::empty({6}, DType::i64);
    for (std::int64_t i = 0; i < 6; ++i) labels_.data_as<std::int64_t>()[i] = i % 3;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path file(const std::string& name, const Tensor& x, const Tensor& y) {
    const fs::path path = dir_ / (name + ".h5");
    io::write_datasets(path, {{"x", x}, {"y", y}});
    return path;
  }
  template <class Error = UsageError>
  void refused(const fs::path& path, std::int64_t classes, const std::string& flag,
               const std::vector<std::string>& parts) {
    try {
      (void)read_array_data(path, classes, flag);
      ADD_FAILURE() << "accepted " << path;
    } catch (const Error& e) {
      for (const std::string& part : parts) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << part << "\n" << e.what();
      }
    }
  }

  fs::path dir_;
  Tensor x_, labels_;
};

TEST_F(ArrayDataTest, ASubsetHoldsTheGivenRowsInOrderAndRefusesARowOutside) {
  const ArrayData labelled = read_array_data(file("subset-labels", x_, labels_));
  const std::vector<std::int64_t> rows{4, 0, 4};
  const ArrayData part = labelled.subset(rows);
  EXPECT_EQ(part.classes, 3);
  ASSERT_EQ(part.x.shape(), (Shape{3, 2}));
  ASSERT_EQ(part.y.shape(), (Shape{3}));
  for (std::int64_t r = 0; r < 3; ++r) {
    const std::int64_t row = rows[static_cast<std::size_t>(r)];
    EXPECT_EQ(part.x.data_as<float>()[r * 2], 0.5f * static_cast<float>(row * 2));
    EXPECT_EQ(part.x.data_as<float>()[r * 2 + 1], 0.5f * static_cast<float>(row * 2 + 1));
    EXPECT_EQ(part.y.data_as<std::int64_t>()[r], row % 3);
  }
  // Regression targets [N, 2]: whole rows.
  const ArrayData regression = read_array_data(file("subset-targets", x_, x_));
  const ArrayData targets = regression.subset(std::vector<std::int64_t>{5});
  ASSERT_EQ(targets.y.shape(), (Shape{1, 2}));
  EXPECT_EQ(targets.y.data_as<float>()[1], 5.5f);
  EXPECT_EQ(regression.subset({}).x.shape(), (Shape{0, 2}));
  for (const std::int64_t bad : {std::int64_t{-1}, std::int64_t{6}}) {
    try {
      (void)labelled.subset(std::vector<std::int64_t>{0, bad});
      ADD_FAILURE() << "row " << bad << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("rows[1] is " + std::to_string(bad)), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(ArrayDataTest, ClassificationLabelsAreReadAndTheirCountInferredOrGiven) {
  const ArrayData d = read_array_data(file("labels", x_, labels_));
  EXPECT_TRUE(d.classification());
  EXPECT_EQ(d.classes, 3);
  EXPECT_EQ(d.size(), 6);
  EXPECT_EQ(d.d_in(), 2);
  EXPECT_EQ(d.d_out(), 3);
  ASSERT_EQ(d.x.dtype(), DType::f32);
  EXPECT_EQ(d.x.data_as<float>()[11], 5.5f);
  EXPECT_EQ(d.y.data_as<std::int64_t>()[4], 1);
  // More classes than the labels show, when given; int32 labels widened.
  Tensor narrow = Tensor::empty({6}, DType::i32);
  for (std::int64_t i = 0; i < 6; ++i) narrow.data_as<std::int32_t>()[i] = static_cast<int>(i % 2);
  const ArrayData five = read_array_data(file("narrow", x_, narrow), 5);
  EXPECT_EQ(five.classes, 5);
  EXPECT_EQ(five.y.dtype(), DType::i64);
  EXPECT_EQ(five.y.data_as<std::int64_t>()[3], 1);
}

TEST_F(ArrayDataTest, RegressionTargetsAreReadAsF32) {
  Tensor y = Tensor::empty({6, 3}, DType::f64);
  for (std::int64_t i = 0; i < 18; ++i) y.data_as<double>()[i] = -0.25 * static_cast<double>(i);
  const ArrayData d = read_array_data(file("regression", x_, y));
  EXPECT_FALSE(d.classification());
  EXPECT_EQ(d.d_out(), 3);
  ASSERT_EQ(d.y.dtype(), DType::f32);
  EXPECT_EQ(d.y.data_as<float>()[17], -4.25f);
}

TEST_F(ArrayDataTest, BrokenRulesAreRefusedNamingTheSampleAndTheFix) {
  Tensor nan_x = x_.clone();
  nan_x.data_as<double>()[2 * 4 + 1] = std::nan("");
  refused(file("nan-x", nan_x, labels_), 0, "",
          {"nan-x.h5: /x[4, 1] (sample 4) is nan", "replace or drop that sample"});
  Tensor y = Tensor::empty({6, 1}, DType::f32);
  for (std::int64_t i = 0; i < 6; ++i) y.data_as<float>()[i] = 1.0f;
  y.data_as<float>()[5] = -std::numeric_limits<float>::infinity();
  refused(file("inf-y", x_, y), 0, "", {"/y[5, 0] (sample 5) is -inf"});
  Tensor negative = labels_.clone();
  negative.data_as<std::int64_t>()[2] = -1;
  refused(file("negative", x_, negative), 0, "", {"label -1 of sample 2 is negative"});
  Tensor stray = labels_.clone();
  stray.data_as<std::int64_t>()[3] = 1'000'000;
  const fs::path strayed = file("stray", x_, stray);
  refused(strayed, 0, "--classes",
          {"label 1000000 of sample 3 implies 1000001 classes for 6 samples", "--classes 1000001"});
  refused(strayed, 0, "", {"classes = 1000001 (read_array_data)"});
  refused(strayed, 3, "--classes",
          {"label 1000000 of sample 3 is outside the 3 classes of --classes", "raise --classes"});
  Tensor one = Tensor::empty({6}, DType::i64);
  for (std::int64_t i = 0; i < 6; ++i) one.data_as<std::int64_t>()[i] = 0;
  refused(file("one", x_, one), 0, "", {"the labels name only 1 class", "at least two classes"});
  refused(file("flat-x", Tensor::empty({12}, DType::f64), labels_), 0, "", {"/x is f64[12]"});
  refused(file("short-y", x_, Tensor::empty({5}, DType::i64)), 0, "",
          {"/y holds integer labels of shape [5] for /x of shape [6, 2]"});
  refused(file("regression-classes", x_, y.slice(0, 5).clone()), 0, "",
          {"/y is f32[5, 1] for /x of shape [6, 2]"});
  Tensor finite = y.clone();
  finite.data_as<float>()[5] = 0.0f;
  refused(file("classes-regression", x_, finite), 3, "--classes",
          {"--classes 3 with regression targets"});
  refused(file("classes-negative", x_, labels_), -2, "", {"classes = -2"});
}

TEST_F(ArrayDataTest, AMissingFileOrDatasetIsAnIoError) {
  refused<IoError>(dir_ / "absent.h5", 0, "", {"absent.h5"});
  const fs::path only_x = dir_ / "only-x.h5";
  io::write_datasets(only_x, {{"x", x_}});
  refused<IoError>(only_x, 0, "", {"only-x.h5"});
}

}  // namespace
}  // namespace tenax::train
