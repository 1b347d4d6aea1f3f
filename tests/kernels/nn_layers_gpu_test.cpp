// The CUDA backend of the layer kernels (softmax along an axis, causal softmax, layer norm and
// its gradients, embedding and its gradient, gelu_tanh) against the CPU backend, the reference.
// Both run the bodies of nn_bodies.hpp in the same order; exp, log, sqrt and tanh come from each
// side's math library, so values agree within a few units in the last place (embedding, a copy
// and ordered sums of the same values, bit for bit). An index outside the table gives a NaN row on
// the GPU (the CPU throws).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_nn.hpp"

namespace tenax {
namespace {

using testing::make_tensor;
using testing::significand_digits;
using testing::uniform_tensor;
using testing::values_of;

using NnLayersGpu = testing::GpuTest;

void expect_close(const Tensor& cpu, const Tensor& gpu, DType dtype, const std::string& what) {
  const std::vector<double> a = values_of(cpu);
  const std::vector<double> b = values_of(gpu.to(Device::cpu()));
  ASSERT_EQ(a.size(), b.size()) << what;
  const double eps = dtype == DType::f64 ? 1e-13 : std::ldexp(1.0, -significand_digits(dtype) + 3);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], eps * (1 + std::fabs(a[i]))) << what << " at " << i;
  }
}

// Ordered column sums of the same values: bit for bit.
TEST_F(NnLayersGpu, BiasGradientIsTheCpusBitForBit) {
  for (const DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    const Tensor dy = uniform_tensor({3, 37, 300}, dtype, 5, -2, 2);
    const DType compute = dtype == DType::f64 ? DType::f64 : DType::f32;
    Tensor db = Tensor::empty({300}, compute);
    Tensor gdb = Tensor::empty({300}, compute, gpu());
    ops::bias_grad(dy, db);
    ops::bias_grad(dy.to(gpu()), gdb);
    EXPECT_EQ(values_of(db), values_of(gdb.to(Device::cpu()))) << to_string(dtype);
  }
}

TEST_F(NnLayersGpu, SoftmaxesAgreeWithTheCpu) {
  for (const DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    const std::string name(to_string(dtype));
    const Tensor x = uniform_tensor({7, 33, 65}, dtype, 1, -8, 8);
    for (int axis = 0; axis < 3; ++axis) {
      Tensor y = Tensor::empty_like(x);
      Tensor gy = Tensor::empty(x.shape(), dtype, gpu());
      ops::softmax(x, axis, y);
      ops::softmax(x.to(gpu()), axis, gy);
      expect_close(y, gy, dtype, name + " softmax axis " + std::to_string(axis));
      ops::log_softmax(x, axis, y);
      ops::log_softmax(x.to(gpu()), axis, gy);
      expect_close(y, gy, dtype, name + " log_softmax axis " + std::to_string(axis));
      const Tensor dy = uniform_tensor(x.shape(), dtype, 2, -1, 1);
      Tensor dx = Tensor::empty_like(x);
      Tensor gdx = Tensor::empty(x.shape(), dtype, gpu());
      ops::log_softmax_grad(y, dy, axis, dx);
      ops::log_softmax_grad(gy, dy.to(gpu()), axis, gdx);
      expect_close(dx, gdx, dtype, name + " log_softmax_grad");
    }
    const Tensor scores = uniform_tensor({3, 4, 17, 17}, dtype, 3, -5, 5);
    Tensor p = Tensor::empty_like(scores);
    Tensor gp = Tensor::empty(scores.shape(), dtype, gpu());
    ops::causal_softmax(scores, p);
    ops::causal_softmax(scores.to(gpu()), gp);
    expect_close(p, gp, dtype, name + " causal_softmax");
  }
}

// softmax_grad from the same y and dy on both sides (so only the gradient kernel is compared),
// along every axis; and 16-bit lines at and past the CPU's staged length (kStagedSoftmaxLine, 1024:
// the host widens such a line once into a stack buffer, the device reads it in place), forward and
// gradient.
TEST_F(NnLayersGpu, SoftmaxGradientAndLongLinesAgreeWithTheCpu) {
  for (const DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    const std::string name(to_string(dtype));
    const Tensor x = uniform_tensor({7, 33, 65}, dtype, 8, -6, 6);
    const Tensor dy = uniform_tensor(x.shape(), dtype, 9, -1, 1);
    for (int axis = 0; axis < 3; ++axis) {
      Tensor y = Tensor::empty_like(x);
      ops::softmax(x, axis, y);
      Tensor dx = Tensor::empty_like(x);
      Tensor gdx = Tensor::empty(x.shape(), dtype, gpu());
      ops::softmax_grad(y, dy, axis, dx);
      ops::softmax_grad(y.to(gpu()), dy.to(gpu()), axis, gdx);
      expect_close(dx, gdx, dtype, name + " softmax_grad axis " + std::to_string(axis));
    }
    for (const std::int64_t length : {1023, 1024, 1025, 3000}) {
      const std::string what = name + " line " + std::to_string(length);
      const Tensor lines = uniform_tensor({3, length}, dtype, 10, -9, 9);
      const Tensor g = uniform_tensor({3, length}, dtype, 11, -1, 1);
      Tensor y = Tensor::empty_like(lines), gy = Tensor::empty(lines.shape(), dtype, gpu());
      ops::softmax(lines, 1, y);
      ops::softmax(lines.to(gpu()), 1, gy);
      expect_close(y, gy, dtype, what + " softmax");
      Tensor dx = Tensor::empty_like(lines), gdx = Tensor::empty(lines.shape(), dtype, gpu());
      ops::softmax_grad(y, g, 1, dx);
      ops::softmax_grad(y.to(gpu()), g.to(gpu()), 1, gdx);
      expect_close(dx, gdx, dtype, what + " softmax_grad");
    }
  }
}

