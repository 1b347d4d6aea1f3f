// roll, pad, concat, narrow, permute and transpose (ops_shape.hpp) on the CPU backend, the
// reference for the CUDA backend, against plain scalar loops over coordinates
// (axis_reference.hpp): every dtype, every axis of a 3-D tensor of odd extents, empty and
// 1-element tensors, negative and huge shifts and pads, and the errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/axis_reference.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/kernels/ops_shape.hpp"

namespace tenax {
namespace {

using testing::coordinates;
using testing::counting_tensor;
using testing::expect_contains;
using testing::expect_moved;
using testing::flat_index;
using testing::usage_error;
using testing::values_of;

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// k mod n in [0, n) without overflow.
std::int64_t modulo(std::int64_t k, std::int64_t n) {
  const std::int64_t r = k % n;
  return r < 0 ? r + n : r;
}

std::string label(const char* op, DType dtype, int axis, std::int64_t a, std::int64_t b = 0) {
  return std::string(op) + " " + std::string(to_string(dtype)) + " axis " + std::to_string(axis) +
         " (" + std::to_string(a) + ", " + std::to_string(b) + ")";
}

TEST(Roll, EveryAxisEveryDtypeAnyShift) {
  const Shape shape{3, 4, 5};
  for (DType dtype : kAllDTypes) {
    const Tensor x = counting_tensor(shape, dtype);
    for (int axis = 0; axis < 3; ++axis) {
      const std::int64_t n = shape[axis];
      for (std::int64_t shift :
           {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1}, std::int64_t{4}, std::int64_t{5},
            std::int64_t{-13}, std::int64_t{17}, kMin, kMax}) {
        const Tensor out = ops::roll(x, shift, axis);
        ASSERT_EQ(out.shape(), shape);
        expect_moved(
            out, x,
            [&](std::int64_t e) {
              std::vector<std::int64_t> c = coordinates(shape, e);
              auto& j = c[static_cast<std::size_t>(axis)];
              j = modulo(j - modulo(shift, n), n);
              return flat_index(shape, c);
            },
            label("roll", dtype, axis, shift));
      }
    }
  }
}

TEST(Roll, NegativeAxisCountsFromTheLast) {
  const Tensor x = counting_tensor({3, 4, 5}, DType::f64);
  EXPECT_EQ(values_of(ops::roll(x, 2, -1)), values_of(ops::roll(x, 2, 2)));
  EXPECT_EQ(values_of(ops::roll(x, -7, -3)), values_of(ops::roll(x, -7, 0)));
}

TEST(Roll, EmptyAndOneElement) {
  const Tensor empty = counting_tensor({3, 0, 2}, DType::f32);
  EXPECT_EQ(ops::roll(empty, 5, 1).shape(), empty.shape());
  EXPECT_EQ(ops::roll(empty, -5, 0).shape(), empty.shape());
  const Tensor one = testing::make_tensor({1}, DType::i64, {42});
  EXPECT_EQ(values_of(ops::roll(one, kMin, 0)), std::vector<double>{42});
}

TEST(Roll, Errors) {
  const Tensor x = counting_tensor({3, 4, 5}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::roll(x, 1, 3); }),
                  {"roll", "axis 3 is out of range", "[-3, 3)"});
  expect_contains(usage_error([&] { (void)ops::roll(x, 1, -4); }), {"axis -4"});
  expect_contains(usage_error([&] { (void)ops::roll(Tensor::empty({}, DType::f32), 1, 0); }),
                  {"rank 0"});
  expect_contains(usage_error([&] { (void)ops::roll(Tensor(), 1, 0); }), {"undefined"});
  expect_contains(usage_error([&] { ops::roll_into(x, 1, 0, x); }), {"roll", "overlaps x"});
  expect_contains(usage_error([&] {
                    ops::roll_into(x, 1, 0, Tensor::empty({3, 4, 5}, DType::f64));
                  }),
                  {"dtype f32"});
  expect_contains(usage_error([&] {
                    ops::roll_into(x, 1, 0, Tensor::empty({3, 5, 4}, DType::f32));
                  }),
                  {"shape [3, 4, 5]"});
}

// The input coordinate that pad reads at k (outside [0, n) for the padded positions), by repeated
// mirroring (reflect) or stepping by n (periodic): another way to the rule of PadMode.
std::int64_t pad_reference(ops::PadMode mode, std::int64_t k, std::int64_t n) {
  if (mode == ops::PadMode::periodic) return modulo(k, n);
  while (k < 0 || k >= n) k = k < 0 ? -1 - k : 2 * n - 1 - k;
  return k;
}

