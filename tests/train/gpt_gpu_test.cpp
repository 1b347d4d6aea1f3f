// The GPT's layers on CUDA against the CPU, the reference: a GptModel drawn from one seed holds
// the same weights on both devices (counter-based initialisation), and its forward pass, loss and
// every parameter's gradient agree within the rounding of reordered sums (cuBLAS's GEMMs sum in
// their own order), in f32 and in bf16 against f32 master weights; dropout's masks are the same
// bits. Module::to moves a model between the devices whole.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_shape.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/nn/gpt.hpp"

namespace tenax::train::nn {
namespace {

using GptGpu = tenax::testing::GpuTest;
using tenax::testing::values_of;

struct Pass {
  double loss = 0;
  std::vector<std::vector<double>> grads;
};

Pass run(const GptModel& model, const Tensor& window, DType compute) {
  const std::int64_t t = window.shape()[1] - 1;
  const Tensor inputs = ops::narrow(window, 1, 0, t);
  const Tensor targets = ops::narrow(window, 1, 1, t + 1);
  const autodiff::Variable loss = autodiff::cross_entropy(model.forward(inputs, compute), targets);
  autodiff::backward(loss);
  Pass pass;
  pass.loss = ops::sum(loss.value());
  for (const autodiff::Variable& p : model.parameters()) {
    pass.grads.push_back(values_of(p.grad().to(Device::cpu())));
  }
  return pass;
}

TEST_F(GptGpu, ForwardAndGradientsAgreeWithTheCpu) {
  const GptConfig config{
      .vocab = 256, .context = 32, .layers = 2, .d_model = 64, .heads = 4, .dropout = 0.1};
  Tensor window = Tensor::empty({8, 33}, DType::i64);
  for (std::int64_t i = 0; i < window.numel(); ++i) {
    window.data_as<std::int64_t>()[i] = (37 * i + 11) % 256;
  }
  for (const DType compute : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(std::string(to_string(compute)));
    const GptModel cpu(config, DType::f32, Device::cpu(), 3);
    const GptModel cuda(config, DType::f32, gpu(), 3);
    EXPECT_EQ(values_of(cpu.parameters()[0].value()),
              values_of(cuda.parameters()[0].value().to(Device::cpu())))
        << "the same initial weights";
    const Pass a = run(cpu, window, compute);
    const Pass b = run(cuda, window.to(gpu()), compute);
    const double tolerance = compute == DType::f32 ? 1e-4 : 2e-2;
    EXPECT_NEAR(a.loss, b.loss, tolerance * std::fabs(a.loss));
    ASSERT_EQ(a.grads.size(), b.grads.size());
    for (std::size_t p = 0; p < a.grads.size(); ++p) {
      double scale = 0;
      for (const double g : a.grads[p]) scale = std::max(scale, std::fabs(g));
      for (std::size_t k = 0; k < a.grads[p].size(); ++k) {
        ASSERT_NEAR(a.grads[p][k], b.grads[p][k], tolerance * (scale + 1e-6))
            << "parameter " << p << " element " << k;
      }
    }
  }
}

TEST_F(GptGpu, AModelMovesToTheDeviceWhole) {
  GptModel model({.vocab = 256, .context = 8, .layers = 1, .d_model = 16, .heads = 2}, DType::f32,
                 Device::cpu(), 1);
  const std::vector<double> before = values_of(model.parameters()[3].value());
  model.to(gpu());
  for (const autodiff::Variable& p : model.parameters()) EXPECT_EQ(p.value().device(), gpu());
  EXPECT_EQ(values_of(model.parameters()[3].value().to(Device::cpu())), before);
}

}  // namespace
}  // namespace tenax::train::nn
