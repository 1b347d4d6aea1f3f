// The CUDA backend of softmax_cross_entropy and its gradient against the CPU backend, the
// reference. Both run the same row bodies (nn_bodies.hpp) in the same order, but exp and log come
// from each side's math library, so the results agree within a few units in the last place, not
// bit for bit. A label outside [0, C) gives a NaN row on the GPU (the CPU throws).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/kernels/ops_nn.hpp"

namespace tenax {
namespace {

using testing::significand_digits;
using testing::uniform_indices;
using testing::uniform_tensor;
using testing::values_of;

using NnGpu = testing::GpuTest;

TEST_F(NnGpu, LossAndGradientAgreeWithTheCpu) {
  constexpr std::int64_t kRows = 3001;
  constexpr std::int64_t kClasses = 257;
  for (DType dtype : kFloatDTypes) {
    const std::string name(to_string(dtype));
    const DType loss_dtype = dtype == DType::f64 ? DType::f64 : DType::f32;
    const Tensor logits = uniform_tensor({kRows, kClasses}, dtype, 1, -10.0, 10.0);
    const Tensor labels = uniform_indices(kRows, kClasses, 2);
    const Tensor glogits = logits.to(gpu());
    const Tensor glabels = labels.to(gpu());
    Tensor losses = Tensor::empty({kRows}, loss_dtype);
    Tensor glosses = Tensor::empty({kRows}, loss_dtype, gpu());
    ops::softmax_cross_entropy(logits, labels, losses);
    ops::softmax_cross_entropy(glogits, glabels, glosses);
    const double eps = dtype == DType::f64 ? 1e-14 : 1e-6;
    const std::vector<double> a = values_of(losses);
    const std::vector<double> b = values_of(glosses);
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_NEAR(a[i], b[i], eps * (1.0 + std::fabs(a[i]) + std::log(kClasses))) << name << i;
    }
    Tensor grad = Tensor::empty_like(logits);
    Tensor ggrad = Tensor::empty_like(glogits);
    ops::softmax_cross_entropy_grad(logits, labels, 512.0, grad);
    ops::softmax_cross_entropy_grad(glogits, glabels, 512.0, ggrad);
    const std::vector<double> g = values_of(grad);
    const std::vector<double> gg = values_of(ggrad);
    const int digits = significand_digits(dtype);
    for (std::size_t k = 0; k < g.size(); ++k) {
      // exp's error plus, for 16-bit dtypes, one rounding step on store.
      const double tolerance = 8.0 * eps * 512.0 + std::ldexp(std::fabs(g[k]), -digits + 1);
      ASSERT_NEAR(g[k], gg[k], tolerance) << name << " at " << k;
    }
  }
}

TEST_F(NnGpu, BadLabelsGiveNaNRows) {
  const Tensor logits = uniform_tensor({4, 6}, DType::f32, 3, -10.0, 10.0).to(gpu());
  const Tensor labels = testing::make_tensor({4}, DType::i64, {0, 6, 2, -3}).to(gpu());
  Tensor losses = Tensor::empty({4}, DType::f32, gpu());
  ops::softmax_cross_entropy(logits, labels, losses);
  const std::vector<double> loss = values_of(losses);
  EXPECT_TRUE(std::isfinite(loss[0]));
  EXPECT_TRUE(std::isnan(loss[1]));
  EXPECT_TRUE(std::isfinite(loss[2]));
  EXPECT_TRUE(std::isnan(loss[3]));
  Tensor grad = Tensor::empty({4, 6}, DType::f32, gpu());
  ops::softmax_cross_entropy_grad(logits, labels, 1.0, grad);
  const std::vector<double> g = values_of(grad);
  for (std::size_t j = 0; j < 6; ++j) {
    EXPECT_TRUE(std::isfinite(g[j]));
    EXPECT_TRUE(std::isnan(g[6 + j]));
    EXPECT_TRUE(std::isfinite(g[12 + j]));
    EXPECT_TRUE(std::isnan(g[18 + j]));
  }
}

}  // namespace
}  // namespace tenax
