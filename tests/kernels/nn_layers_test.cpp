// The layer kernels of ops_nn.hpp on the CPU, the reference backend: softmax and log-softmax along
// every axis and the causal softmax, layer norm and its gradients, embedding lookup and its
// gradient, and gelu_tanh -- against scalar double references, in every floating dtype, with the
// edge cases (huge logits, in place, empty) and the errors of bad operands (nothing written).
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
#include "tenax/core/half.hpp"
#include "tenax/kernels/detail/nn_bodies.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"
#include "tenax/kernels/float_math.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_nn.hpp"

namespace tenax {
namespace {

using testing::expect_contains;
using testing::make_tensor;
using testing::uniform_tensor;
using testing::usage_error;
using testing::values_of;

constexpr DType kFloats[] = {DType::f64, DType::f32, DType::f16, DType::bf16};

// The tolerance of a value computed in the compute type and rounded once to `dtype`.
double tolerance(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return 1e-13;
    case DType::f32:
      return 2e-6;
    case DType::f16:
      return 2e-3;
    default:
      return 1.6e-2;
  }
}

// Softmax (or log-softmax) of the values of x along axis, in double, from x's stored values.
std::vector<double> reference_softmax(const Tensor& x, int axis, bool log) {
  const std::vector<double> v = values_of(x);
  const Shape& s = x.shape();
  std::int64_t outer = 1, inner = 1;
  for (int a = 0; a < s.rank(); ++a) {
    if (a < axis) outer *= s[a];
    if (a > axis) inner *= s[a];
  }
  const std::int64_t n = s[axis];
  std::vector<double> out(v.size());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      double m = -INFINITY;
      for (std::int64_t j = 0; j < n; ++j) m = std::max(m, v[(o * n + j) * inner + i]);
      double sum = 0;
      for (std::int64_t j = 0; j < n; ++j) sum += std::exp(v[(o * n + j) * inner + i] - m);
      for (std::int64_t j = 0; j < n; ++j) {
        const double shifted = v[(o * n + j) * inner + i] - m;
        out[(o * n + j) * inner + i] = log ? shifted - std::log(sum) : std::exp(shifted) / sum;
      }
    }
  }
  return out;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " at " << i;
  }
}

TEST(NnLayers, SoftmaxAndLogSoftmaxAlongEveryAxisInEveryDtype) {
  for (const DType dtype : kFloats) {
    const Tensor x = uniform_tensor({3, 4, 5}, dtype, 1, -6, 6);
    for (int axis = 0; axis < 3; ++axis) {
      const std::string what = std::string(to_string(dtype)) + " axis " + std::to_string(axis);
      Tensor y = Tensor::empty_like(x);
      ops::softmax(x, axis, y);
      expect_near_all(values_of(y), reference_softmax(x, axis, false), tolerance(dtype), what);
      ops::log_softmax(x, axis - 3, y);  // negative axes count from the last
      expect_near_all(values_of(y), reference_softmax(x, axis, true), 8 * tolerance(dtype),
                      what + " log");
    }
  }
}

// A bf16 softmax line's bits by its rule: the f32 maximum, exponentials of x - max rounded to
// float (float_math.hpp), their sum in the order of reduction_order.hpp, each quotient rounded
// once to bf16. Lines short enough that the CPU keeps their exponentials on the stack and lines
// longer than that (exponentials computed twice), causal rows too, all follow it exactly.
TEST(NnLayers, SixteenBitSoftmaxLinesHaveTheBitsOfTheirRuleAtEveryLength) {
  for (const std::int64_t n : {std::int64_t{7}, kernels::kStagedSoftmaxLine,
                               kernels::kStagedSoftmaxLine + 1, std::int64_t{1500}}) {
    for (const bool causal : {false, true}) {
      if (causal && n > 64) continue;  // a causal [n, n] matrix: kept small
      const std::int64_t rows = causal ? n : 3;
      const Tensor x = uniform_tensor({rows, n}, DType::bf16, 11, -9, 9);
      Tensor y = Tensor::empty_like(x);
      if (causal) {
        ops::causal_softmax(x, y);
      } else {
        ops::softmax(x, -1, y);
      }
      const auto* in = static_cast<const BFloat16*>(x.data());
      const auto* out = static_cast<const BFloat16*>(y.data());
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t used = causal ? r + 1 : n;
        const BFloat16* line = in + r * n;
        float m = -std::numeric_limits<float>::infinity();
        for (std::int64_t j = 0; j < used; ++j) m = std::max(m, to_float(line[j]));
        const auto e = [&](std::int64_t j) { return kernels::exp_f32(to_float(line[j]) - m); };
        const float sum = kernels::ordered_sum<float>(used, e);
        for (std::int64_t j = 0; j < n; ++j) {
          const std::uint16_t want = j < used ? to_bfloat16(e(j) / sum).bits : 0;
          ASSERT_EQ(out[r * n + j].bits, want)
              << "n " << n << (causal ? " causal" : "") << " row " << r << " element " << j;
        }
      }
    }
  }
}