TEST(Pad, EveryAxisEveryModeEveryDtype) {
  const Shape shape{3, 4, 5};
  for (DType dtype : kAllDTypes) {
    const Tensor x = counting_tensor(shape, dtype, 1);
    for (int axis = 0; axis < 3; ++axis) {
      const std::int64_t n = shape[axis];
      for (ops::PadMode mode :
           {ops::PadMode::constant, ops::PadMode::periodic, ops::PadMode::reflect}) {
        for (auto [before, after] : std::vector<std::pair<std::int64_t, std::int64_t>>{
                 {0, 0}, {1, 0}, {0, 2}, {2, 1}, {n + 3, 2 * n + 1}}) {
          const Tensor out = ops::pad(x, axis, before, after, mode, 7.0);
          std::vector<std::int64_t> extents(shape.extents().begin(), shape.extents().end());
          extents[static_cast<std::size_t>(axis)] += before + after;
          ASSERT_EQ(out.shape(), Shape(std::span<const std::int64_t>(extents)));
          const std::vector<double> got = values_of(out);
          const std::vector<double> in = values_of(x);
          std::int64_t wrong = 0;
          for (std::int64_t e = 0; e < out.numel(); ++e) {
            std::vector<std::int64_t> c = coordinates(out.shape(), e);
            const std::int64_t k = c[static_cast<std::size_t>(axis)] - before;
            double expected = 7.0;
            if (k >= 0 && k < n) {
              c[static_cast<std::size_t>(axis)] = k;
              expected = in[static_cast<std::size_t>(flat_index(shape, c))];
            } else if (mode != ops::PadMode::constant) {
              c[static_cast<std::size_t>(axis)] = pad_reference(mode, k, n);
              expected = in[static_cast<std::size_t>(flat_index(shape, c))];
            }
            if (got[static_cast<std::size_t>(e)] != expected) ++wrong;
          }
          EXPECT_EQ(wrong, 0) << label("pad", dtype, axis, before, after) << " "
                              << ops::to_string(mode);
        }
      }
    }
  }
}

TEST(Pad, GridBoundaries) {
  // Periodic: the ghost before 0 is the last cell; Neumann mirror: -1 reads 0, n reads n - 1.
  const Tensor x = testing::make_tensor({10.0, 20.0, 30.0}, DType::f64);
  EXPECT_EQ(values_of(ops::pad(x, 0, 2, 2, ops::PadMode::periodic)),
            (std::vector<double>{20, 30, 10, 20, 30, 10, 20}));
  EXPECT_EQ(values_of(ops::pad(x, 0, 2, 2, ops::PadMode::reflect)),
            (std::vector<double>{20, 10, 10, 20, 30, 30, 20}));
  EXPECT_EQ(values_of(ops::pad(x, -1, 1, 0, ops::PadMode::constant, -1.5)),
            (std::vector<double>{-1.5, 10, 20, 30}));
}

TEST(Pad, EmptyAndOneElement) {
  const Tensor empty = counting_tensor({2, 0}, DType::f32);
  const Tensor padded = ops::pad(empty, 1, 1, 2, ops::PadMode::constant, 3.0);
  EXPECT_EQ(values_of(padded), (std::vector<double>{3, 3, 3, 3, 3, 3}));
  EXPECT_EQ(ops::pad(empty, 0, 1, 1, ops::PadMode::periodic).shape(), (Shape{4, 0}));
  EXPECT_EQ(ops::pad(empty, 1, 0, 0, ops::PadMode::reflect).shape(), (Shape{2, 0}));
  const Tensor one = testing::make_tensor({1}, DType::u8, {9});
  EXPECT_EQ(values_of(ops::pad(one, 0, 3, 2, ops::PadMode::reflect)),
            (std::vector<double>{9, 9, 9, 9, 9, 9}));
}

TEST(Pad, Errors) {
  const Tensor x = counting_tensor({4, 3}, DType::f32);
  expect_contains(usage_error([&] { (void)ops::pad(x, 0, -1, 0); }),
                  {"pad", "must both be >= 0", "narrow"});
  expect_contains(usage_error([&] { (void)ops::pad(x, 2, 1, 1); }), {"pad", "axis 2"});
  expect_contains(usage_error([&] { (void)ops::pad(x, 1, kMax, 1); }),
                  {"pad", "padded extent", "cannot be counted"});
  // An extent that fits, an element count that does not: refused before allocating.
  expect_contains(usage_error([&] { (void)ops::pad(x, 1, std::int64_t{1} << 62, 0); }),
                  {"pad", "result's shape"});
  expect_contains(
      usage_error([&] {
        (void)ops::pad(counting_tensor({2, 0}, DType::f32), 1, 1, 0, ops::PadMode::periodic);
      }),
      {"periodic padding reads x", "no elements", "PadMode::constant"});
  expect_contains(usage_error([&] {
                    (void)ops::pad(counting_tensor({2}, DType::i32), 0, 1, 0,
                                   ops::PadMode::constant, 0.5);
                  }),
                  {"whole number"});
  expect_contains(
      usage_error([&] {
        ops::pad_into(x, 0, 1, 0, ops::PadMode::constant, 0.0, Tensor::empty({4, 3}, DType::f32));
      }),
      {"shape [5, 3]"});
}

