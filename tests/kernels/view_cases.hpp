// Strided views (tenax/core/strided_view.hpp) read and written by the ops of ops_view.hpp, written
// once for every backend (backend_test.hpp). The oracle knows nothing of strides: a reference
// view is a shape and a map from its coordinates to the base tensor's coordinates, composed op by
// op (narrow adds, step multiplies, select inserts, permute reorders), and the base's elements are
// read at flat_index of the mapped coordinate.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/axis_reference.hpp"
#include "kernels/backend_test.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/strided_view.hpp"
#include "tenax/kernels/ops_view.hpp"

namespace tenax::view_cases {

using testing::coordinates;
using testing::counting_tensor;
using testing::flat_index;
using testing::values_of;
using Coordinate = std::vector<std::int64_t>;

// A view as coordinates: its extents and the base coordinate of each of its coordinates.
struct Reference {
  std::vector<std::int64_t> extents;
  std::function<Coordinate(const Coordinate&)> to_base;

  [[nodiscard]] Shape shape() const { return Shape(std::span<const std::int64_t>(extents)); }

  [[nodiscard]] Reference narrow(int axis, std::int64_t begin, std::int64_t end) const {
    Reference r = *this;
    r.extents[static_cast<std::size_t>(axis)] = end - begin;
    r.to_base = [inner = to_base, axis, begin](Coordinate c) {
      c[static_cast<std::size_t>(axis)] += begin;
      return inner(c);
    };
    return r;
  }
  [[nodiscard]] Reference step(int axis, std::int64_t step) const {
    Reference r = *this;
    std::int64_t& n = r.extents[static_cast<std::size_t>(axis)];
    std::int64_t kept = 0;
    for (std::int64_t k = 0; k < n; k += step) ++kept;
    n = kept;
    r.to_base = [inner = to_base, axis, step](Coordinate c) {
      c[static_cast<std::size_t>(axis)] *= step;
      return inner(c);
    };
    return r;
  }
  [[nodiscard]] Reference select(int axis, std::int64_t index) const {
    Reference r = *this;
    r.extents.erase(r.extents.begin() + axis);
    r.to_base = [inner = to_base, axis, index](Coordinate c) {
      c.insert(c.begin() + axis, index);
      return inner(c);
    };
    return r;
  }
  [[nodiscard]] Reference permute(const std::vector<int>& dims) const {
    Reference r = *this;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      r.extents[d] = extents[static_cast<std::size_t>(dims[d])];
    }
    r.to_base = [inner = to_base, dims](const Coordinate& c) {
      Coordinate original(c.size());
      for (std::size_t d = 0; d < dims.size(); ++d)
        original[static_cast<std::size_t>(dims[d])] = c[d];
      return inner(original);
    };
    return r;
  }
};

inline Reference whole(const Shape& shape) {
  return {{shape.extents().begin(), shape.extents().end()}, [](const Coordinate& c) { return c; }};
}

// A view and its reference, built by the same ops.
struct Case {
  std::string name;
  StridedView view;
  Reference reference;
};

// Every kind of view of a [4, 5, 6] base, alone and composed.
inline std::vector<Case> views_of(const Tensor& base) {
  const StridedView v(base);
  const Reference r = whole(base.shape());
  std::vector<Case> cases{{"whole", v, r}};
  for (int a = 0; a < 3; ++a) {
    const std::string axis = " axis " + std::to_string(a);
    const std::int64_t n = base.shape()[a];
    cases.push_back({"narrow" + axis, v.narrow(a, 1, n - 1), r.narrow(a, 1, n - 1)});
    for (std::int64_t s : {2, 3, 7}) {
      cases.push_back({"step " + std::to_string(s) + axis, v.step(a, s), r.step(a, s)});
    }
    cases.push_back({"select first" + axis, v.select(a, 0), r.select(a, 0)});
    cases.push_back({"select last" + axis, v.select(a, n - 1), r.select(a, n - 1)});
  }
  std::vector<int> dims{0, 1, 2};
  do {
    cases.push_back(
        {"permute " + std::to_string(dims[0]) + std::to_string(dims[1]) + std::to_string(dims[2]),
         v.permute(dims), r.permute(dims)});
  } while (std::next_permutation(dims.begin(), dims.end()));
  cases.push_back({"narrow, step, transpose", v.narrow(1, 1, 5).step(2, 2).transpose(0, 2),
                   r.narrow(1, 1, 5).step(2, 2).permute({2, 1, 0})});
  cases.push_back({"negative axes", v.narrow(-1, 2, 6).select(-2, 3).transpose(-1, -2),
                   r.narrow(2, 2, 6).select(1, 3).permute({1, 0})});
  cases.push_back({"select to a scalar", v.select(0, 2).select(0, 3).select(0, 4),
                   r.select(0, 2).select(0, 3).select(0, 4)});
  cases.push_back(
      {"narrow to nothing", v.narrow(1, 5, 5).step(2, 4), r.narrow(1, 5, 5).step(2, 4)});
  return cases;
}

