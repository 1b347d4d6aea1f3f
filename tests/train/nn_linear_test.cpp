// nn::Linear and nn::MLP: PyTorch's layout and initialisation bounds, forward values and shapes,
// gradient flow through every activation, parameter order, and the state-dict round trip with
// its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/nn/init.hpp"
#include "tenax/train/nn/linear.hpp"

namespace tenax::train::nn {
namespace {

using autodiff::Variable;
using testing::expect_contains;
using testing::make_tensor;
using testing::philox_uniform;
using testing::usage_error;
using testing::values_of;

TEST(NnLinear, LayoutAndInitialisationFollowNnLinear) {
  for (const DType dtype : {DType::f32, DType::f64}) {
    const Linear layer(64, 10, dtype, Device::cpu(), 5, 7);
    EXPECT_EQ(layer.in_features(), 64);
    EXPECT_EQ(layer.out_features(), 10);
    EXPECT_EQ(layer.weight().value().shape(), (Shape{10, 64}));
    EXPECT_EQ(layer.bias().value().shape(), (Shape{10}));
    EXPECT_EQ(layer.weight().value().dtype(), dtype);
    EXPECT_TRUE(layer.weight().requires_grad());
    EXPECT_TRUE(layer.bias().requires_grad());
    EXPECT_EQ(layer.end_offset(), 7u + 640 / 4 + 3) << "weight blocks, then ceil(10 / 4)";
    const double bound = 1.0 / 8.0 * (1 + 1e-6);
    for (const double w : values_of(layer.weight().value())) EXPECT_LE(std::fabs(w), bound);
    for (const double b : values_of(layer.bias().value())) EXPECT_LE(std::fabs(b), bound);
    // The weight is kaiming_uniform(a = sqrt(5)) at (seed, offset), the bias U(+-1/sqrt(in))
    // right after it.
    const Tensor w = Tensor::empty({10, 64}, dtype);
    const Tensor b = Tensor::empty({10}, dtype);
    (void)uniform(b, 5, kaiming_uniform(w, 5, 7), -1.0 / 8.0, 1.0 / 8.0);
    EXPECT_EQ(values_of(w), values_of(layer.weight().value()));
    EXPECT_EQ(values_of(b), values_of(layer.bias().value()));
  }
}

TEST(NnLinear, ForwardIsXWTransposedPlusB) {
  const Linear layer(3, 2, DType::f64, Device::cpu(), 1);
  const Tensor& w = layer.weight().value();
  const Tensor& b = layer.bias().value();
  ops::copy(w, make_tensor({2, 3}, DType::f64, {1, 2, 3, 4, 5, 6}));
  ops::copy(b, make_tensor({0.5, -1.0}, DType::f64));
  const Variable x = Variable::constant(make_tensor({2, 3}, DType::f64, {1, 0, -1, 2, 1, 0}));
  const Variable y = layer.forward(x);
  EXPECT_EQ(y.value().shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of(y.value()), (std::vector<double>{-1.5, -3.0, 4.5, 12.0}));
}

TEST(NnLinear, TakesAHalfPrecisionInputAgainstF32Weights) {
  const Linear layer(16, 4, DType::f32, Device::cpu(), 3);
  const Variable x =
      Variable::constant(ops::cast(philox_uniform({5, 16}, DType::f32, 2), DType::f16));
  const Variable y = layer.forward(x);
  EXPECT_EQ(y.value().shape(), (Shape{5, 4}));
  autodiff::backward(autodiff::sum(autodiff::cast(y, DType::f32)));
  EXPECT_EQ(layer.weight().grad().dtype(), DType::f32);
  EXPECT_GT(ops::nrm2(layer.weight().grad()), 0.0);
}

TEST(NnLinear, MisuseIsAUsageError) {
  expect_contains(usage_error([] { Linear(0, 3, DType::f32, Device::cpu(), 1); }),
                  {"in_features = 0", ">= 1"});
  expect_contains(usage_error([] { Linear(2, 3, DType::f16, Device::cpu(), 1); }),
                  {"f16", "f32 or f64"});
}

TEST(NnMlp, ActivationsByName) {
  for (const char* name : {"relu", "gelu", "tanh", "sigmoid"}) {
    EXPECT_EQ(to_string(parse_activation(name)), name);
  }
  expect_contains(usage_error([] { (void)parse_activation("swish"); }),
                  {"swish", "relu, gelu, tanh, sigmoid"});
}

TEST(NnMlp, ParametersInPyTorchOrder) {
  const MLP mlp({4, 8, 8, 3}, Activation::relu, DType::f32, Device::cpu(), 9);
  ASSERT_EQ(mlp.layers().size(), 3u);
  const std::vector<Variable> params = mlp.parameters();
  ASSERT_EQ(params.size(), 6u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(params[2 * i] == mlp.layers()[i].weight());
    EXPECT_TRUE(params[2 * i + 1] == mlp.layers()[i].bias());
  }
  EXPECT_EQ(params[2].value().shape(), (Shape{8, 8}));
  EXPECT_EQ(params[5].value().shape(), (Shape{3}));
  // The layers draw from consecutive Philox ranges.
  EXPECT_EQ(mlp.layers()[1].end_offset(),
            mlp.layers()[0].end_offset() + philox_blocks(64) + philox_blocks(8));
  EXPECT_EQ(mlp.end_offset(), mlp.layers()[2].end_offset());
  // Counted without building one, as a job checks that a model fits before allocating it.
  EXPECT_EQ(MLP::parameters_of({4, 8, 8, 3}), static_cast<long double>(mlp.parameter_count()));
  EXPECT_EQ(MLP::parameters_of({4}), 0.0L);
  EXPECT_GT(MLP::parameters_of({4000000000, 4000000000}), 1.6e19L) << "past 64 bits, still counted";
  const MLP same({4, 8, 8, 3}, Activation::relu, DType::f32, Device::cpu(), 9);
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(values_of(params[i].value()), values_of(same.parameters()[i].value()));
  }
}

TEST(NnMlp, ForwardAndBackwardThroughEveryActivation) {
  for (const Activation act :
       {Activation::relu, Activation::gelu, Activation::tanh, Activation::sigmoid}) {
    SCOPED_TRACE(std::string(to_string(act)));
    const MLP mlp({6, 16, 16, 2}, act, DType::f64, Device::cpu(), 4);
    const Variable x = Variable::constant(philox_uniform({8, 6}, DType::f64, 1));
    const Variable y = Variable::constant(philox_uniform({8, 2}, DType::f64, 2));
    const Variable out = mlp.forward(x);
    EXPECT_EQ(out.value().shape(), (Shape{8, 2}));
    autodiff::backward(autodiff::mse_loss(out, y));
    for (const Variable& p : mlp.parameters()) {
      EXPECT_EQ(p.grad().shape(), p.value().shape());
      EXPECT_GT(ops::nrm2(p.grad()), 0.0) << "every parameter receives gradient";
    }
  }
}

// The MLP is fc0, act, fc1 with no activation after the last layer: checked against the same
// composition written out with autodiff ops, and one gradient against central differences.
TEST(NnMlp, ComposesLayersAndActivations) {
  const MLP mlp({3, 5, 2}, Activation::tanh, DType::f64, Device::cpu(), 8);
  const Variable x = Variable::constant(philox_uniform({4, 3}, DType::f64, 3));
  const Variable by_hand = autodiff::linear(
      autodiff::tanh(autodiff::linear(x, mlp.layers()[0].weight(), mlp.layers()[0].bias())),
      mlp.layers()[1].weight(), mlp.layers()[1].bias());
  EXPECT_EQ(values_of(mlp.forward(x).value()), values_of(by_hand.value()));
  autodiff::Tape::clear();

  autodiff::backward(autodiff::sum(mlp.forward(x)));
  double* w = mlp.layers()[0].weight().value().data_as<double>();
  const double analytic = values_of(mlp.layers()[0].weight().grad())[4];
  const autodiff::NoGradScope no_grad;
  const double h = 1e-6;
  const double saved = w[4];
  w[4] = saved + h;
  const double up = ops::sum(mlp.forward(x).value());
  w[4] = saved - h;
  const double down = ops::sum(mlp.forward(x).value());
  w[4] = saved;
  EXPECT_NEAR(analytic, (up - down) / (2 * h), 1e-7);
}

TEST(NnMlp, StateDictNamesTheLiveParameters) {
  const MLP mlp({2, 3, 1}, Activation::sigmoid, DType::f32, Device::cpu(), 1);
  const StateDict state = mlp.state_dict();
  ASSERT_EQ(state.size(), 4u);
  const char* names[] = {"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(state.entries()[i].first, names[i]);
    EXPECT_EQ(state.tensor(names[i]).data(), mlp.parameters()[i].value().data()) << "a view";
  }
}

TEST(NnMlp, LoadStateDictCopiesIntoTheLiveParameters) {
  const MLP a({3, 4, 2}, Activation::relu, DType::f32, Device::cpu(), 1);
  MLP b({3, 4, 2}, Activation::relu, DType::f32, Device::cpu(), 2);
  const std::vector<Variable> before = b.parameters();
  b.load_state_dict(a.state_dict());
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(values_of(b.parameters()[i].value()), values_of(a.parameters()[i].value()));
    EXPECT_TRUE(b.parameters()[i] == before[i]) << "the same Variables, updated in place";
    EXPECT_NE(b.parameters()[i].value().data(), a.parameters()[i].value().data());
  }
  // An f64 checkpoint loads into f32 parameters (converted).
  const MLP wide({3, 4, 2}, Activation::relu, DType::f64, Device::cpu(), 3);
  b.load_state_dict(wide.state_dict());
  EXPECT_EQ(values_of(b.parameters()[0].value()),
            values_of(ops::cast(wide.parameters()[0].value(), DType::f32)));
}

