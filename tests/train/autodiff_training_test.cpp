// The autodiff pieces training needs: gelu/exp/log/div/cast and broadcasting gradients against
// central differences, the losses (cross-entropy and MSE with a divisor), the backward seed,
// mixed-precision linear (f16/bf16 activations with f32 master weights), fixed-grain reductions
// that make the gradient independent of the micro-batch, and anomaly mode's reports.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/anomaly.hpp"
#include "tenax/train/autodiff/grain.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/autodiff/variable.hpp"
#include "train/gradient_check.hpp"

namespace tenax::train::autodiff {
namespace {

using testing::check_gradients;
using testing::random_tensor;
using testing::scalar_of;
using testing::weighted_sum;

Tensor labels_of(const std::vector<std::int64_t>& values) {
  Tensor t = Tensor::empty(Shape{static_cast<std::int64_t>(values.size())}, DType::i64);
  std::memcpy(t.data(), values.data(), values.size() * sizeof(std::int64_t));
  return t;
}

TEST(AutodiffTrainingGradients, GeluExpLogDiv) {
  const std::vector<Tensor> x = {random_tensor({3, 4}, 1, -3.0, 3.0)};
  check_gradients(x, [](const auto& p) { return weighted_sum(gelu(p[0]), 10); });
  check_gradients(x, [](const auto& p) { return weighted_sum(exp(p[0]), 11); });
  check_gradients({random_tensor({3, 4}, 2, 0.5, 2.0)},
                  [](const auto& p) { return weighted_sum(log(p[0]), 12); });
  check_gradients({random_tensor({3, 4}, 3), random_tensor({3, 4}, 4, 0.5, 2.0)},
                  [](const auto& p) { return weighted_sum(div(p[0], p[1]), 13); });
}

TEST(AutodiffTrainingGradients, BroadcastingSumsTheGradientBackToEachShape) {
  const Tensor a = random_tensor({4, 3}, 5);
  for (const Shape& b_shape : {Shape{3}, Shape{1, 3}, Shape{4, 1}, Shape{1}}) {
    const std::vector<Tensor> in = {a, random_tensor(b_shape, 6, 0.5, 2.0)};
    check_gradients(in, [](const auto& p) { return weighted_sum(add(p[0], p[1]), 14); });
    check_gradients(in, [](const auto& p) { return weighted_sum(sub(p[1], p[0]), 15); });
    check_gradients(in, [](const auto& p) { return weighted_sum(mul(p[0], p[1]), 16); });
    check_gradients(in, [](const auto& p) { return weighted_sum(div(p[0], p[1]), 17); });
  }
  // Rank 3 against rank 1.
  check_gradients({random_tensor({2, 3, 4}, 7), random_tensor({4}, 8)},
                  [](const auto& p) { return weighted_sum(mul(p[0], p[1]), 18); });
}

TEST(AutodiffTrainingGradients, CastPassesTheGradientBackInTheInputsDtype) {
  const Variable x = Variable::parameter(random_tensor({5}, 9));
  const Variable y = cast(x, DType::f32);
  EXPECT_EQ(y.value().dtype(), DType::f32);
  backward(sum(scale(y, 3.0)));
  ASSERT_EQ(x.grad().dtype(), DType::f64);
  for (std::int64_t i = 0; i < 5; ++i) EXPECT_EQ(x.grad().data_as<double>()[i], 3.0);
}

TEST(AutodiffTrainingLosses, CrossEntropyMatchesTheDefinitionAndFiniteDifferences) {
  const Tensor logits = random_tensor({5, 4}, 20, -3.0, 3.0);
  const Tensor labels = labels_of({0, 3, 1, 1, 2});
  double want = 0.0;
  for (std::int64_t i = 0; i < 5; ++i) {
    const double* row = logits.data_as<double>() + 4 * i;
    double z = 0.0;
    for (int j = 0; j < 4; ++j) z += std::exp(row[j]);
    want += std::log(z) - row[labels.data_as<std::int64_t>()[i]];
  }
  const Variable loss = cross_entropy(Variable::constant(logits), labels);
  EXPECT_NEAR(scalar_of(loss), want / 5.0, 1e-14);
  check_gradients({logits}, [&](const auto& p) { return cross_entropy(p[0], labels); });
  // A divisor other than the batch: the sum over the rows divided by it.
  const Variable share = cross_entropy(Variable::constant(logits), labels, {.divisor = 20.0});
  EXPECT_NEAR(scalar_of(share), want / 20.0, 1e-14);
  check_gradients({logits},
                  [&](const auto& p) { return cross_entropy(p[0], labels, {.divisor = 20.0}); });
}

TEST(AutodiffTrainingLosses, CrossEntropyIsComputedInF32ForHalfLogits) {
  const Tensor logits = ops::cast(random_tensor({3, 5}, 21, -4.0, 4.0), DType::f16);
  const Variable x = Variable::parameter(logits);
  const Variable loss = cross_entropy(x, labels_of({4, 0, 2}));
  EXPECT_EQ(loss.value().dtype(), DType::f32);
  backward(loss);
  EXPECT_EQ(x.grad().dtype(), DType::f16);
  // Each row of the gradient of a mean cross-entropy sums to ~0 (softmax minus one-hot).
  const Tensor g = ops::cast(x.grad(), DType::f64);
  for (int i = 0; i < 3; ++i) {
    double row = 0.0;
    for (int j = 0; j < 5; ++j) row += g.data_as<double>()[5 * i + j];
    EXPECT_NEAR(row, 0.0, 2e-3);
  }
}

TEST(AutodiffTrainingLosses, MseWithDivisorAndMixedDtypes) {
  const Tensor pred = random_tensor({4, 2}, 22);
  const Tensor target = random_tensor({4, 2}, 23);
  check_gradients({pred, target},
                  [](const auto& p) { return mse_loss(p[0], p[1], {.divisor = 32.0}); });
  // f16 prediction against an f32 target: loss in f32, gradient back in f16.
  const Variable half = Variable::parameter(ops::cast(pred, DType::f16));
  const Variable loss = mse_loss(half, Variable::constant(ops::cast(target, DType::f32)));
  EXPECT_EQ(loss.value().dtype(), DType::f32);
  backward(loss);
  EXPECT_EQ(half.grad().dtype(), DType::f16);
}

TEST(AutodiffTrainingBackward, SeedScalesEveryGradientExactly) {
  const Tensor x = random_tensor({6, 3}, 30);
  const Tensor w = random_tensor({2, 3}, 31);
  const Tensor y = random_tensor({6, 2}, 32);
  auto grads = [&](double seed) {
    const Variable weight = Variable::parameter(w.clone());
    backward(mse_loss(linear(Variable::constant(x), weight), Variable::constant(y)), seed);
    return weight.grad().clone();
  };
  const Tensor one = grads(1.0);
  const Tensor scaled = grads(1024.0);  // a power of two: exact
  for (std::int64_t i = 0; i < one.numel(); ++i) {
    EXPECT_EQ(scaled.data_as<double>()[i], 1024.0 * one.data_as<double>()[i]);
  }
  EXPECT_THROW(backward(sum(Variable::parameter(x.clone())), std::nan("")), UsageError);
}

TEST(AutodiffTrainingMixedPrecision, LinearTakesHalfInputsWithF32MasterWeights) {
  for (DType half : {DType::f16, DType::bf16}) {
    const Tensor x32 = ops::cast(ops::cast(random_tensor({8, 5}, 40), half), DType::f32);
    const Variable weight = Variable::parameter(ops::cast(random_tensor({3, 5}, 41), DType::f32));
    const Variable bias = Variable::parameter(ops::cast(random_tensor({3}, 42), DType::f32));
    const Variable out = linear(Variable::constant(ops::cast(x32, half)), weight, bias);
    EXPECT_EQ(out.value().dtype(), half);
    backward(sum(cast(out, DType::f32)));
    ASSERT_EQ(weight.grad().dtype(), DType::f32);
    ASSERT_EQ(bias.grad().dtype(), DType::f32);
    // d sum / dW[o][i] = sum over rows of x[r][i]; d sum / db = rows. The half inputs are exact
    // in f32 and the sums are accumulated in f32: no 16-bit rounding of the gradient.
    for (std::int64_t o = 0; o < 3; ++o) {
      EXPECT_EQ(bias.grad().data_as<float>()[o], 8.0f);
      for (std::int64_t i = 0; i < 5; ++i) {
        float want = 0.0f;
        for (std::int64_t r = 0; r < 8; ++r) want += x32.data_as<float>()[5 * r + i];
        EXPECT_NEAR(weight.grad().data_as<float>()[5 * o + i], want, 1e-5f);
      }
    }
  }
  const Variable w64 = Variable::parameter(random_tensor({3, 5}, 43));
  EXPECT_THROW(
      (void)linear(Variable::constant(ops::cast(random_tensor({2, 5}, 44), DType::f16)), w64),
      UsageError)
      << "f64 weights with f16 inputs are not a supported mix";
}

// A 2-layer MLP over a batch of 48 rows, run as micro-batches of `micro` rows inside a grain
// scope of 8 rows; returns the parameter gradients and the scope's loss sum.
struct Accumulated {
  std::vector<Tensor> grads;
  double loss_sum = 0;
};

Accumulated accumulate(std::int64_t micro, DType compute) {
  const Tensor x = random_tensor({48, 6}, 50);
  const Tensor labels = [] {
    std::vector<std::int64_t> v(48);
    for (int i = 0; i < 48; ++i) v[i] = (i * 7) % 3;
    return labels_of(v);
  }();
  std::vector<Variable> p = {Variable::parameter(ops::cast(random_tensor({16, 6}, 51), DType::f32)),
                             Variable::parameter(ops::cast(random_tensor({16}, 52), DType::f32)),
                             Variable::parameter(ops::cast(random_tensor({3, 16}, 53), DType::f32)),
                             Variable::parameter(ops::cast(random_tensor({3}, 54), DType::f32))};
  const Tensor xc = ops::cast(x, compute);
  Accumulated result;
  GrainScope grains(8);
  for (std::int64_t begin = 0; begin < 48; begin += micro) {
    GrainScope::set_row_offset(begin);
    const Variable in = Variable::constant(xc.slice(begin, begin + micro));
    const Variable hidden = gelu(linear(in, p[0], p[1]));
    const Variable logits = linear(hidden, p[2], p[3]);
    backward(cross_entropy(logits, labels.slice(begin, begin + micro), {.divisor = 48.0}), 256.0);
  }
  result.loss_sum = GrainScope::loss_sum();
  GrainScope::finish_gradients();
  for (const Variable& v : p) result.grads.push_back(v.grad().clone());
  return result;
}

TEST(AutodiffGrains, GradientsDoNotDependOnTheMicroBatch) {
  for (DType compute : {DType::f32, DType::f16, DType::bf16}) {
    const Accumulated whole = accumulate(48, compute);
    for (std::int64_t micro : {24, 16, 8}) {
      const Accumulated split = accumulate(micro, compute);
      EXPECT_EQ(std::memcmp(&whole.loss_sum, &split.loss_sum, sizeof(double)), 0)
          << "micro-batch " << micro << ", " << to_string(compute);
      for (std::size_t i = 0; i < whole.grads.size(); ++i) {
        ASSERT_EQ(whole.grads[i].nbytes(), split.grads[i].nbytes());
        EXPECT_EQ(
            std::memcmp(whole.grads[i].data(), split.grads[i].data(), whole.grads[i].nbytes()), 0)
            << "parameter " << i << ", micro-batch " << micro << ", " << to_string(compute);
      }
    }
  }
}

TEST(AutodiffGrains, ScopesRejectBadGrainsAndDoNotNest) {
  EXPECT_THROW(GrainScope(0), UsageError);
  GrainScope outer(4);
  EXPECT_EQ(GrainScope::rows(), 4);
  EXPECT_THROW(GrainScope(2), UsageError);
}

// ---- anomaly mode ----

AnomalyReport expect_anomaly(const std::function<void()>& body) {
  try {
    body();
  } catch (const AnomalyDetected& e) {
    EXPECT_EQ(e.fault_class(), FaultClass::anomaly);
    Tape::clear();
    return e.report();
  }
  ADD_FAILURE() << "no AnomalyDetected";
  Tape::clear();
  return {};
}

TEST(AutodiffAnomaly, PlantedLogOfZeroIsReportedWithEveryField) {
  // x has one zero at flat index 5 of [2, 4]; log makes -inf there from finite inputs.
  Tensor x = random_tensor({2, 4}, 60, 0.5, 1.5);
  x.data_as<double>()[5] = 0.0;
  const Variable w = Variable::parameter(random_tensor({3, 4}, 61));
  DetectAnomalyScope anomaly;
  set_anomaly_context({.step = 7, .micro_batch = 2, .rank = 0});
  const AnomalyReport r = expect_anomaly([&] {
    TagScope layer("features");
    const Variable h = log(Variable::constant(x));
    (void)linear(h, w);
  });
  EXPECT_EQ(r.op, "log");
  EXPECT_EQ(r.tag, "features");
  EXPECT_EQ(r.pass, Pass::forward);
  EXPECT_EQ(r.context.step, 7);
  EXPECT_EQ(r.context.micro_batch, 2);
  EXPECT_EQ(r.context.rank, 0);
  EXPECT_EQ(r.output_index, 0);
  EXPECT_EQ(r.shape, (Shape{2, 4}));
  EXPECT_EQ(r.first_index, 5);
  EXPECT_EQ(r.first_value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.nan_count, 0);
  EXPECT_EQ(r.inf_count, 1);
  EXPECT_TRUE(r.created);
  const std::string text = r.describe();
  for (const char* part : {"forward", "op log", "tag features", "step 7", "micro-batch 2", "rank 0",
                           "index 5", "-inf", "created"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " missing from: " << text;
  }
}

TEST(AutodiffAnomaly, ANonFiniteInputIsReportedAsPassedOn) {
  Tensor x = random_tensor({3, 4}, 62);
  x.data_as<double>()[2] = std::nan("");
  const Variable w = Variable::parameter(random_tensor({2, 4}, 63));
  DetectAnomalyScope anomaly;
  const AnomalyReport r = expect_anomaly([&] {
    TagScope model("model");
    TagScope layer("fc0");
    (void)linear(Variable::constant(x), w);
  });
  EXPECT_EQ(r.op, "linear");
  EXPECT_EQ(r.tag, "model/fc0");
  EXPECT_FALSE(r.created);
  EXPECT_EQ(r.nan_count, 2) << "row 0 of the output: one NaN per output feature";
  EXPECT_EQ(r.first_index, 0);
}

TEST(AutodiffAnomaly, BackwardReportsTheOpAndTheInputWhoseGradientWentBad) {
  // log of a tiny f32 value is finite, but its derivative 1/x overflows f32 in backward.
  Tensor x = Tensor::empty(Shape{3}, DType::f32);
  x.data_as<float>()[0] = 1.0f;
  x.data_as<float>()[1] = 1e-40f;  // subnormal: 1 / x = 1e40 > FLT_MAX
  x.data_as<float>()[2] = 2.0f;
  const Variable v = Variable::parameter(x);
  DetectAnomalyScope anomaly;
  set_anomaly_context({.step = 3, .micro_batch = 0, .rank = 0});
  const AnomalyReport r = expect_anomaly([&] {
    Variable y;
    {
      TagScope tag("head");
      y = log(v);
    }
    backward(sum(y));
  });
  EXPECT_EQ(r.op, "log");
  EXPECT_EQ(r.tag, "head") << "the tag recorded with the node, not the one active at backward";
  EXPECT_EQ(r.pass, Pass::backward);
  EXPECT_EQ(r.output_index, 0);
  EXPECT_EQ(r.first_index, 1);
  EXPECT_EQ(r.inf_count, 1);
  EXPECT_TRUE(r.created);
}

TEST(AutodiffAnomaly, OffByDefaultAndScopedToTheThread) {
  EXPECT_FALSE(anomaly_mode());
  Tensor x = random_tensor({2}, 64);
  x.data_as<double>()[0] = 0.0;
  EXPECT_NO_THROW((void)log(Variable::constant(x)));
  {
    DetectAnomalyScope on;
    EXPECT_TRUE(anomaly_mode());
  }
  EXPECT_FALSE(anomaly_mode());
}

}  // namespace
}  // namespace tenax::train::autodiff
