// The transformer layers' forward and backward on the CPU, the tenax side of
// bench/peers/train_gpt.py's layer rows: causal self-attention (batch 32, T 128, d 256, 4 heads,
// the qkv and proj Linears included) and LayerNorm over [32, 128, 256], f32, one forward and one
// backward of sum(layer(x) * g) for a fixed g per iteration, the graph bench/peers/train_gpt.py
// times in PyTorch.
#include <benchmark/benchmark.h>

#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/layer_ops.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/nn/attention.hpp"
#include "tenax/train/nn/layer_norm.hpp"

namespace {

namespace ad = tenax::train::autodiff;
namespace nn = tenax::train::nn;
using tenax::DType;
using tenax::Tensor;

constexpr std::int64_t kBatch = 32;
constexpr std::int64_t kT = 128;
constexpr std::int64_t kD = 256;

Tensor random(std::uint64_t seed) {
  Tensor t = Tensor::empty({kBatch, kT, kD}, DType::f32);
  tenax::ops::random_normal(t, seed, 0);
  return t;
}

// One forward and backward of `layer` from the output gradient g: sum(layer(x) * g).
template <class Layer>
void forward_backward(benchmark::State& state, const Layer& layer) {
  const ad::Variable x = ad::Variable::parameter(random(1));
  const ad::Variable g = ad::Variable::constant(random(2));
  for (auto _ : state) {
    ad::backward(ad::sum(ad::mul(layer.forward(x), g)));
    benchmark::DoNotOptimize(x.grad().data());
  }
}

void BM_AttentionForwardBackward(benchmark::State& state) {
  const nn::CausalSelfAttention attention(kD, 4, DType::f32, tenax::Device::cpu(), 1);
  forward_backward(state, attention);
}
BENCHMARK(BM_AttentionForwardBackward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LayerNormForwardBackward(benchmark::State& state) {
  const nn::LayerNorm norm(kD, DType::f32, tenax::Device::cpu());
  forward_backward(state, norm);
}
BENCHMARK(BM_LayerNormForwardBackward)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