class ViewKernels : public testing::BackendTest {};

TEST_P(ViewKernels, ContiguousReadsEveryViewEveryDtype) {
  for (DType dtype : kAllDTypes) {
    const Tensor base = put(counting_tensor({4, 5, 6}, dtype));
    const std::vector<double> in = values_of(base);
    for (const Case& c : views_of(base)) {
      const std::string what = c.name + " " + std::string(to_string(dtype));
      const Tensor out = ops::contiguous(c.view);
      ASSERT_EQ(out.shape(), c.reference.shape()) << what;
      ASSERT_EQ(out.device(), device()) << what;
      const std::vector<double> got = values_of(out);
      for (std::int64_t e = 0; e < out.numel(); ++e) {
        const std::int64_t at =
            flat_index(base.shape(), c.reference.to_base(coordinates(out.shape(), e)));
        ASSERT_EQ(got[static_cast<std::size_t>(e)], in[static_cast<std::size_t>(at)])
            << what << ", element " << e;
      }
    }
  }
}

TEST_P(ViewKernels, AssignWritesTheViewAndNothingElse) {
  for (DType dtype : {DType::f64, DType::f16, DType::u8, DType::i64}) {
    const std::size_t count = views_of(put(counting_tensor({4, 5, 6}, dtype))).size();
    for (std::size_t k = 0; k < count; ++k) {
      const Tensor base = put(counting_tensor({4, 5, 6}, dtype, 50));
      const Case c = views_of(base)[k];
      const std::string what = c.name + " " + std::string(to_string(dtype));
      const Tensor src = put(counting_tensor(c.reference.shape(), dtype, 7));
      ops::assign(c.view, src);
      std::vector<double> expected = values_of(counting_tensor({4, 5, 6}, dtype, 50));
      const std::vector<double> written = values_of(src);
      for (std::int64_t e = 0; e < src.numel(); ++e) {
        const std::int64_t at =
            flat_index(base.shape(), c.reference.to_base(coordinates(src.shape(), e)));
        expected[static_cast<std::size_t>(at)] = written[static_cast<std::size_t>(e)];
      }
      EXPECT_EQ(values_of(base), expected) << what;
    }
  }
}

TEST_P(ViewKernels, FillSetsABoundaryColumnAndAFrame) {
  const Tensor field = put(counting_tensor({5, 6}, DType::f64, 1));
  ops::fill(StridedView(field).select(1, 0), -1.0);  // the first column
  ops::fill(StridedView(field).narrow(0, 1, 4).narrow(1, 2, 5).step(0, 2), 0.5);
  std::vector<double> expected = values_of(counting_tensor({5, 6}, DType::f64, 1));
  for (std::int64_t y = 0; y < 5; ++y) expected[static_cast<std::size_t>(y * 6)] = -1.0;
  for (std::int64_t y : {1, 3}) {
    for (std::int64_t x = 2; x < 5; ++x) expected[static_cast<std::size_t>(y * 6 + x)] = 0.5;
  }
  EXPECT_EQ(values_of(field), expected);
  // Rounded as ops::fill rounds; an integer dtype refuses a fraction before writing anything.
  const Tensor h = put(counting_tensor({3, 3}, DType::bf16));
  ops::fill(StridedView(h).transpose(0, 1).select(0, 1), 1.0 / 3.0);
  EXPECT_EQ(values_of(h)[1], testing::round_to(DType::bf16, 1.0 / 3.0));
  const Tensor i = put(counting_tensor({3, 3}, DType::i32));
  testing::expect_contains(
      testing::usage_error([&] { ops::fill(StridedView(i).select(0, 0), 2.5); }), {"fill"});
  EXPECT_EQ(values_of(i), values_of(counting_tensor({3, 3}, DType::i32)));
}

