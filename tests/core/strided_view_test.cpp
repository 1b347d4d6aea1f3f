// StridedView's shapes, strides and offsets (reading and writing through views is in
// tests/kernels/view_cases.hpp), its sharing of storage, and its refusals.
#include "tenax/core/strided_view.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace tenax {
namespace {

using Strides = std::vector<std::int64_t>;

std::string usage_message(const auto& call) {
  try {
    call();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return {};
}

void expect_contains(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' missing from: " << text;
  }
}

TEST(StridedView, OfATensorIsRowMajorAndContiguous) {
  const Tensor t = Tensor::empty({4, 5, 6}, DType::f32);
  const StridedView v(t);
  EXPECT_TRUE(v.defined());
  EXPECT_EQ(v.shape(), (Shape{4, 5, 6}));
  EXPECT_EQ(v.strides(), (Strides{30, 6, 1}));
  EXPECT_EQ(v.offset(), 0);
  EXPECT_EQ(v.dtype(), DType::f32);
  EXPECT_EQ(v.device(), Device::cpu());
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.element_range(), (std::array<std::int64_t, 2>{0, 120}));
  EXPECT_FALSE(StridedView().defined());
}

TEST(StridedView, NarrowStepSelectPermuteMoveOffsetAndStrides) {
  const StridedView v(Tensor::empty({4, 5, 6}, DType::f64));
  const StridedView n = v.narrow(1, 2, 4);
  EXPECT_EQ(n.shape(), (Shape{4, 2, 6}));
  EXPECT_EQ(n.strides(), (Strides{30, 6, 1}));
  EXPECT_EQ(n.offset(), 12);
  EXPECT_FALSE(n.is_contiguous());
  const StridedView s = v.step(2, 4);  // positions 0 and 4
  EXPECT_EQ(s.shape(), (Shape{4, 5, 2}));
  EXPECT_EQ(s.stride(-1), 4);
  EXPECT_EQ(v.step(0, 3).shape(), (Shape{2, 5, 6}));  // ceil(4 / 3)
  const StridedView c = v.select(2, 5);               // the last column
  EXPECT_EQ(c.shape(), (Shape{4, 5}));
  EXPECT_EQ(c.strides(), (Strides{30, 6}));
  EXPECT_EQ(c.offset(), 5);
  const StridedView p = v.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{6, 4, 5}));
  EXPECT_EQ(p.strides(), (Strides{1, 30, 6}));
  EXPECT_EQ(v.transpose(-1, 0).strides(), (Strides{1, 6, 30}));
  EXPECT_EQ(v.transpose(0, 1).transpose(0, 1).strides(), v.strides());
  const StridedView scalar = v.select(0, 3).select(0, 4).select(0, 5);
  EXPECT_EQ(scalar.shape(), Shape{});
  EXPECT_EQ(scalar.offset(), 3 * 30 + 4 * 6 + 5);
  EXPECT_EQ(scalar.element_range(), (std::array<std::int64_t, 2>{119, 120}));
  // The last element a composed view can reach.
  const StridedView composed = v.narrow(0, 1, 3).step(2, 2).transpose(0, 2);
  EXPECT_EQ(composed.element_range(), (std::array<std::int64_t, 2>{30, 2 * 30 + 4 * 6 + 4 + 1}));
}

