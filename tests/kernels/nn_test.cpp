// softmax_cross_entropy and its gradient (ops_nn.hpp) on the CPU backend, the reference for the
// CUDA backend: against a naive f64 reference, the f64 gradient against central differences of
// the loss, large logits, 16-bit logits, and bad labels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/half.hpp"
#include "tenax/kernels/detail/nn_bodies.hpp"
#include "tenax/kernels/detail/nn_kernels.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"
#include "tenax/kernels/float_math.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_nn.hpp"

namespace tenax {
namespace {

using testing::expect_contains;
using testing::get_value;
using testing::make_tensor;
using testing::round_to;
using testing::set_value;
using testing::uniform_indices;
using testing::usage_error;
using testing::values_of;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

DType loss_dtype(DType logits) { return logits == DType::f64 ? DType::f64 : DType::f32; }

Tensor random_logits(std::int64_t rows, std::int64_t classes, DType dtype, unsigned seed,
                     double spread = 3.0) {
  return testing::uniform_tensor({rows, classes}, dtype, seed, -spread, spread);
}

std::int64_t label_of(const Tensor& labels, std::int64_t i) {
  return labels.data_as<const std::int64_t>()[i];
}

// The naive reference in f64 from the stored logits.
struct Reference {
  std::vector<double> loss;
  std::vector<double> grad;  // for scale 1
};

Reference reference(const Tensor& logits, const Tensor& labels) {
  const std::int64_t rows = logits.shape()[0];
  const std::int64_t classes = logits.shape()[1];
  Reference r;
  for (std::int64_t i = 0; i < rows; ++i) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < classes; ++j) m = std::max(m, get_value(logits, i * classes + j));
    double sum = 0.0;
    for (std::int64_t j = 0; j < classes; ++j)
      sum += std::exp(get_value(logits, i * classes + j) - m);
    const std::int64_t label = label_of(labels, i);
    r.loss.push_back(std::log(sum) - (get_value(logits, i * classes + label) - m));
    for (std::int64_t j = 0; j < classes; ++j) {
      const double p = std::exp(get_value(logits, i * classes + j) - m) / sum;
      r.grad.push_back(p - (j == label ? 1.0 : 0.0));
    }
  }
  return r;
}

Tensor losses_of(const Tensor& logits, const Tensor& labels) {
  Tensor losses = Tensor::empty({logits.shape()[0]}, loss_dtype(logits.dtype()));
  ops::softmax_cross_entropy(logits, labels, losses);
  return losses;
}

Tensor grad_of(const Tensor& logits, const Tensor& labels, double scale) {
  Tensor grad = Tensor::empty_like(logits);
  ops::softmax_cross_entropy_grad(logits, labels, scale, grad);
  return grad;
}

// Spacing of `dtype`'s values at `value` (at least at the smallest normal).
double ulp(DType dtype, double value) {
  int digits = 53;
  int min_exponent = -1022;
  if (dtype == DType::f32) {
    digits = 24;
    min_exponent = -126;
  } else if (dtype == DType::f16) {
    digits = 11;
    min_exponent = -14;
  } else if (dtype == DType::bf16) {
    digits = 8;
    min_exponent = -126;
  }
  const int exponent = value == 0.0 ? min_exponent : std::max(std::ilogb(value), min_exponent);
  return std::ldexp(1.0, exponent - digits + 1);
}

TEST(SoftmaxCrossEntropy, MatchesANaiveF64ReferenceInEveryDtype) {
  constexpr std::int64_t kRows = 23;
  constexpr std::int64_t kClasses = 11;
  unsigned seed = 1;
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    const Tensor logits = random_logits(kRows, kClasses, dtype, seed++);
    const Tensor labels = uniform_indices(kRows, kClasses, seed++);
    const Reference ref = reference(logits, labels);
    const Tensor losses = losses_of(logits, labels);
    EXPECT_EQ(losses.dtype(), loss_dtype(dtype));
    // f64 to a few ulps; otherwise f32 arithmetic whatever the storage.
    const double eps = dtype == DType::f64 ? 1e-14 : 2e-6;
    const std::vector<double> loss = values_of(losses);
    for (std::int64_t i = 0; i < kRows; ++i) {
      const auto k = static_cast<std::size_t>(i);
      EXPECT_NEAR(loss[k], ref.loss[k], eps * (1.0 + std::fabs(ref.loss[k]))) << name << " " << i;
    }
    for (double scale : {1.0, -0.125, 1024.0}) {
      const std::vector<double> grad = values_of(grad_of(logits, labels, scale));
      for (std::size_t k = 0; k < grad.size(); ++k) {
        const double expected = scale * ref.grad[k];
        // The f32 (or f64) error, plus one rounding to a 16-bit dtype on store.
        const double tolerance =
            eps * std::fabs(scale) +
            (dtype == DType::f16 || dtype == DType::bf16 ? ulp(dtype, std::fabs(expected)) : 0.0);
        EXPECT_NEAR(grad[k], expected, tolerance) << name << " scale " << scale << " at " << k;
      }
    }
  }
}