// A bf16 softmax gradient computes in f32 on the widened y and dy: the f32 gradient of the
// widened operands rounded once, bit for bit, for lines the CPU widens onto the stack and longer.
TEST(NnLayers, SixteenBitSoftmaxGradientIsTheF32OneRoundedOnce) {
  for (const std::int64_t n : {std::int64_t{128}, kernels::kStagedSoftmaxLine + 1}) {
    const Tensor y = uniform_tensor({5, n}, DType::bf16, 31, 0, 0.1);
    const Tensor dy = uniform_tensor({5, n}, DType::bf16, 32, -1, 1);
    Tensor dx = Tensor::empty_like(y);
    ops::softmax_grad(y, dy, -1, dx);
    const Tensor y32 = ops::cast(y, DType::f32);
    const Tensor dy32 = ops::cast(dy, DType::f32);
    Tensor dx32 = Tensor::empty_like(y32);
    ops::softmax_grad(y32, dy32, -1, dx32);
    const Tensor want = ops::cast(dx32, DType::bf16);
    EXPECT_EQ(std::memcmp(dx.data(), want.data(), dx.nbytes()), 0) << "n " << n;
  }
}

TEST(NnLayers, HugeLogitsStayFiniteAndInPlaceWorks) {
  Tensor x = make_tensor({2, 3}, DType::f32, {1e4, 1e4 + 1, 1e4 - 2, -3e4, -3e4, -3e4 + 5});
  const std::vector<double> want = reference_softmax(x, 1, false);
  ops::softmax(x, 1, x);  // y may be x
  expect_near_all(values_of(x), want, 2e-6, "in place");
  Tensor empty = Tensor::empty({0, 4}, DType::f32);
  ops::softmax(empty, 1, empty);  // nothing to do
}

TEST(NnLayers, CausalSoftmaxIsTheMaskedSoftmax) {
  const Tensor x = uniform_tensor({2, 5, 5}, DType::f64, 3, -4, 4);
  Tensor y = Tensor::empty_like(x);
  ops::causal_softmax(x, y);
  const std::vector<double> v = values_of(x);
  const std::vector<double> got = values_of(y);
  for (int b = 0; b < 2; ++b) {
    for (int q = 0; q < 5; ++q) {
      double m = -INFINITY, sum = 0;
      for (int j = 0; j <= q; ++j) m = std::max(m, v[(b * 5 + q) * 5 + j]);
      for (int j = 0; j <= q; ++j) sum += std::exp(v[(b * 5 + q) * 5 + j] - m);
      for (int j = 0; j < 5; ++j) {
        const double want = j <= q ? std::exp(v[(b * 5 + q) * 5 + j] - m) / sum : 0.0;
        EXPECT_NEAR(got[(b * 5 + q) * 5 + j], want, 1e-15) << b << " " << q << " " << j;
      }
    }
  }
  // Its gradient through softmax_grad: masked elements get 0.
  const Tensor dy = uniform_tensor({2, 5, 5}, DType::f64, 4, -1, 1);
  Tensor dx = Tensor::empty_like(x);
  ops::softmax_grad(y, dy, -1, dx);
  EXPECT_EQ(values_of(dx)[1], 0.0) << "row 0, key 1 is masked";
}

