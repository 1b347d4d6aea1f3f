// Training on the CPU: the time of one optimizer step (Trainer::step: forward, backward, fused
// unscale pass, Adam) of an MLP in f32, f16 and bf16, the same with anomaly mode on, and the cost
// of the fused unscale + finite check + norm pass against a plain copy of the gradients.
//
// Models: "small" is train_mlp's default (2 -> 64 -> 64 -> 2, tanh, batch 256, spirals-like
// data); "wide" is 64 -> 512 -> 512 -> 10 with batch 512, where the GEMMs dominate. The data are
// Philox draws; the step is timed after a warm-up step (the pool's blocks and the optimizer state
// exist), and every iteration is a full optimizer step.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/loss_scaler.hpp"
#include "tenax/train/nn/linear.hpp"
#include "tenax/train/nn/lr_schedule.hpp"
#include "tenax/train/nn/optimizer.hpp"
#include "tenax/train/trainer.hpp"

namespace {

using tenax::DType;
using tenax::Shape;
using tenax::Tensor;
namespace autodiff = tenax::train::autodiff;
namespace nn = tenax::train::nn;
namespace train = tenax::train;

struct Model {
  std::vector<std::int64_t> widths;
  std::int64_t batch;
};

const Model kSmall{{2, 64, 64, 2}, 256};
const Model kWide{{64, 512, 512, 10}, 512};

struct Training {
  Training(const Model& model, DType compute, bool detect_anomaly)
      : mlp(model.widths, nn::Activation::tanh, DType::f32, tenax::Device::cpu(), 1),
        params(mlp.parameters()),
        optimizer(params, nn::AdamOptions{.lr = 1e-3}),
        scaler(train::LossScalerOptions{.enabled = compute == DType::f16}),
        schedule(nn::LrSchedule::constant(1e-3)),
        trainer(params, optimizer, scaler, schedule,
                train::TrainerOptions{
                    .batch = model.batch, .grain = model.batch, .detect_anomaly = detect_anomaly}) {
    Tensor x32 = Tensor::empty(Shape{model.batch, model.widths.front()}, DType::f32);
    tenax::ops::random_uniform(x32, 3, 0, -1.0, 1.0);
    x = compute == DType::f32 ? x32 : tenax::ops::cast(x32, compute);
    labels = Tensor::empty(Shape{model.batch}, DType::i64);
    for (std::int64_t i = 0; i < model.batch; ++i) {
      labels.data_as<std::int64_t>()[i] = i % model.widths.back();
    }
  }

  train::TrainStepResult step(std::int64_t k) {
    return trainer.step(k, x.shape()[0], [this](std::int64_t begin, std::int64_t end) {
      const autodiff::Variable out = mlp.forward(autodiff::Variable::constant(x.slice(begin, end)));
      return autodiff::cross_entropy(out, labels.slice(begin, end),
                                     {.divisor = static_cast<double>(x.shape()[0])});
    });
  }

  nn::MLP mlp;
  std::vector<autodiff::Variable> params;
  nn::Adam optimizer;
  train::DynamicLossScaler scaler;
  nn::LrSchedule schedule;
  train::Trainer trainer;
  Tensor x;
  Tensor labels;
};

DType dtype_of(std::int64_t code) {
  return code == 0 ? DType::f32 : (code == 1 ? DType::f16 : DType::bf16);
}

// range(0): model (0 small, 1 wide); range(1): 0 f32, 1 f16, 2 bf16; range(2): anomaly mode.
void BM_TrainStep(benchmark::State& state) {
  const Model& model = state.range(0) == 0 ? kSmall : kWide;
  const DType compute = dtype_of(state.range(1));
  Training training(model, compute, state.range(2) != 0);
  std::int64_t k = 0;
  (void)training.step(k++);  // warm-up: pool blocks, first Adam step
  for (auto _ : state) benchmark::DoNotOptimize(training.step(k++).loss);
  std::int64_t parameters = 0;
  for (const auto& p : training.params) parameters += p.value().numel();
  state.SetLabel(std::string(state.range(0) == 0 ? "small " : "wide ") +
                 std::string(tenax::to_string(compute)) + (state.range(2) != 0 ? " anomaly" : "") +
                 ", " + std::to_string(parameters) + " params");
  state.SetItemsProcessed(state.iterations() * model.batch);
}
BENCHMARK(BM_TrainStep)
    ->ArgsProduct({{0, 1}, {0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The fused pass over f32 gradients of range(0) elements against the plain copy of the same
// gradients into another buffer: both read and write every element once. The scale alternates
// between 2^16 and 2^-16 so that the values stay in range (exact powers of two) and every pass
// writes.
void BM_UnscaleAndMeasure(benchmark::State& state) {
  Tensor g = Tensor::empty(Shape{state.range(0)}, DType::f32);
  tenax::ops::random_uniform(g, 5, 0, -1.0, 1.0);
  bool down = true;
  for (auto _ : state) {
    const tenax::ops::UnscaleReport r =
        tenax::ops::unscale_and_measure(g, down ? 65536.0 : 1.0 / 65536.0);
    benchmark::DoNotOptimize(r.sum_of_squares);
    down = !down;
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4 * 2);
}
BENCHMARK(BM_UnscaleAndMeasure)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();

// The fused pass alone, without the extra scale call of the benchmark above: scale 1 only reads.
void BM_MeasureOnly(benchmark::State& state) {
  Tensor g = Tensor::empty(Shape{state.range(0)}, DType::f32);
  tenax::ops::random_uniform(g, 5, 0, -1.0, 1.0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(tenax::ops::unscale_and_measure(g, 1.0).sum_of_squares);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4);
}
BENCHMARK(BM_MeasureOnly)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();

// The cheapest pass that unscales alone: an in-place multiply (same traffic as the fused pass,
// without the finite check and the norm).
void BM_GradientScaleInPlace(benchmark::State& state) {
  Tensor g = Tensor::empty(Shape{state.range(0)}, DType::f32);
  tenax::ops::random_uniform(g, 5, 0, -1.0, 1.0);
  bool down = true;
  for (auto _ : state) {
    tenax::ops::scale(down ? 1.0 / 65536.0 : 65536.0, g);
    benchmark::ClobberMemory();
    down = !down;
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4 * 2);
}
BENCHMARK(BM_GradientScaleInPlace)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();

void BM_GradientCopy(benchmark::State& state) {
  Tensor g = Tensor::empty(Shape{state.range(0)}, DType::f32);
  Tensor out = Tensor::empty(Shape{state.range(0)}, DType::f32);
  tenax::ops::random_uniform(g, 5, 0, -1.0, 1.0);
  for (auto _ : state) {
    tenax::ops::copy(out, g);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4 * 2);
}
BENCHMARK(BM_GradientCopy)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