// d loss_i / d logits[i, j] by central differences of the f64 op equals the f64 gradient.
TEST(SoftmaxCrossEntropy, F64GradientMatchesCentralDifferences) {
  constexpr std::int64_t kRows = 4;
  constexpr std::int64_t kClasses = 7;
  constexpr double kH = 1e-6;
  const Tensor logits = random_logits(kRows, kClasses, DType::f64, 77);
  const Tensor labels = uniform_indices(kRows, kClasses, 78);
  const std::vector<double> grad = values_of(grad_of(logits, labels, 1.0));
  for (std::int64_t k = 0; k < logits.numel(); ++k) {
    const std::int64_t row = k / kClasses;
    Tensor up = logits.clone();
    Tensor down = logits.clone();
    set_value(up, k, get_value(logits, k) + kH);
    set_value(down, k, get_value(logits, k) - kH);
    const double difference =
        (get_value(losses_of(up, labels), row) - get_value(losses_of(down, labels), row)) /
        (2.0 * kH);
    EXPECT_NEAR(grad[static_cast<std::size_t>(k)], difference, 1e-8) << "at " << k;
  }
}

// Logits around 1e4 (exp would overflow f32 and f64 without the max subtracted): the loss equals
// that of the shifted logits, and the gradient rows sum to 0. 9984 = 156 * 64 and the offsets are
// multiples of 64, so every dtype (bf16 too) stores them exactly.
TEST(SoftmaxCrossEntropy, LargeLogitsDoNotOverflow) {
  constexpr double kBig = 9984.0;
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    const Tensor logits = make_tensor({3, 4}, dtype,
                                      {kBig, kBig, kBig, kBig, kBig, kBig - 64, kBig - 128,
                                       kBig - 256, -kBig, -kBig + 64, -kBig, -kBig - 64});
    const Tensor labels = make_tensor({3}, DType::i64, {2, 0, 1});
    const std::vector<double> loss = values_of(losses_of(logits, labels));
    EXPECT_NEAR(loss[0], std::log(4.0), 1e-6) << name;
    EXPECT_NEAR(loss[1], std::log1p(std::exp(-64.0)), 1e-6) << name;
    EXPECT_NEAR(loss[2], std::log1p(2.0 * std::exp(-64.0) + std::exp(-128.0)), 1e-6) << name;
    const Tensor shifted =
        make_tensor({3, 4}, dtype, {0, 0, 0, 0, 0, -64, -128, -256, -64, 0, -64, -128});
    EXPECT_EQ(loss, values_of(losses_of(shifted, labels))) << name;
    const std::vector<double> grad = values_of(grad_of(logits, labels, 1.0));
    EXPECT_EQ(grad, values_of(grad_of(shifted, labels, 1.0))) << name;
    for (std::size_t i = 0; i < 3; ++i) {
      double sum = 0.0;
      for (std::size_t j = 0; j < 4; ++j) {
        ASSERT_TRUE(std::isfinite(grad[i * 4 + j])) << name;
        sum += grad[i * 4 + j];
      }
      EXPECT_NEAR(sum, 0.0, 1e-6) << name << " row " << i;
    }
    EXPECT_EQ(grad[2], -0.75) << name;  // uniform row, label 2: 1/4 - 1
  }
  // 1e4 itself, in f32 and f64: the loss keeps its precision.
  for (DType dtype : {DType::f32, DType::f64}) {
    const Tensor logits = make_tensor({1, 3}, dtype, {1e4, 1e4 - 1, 1e4 - 2});
    const Tensor labels = make_tensor({1}, DType::i64, {2});
    const double expected = std::log(1.0 + std::exp(-1.0) + std::exp(-2.0)) + 2.0;
    EXPECT_NEAR(get_value(losses_of(logits, labels), 0), expected, 1e-6) << to_string(dtype);
  }
}