TEST(NnLayers, SoftmaxGradientsFollowTheirFormulas) {
  const Tensor x = uniform_tensor({4, 6}, DType::f64, 5, -3, 3);
  const Tensor dy = uniform_tensor({4, 6}, DType::f64, 6, -1, 1);
  for (const bool log : {false, true}) {
    Tensor y = Tensor::empty_like(x);
    Tensor dx = Tensor::empty_like(x);
    if (log) {
      ops::log_softmax(x, 1, y);
      ops::log_softmax_grad(y, dy, 1, dx);
    } else {
      ops::softmax(x, 1, y);
      ops::softmax_grad(y, dy, 1, dx);
    }
    const std::vector<double> yv = values_of(y), g = values_of(dy), got = values_of(dx);
    for (int r = 0; r < 4; ++r) {
      double s = 0;
      for (int j = 0; j < 6; ++j) s += log ? g[r * 6 + j] : g[r * 6 + j] * yv[r * 6 + j];
      for (int j = 0; j < 6; ++j) {
        const int k = r * 6 + j;
        const double want = log ? g[k] - std::exp(yv[k]) * s : yv[k] * (g[k] - s);
        EXPECT_NEAR(got[k], want, 1e-15) << (log ? "log " : "") << k;
      }
    }
  }
}

TEST(NnLayers, LayerNormAndItsGradientsMatchTheFormulas) {
  for (const DType dtype : kFloats) {
    const DType master = dtype == DType::f64 ? DType::f64 : DType::f32;
    const Tensor x = uniform_tensor({3, 2, 7}, dtype, 7, -5, 5);
    const Tensor w = uniform_tensor({7}, master, 8, 0.5, 1.5);
    const Tensor b = uniform_tensor({7}, master, 9, -1, 1);
    Tensor y = Tensor::empty_like(x);
    Tensor mean = Tensor::empty({6}, master);
    Tensor rstd = Tensor::empty({6}, master);
    ops::layer_norm(x, w, b, 1e-5, y, mean, rstd);
    const std::vector<double> xv = values_of(x), wv = values_of(w), bv = values_of(b);
    const std::vector<double> got = values_of(y);
    for (int r = 0; r < 6; ++r) {
      double mu = 0, var = 0;
      for (int j = 0; j < 7; ++j) mu += xv[r * 7 + j] / 7;
      for (int j = 0; j < 7; ++j) var += (xv[r * 7 + j] - mu) * (xv[r * 7 + j] - mu) / 7;
      const double inv = 1 / std::sqrt(var + 1e-5);
      EXPECT_NEAR(values_of(mean)[r], mu, 1e-6 * (1 + std::fabs(mu)));
      EXPECT_NEAR(values_of(rstd)[r], inv, 1e-5 * inv);
      for (int j = 0; j < 7; ++j) {
        const double want = (xv[r * 7 + j] - mu) * inv * wv[j] + bv[j];
        ASSERT_NEAR(got[r * 7 + j], want, 4 * tolerance(dtype) * (1 + std::fabs(want)))
            << to_string(dtype) << " " << r << " " << j;
      }
    }
  }
  // The gradients in f64: the parameter sums over rows, the input's formula.
  const Tensor x = uniform_tensor({5, 4}, DType::f64, 10, -2, 2);
  const Tensor w = uniform_tensor({4}, DType::f64, 11, 0.5, 1.5);
  const Tensor dy = uniform_tensor({5, 4}, DType::f64, 12, -1, 1);
  Tensor y = Tensor::empty_like(x), mean = Tensor::empty({5}, DType::f64),
         rstd = Tensor::empty({5}, DType::f64);
  ops::layer_norm(x, w, Tensor(), 1e-5, y, mean, rstd);
  Tensor dw = Tensor::empty({4}, DType::f64), db = Tensor::empty({4}, DType::f64);
  ops::layer_norm_grad_params(dy, x, mean, rstd, dw, db);
  Tensor dx = Tensor::empty_like(x);
  ops::layer_norm_grad_input(dy, x, w, mean, rstd, dx);
  const std::vector<double> xv = values_of(x), g = values_of(dy), m = values_of(mean),
                            s = values_of(rstd), wv = values_of(w), dxv = values_of(dx);
  for (int j = 0; j < 4; ++j) {
    double sw = 0, sb = 0;
    for (int r = 0; r < 5; ++r) {
      sw += g[r * 4 + j] * (xv[r * 4 + j] - m[r]) * s[r];
      sb += g[r * 4 + j];
    }
    EXPECT_NEAR(values_of(dw)[j], sw, 1e-14);
    EXPECT_NEAR(values_of(db)[j], sb, 1e-14);
  }
  for (int r = 0; r < 5; ++r) {
    double mg = 0, mgx = 0;
    for (int j = 0; j < 4; ++j) {
      mg += g[r * 4 + j] * wv[j] / 4;
      mgx += g[r * 4 + j] * wv[j] * (xv[r * 4 + j] - m[r]) * s[r] / 4;
    }
    for (int j = 0; j < 4; ++j) {
      const double xhat = (xv[r * 4 + j] - m[r]) * s[r];
      EXPECT_NEAR(dxv[r * 4 + j], s[r] * (g[r * 4 + j] * wv[j] - mg - xhat * mgx), 1e-13);
    }
  }
}