TEST(Concat, EveryAxisEveryDtype) {
  for (DType dtype : kAllDTypes) {
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<Tensor> xs;
      std::vector<std::int64_t> starts;
      std::int64_t total = 0;
      for (std::int64_t n : {2, 0, 3, 1}) {
        std::vector<std::int64_t> extents{3, 4, 5};
        extents[static_cast<std::size_t>(axis)] = n;
        xs.push_back(
            counting_tensor(Shape(std::span<const std::int64_t>(extents)), dtype, total * 7));
        starts.push_back(total);
        total += n;
      }
      const Tensor out = ops::concat(xs, axis - 3);  // negative axes, too
      std::vector<std::int64_t> extents{3, 4, 5};
      extents[static_cast<std::size_t>(axis)] = total;
      ASSERT_EQ(out.shape(), Shape(std::span<const std::int64_t>(extents)));
      const std::vector<double> got = values_of(out);
      std::int64_t wrong = 0;
      for (std::int64_t e = 0; e < out.numel(); ++e) {
        std::vector<std::int64_t> c = coordinates(out.shape(), e);
        std::int64_t& j = c[static_cast<std::size_t>(axis)];
        std::size_t k = 0;
        while (j >= starts[k] + xs[k].shape()[axis]) ++k;
        j -= starts[k];
        if (got[static_cast<std::size_t>(e)] !=
            values_of(xs[k])[static_cast<std::size_t>(flat_index(xs[k].shape(), c))]) {
          ++wrong;
        }
      }
      EXPECT_EQ(wrong, 0) << label("concat", dtype, axis, total);
    }
  }
}

TEST(Concat, EmptyAndErrors) {
  const Tensor a = counting_tensor({2, 3}, DType::f32);
  EXPECT_EQ(ops::concat({counting_tensor({0, 3}, DType::f32)}, 0).shape(), (Shape{0, 3}));
  EXPECT_EQ(values_of(ops::concat({a}, 1)), values_of(a));
  expect_contains(usage_error([&] { (void)ops::concat({}, 0); }), {"concat", "at least one"});
  expect_contains(usage_error([&] {
                    (void)ops::concat({a, counting_tensor({2, 4}, DType::f32)}, 0);
                  }),
                  {"concat", "xs[1]", "axis 1", "not the joined axis 0"});
  expect_contains(usage_error([&] {
                    (void)ops::concat({a, counting_tensor({2, 3}, DType::f64)}, 0);
                  }),
                  {"concat", "xs[1] is f64"});
  expect_contains(usage_error([&] {
                    (void)ops::concat({a, counting_tensor({6}, DType::f32)}, 0);
                  }),
                  {"concat", "rank"});
  expect_contains(usage_error([&] {
                    (void)ops::concat({a, Tensor()}, 0);
                  }),
                  {"xs[1]", "undefined"});
  expect_contains(usage_error([&] { (void)ops::concat({a}, 2); }), {"concat", "axis 2"});
  const Tensor out = Tensor::empty({4, 3}, DType::f32);
  expect_contains(usage_error([&] {
                    ops::concat_into({a, out.slice(2, 4)}, 0, out);
                  }),
                  {"concat", "out overlaps xs[1]"});
}

TEST(Narrow, EveryAxisEveryDtype) {
  const Shape shape{3, 4, 5};
  for (DType dtype : kAllDTypes) {
    const Tensor x = counting_tensor(shape, dtype, 3);
    for (int axis = 0; axis < 3; ++axis) {
      const std::int64_t n = shape[axis];
      for (auto [begin, end] : std::vector<std::pair<std::int64_t, std::int64_t>>{
               {0, n}, {1, n}, {0, 1}, {n - 1, n}, {1, n - 1}, {2, 2}}) {
        const Tensor out = ops::narrow(x, axis, begin, end);
        ASSERT_EQ(out.shape()[axis], end - begin);
        expect_moved(
            out, x,
            [&, begin = begin](std::int64_t e) {
              std::vector<std::int64_t> c = coordinates(out.shape(), e);
              c[static_cast<std::size_t>(axis)] += begin;
              return flat_index(shape, c);
            },
            label("narrow", dtype, axis, begin, end));
      }
    }
  }
}