// A loss-scaled 16-bit gradient keeps probabilities that f16 itself cannot hold: p = e^-20 / sum
// is about 2e-9, below f16's smallest subnormal (6e-8), but 65536 * p is a normal f16 number.
TEST(SoftmaxCrossEntropy, SixteenBitGradientIsRoundedOnceAfterScaling) {
  for (DType dtype : {DType::f16, DType::bf16}) {
    const Tensor logits = make_tensor({1, 3}, dtype, {0.0, -20.0, 0.0});
    const Tensor labels = make_tensor({1}, DType::i64, {0});
    const std::vector<double> grad = values_of(grad_of(logits, labels, 65536.0));
    const double sum = 2.0 + std::exp(-20.0);
    const double small = 65536.0 * std::exp(-20.0) / sum;
    EXPECT_GT(grad[1], 0.0) << to_string(dtype);
    EXPECT_NEAR(grad[1], small, ulp(dtype, small) + 1e-6 * small) << to_string(dtype);
    EXPECT_EQ(grad[1], round_to(dtype, static_cast<float>(65536.0f * (std::exp(-20.0f) /
                                                                      (2.0f + std::exp(-20.0f))))))
        << to_string(dtype);
    EXPECT_NEAR(grad[0], 65536.0 * (1.0 / sum - 1.0), ulp(dtype, 32768.0)) << to_string(dtype);
  }
  // The 16-bit logits are read into f32: the losses are f32.
  const Tensor h = make_tensor({2, 2}, DType::bf16, {1.0, 2.0, 3.0, -1.0});
  const Tensor labels = make_tensor({2}, DType::i64, {1, 1});
  const std::vector<double> loss = values_of(losses_of(h, labels));
  EXPECT_EQ(loss[0], static_cast<double>(std::log(1.0f + std::exp(-1.0f))));
  EXPECT_NEAR(loss[1], std::log(1.0 + std::exp(4.0)) + 0.0, 2e-6);
}