TEST_P(ViewKernels, OverlappingAssignReadsSourceFirst) {
  // A shift within one vector, both ways: as if src were copied out first.
  const Tensor v = put(counting_tensor({10}, DType::i32));
  ops::assign(StridedView(v).narrow(0, 1, 10), StridedView(v).narrow(0, 0, 9));
  EXPECT_EQ(values_of(v), (std::vector<double>{0, 0, 1, 2, 3, 4, 5, 6, 7, 8}));
  ops::assign(StridedView(v).narrow(0, 0, 9), StridedView(v).narrow(0, 1, 10));
  EXPECT_EQ(values_of(v), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 8}));
  // A square matrix transposed in place.
  const Tensor m = put(testing::make_tensor({3, 3}, DType::f32, {1, 2, 3, 4, 5, 6, 7, 8, 9}));
  ops::assign(StridedView(m), StridedView(m).transpose(0, 1));
  EXPECT_EQ(values_of(m), (std::vector<double>{1, 4, 7, 2, 5, 8, 3, 6, 9}));
  // A row of a field written from the row above, through different tensors of one storage.
  const Tensor field = put(counting_tensor({4, 5}, DType::f64));
  ops::assign(StridedView(field.slice(1, 4)).select(0, 0), StridedView(field).select(0, 0));
  EXPECT_EQ(values_of(field.slice(1, 2)), (std::vector<double>{0, 1, 2, 3, 4}));
  // The whole of a view assigned to itself changes nothing.
  const Tensor same = put(counting_tensor({4, 5}, DType::u8));
  ops::assign(StridedView(same).step(1, 2), StridedView(same).step(1, 2));
  EXPECT_EQ(values_of(same), values_of(counting_tensor({4, 5}, DType::u8)));
}

TEST_P(ViewKernels, InterleavedViewsOfOneStorageCopyCorrectly) {
  // Even and odd columns share a range but no element: each even column gets its odd neighbour.
  const Tensor m = put(counting_tensor({3, 8}, DType::f64));
  ops::assign(StridedView(m).step(1, 2), StridedView(m).narrow(1, 1, 8).step(1, 2));
  const std::vector<double> got = values_of(m);
  for (std::int64_t y = 0; y < 3; ++y) {
    for (std::int64_t x = 0; x < 8; ++x) {
      const double original = static_cast<double>(y * 8 + x);
      EXPECT_EQ(got[static_cast<std::size_t>(y * 8 + x)], x % 2 == 0 ? original + 1 : original);
    }
  }
}

TEST_P(ViewKernels, EmptyViewsDoNothing) {
  const Tensor t = put(counting_tensor({3, 4}, DType::f32));
  const StridedView nothing = StridedView(t).narrow(1, 4, 4);
  EXPECT_EQ(ops::contiguous(nothing).shape(), (Shape{3, 0}));
  ops::assign(nothing, Tensor::empty({3, 0}, DType::f32, device()));
  ops::fill(nothing, 9.0);
  EXPECT_EQ(values_of(t), values_of(counting_tensor({3, 4}, DType::f32)));
  const Tensor empty = put(counting_tensor({0, 4}, DType::f32));
  EXPECT_EQ(ops::contiguous(StridedView(empty).transpose(0, 1)).shape(), (Shape{4, 0}));
}

TEST_P(ViewKernels, LargeTransposeAndColumn) {
  // Past one block of threads and one CPU chunk, every axis strided.
  const Tensor m = put(counting_tensor({517, 1031}, DType::f32));
  const std::vector<double> in = values_of(m);
  const std::vector<double> t = values_of(ops::contiguous(StridedView(m).transpose(0, 1)));
  for (std::int64_t x = 0; x < 1031; x += 7) {
    for (std::int64_t y = 0; y < 517; y += 3) {
      ASSERT_EQ(t[static_cast<std::size_t>(x * 517 + y)],
                in[static_cast<std::size_t>(y * 1031 + x)]);
    }
  }
  const std::vector<double> column = values_of(ops::contiguous(StridedView(m).select(1, 1030)));
  ASSERT_EQ(column.size(), 517U);
  for (std::int64_t y = 0; y < 517; ++y) {
    EXPECT_EQ(column[static_cast<std::size_t>(y)], in[static_cast<std::size_t>(y * 1031 + 1030)]);
  }
}

}  // namespace tenax::view_cases