// f16 and bf16 layer norms compute in f32 on the widened values: their output and input gradient
// are the f32 ones on the widened operands, rounded once, bit for bit, for rows the CPU widens
// onto the stack (d <= kStagedRow) and rows longer than that.
TEST(NnLayers, SixteenBitLayerNormIsTheF32OneRoundedOnce) {
  for (const DType dtype : {DType::bf16, DType::f16}) {
    for (const std::int64_t d : {std::int64_t{256}, kernels::kStagedRow + 5}) {
      const std::string what = std::string(to_string(dtype)) + " d " + std::to_string(d);
      const Tensor x = uniform_tensor({3, d}, dtype, 21, -4, 4);
      const Tensor dy = uniform_tensor({3, d}, dtype, 22, -1, 1);
      const Tensor w = uniform_tensor({d}, DType::f32, 23, 0.5, 1.5);
      const Tensor b = uniform_tensor({d}, DType::f32, 24, -0.5, 0.5);
      const Tensor x32 = ops::cast(x, DType::f32);
      const Tensor dy32 = ops::cast(dy, DType::f32);
      Tensor y = Tensor::empty_like(x);
      Tensor y32 = Tensor::empty_like(x32);
      Tensor mean = Tensor::empty({3}, DType::f32);
      Tensor rstd = Tensor::empty({3}, DType::f32);
      Tensor mean32 = Tensor::empty({3}, DType::f32);
      Tensor rstd32 = Tensor::empty({3}, DType::f32);
      ops::layer_norm(x, w, b, 1e-5, y, mean, rstd);
      ops::layer_norm(x32, w, b, 1e-5, y32, mean32, rstd32);
      const Tensor y_want = ops::cast(y32, dtype);
      EXPECT_EQ(std::memcmp(y.data(), y_want.data(), y.nbytes()), 0) << what << " output";
      EXPECT_EQ(std::memcmp(mean.data(), mean32.data(), mean.nbytes()), 0) << what << " mean";
      EXPECT_EQ(std::memcmp(rstd.data(), rstd32.data(), rstd.nbytes()), 0) << what << " rstd";
      for (const bool weighted : {true, false}) {
        const Tensor weight = weighted ? w : Tensor();
        Tensor dx = Tensor::empty_like(x);
        Tensor dx32 = Tensor::empty_like(x32);
        ops::layer_norm_grad_input(dy, x, weight, mean, rstd, dx);
        ops::layer_norm_grad_input(dy32, x32, weight, mean32, rstd32, dx32);
        const Tensor dx_want = ops::cast(dx32, dtype);
        EXPECT_EQ(std::memcmp(dx.data(), dx_want.data(), dx.nbytes()), 0)
            << what << (weighted ? " weighted" : "") << " input gradient";
      }
    }
  }
}