TEST(StridedView, HugeStepsKeepOnePositionAndStayBounded) {
  const StridedView v(Tensor::empty({4, 5}, DType::u8));
  const StridedView s = v.step(1, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(s.shape(), (Shape{4, 1}));
  EXPECT_EQ(s.element_range()[1], 3 * 5 + 1);
  EXPECT_EQ(v.narrow(1, 5, 5).step(1, 9).shape(), (Shape{4, 0}));
}

TEST(StridedView, ContiguousViewsBecomeTensorsSharingStorage) {
  const Tensor t = Tensor::empty({4, 3}, DType::f64);
  std::iota(t.data_as<double>(), t.data_as<double>() + 12, 0.0);
  const Tensor row = StridedView(t).select(0, 2).as_tensor();
  EXPECT_EQ(row.shape(), (Shape{3}));
  EXPECT_EQ(row.data(), t.data_as<double>() + 6);
  row.data_as<double>()[1] = -1.0;
  EXPECT_EQ(t.data_as<double>()[7], -1.0);
  // An axis of extent 1 may have any stride.
  EXPECT_TRUE(StridedView(t).narrow(1, 1, 2).transpose(0, 1).narrow(1, 2, 3).is_contiguous());
  EXPECT_EQ(StridedView(t).narrow(0, 1, 3).as_tensor().data(), t.data_as<double>() + 3);
  // An empty view past the far end still gives an empty tensor.
  EXPECT_EQ(StridedView(t).narrow(0, 4, 4).narrow(1, 3, 3).as_tensor().numel(), 0);
  expect_contains(
      usage_message([&] { static_cast<void>(StridedView(t).select(1, 0).as_tensor()); }),
      {"as_tensor", "not contiguous", "strides [3]", "ops::contiguous"});
}

TEST(StridedView, ViewsOfASliceStartAtTheSlice) {
  const Tensor t = Tensor::empty({4, 3}, DType::f32);
  const StridedView v(t.slice(2, 4));
  EXPECT_EQ(v.base().offset(), 6);
  EXPECT_EQ(v.offset(), 0);
  EXPECT_FALSE(v.select(1, 1).is_contiguous());
  EXPECT_EQ(v.select(0, 1).as_tensor().data(), t.data_as<float>() + 9);
}

TEST(StridedView, RefusesBadAxesBoundsStepsAndIndices) {
  const StridedView v(Tensor::empty({4, 5}, DType::f32));
  expect_contains(usage_message([&] { static_cast<void>(v.narrow(2, 0, 1)); }),
                  {"narrow", "axis 2", "rank 2", "[-2, 2)"});
  expect_contains(usage_message([&] { static_cast<void>(v.narrow(-3, 0, 1)); }), {"axis -3"});
  expect_contains(usage_message([&] { static_cast<void>(v.narrow(1, 3, 2)); }),
                  {"[3, 2)", "extent is 5", "0 <= begin <= end <= 5"});
  expect_contains(usage_message([&] { static_cast<void>(v.narrow(1, -1, 2)); }), {"negative"});
  expect_contains(usage_message([&] {
                    static_cast<void>(v.narrow(0, 0, std::numeric_limits<std::int64_t>::max()));
                  }),
                  {"extent is 4"});
  expect_contains(usage_message([&] { static_cast<void>(v.step(0, 0)); }), {"step 0", ">= 1"});
  expect_contains(usage_message([&] { static_cast<void>(v.step(0, -2)); }), {"step -2"});
  expect_contains(usage_message([&] { static_cast<void>(v.select(1, 5)); }),
                  {"index 5", "0 <= index < 5"});
  expect_contains(usage_message([&] { static_cast<void>(v.narrow(1, 2, 2).select(1, 0)); }),
                  {"empty"});
  expect_contains(usage_message([&] { static_cast<void>(v.permute({0})); }),
                  {"permute", "1 entries", "rank 2"});
  expect_contains(usage_message([&] {
                    static_cast<void>(v.permute({1, -1}));
                  }),
                  {"names axis 1 twice"});
  expect_contains(
      usage_message([&] { static_cast<void>(v.select(0, 1).select(0, 1).select(0, 0)); }),
      {"rank 0"});
  expect_contains(usage_message([&] { static_cast<void>(StridedView().narrow(0, 0, 0)); }),
                  {"undefined view"});
  expect_contains(usage_message([&] { static_cast<void>(StridedView(Tensor())); }),
                  {"undefined tensor"});
  EXPECT_EQ(StridedView().describe(), "undefined view");
  EXPECT_EQ(v.transpose(0, 1).describe(), "f32[5, 4] strides [1, 5] at 0 of f32[4, 5] on cpu");
}

}  // namespace
}  // namespace tenax
