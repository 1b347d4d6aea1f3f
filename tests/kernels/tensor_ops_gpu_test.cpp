// The CUDA backend of the data-movement, selection and axis-reduction ops: the CPU backend's test
// bodies (shape_cases.hpp, view_cases.hpp, select_cases.hpp, reduce_axis_cases.hpp,
// index_cases.hpp) on CUDA, and against the CPU
// backend, the reference: both run the bodies of tensor_ops_bodies.hpp (a reduction's line and a
// scatter's column walked by one thread in one order), so every result must match bit for bit.
// Skips, saying why, where no CUDA device is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "kernels/index_cases.hpp"
#include "kernels/reduce_axis_cases.hpp"
#include "kernels/select_cases.hpp"
#include "kernels/shape_cases.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/view_cases.hpp"
#include "tenax/kernels/ops_index.hpp"
#include "tenax/kernels/ops_reduce_axis.hpp"
#include "tenax/kernels/ops_select.hpp"
#include "tenax/kernels/ops_shape.hpp"
#include "tenax/kernels/reduction_order.hpp"

namespace tenax {
namespace {

using testing::expect_identical;
using testing::uniform_tensor;

// Every shape-op and selection test body the CPU backend runs, on CUDA.
using index_cases::IndexKernels;
using reduce_axis_cases::ReduceAxisKernels;
using select_cases::SelectKernels;
using shape_cases::ShapeKernels;
using view_cases::ViewKernels;
INSTANTIATE_TEST_SUITE_P(Cuda, ShapeKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);
INSTANTIATE_TEST_SUITE_P(Cuda, ViewKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);
INSTANTIATE_TEST_SUITE_P(Cuda, IndexKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);
INSTANTIATE_TEST_SUITE_P(Cuda, ReduceAxisKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);
INSTANTIATE_TEST_SUITE_P(Cuda, SelectKernels, ::testing::Values(Device::cuda(0)),
                         testing::backend_name);

using TensorOpsGpu = testing::GpuTest;

// Values every dtype holds (integers 0..99 for the integer dtypes), NaN in the floating ones.
Tensor data(const Shape& shape, DType dtype, unsigned seed) {
  Tensor t = uniform_tensor(shape, dtype, seed, is_floating(dtype) ? -4.0 : 0.0,
                            is_floating(dtype) ? 4.0 : 99.0);
  if (is_floating(dtype) && t.numel() > 0) testing::set_value(t, 0, NAN);
  return t;
}

std::string label(const char* op, DType dtype, int axis) {
  return std::string(op) + " " + std::string(to_string(dtype)) + " axis " + std::to_string(axis);
}

TEST_F(TensorOpsGpu, DataMovementMatchesBitForBit) {
  const Shape shape{33, 70, 129};
  unsigned seed = 1;
  for (DType dtype : kAllDTypes) {
    const Tensor x = data(shape, dtype, seed++);
    const Tensor gx = x.to(gpu());
    for (int axis = 0; axis < 3; ++axis) {
      for (std::int64_t shift : {std::int64_t{-1}, std::int64_t{5}, std::int64_t{1000003}}) {
        expect_identical(ops::roll(x, shift, axis), ops::roll(gx, shift, axis),
                         label("roll", dtype, axis));
      }
      for (ops::PadMode mode :
           {ops::PadMode::constant, ops::PadMode::periodic, ops::PadMode::reflect}) {
        expect_identical(ops::pad(x, axis, 3, 40, mode, 2.0), ops::pad(gx, axis, 3, 40, mode, 2.0),
                         label("pad", dtype, axis) + " " + ops::to_string(mode));
      }
      const std::int64_t n = shape[axis];
      expect_identical(ops::narrow(x, axis, 1, n - 2), ops::narrow(gx, axis, 1, n - 2),
                       label("narrow", dtype, axis));
      const Tensor y = ops::narrow(x, axis, 0, 7);
      expect_identical(ops::concat({x, y, x}, axis), ops::concat({gx, y.to(gpu()), gx}, axis),
                       label("concat", dtype, axis));
    }
    for (const std::vector<int>& dims :
         {std::vector<int>{2, 0, 1}, std::vector<int>{1, 2, 0}, std::vector<int>{2, 1, 0}}) {
      expect_identical(ops::permute(x, dims), ops::permute(gx, dims),
                       label("permute", dtype, dims[0]));
    }
  }
}

TEST_F(TensorOpsGpu, GatherScatterMatchBitForBit) {
  const Shape shape{17, 64, 33};
  unsigned seed = 50;
  for (DType index_dtype : {DType::i64, DType::i32}) {
    for (int axis = 0; axis < 3; ++axis) {
      const std::int64_t n = shape[axis];
      Tensor index = Tensor::empty({3 * n}, index_dtype);
      const Tensor picks = testing::uniform_indices(3 * n, n, seed++);  // many duplicates
      for (std::int64_t j = 0; j < 3 * n; ++j) {
        testing::set_value(index, j, static_cast<double>(picks.data_as<std::int64_t>()[j]));
      }
      const Tensor gindex = index.to(gpu());
      for (DType dtype : kAllDTypes) {
        const Tensor x = data(shape, dtype, seed++);
        expect_identical(ops::gather(x, axis, index), ops::gather(x.to(gpu()), axis, gindex),
                         label("gather", dtype, axis));
        std::vector<std::int64_t> extents(shape.extents().begin(), shape.extents().end());
        extents[static_cast<std::size_t>(axis)] = 3 * n;
        const Tensor src = data(Shape(std::span<const std::int64_t>(extents)), dtype, seed++);
        const Tensor target = data(shape, dtype, seed++);
        const Tensor gtarget = target.to(gpu());
        ops::scatter(target, axis, index, src);
        ops::scatter(gtarget, axis, gindex, src.to(gpu()));
        expect_identical(target, gtarget, label("scatter", dtype, axis));
        if (is_floating(dtype)) {
          const Tensor t2 = uniform_tensor(shape, dtype, seed++, -1.0, 1.0);
          const Tensor s2 = uniform_tensor(Shape(std::span<const std::int64_t>(extents)), dtype,
                                           seed++, -1.0, 1.0);
          const Tensor g2 = t2.to(gpu());
          ops::scatter_add(t2, axis, index, s2);
          ops::scatter_add(g2, axis, gindex, s2.to(gpu()));
          expect_identical(t2, g2, label("scatter_add", dtype, axis));
        }
      }
    }
  }
}

TEST_F(TensorOpsGpu, OutOfRangeIndexIsRefusedOnTheDevice) {
  const Tensor x = Tensor::empty({4, 5}, DType::f32, gpu());
  const Tensor index = testing::make_tensor({0.0, 3.0, 5.0}, DType::i64).to(gpu());
  try {
    (void)ops::gather(x, 1, index);
    ADD_FAILURE() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("index[2] = 5 is outside [0, 5)"), std::string::npos)
        << e.what();
  }
}

TEST_F(TensorOpsGpu, CompareAndWhereMatchBitForBit) {
  const Shape shape{300, 257};
  unsigned seed = 200;
  for (DType dtype : kAllDTypes) {
    Tensor a = data(shape, dtype, seed++);
    const Tensor b = ops::roll(a, 3, 1);  // some equal pairs, some NaN pairs
    const Tensor ga = a.to(gpu());
    const Tensor gb = b.to(gpu());
    for (ops::CompareOp op : {ops::CompareOp::eq, ops::CompareOp::ne, ops::CompareOp::lt,
                              ops::CompareOp::le, ops::CompareOp::gt, ops::CompareOp::ge}) {
      expect_identical(
          ops::compare(op, a, b), ops::compare(op, ga, gb),
          std::string("compare ") + ops::to_string(op) + " " + std::string(to_string(dtype)));
    }
    const Tensor cond = ops::lt(a, b);
    expect_identical(ops::where(cond, a, b), ops::where(cond.to(gpu()), ga, gb),
                     std::string("where ") + std::string(to_string(dtype)));
  }
}

TEST_F(TensorOpsGpu, AxisReductionsMatchBitForBit) {
  const std::int64_t long_line = 3 * kernels::kReduceBlock + 101;
  const std::vector<Shape> shapes = {{33, 70, 129}, {5, long_line, 3}, {long_line, 7}};
  unsigned seed = 300;
  for (const Shape& shape : shapes) {
    for (DType dtype : kFloatDTypes) {
      const Tensor x = data(shape, dtype, seed++);
      Tensor clean = uniform_tensor(shape, dtype, seed++, -4.0, 4.0);
      const Tensor gx = x.to(gpu());
      const Tensor gclean = clean.to(gpu());
      for (int axis = 0; axis < shape.rank(); ++axis) {
        for (ops::AxisReduction op : {ops::AxisReduction::sum, ops::AxisReduction::max,
                                      ops::AxisReduction::min, ops::AxisReduction::mean}) {
          const std::string what = std::string(ops::to_string(op)) + " " +
                                   std::string(to_string(dtype)) + " " + to_string(shape) +
                                   " axis " + std::to_string(axis);
          expect_identical(ops::reduce(op, x, axis), ops::reduce(op, gx, axis), what + " (NaN)");
          expect_identical(ops::reduce(op, clean, axis), ops::reduce(op, gclean, axis), what);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tenax