// bias_grad: each column's sum over the rows, in row order, in the compute type; zeros for no
// rows; bad operands refused with the op's name.
TEST(NnLayers, BiasGradientSumsEachColumnOverTheRowsInOrder) {
  for (const DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    const std::string what(to_string(dtype));
    const Tensor dy = uniform_tensor({2, 333, 300}, dtype, 41, -3, 3);
    const bool wide = dtype == DType::f64;
    Tensor db = Tensor::empty({300}, wide ? DType::f64 : DType::f32);
    ops::bias_grad(dy, db);
    const std::vector<double> v = values_of(dy);
    const std::vector<double> got = values_of(db);
    for (std::size_t j = 0; j < 300; ++j) {
      double sum_wide = 0;
      float sum = 0;
      for (std::size_t r = 0; r < 666; ++r) {
        sum_wide += v[r * 300 + j];
        sum += static_cast<float>(v[r * 300 + j]);
      }
      ASSERT_EQ(got[j], wide ? sum_wide : static_cast<double>(sum)) << what << " column " << j;
    }
  }
  Tensor db = Tensor::empty({4}, DType::f32);
  ops::bias_grad(Tensor::empty({0, 4}, DType::bf16), db);
  EXPECT_EQ(values_of(db), (std::vector<double>{0, 0, 0, 0}));
  const Tensor dy = uniform_tensor({3, 4}, DType::bf16, 42, -1, 1);
  expect_contains(usage_error([&] { ops::bias_grad(dy, Tensor::empty({5}, DType::f32)); }),
                  {"bias_grad", "dbias"});
  expect_contains(usage_error([&] { ops::bias_grad(dy, Tensor::empty({4}, DType::bf16)); }),
                  {"bias_grad", "dbias"});
  expect_contains(usage_error([&] { ops::bias_grad(dy, Tensor()); }), {"bias_grad", "dbias"});
  expect_contains(usage_error([&] {
                    ops::bias_grad(Tensor::empty({3, 4}, DType::i32), db);
                  }),
                  {"bias_grad"});
}

TEST(NnLayers, LayerNormRefusesBadOperands) {
  const Tensor x = uniform_tensor({2, 4}, DType::f16, 1, -1, 1);
  Tensor y = Tensor::empty_like(x);
  Tensor mean = Tensor::empty({2}, DType::f32), rstd = Tensor::empty({2}, DType::f32);
  const Tensor half_w = Tensor::empty({4}, DType::f16);
  expect_contains(usage_error([&] { ops::layer_norm(x, half_w, Tensor(), 1e-5, y, mean, rstd); }),
                  {"layer_norm", "weight", "f32[4]", "master weights"});
  expect_contains(usage_error([&] { ops::layer_norm(x, Tensor(), Tensor(), 0.0, y, mean, rstd); }),
                  {"eps"});
  Tensor short_mean = Tensor::empty({1}, DType::f32);
  expect_contains(
      usage_error([&] { ops::layer_norm(x, Tensor(), Tensor(), 1e-5, y, short_mean, rstd); }),
      {"mean", "f32[2]"});
  expect_contains(usage_error([&] { ops::layer_norm(x, Tensor(), Tensor(), 1e-5, x, mean, rstd); }),
                  {"overlaps"});
}

