// The transformer layers' forward and backward on the CPU, the tenax side of
// bench/peers/train_gpt.py's layer rows: causal self-attention (batch 32, T 128, d 256, 4 heads,
// the qkv and proj Linears included) and LayerNorm over [32, 128, 256], f32, one forward and one
// backward of sum(layer(x) * g) for a fixed g per iteration, the graph bench/peers/train_gpt.py
// times in PyTorch. And the bf16 matrix product of the MLP's first Linear at that size
// ([4096, 256] x [256, 1024] to bf16, the weight stored [1024, 256] as a Linear's), against
// torch.matmul in bf16.
#include <benchmark/benchmark.h>

#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_linalg.hpp"
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

void BM_MatmulBf16(benchmark::State& state) {
  const auto bf16 = [](tenax::Shape shape, std::uint64_t seed) {
    Tensor t = Tensor::empty(shape, DType::f32);
    tenax::ops::random_normal(t, seed, 0);
    return tenax::ops::cast(t, DType::bf16);
  };
  const Tensor x = bf16({kBatch * kT, kD}, 3);
  const Tensor w = bf16({4 * kD, kD}, 4);
  const Tensor y = Tensor::empty({kBatch * kT, 4 * kD}, DType::bf16);
  for (auto _ : state) {
    tenax::ops::gemm(x, w, y, 1.0, 0.0, tenax::ops::Transpose::no, tenax::ops::Transpose::yes);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kBatch * kT * kD * 4 * kD * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MatmulBf16)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
