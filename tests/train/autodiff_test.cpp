// Reverse-mode autodiff: every op's gradient against central finite differences in f64, gradient
// accumulation, NoGradScope, the loss-shape and consumed-graph checks, a 2-layer MLP with an MSE
// loss, and bitwise determinism of backward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/autodiff/variable.hpp"
#include "train/gradient_check.hpp"

namespace tenax::train::autodiff {
namespace {

using testing::check_gradients;
using testing::Forward;
using testing::random_tensor;
using testing::scalar_of;
using testing::values;
using testing::weighted_sum;

TEST(AutodiffGradients, Matmul) {
  check_gradients(
      {random_tensor({3, 4}, 1), random_tensor({4, 5}, 2)},
      [](const std::vector<Variable>& p) { return weighted_sum(matmul(p[0], p[1]), 100); });
}

TEST(AutodiffGradients, LinearWithBias) {
  check_gradients(
      {random_tensor({3, 4}, 3), random_tensor({2, 4}, 4), random_tensor({2}, 5)},
      [](const std::vector<Variable>& p) { return weighted_sum(linear(p[0], p[1], p[2]), 101); });
}

TEST(AutodiffGradients, LinearWithoutBias) {
  check_gradients(
      {random_tensor({5, 3}, 6), random_tensor({4, 3}, 7)},
      [](const std::vector<Variable>& p) { return weighted_sum(linear(p[0], p[1]), 102); });
}

TEST(AutodiffGradients, AddSubMul) {
  const std::vector<Tensor> inputs = {random_tensor({3, 2}, 8), random_tensor({3, 2}, 9)};
  check_gradients(
      inputs, [](const std::vector<Variable>& p) { return weighted_sum(add(p[0], p[1]), 103); });
  check_gradients(
      inputs, [](const std::vector<Variable>& p) { return weighted_sum(sub(p[0], p[1]), 104); });
  check_gradients(
      inputs, [](const std::vector<Variable>& p) { return weighted_sum(mul(p[0], p[1]), 105); });
  // One operand used twice: both contributions accumulate.
  check_gradients({inputs[0]}, [](const std::vector<Variable>& p) {
    return weighted_sum(mul(p[0], p[0]), 106);
  });
}

// Gradients handed to several inputs share one buffer (add gives its gradient to both operands):
// a later gradient added into one of them must not change the others. Here b's gradient first
// shares t's, then s's adds into it; c's shares s's. Added in place, c's would double too and
// x's gradient would be 3 * 2 + 5 * 2 = 16, not 3 * 2 + 5 * 1 = 11.
TEST(AutodiffGradients, AGradientSharedByInputsIsNotChangedByALaterSum) {
  const Variable x = Variable::parameter(random_tensor({4, 3}, 40));
  const Variable b = scale(x, 3.0);
  const Variable c = scale(x, 5.0);
  const Variable s = add(b, c);
  const Variable t = add(s, b);
  backward(sum(t));
  for (double g : values(x.grad())) EXPECT_EQ(g, 11.0);
  for (double g : values(c.grad())) EXPECT_EQ(g, 1.0);
  for (double g : values(b.grad())) EXPECT_EQ(g, 2.0);
  for (double g : values(t.grad())) EXPECT_EQ(g, 1.0);
  b.zero_grad();  // zeroes b's gradient alone, not the buffer it may share
  for (double g : values(b.grad())) EXPECT_EQ(g, 0.0);
  for (double g : values(c.grad())) EXPECT_EQ(g, 1.0);
  c.zero_grad();
  for (double g : values(t.grad())) EXPECT_EQ(g, 1.0);
  for (double g : values(c.grad())) EXPECT_EQ(g, 0.0);
}

TEST(AutodiffGradients, Activations) {
  const std::vector<Tensor> inputs = {random_tensor({3, 4}, 10)};
  check_gradients(inputs,
                  [](const std::vector<Variable>& p) { return weighted_sum(relu(p[0]), 107); });
  check_gradients(inputs,
                  [](const std::vector<Variable>& p) { return weighted_sum(tanh(p[0]), 108); });
  check_gradients(inputs,
                  [](const std::vector<Variable>& p) { return weighted_sum(sigmoid(p[0]), 109); });
}

TEST(AutodiffGradients, ScaleSumMean) {
  const std::vector<Tensor> inputs = {random_tensor({4, 3}, 11)};
  check_gradients(
      inputs, [](const std::vector<Variable>& p) { return weighted_sum(scale(p[0], -2.5), 110); });
  check_gradients(inputs, [](const std::vector<Variable>& p) { return sum(p[0]); });
  check_gradients(inputs, [](const std::vector<Variable>& p) { return mean(p[0]); });
  // A non-trivial chain through the scalar ops: mean(x * x) * 3.
  check_gradients(inputs,
                  [](const std::vector<Variable>& p) { return scale(mean(mul(p[0], p[0])), 3.0); });
}

TEST(AutodiffGradients, MseLossWithRespectToPredictionAndTarget) {
  check_gradients({random_tensor({5, 2}, 12), random_tensor({5, 2}, 13)},
                  [](const std::vector<Variable>& p) { return mse_loss(p[0], p[1]); });
}

TEST(AutodiffGradients, MseLossValueIsTheMeanOfSquaredDifferences) {
  const Tensor pred = random_tensor({3, 2}, 14);
  const Tensor target = random_tensor({3, 2}, 15);
  double want = 0.0;
  for (std::int64_t i = 0; i < 6; ++i) {
    const double d = pred.data_as<double>()[i] - target.data_as<double>()[i];
    want += d * d;
  }
  want /= 6.0;
  const Variable loss = mse_loss(Variable::constant(pred), Variable::constant(target));
  EXPECT_FALSE(loss.requires_grad());
  EXPECT_EQ(loss.value().shape(), Shape{});
  EXPECT_NEAR(scalar_of(loss), want, 1e-15);
}

// A 2-layer MLP: linear(3 -> 4), tanh, linear(4 -> 2), MSE against a fixed target.
Variable mlp_loss(const std::vector<Variable>& p) {
  static const Tensor x = random_tensor({5, 3}, 20);
  static const Tensor y = random_tensor({5, 2}, 21);
  const Variable hidden = tanh(linear(Variable::constant(x), p[0], p[1]));
  return mse_loss(linear(hidden, p[2], p[3]), Variable::constant(y));
}

std::vector<Tensor> mlp_parameters() {
  return {random_tensor({4, 3}, 22), random_tensor({4}, 23), random_tensor({2, 4}, 24),
          random_tensor({2}, 25)};
}

TEST(AutodiffMlp, GradientsOfAllParametersMatchFiniteDifferences) {
  check_gradients(mlp_parameters(), mlp_loss);
}

TEST(AutodiffMlp, BackwardIsBitwiseDeterministic) {
  std::vector<std::vector<double>> runs[2];
  for (auto& run : runs) {
    std::vector<Variable> params;
    for (const Tensor& t : mlp_parameters()) params.push_back(Variable::parameter(t));
    backward(mlp_loss(params));
    for (const Variable& p : params) run.push_back(values(p.grad()));
  }
  for (std::size_t i = 0; i < runs[0].size(); ++i) {
    ASSERT_EQ(runs[0][i].size(), runs[1][i].size());
    EXPECT_EQ(std::memcmp(runs[0][i].data(), runs[1][i].data(), runs[0][i].size() * sizeof(double)),
              0)
        << "parameter " << i;
  }
}

TEST(AutodiffTape, GradientsAccumulateAcrossBackwardCalls) {
  std::vector<Variable> params;
  for (const Tensor& t : mlp_parameters()) params.push_back(Variable::parameter(t));
  backward(mlp_loss(params));
  std::vector<std::vector<double>> once;
  for (const Variable& p : params) once.push_back(values(p.grad()));
  backward(mlp_loss(params));
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::vector<double> twice = values(params[i].grad());
    for (std::size_t j = 0; j < twice.size(); ++j) {
      EXPECT_EQ(twice[j], 2.0 * once[i][j]) << "parameter " << i << " element " << j;
    }
  }
  params[0].zero_grad();
  for (double g : values(params[0].grad())) EXPECT_EQ(g, 0.0);
}

TEST(AutodiffTape, IntermediatesReceiveGradients) {
  const Variable a = Variable::parameter(random_tensor({2, 3}, 30));
  const Variable t = tanh(a);
  EXPECT_FALSE(t.is_leaf());
  EXPECT_FALSE(t.grad().defined());
  backward(sum(t));
  ASSERT_TRUE(t.grad().defined());
  for (double g : values(t.grad())) EXPECT_EQ(g, 1.0);
}

TEST(AutodiffTape, NoGradScopeRecordsNothing) {
  const Variable a = Variable::parameter(random_tensor({2, 3}, 31));
  const Variable b = Variable::parameter(random_tensor({3, 2}, 32));
  Tape::clear();
  {
    NoGradScope no_grad;
    EXPECT_FALSE(Tape::recording());
    const Variable loss = sum(tanh(matmul(a, b)));
    EXPECT_EQ(Tape::size(), 0u);
    EXPECT_FALSE(loss.requires_grad());
    EXPECT_TRUE(std::isfinite(scalar_of(loss)));
  }
  EXPECT_TRUE(Tape::recording());
  const Variable loss = sum(tanh(matmul(a, b)));
  EXPECT_EQ(Tape::size(), 3u);
  EXPECT_TRUE(loss.requires_grad());
  Tape::clear();
  EXPECT_EQ(Tape::size(), 0u);
}

TEST(AutodiffTape, ConstantsOnlyRecordNothing) {
  Tape::clear();
  const Variable c = Variable::constant(random_tensor({2, 2}, 33));
  const Variable out = sum(mul(c, c));
  EXPECT_EQ(Tape::size(), 0u);
  EXPECT_FALSE(out.requires_grad());
  EXPECT_FALSE(c.grad().defined());
}

TEST(AutodiffErrors, BackwardOnANonScalarNamesTheShape) {
  const Variable a = Variable::parameter(random_tensor({2, 3}, 34));
  const Variable out = tanh(a);
  try {
    backward(out);
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.cause()).find("[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(e.fix().find("sum"), std::string::npos) << e.fix();
  }
  Tape::clear();
}

TEST(AutodiffErrors, BackwardTwiceOnOneGraphIsRejected) {
  const Variable a = Variable::parameter(random_tensor({2, 3}, 35));
  const Variable loss = sum(tanh(a));
  backward(loss);
  EXPECT_THROW(backward(loss), UsageError);
}

TEST(AutodiffErrors, ShapeMismatchesNameBothShapes) {
  const Variable a = Variable::parameter(random_tensor({2, 3}, 36));
  const Variable b = Variable::parameter(random_tensor({3, 2}, 37));
  try {
    (void)add(a, b);
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(e.cause().find("[3, 2]"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)matmul(a, a), UsageError);
  EXPECT_THROW((void)linear(a, b), UsageError);
  EXPECT_EQ(Tape::size(), 0u) << "failed ops record nothing";
}

// backward() on a thread that did not build the graph is refused before it seeds anything (a
// fresh thread's tape once matched the graph's generation: it walked nothing, seeded the loss's
// gradient with 1, and the real backward then doubled every gradient).
TEST(Autodiff, BackwardOnAnotherThreadIsRefusedAndChangesNothing) {
  Tensor start = Tensor::empty({2}, DType::f64);
  start.data_as<double>()[0] = 1.0;
  start.data_as<double>()[1] = 2.0;
  const Variable x = Variable::parameter(start);
  const Variable loss = sum(mul(x, x));
  std::string error;
  std::thread([&] {
    try {
      backward(loss);
    } catch (const UsageError& e) {
      error = e.what();
    }
  }).join();
  EXPECT_NE(error.find("built on another thread"), std::string::npos) << error;
  backward(loss);
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2.0, 4.0}));
}

// A Linear over 0 input features is the bias on every row (PyTorch's result), with gradients.
TEST(Autodiff, LinearOverNoInputFeaturesIsTheBias) {
  const Variable x = Variable::parameter(Tensor::empty({2, 0}, DType::f64));
  const Variable w = Variable::parameter(Tensor::empty({3, 0}, DType::f64));
  Tensor bias = Tensor::empty({3}, DType::f64);
  for (int j = 0; j < 3; ++j) bias.data_as<double>()[j] = static_cast<double>(j + 1);
  const Variable b = Variable::parameter(bias);
  const Variable y = linear(x, w, b);
  EXPECT_EQ(values(y.value()), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  backward(sum(y));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{2, 2, 2}));
}

}  // namespace
}  // namespace tenax::train::autodiff