// Rows of 96 and of 4097 elements (past the CPU's staged row, kStagedRow 4096).
TEST_F(NnLayersGpu, LayerNormAgreesWithTheCpu) {
  for (const DType dtype : {DType::f64, DType::f32, DType::bf16}) {
    for (const std::int64_t d : {std::int64_t{96}, std::int64_t{4097}}) {
      const std::string name = std::string(to_string(dtype)) + " d " + std::to_string(d);
      const DType master = dtype == DType::f64 ? DType::f64 : DType::f32;
      const Tensor x = uniform_tensor({9, 31, d}, dtype, 4, -3, 3);
      const Tensor w = uniform_tensor({d}, master, 5, 0.5, 1.5);
      const Tensor b = uniform_tensor({d}, master, 6, -1, 1);
      const Tensor dy = uniform_tensor(x.shape(), dtype, 7, -1, 1);
      const std::int64_t rows = 9 * 31;
      Tensor y = Tensor::empty_like(x), mean = Tensor::empty({rows}, master),
             rstd = Tensor::empty({rows}, master);
      Tensor gy = Tensor::empty(x.shape(), dtype, gpu()),
             gmean = Tensor::empty({rows}, master, gpu()),
             grstd = Tensor::empty({rows}, master, gpu());
      ops::layer_norm(x, w, b, 1e-5, y, mean, rstd);
      ops::layer_norm(x.to(gpu()), w.to(gpu()), b.to(gpu()), 1e-5, gy, gmean, grstd);
      expect_close(y, gy, dtype, name + " layer_norm");
      expect_close(rstd, grstd, master, name + " rstd");
      Tensor dx = Tensor::empty_like(x), gdx = Tensor::empty(x.shape(), dtype, gpu());
      ops::layer_norm_grad_input(dy, x, w, mean, rstd, dx);
      ops::layer_norm_grad_input(dy.to(gpu()), x.to(gpu()), w.to(gpu()), gmean, grstd, gdx);
      expect_close(dx, gdx, dtype, name + " layer_norm_grad_input");
      Tensor dw = Tensor::empty({d}, master), db = Tensor::empty({d}, master);
      Tensor gdw = Tensor::empty({d}, master, gpu()), gdb = Tensor::empty({d}, master, gpu());
      ops::layer_norm_grad_params(dy, x, mean, rstd, dw, db);
      ops::layer_norm_grad_params(dy.to(gpu()), x.to(gpu()), gmean, grstd, gdw, gdb);
      expect_close(dw, gdw, master, name + " dweight");
      expect_close(db, gdb, master, name + " dbias");
    }
  }
}

TEST_F(NnLayersGpu, EmbeddingIsBitwiseTheCpusAndABadIndexIsANanRow) {
  const Tensor table = uniform_tensor({50, 24}, DType::f32, 8, -1, 1);
  std::vector<double> ids;
  for (int i = 0; i < 300; ++i) ids.push_back((i * 37 + 11) % 50);
  const Tensor indices = make_tensor({10, 30}, DType::i64, ids);
  Tensor out = Tensor::empty({10, 30, 24}, DType::f32);
  Tensor gout = Tensor::empty({10, 30, 24}, DType::f32, gpu());
  ops::embedding(table, indices, out);
  ops::embedding(table.to(gpu()), indices.to(gpu()), gout);
  EXPECT_EQ(values_of(out), values_of(gout.to(Device::cpu())));
  const Tensor dy = uniform_tensor({10, 30, 24}, DType::f32, 9, -1, 1);
  Tensor dw = Tensor::empty_like(table), gdw = Tensor::empty({50, 24}, DType::f32, gpu());
  ops::embedding_grad(indices, dy, dw);
  ops::embedding_grad(indices.to(gpu()), dy.to(gpu()), gdw);
  EXPECT_EQ(values_of(dw), values_of(gdw.to(Device::cpu()))) << "the same ordered sums";
  const Tensor bad = make_tensor({2}, DType::i64, {3, 50});
  Tensor two = Tensor::empty({2, 24}, DType::f32, gpu());
  ops::embedding(table.to(gpu()), bad.to(gpu()), two);
  const std::vector<double> rows = values_of(two.to(Device::cpu()));
  EXPECT_FALSE(std::isnan(rows[0]));
  EXPECT_TRUE(std::isnan(rows[24]));
}

TEST_F(NnLayersGpu, GeluTanhAgreesWithTheCpu) {
  for (const DType dtype : {DType::f64, DType::f32, DType::bf16}) {
    const Tensor x = uniform_tensor({4099}, dtype, 10, -12, 12);
    expect_close(ops::gelu_tanh(x), ops::gelu_tanh(x.to(gpu())), dtype, "gelu_tanh");
    expect_close(ops::gelu_tanh_grad(x), ops::gelu_tanh_grad(x.to(gpu())), dtype, "gelu_tanh_grad");
  }
}

TEST_F(NnLayersGpu, DropoutIsBitwiseTheCpus) {
  for (const DType dtype : {DType::f64, DType::f32, DType::bf16}) {
    const Tensor x = uniform_tensor({37, 513}, dtype, 11, -2, 2);
    const ops::DropoutKey key{5, 2, 9, 100};
    Tensor y = Tensor::empty_like(x);
    Tensor gy = Tensor::empty(x.shape(), dtype, gpu());
    ops::dropout(x, 0.3, key, y);
    ops::dropout(x.to(gpu()), 0.3, key, gy);
    EXPECT_EQ(values_of(y), values_of(gy.to(Device::cpu()))) << to_string(dtype);
  }
}

}  // namespace
}  // namespace tenax