// Outputs that share memory with an input or with each other (which the kernels would read
// after writing, or write twice) are refused, as are parameters that pass in double but become
// 0 or inf in f32, the compute type of f32/f16/bf16 operands.
TEST(NnLayers, OverlapsAndParametersLostInF32AreRefused) {
  const Tensor buffer = uniform_tensor({5, 4}, DType::f32, 1, -1, 1);
  const Tensor x = buffer.slice(0, 4);
  Tensor y = Tensor::empty({4, 4}, DType::f32);
  Tensor stats = Tensor::empty({8}, DType::f32);
  const Tensor mean = stats.slice(0, 4), rstd = stats.slice(4, 8);
  const Tensor mean_in_x = buffer.slice(0, 1).reshape({4});
  expect_contains(usage_error([&] { ops::layer_norm(x, {}, {}, 1e-5, y, mean_in_x, rstd); }),
                  {"layer_norm", "mean", "overlaps x"});
  expect_contains(
      usage_error([&] { ops::layer_norm(x, {}, {}, 1e-5, y, y.slice(0, 1).reshape({4}), rstd); }),
      {"y", "overlaps mean"});
  ops::layer_norm(x, {}, {}, 1e-5, y, mean, rstd);  // apart: accepted
  const Tensor scratch = Tensor::empty({20}, DType::f32);
  ops::copy(scratch.slice(12, 16), mean);
  expect_contains(usage_error([&] {
                    ops::layer_norm_grad_input(y, x, {}, scratch.slice(12, 16), rstd,
                                               scratch.slice(0, 16).reshape({4, 4}));
                  }),
                  {"layer_norm_grad_input", "dx", "overlaps mean"});
  Tensor dw = Tensor::empty({4}, DType::f32);
  expect_contains(usage_error([&] { ops::layer_norm_grad_params(y, x, mean, rstd, dw, dw); }),
                  {"layer_norm_grad_params", "dweight", "overlaps dbias"});
  expect_contains(usage_error([&] { ops::layer_norm_grad_params(y, x, mean, rstd, mean, dw); }),
                  {"dweight", "overlaps mean"});
  expect_contains(usage_error([&] { ops::bias_grad(x, mean_in_x); }),
                  {"bias_grad", "dbias", "overlaps dy"});
  expect_contains(usage_error([&] { ops::bias_grad(Tensor(), dw); }), {"bias_grad: dy"});
  expect_contains(usage_error([&] { ops::bias_grad(Tensor::empty({}, DType::f32), dw); }),
                  {"its columns (last axis) are summed"});
  // Parameters.
  expect_contains(usage_error([&] { ops::layer_norm(x, {}, {}, 1e-300, y, mean, rstd); }),
                  {"layer_norm", "eps 1e-300 is 0 in f32"});
  const Tensor labels = make_tensor({4}, DType::i64, {0, 1, 2, 3});
  Tensor g = Tensor::empty({4, 4}, DType::f32);
  expect_contains(usage_error([&] { ops::softmax_cross_entropy_grad(x, labels, 1e300, g); }),
                  {"scale 1e+300 is inf in f32"});
  expect_contains(usage_error([&] { ops::softmax_cross_entropy_grad(x, labels, 1e-50, g); }),
                  {"scale", "is 0 in f32"});
  ops::softmax_cross_entropy_grad(x, labels, 0.0, g);  // a zero scale stays allowed
}

// Dropout's counter words are 32-bit: samples or elements past 2^32, or a stream with the bit
// that marks dropout, would repeat masks, and are refused.
TEST(NnLayers, DropoutCountersPastTheirWordsAreRefused) {
  const Tensor x = uniform_tensor({4, 8}, DType::f32, 1, -1, 1);
  Tensor y = Tensor::empty_like(x);
  ops::DropoutKey key;
  key.first_sample = (std::int64_t{1} << 32) - 4;  // the last four samples: allowed
  ops::dropout(x, 0.5, key, y);
  key.first_sample = (std::int64_t{1} << 32) - 3;
  expect_contains(usage_error([&] { ops::dropout(x, 0.5, key, y); }),
                  {"dropout", "past 2^32", "masks would repeat"});
  key.first_sample = 0;
  key.stream = 0x80000000U;
  expect_contains(usage_error([&] { ops::dropout(x, 0.5, key, y); }),
                  {"stream is 2147483648", "stream 0"});
}

// An index outside the table is refused even when rows have no columns (d == 0).
TEST(NnLayers, EmbeddingIndicesAreCheckedWhenRowsAreEmpty) {
  const Tensor table = Tensor::empty({3, 0}, DType::f32);
  const Tensor indices = make_tensor({2}, DType::i64, {7, 0});
  Tensor out = Tensor::empty({2, 0}, DType::f32);
  EXPECT_THROW(ops::embedding(table, indices, out), UsageError);
  EXPECT_THROW(ops::embedding_grad(indices, out, Tensor::empty({3, 0}, DType::f32)), UsageError);
  ops::embedding(table, make_tensor({2}, DType::i64, {2, 0}), out);
}