TEST(Narrow, Errors) {
  const Tensor x = counting_tensor({3, 4}, DType::f64);
  expect_contains(usage_error([&] { (void)ops::narrow(x, 1, -1, 2); }),
                  {"narrow", "[-1, 2) is not within axis 1", "extent is 4", "not wrapped"});
  expect_contains(usage_error([&] { (void)ops::narrow(x, 1, 3, 2); }), {"[3, 2)"});
  expect_contains(usage_error([&] { (void)ops::narrow(x, 0, 0, 4); }), {"[0, 4)"});
  expect_contains(usage_error([&] { (void)ops::narrow(x, 5, 0, 1); }), {"axis 5"});
  expect_contains(usage_error([&] { ops::narrow_into(x, 0, 0, 1, x.slice(2, 3)); }),
                  {"narrow", "out overlaps x"});
}

TEST(Permute, EveryPermutationEveryDtype) {
  const Shape shape{3, 4, 5};
  const std::vector<std::vector<int>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                               {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (DType dtype : kAllDTypes) {
    const Tensor x = counting_tensor(shape, dtype, 5);
    for (const std::vector<int>& dims : perms) {
      const Tensor out = ops::permute(x, dims);
      for (int d = 0; d < 3; ++d)
        ASSERT_EQ(out.shape()[d], shape[dims[static_cast<std::size_t>(d)]]);
      expect_moved(
          out, x,
          [&](std::int64_t e) {
            const std::vector<std::int64_t> c = coordinates(out.shape(), e);
            std::vector<std::int64_t> source(3);
            for (int d = 0; d < 3; ++d) {
              source[static_cast<std::size_t>(dims[static_cast<std::size_t>(d)])] =
                  c[static_cast<std::size_t>(d)];
            }
            return flat_index(shape, source);
          },
          label("permute", dtype, dims[0], dims[1], dims[2]));
    }
  }
}

TEST(Permute, TransposeRankOneScalarEmpty) {
  const Tensor m = testing::make_tensor({2, 3}, DType::f32, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values_of(ops::transpose(m, 0, 1)), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values_of(ops::transpose(m, -1, -2)), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values_of(ops::permute(testing::make_tensor({1.0, 2.0}, DType::f64), {-1})),
            (std::vector<double>{1, 2}));
  const Tensor scalar = testing::make_tensor(Shape{}, DType::f64, {3.5});
  EXPECT_EQ(values_of(ops::permute(scalar, {})), std::vector<double>{3.5});
  EXPECT_EQ(ops::permute(counting_tensor({2, 0, 3}, DType::u8), {2, 0, 1}).shape(),
            (Shape{3, 2, 0}));
}

TEST(Permute, Errors) {
  const Tensor x = counting_tensor({3, 4, 5}, DType::f32);
  expect_contains(usage_error([&] {
                    (void)ops::permute(x, {0, 1});
                  }),
                  {"permute", "has 2 entries", "rank 3"});
  expect_contains(usage_error([&] {
                    (void)ops::permute(x, {0, 1, -3});
                  }),
                  {"permute", "names axis 0 twice"});
  expect_contains(usage_error([&] { (void)ops::permute(x, {0, 1, 3}); }), {"axis 3"});
  expect_contains(usage_error([&] { (void)ops::transpose(x, 0, 3); }), {"transpose", "axis 3"});
  expect_contains(usage_error([&] {
                    ops::permute_into(x, {2, 1, 0}, x.reshape({5, 4, 3}));
                  }),
                  {"permute", "out overlaps x"});
}

TEST(ShapeOpsDispatch, CudaTensorsInABuildWithoutCudaThrowNotCompiled) {
  if (tenax::cuda::compiled()) GTEST_SKIP() << "this build has the CUDA backend";
  const Tensor x = testing::fake_cuda_tensor({2, 3}, DType::f32);
  EXPECT_THROW((void)ops::roll(x, 1, 0), NotCompiledError);
  EXPECT_THROW((void)ops::pad(x, 0, 1, 1), NotCompiledError);
  EXPECT_THROW((void)ops::narrow(x, 1, 0, 2), NotCompiledError);
  EXPECT_THROW((void)ops::permute(x, {1, 0}), NotCompiledError);
}

}  // namespace
}  // namespace tenax