TEST(NnMlp, LoadStateDictErrorsNameTheEntryAndChangeNothing) {
  MLP mlp({3, 4, 2}, Activation::relu, DType::f32, Device::cpu(), 1);
  const std::vector<double> fc0 = values_of(mlp.parameters()[0].value());
  const MLP other({3, 4, 2}, Activation::relu, DType::f32, Device::cpu(), 5);

  const StateDict full = other.state_dict();
  StateDict no_fc1_bias;
  for (const auto& [name, value] : full.entries()) {
    if (name != "fc1.bias") no_fc1_bias.set(name, value);
  }
  expect_contains(usage_error([&] { mlp.load_state_dict(no_fc1_bias); }),
                  {"nn::MLP::load_state_dict", "no entry 'fc1.bias'", "same structure"});

  StateDict wrong_shape = other.state_dict();
  wrong_shape.set("fc1.weight", Tensor::empty({4, 2}, DType::f32));
  expect_contains(usage_error([&] { mlp.load_state_dict(wrong_shape); }),
                  {"'fc1.weight'", "shape [4, 2]", "expects [2, 4]"});

  StateDict extra = other.state_dict();
  extra.set("fc2.weight", Tensor::empty({2, 2}, DType::f32));
  expect_contains(usage_error([&] { mlp.load_state_dict(extra); }),
                  {"unexpected entry 'fc2.weight'"});

  StateDict not_a_tensor = other.state_dict();
  not_a_tensor.set("fc0.bias", std::int64_t{3});
  expect_contains(usage_error([&] { mlp.load_state_dict(not_a_tensor); }),
                  {"'fc0.bias'", "tensor"});

  EXPECT_EQ(values_of(mlp.parameters()[0].value()), fc0) << "nothing copied";
}

TEST(NnMlp, MisuseIsAUsageError) {
  expect_contains(usage_error([] { MLP({4}, Activation::relu, DType::f32, Device::cpu(), 1); }),
                  {"widths {4}", "fewer than two"});
  expect_contains(usage_error([] {
                    MLP({4, 0, 2}, Activation::relu, DType::f32, Device::cpu(), 1);
                  }),
                  {"widths {4, 0, 2}", "0", ">= 1"});
  expect_contains(usage_error([] {
                    MLP({4, 2}, static_cast<Activation>(9), DType::f32, Device::cpu(), 1);
                  }),
                  {"unknown Activation 9"});
}

}  // namespace
}  // namespace tenax::train::nn