TEST(NnLayers, EmbeddingGathersAndItsGradientSumsRepeatsInOrder) {
  for (const DType dtype : {DType::f64, DType::f32, DType::bf16}) {
    const Tensor table = uniform_tensor({5, 3}, dtype, 2, -1, 1);
    const Tensor indices = make_tensor({2, 2}, DType::i64, {4, 0, 4, 2});
    Tensor out = Tensor::empty({2, 2, 3}, dtype);
    ops::embedding(table, indices, out);
    const std::vector<double> t = values_of(table), o = values_of(out);
    const int rows[] = {4, 0, 4, 2};
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 3; ++j) EXPECT_EQ(o[i * 3 + j], t[rows[i] * 3 + j]);
    }
    const Tensor dy = make_tensor({2, 2, 3}, dtype, {1, 2, 3, 4, 5, 6, 0.5, 0.25, 0.125, 7, 8, 9});
    Tensor dw = Tensor::empty_like(table);
    ops::fill(dw, 99);  // overwritten
    ops::embedding_grad(indices, dy, dw);
    EXPECT_EQ(values_of(dw),
              (std::vector<double>{4, 5, 6, 0, 0, 0, 7, 8, 9, 0, 0, 0, 1.5, 2.25, 3.125}));
  }
}

// 16-bit gradients are summed in f32 and rounded once: 3000 ones at one index give 3000 in f16
// and 3008 (3000 rounded to bf16's 8 bits) in bf16, not the 2048 / 256 where a sum kept in the
// storage type stops growing; a tail of small values that each vanish beside the sum adds up.
TEST(NnLayers, SixteenBitEmbeddingGradientsAreSummedInF32AndRoundedOnce) {
  const std::int64_t n = 3000;
  for (const DType dtype : {DType::f16, DType::bf16}) {
    const Tensor indices = make_tensor({n}, DType::i64, std::vector<double>(n, 1.0));
    std::vector<double> values(static_cast<std::size_t>(2 * n), 1.0);
    for (std::int64_t i = n / 2; i < n; ++i)
      values[static_cast<std::size_t>(2 * i + 1)] = 0.0078125;
    const Tensor dy = make_tensor({n, 2}, dtype, values);  // column 1: 1500 ones, 1500 x 2^-7
    Tensor dw = Tensor::empty({3, 2}, dtype);
    ops::embedding_grad(indices, dy, dw);
    const std::vector<double> got = values_of(dw);
    Tensor want = make_tensor({2}, DType::f32, {3000.0, 1500.0 + 1500.0 * 0.0078125});
    EXPECT_EQ(got[2], values_of(ops::cast(want, dtype))[0]) << to_string(dtype);
    EXPECT_EQ(got[3], values_of(ops::cast(want, dtype))[1]) << to_string(dtype);
    EXPECT_EQ(got[0], 0.0);
    EXPECT_EQ(got[5], 0.0);
  }
}

TEST(NnLayers, AnIndexOutsideTheTableIsRefusedBeforeAnythingIsWritten) {
  const Tensor table = uniform_tensor({5, 3}, DType::f32, 2, -1, 1);
  const Tensor indices = make_tensor({3}, DType::i64, {1, 5, 0});
  Tensor out = Tensor::empty({3, 3}, DType::f32);
  ops::fill(out, 7);
  expect_contains(usage_error([&] { ops::embedding(table, indices, out); }),
                  {"indices[1]", "is 5", "[0, 5)"});
  EXPECT_EQ(values_of(out), std::vector<double>(9, 7.0));
  Tensor dw = Tensor::empty_like(table);
  ops::fill(dw, 7);
  const Tensor dy = Tensor::empty({3, 3}, DType::f32);
  expect_contains(usage_error([&] { ops::embedding_grad(indices, dy, dw); }), {"indices[1]"});
  EXPECT_EQ(values_of(dw), std::vector<double>(15, 7.0));
  const Tensor narrow_ids = Tensor::empty({3}, DType::i32);
  expect_contains(usage_error([&] { ops::embedding(table, narrow_ids, out); }), {"i64"});
}