TEST(SoftmaxCrossEntropy, GradientInPlaceAndOneClass) {
  const Tensor logits = random_logits(9, 5, DType::f32, 3);
  const Tensor labels = uniform_indices(9, 5, 4);
  const Tensor expected = grad_of(logits, labels, 0.5);
  Tensor inplace = logits.clone();
  ops::softmax_cross_entropy_grad(inplace, labels, 0.5, inplace);
  EXPECT_EQ(std::memcmp(inplace.data(), expected.data(), expected.nbytes()), 0);
  // One class: the loss is 0 and so is the gradient.
  const Tensor one = make_tensor({2, 1}, DType::f64, {3.0, -7.0});
  const Tensor zeros = make_tensor({2}, DType::i64, {0, 0});
  EXPECT_EQ(values_of(losses_of(one, zeros)), (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(values_of(grad_of(one, zeros, 1.0)), (std::vector<double>{0.0, 0.0}));
  // No rows: nothing to do.
  ops::softmax_cross_entropy(Tensor::empty({0, 3}, DType::f32), Tensor::empty({0}, DType::i64),
                             Tensor::empty({0}, DType::f32));
}

// The gradient's bits by its rule, for rows whose exponentials the CPU keeps on the stack
// (classes <= kStagedSoftmaxLine) and longer ones: the f32 maximum, exponentials of x - max
// rounded to float, their sum in the order of reduction_order.hpp, scale * (e / sum - [label]).
TEST(SoftmaxCrossEntropy, GradientHasTheBitsOfItsRuleAtEveryRowLength) {
  for (const DType dtype : {DType::f32, DType::bf16}) {
    for (const std::int64_t classes : {std::int64_t{256}, kernels::kStagedSoftmaxLine,
                                       kernels::kStagedSoftmaxLine + 1, std::int64_t{1500}}) {
      const std::string what = std::string(to_string(dtype)) + " " + std::to_string(classes);
      const Tensor logits32 = random_logits(3, classes, DType::f32, 9);
      const Tensor logits = ops::cast(logits32, dtype);
      const Tensor wide = ops::cast(logits, DType::f32);
      const Tensor labels = uniform_indices(3, classes, 10);
      const Tensor got = ops::cast(grad_of(logits, labels, 0.25), DType::f32);
      const auto* x = static_cast<const float*>(wide.data());
      const auto* label = static_cast<const std::int64_t*>(labels.data());
      const auto* out = static_cast<const float*>(got.data());
      for (std::int64_t r = 0; r < 3; ++r) {
        const float* row = x + r * classes;
        float m = -std::numeric_limits<float>::infinity();
        for (std::int64_t j = 0; j < classes; ++j) m = std::max(m, row[j]);
        const auto e = [&](std::int64_t j) { return kernels::exp_f32(row[j] - m); };
        const float sum = kernels::ordered_sum<float>(classes, e);
        for (std::int64_t j = 0; j < classes; ++j) {
          const float want_f32 = 0.25f * (e(j) / sum - (j == label[r] ? 1.0f : 0.0f));
          const float want = dtype == DType::f32 ? want_f32 : to_float(to_bfloat16(want_f32));
          ASSERT_EQ(out[r * classes + j], want) << what << " row " << r << " class " << j;
        }
      }
    }
  }
}

// A NaN logit makes its own row's loss and gradient NaN, and no other row's.
TEST(SoftmaxCrossEntropy, NaNStaysInItsRow) {
  Tensor logits = random_logits(3, 4, DType::f32, 5);
  set_value(logits, 6, kNaN);  // row 1
  const Tensor labels = make_tensor({3}, DType::i64, {0, 3, 2});
  const std::vector<double> loss = values_of(losses_of(logits, labels));
  EXPECT_TRUE(std::isfinite(loss[0]));
  EXPECT_TRUE(std::isnan(loss[1]));
  EXPECT_TRUE(std::isfinite(loss[2]));
  const ops::NonfiniteReport report = ops::find_nonfinite(grad_of(logits, labels, 1.0));
  EXPECT_EQ(report.nan_count, 4);
  EXPECT_EQ(report.first_index, 4);
}

TEST(SoftmaxCrossEntropy, BadLabelsThrowNamingTheRowTheLabelAndC) {
  const Tensor logits = random_logits(4, 5, DType::f32, 9);
  Tensor losses = Tensor::empty({4}, DType::f32);
  ops::fill(losses, -3.0);
  const Tensor high = make_tensor({4}, DType::i64, {0, 4, 5, 1});
  expect_contains(usage_error([&] { ops::softmax_cross_entropy(logits, high, losses); }),
                  {"softmax_cross_entropy", "labels[2]", "row 2", "is 5", "C = 5", "[0, 5)"});
  EXPECT_EQ(values_of(losses), (std::vector<double>(4, -3.0)));  // nothing written
  const Tensor negative = make_tensor({4}, DType::i64, {0, 1, 2, -1});
  Tensor grad = Tensor::empty_like(logits);
  expect_contains(
      usage_error([&] { ops::softmax_cross_entropy_grad(logits, negative, 1.0, grad); }),
      {"softmax_cross_entropy_grad", "labels[3]", "row 3", "is -1", "C = 5"});
}

TEST(SoftmaxCrossEntropy, ShapeDtypeAndDeviceErrors) {
  const Tensor logits = Tensor::empty({4, 5}, DType::f16);
  const Tensor labels = Tensor::empty({4}, DType::i64);
  const Tensor losses = Tensor::empty({4}, DType::f32);
  expect_contains(usage_error([&] {
                    ops::softmax_cross_entropy(Tensor::empty({4, 0}, DType::f32), labels, losses);
                  }),
                  {"softmax_cross_entropy", "logits is f32[4, 0] on cpu", "no classes"});
  expect_contains(
      usage_error(
          [&] { ops::softmax_cross_entropy(logits, Tensor::empty({3}, DType::i64), losses); }),
      {"softmax_cross_entropy", "labels is i64[3] on cpu", "f16[4, 5] on cpu", "shape [4]"});
  expect_contains(usage_error([&] {
                    ops::softmax_cross_entropy(logits, Tensor::empty({4}, DType::i32), losses);
                  }),
                  {"softmax_cross_entropy", "labels is i32[4] on cpu", "i64"});
  expect_contains(usage_error([&] {
                    ops::softmax_cross_entropy(logits, labels, Tensor::empty({4}, DType::f16));
                  }),
                  {"softmax_cross_entropy", "losses is f16[4] on cpu", "f32[4]"});
  expect_contains(usage_error([&] {
                    ops::softmax_cross_entropy(Tensor::empty({4, 5}, DType::f64), labels, losses);
                  }),
                  {"softmax_cross_entropy", "losses is f32[4] on cpu", "f64[4]"});
  expect_contains(usage_error([&] {
                    ops::softmax_cross_entropy(Tensor::empty({20}, DType::f32), labels, losses);
                  }),
                  {"softmax_cross_entropy", "logits is f32[20] on cpu", "[B, C]"});
  expect_contains(usage_error([&] {
                    ops::softmax_cross_entropy(logits, labels,
                                               testing::fake_cuda_tensor({4}, DType::f32));
                  }),
                  {"softmax_cross_entropy", "logits is on cpu", "losses is on cuda:0"});
  expect_contains(
      usage_error([&] {
        ops::softmax_cross_entropy_grad(logits, labels, 1.0, Tensor::empty({4, 5}, DType::f32));
      }),
      {"softmax_cross_entropy_grad", "logits is f16", "grad is f32"});
  expect_contains(
      usage_error([&] {
        ops::softmax_cross_entropy_grad(logits, labels, 1.0, Tensor::empty({5, 4}, DType::f16));
      }),
      {"softmax_cross_entropy_grad", "grad has shape [5, 4]"});
  expect_contains(
      usage_error([&] {
        ops::softmax_cross_entropy_grad(logits, labels, kNaN, Tensor::empty({4, 5}, DType::f16));
      }),
      {"softmax_cross_entropy_grad", "scale"});
  const Tensor ints = Tensor::empty({4, 5}, DType::i32);
  expect_contains(usage_error([&] { ops::softmax_cross_entropy(ints, labels, losses); }),
                  {"softmax_cross_entropy", "logits is i32[4, 5] on cpu", "floating-point"});
}

TEST(SoftmaxCrossEntropy, SameBitsForAnyThreadCount) {
  CpuContext one(1);
  CpuContext three(3);
  for (DType dtype : {DType::f32, DType::bf16}) {
    const Tensor logits = random_logits(5000, 37, dtype, 21, 8.0);
    const Tensor labels = uniform_indices(5000, 37, 22);
    Tensor la = Tensor::empty({5000}, DType::f32);
    Tensor lb = Tensor::empty({5000}, DType::f32);
    kernels::cpu::softmax_cross_entropy(one, {logits, labels, la, 5000, 37});
    kernels::cpu::softmax_cross_entropy(three, {logits, labels, lb, 5000, 37});
    EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.nbytes()), 0);
    Tensor ga = Tensor::empty_like(logits);
    Tensor gb = Tensor::empty_like(logits);
    kernels::cpu::softmax_cross_entropy_grad(one, {logits, labels, 3.0, ga, 5000, 37});
    kernels::cpu::softmax_cross_entropy_grad(three, {logits, labels, 3.0, gb, 5000, 37});
    EXPECT_EQ(std::memcmp(ga.data(), gb.data(), ga.nbytes()), 0);
  }
}

TEST(NnDispatch, CudaTensorsInABuildWithoutCudaThrowNotCompiled) {
  if (tenax::cuda::compiled()) GTEST_SKIP() << "this build has the CUDA backend";
  const Tensor logits = testing::fake_cuda_tensor({2, 3}, DType::f32);
  const Tensor labels = testing::fake_cuda_tensor({2}, DType::i64);
  const Tensor losses = testing::fake_cuda_tensor({2}, DType::f32);
  EXPECT_THROW(ops::softmax_cross_entropy(logits, labels, losses), NotCompiledError);
  EXPECT_THROW(ops::softmax_cross_entropy_grad(logits, labels, 1.0, logits), NotCompiledError);
}

}  // namespace
}  // namespace tenax