TEST(NnLayers, GeluTanhAndItsDerivative) {
  const std::vector<double> xs = {-40, -6, -1.5, -0.01, 0, 0.3, 2.5, 9, 40};
  const Tensor x = make_tensor({9}, DType::f64, xs);
  const std::vector<double> y = values_of(ops::gelu_tanh(x));
  const std::vector<double> dy = values_of(ops::gelu_tanh_grad(x));
  const auto f = [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  };
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_NEAR(y[i], f(xs[i]), 1e-15 * (1 + std::fabs(xs[i]))) << xs[i];
    const double h = 1e-6;
    EXPECT_NEAR(dy[i], (f(xs[i] + h) - f(xs[i] - h)) / (2 * h), 1e-8) << xs[i];
  }
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor edges = make_tensor({3}, DType::f32, {-inf, inf, std::nan("")});
  const std::vector<double> e = values_of(ops::gelu_tanh(edges));
  EXPECT_EQ(e[0], 0.0);
  EXPECT_TRUE(std::signbit(e[0])) << "-0 at -inf";
  EXPECT_EQ(e[1], inf);
  EXPECT_TRUE(std::isnan(e[2]));
  const std::vector<double> de = values_of(ops::gelu_tanh_grad(edges));
  EXPECT_EQ(de[0], 0.0);
  EXPECT_EQ(de[1], 1.0);
  EXPECT_TRUE(std::isnan(de[2]));
}

TEST(NnLayers, SoftmaxRefusesBadAxesAndShapes) {
  const Tensor x = Tensor::empty({2, 3}, DType::f32);
  Tensor y = Tensor::empty({2, 3}, DType::f32);
  expect_contains(usage_error([&] { ops::softmax(x, 2, y); }), {"softmax", "axis"});
  Tensor other = Tensor::empty({3, 2}, DType::f32);
  expect_contains(usage_error([&] { ops::softmax(x, 1, other); }), {"softmax"});
  expect_contains(usage_error([&] { ops::causal_softmax(x, y); }), {"[T, T]"});
  const Tensor ints = Tensor::empty({2, 3}, DType::i64);
  expect_contains(usage_error([&] { ops::softmax(ints, 1, ints); }), {"softmax"});
}

TEST(NnLayers, DropoutKeepsAboutOneMinusPScaledAndItsMaskIsAFunctionOfTheKey) {
  const std::int64_t samples = 64;
  const std::int64_t per = 1000;
  Tensor x = Tensor::empty({samples, per}, DType::f32);
  ops::fill(x, 1.0);
  Tensor y = Tensor::empty_like(x);
  const ops::DropoutKey key{7, 3, 11, 0};
  ops::dropout(x, 0.25, key, y);
  const std::vector<double> v = values_of(y);
  std::int64_t kept = 0;
  for (const double e : v) {
    ASSERT_TRUE(e == 0.0 || e == static_cast<double>(1.0f / 0.75f)) << e;
    kept += e != 0.0 ? 1 : 0;
  }
  // 64000 Bernoulli(0.75) draws: within 5 standard deviations (110) of 48000.
  EXPECT_NEAR(static_cast<double>(kept), 48000.0, 550.0);
  // The same key gives the same mask for the samples however they are split.
  Tensor tail = Tensor::empty({samples - 24, per}, DType::f32);
  ops::dropout(x.slice(24, samples), 0.25, {7, 3, 11, 24}, tail);
  const std::vector<double> t = values_of(tail);
  EXPECT_TRUE(std::equal(t.begin(), t.end(), v.begin() + 24 * per)) << "a split of the batch";
  // Another stream, step or seed: another mask; p = 0 copies.
  for (const ops::DropoutKey other :
       {ops::DropoutKey{7, 4, 11, 0}, ops::DropoutKey{7, 3, 12, 0}, ops::DropoutKey{8, 3, 11, 0}}) {
    Tensor z = Tensor::empty_like(x);
    ops::dropout(x, 0.25, other, z);
    EXPECT_NE(values_of(z), v);
  }
  Tensor copy = Tensor::empty_like(x);
  ops::dropout(x, 0.0, key, copy);
  EXPECT_EQ(values_of(copy), values_of(x));
  expect_contains(usage_error([&] { ops::dropout(x, 1.0, key, y); }), {"dropout", "p = 1"});
  expect_contains(usage_error([&] { ops::dropout(x, -0.1, key, y); }), {"[0, 1)"});
}

}  // namespace
}  // namespace tenax
