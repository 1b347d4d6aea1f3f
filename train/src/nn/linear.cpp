#include "tenax/train/nn/linear.hpp"

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/key_values.hpp"
#include "tenax/core/text.hpp"
#include "tenax/train/autodiff/anomaly.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/nn/init.hpp"

namespace tenax::train::nn {
namespace {

using autodiff::Variable;

constexpr std::string_view kActivationNames[] = {"relu", "gelu", "tanh", "sigmoid"};

std::string widths_text(const std::vector<std::int64_t>& widths) {
  std::string text = "{";
  for (std::size_t i = 0; i < widths.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(widths[i]);
  }
  return text + "}";
}

void check_features(std::string_view name, std::int64_t value) {
  TENAX_EXPECTS(value >= 1, UsageError,
                "nn::Linear: " + std::string(name) + " = " + std::to_string(value) +
                    " but a layer needs at least one feature",
                "pass " + std::string(name) + " >= 1");
}

Tensor parameter_tensor(const Shape& shape, DType dtype, Device device) {
  TENAX_EXPECTS(dtype == DType::f32 || dtype == DType::f64, UsageError,
                "nn::Linear: dtype " + std::string(tenax::to_string(dtype)) +
                    " was asked for the parameters, but master weights are f32 or f64",
                "build the layer in f32 (or f64) and feed it f16/bf16 inputs for mixed "
                "precision");
  return Tensor::empty(shape, dtype, device);
}

// "fc<i>": the submodule name of layer i, which anomaly reports name too.
std::string layer_name(std::size_t i) { return "fc" + std::to_string(i); }

}  // namespace

Linear::Linear(std::int64_t in_features, std::int64_t out_features, DType dtype, Device device,
               std::uint64_t seed, std::uint64_t offset)
    : Linear(in_features, out_features, dtype, device, seed, offset, true) {}

Linear Linear::without_bias(std::int64_t in_features, std::int64_t out_features, DType dtype,
                            Device device, std::uint64_t seed, std::uint64_t offset) {
  return Linear(in_features, out_features, dtype, device, seed, offset, false);
}

Linear::Linear(std::int64_t in_features, std::int64_t out_features, DType dtype, Device device,
               std::uint64_t seed, std::uint64_t offset, bool bias)
    : Module("Linear"), in_(in_features), out_(out_features) {
  check_features("in_features", in_features);
  check_features("out_features", out_features);
  const Tensor weight = parameter_tensor(Shape{out_features, in_features}, dtype, device);
  // nn.Linear.reset_parameters: kaiming_uniform_(weight, a=sqrt(5)), then the bias uniform in
  // +-1/sqrt(fan_in).
  std::uint64_t next = kaiming_uniform(weight, seed, offset, kLinearKaimingA, FanMode::fan_in);
  weight_ = register_parameter("weight", weight);
  if (bias) {
    const Tensor b = parameter_tensor(Shape{out_features}, dtype, device);
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
    next = uniform(b, seed, next, -bound, bound);
    bias_ = register_parameter("bias", b);
  }
  end_offset_ = next;
}

Variable Linear::forward(const Variable& x) const {
  return bias_.defined() ? autodiff::linear(x, weight_, bias_) : autodiff::linear(x, weight_);
}

std::string_view to_string(Activation activation) noexcept {
  const auto i = static_cast<std::size_t>(activation);
  return i < std::size(kActivationNames) ? kActivationNames[i] : "unknown";
}

Activation parse_activation(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kActivationNames); ++i) {
    if (name == kActivationNames[i]) return static_cast<Activation>(i);
  }
  throw UsageError("nn::parse_activation: unknown activation '" + std::string(name) + "'",
                   "use one of: " + join_names(kActivationNames));
}

Variable activate(Activation activation, const Variable& x) {
  switch (activation) {
    case Activation::relu:
      return autodiff::relu(x);
    case Activation::gelu:
      return autodiff::gelu(x);
    case Activation::tanh:
      return autodiff::tanh(x);
    case Activation::sigmoid:
      return autodiff::sigmoid(x);
  }
  throw UsageError(
      "nn::activate: unknown Activation " + std::to_string(static_cast<int>(activation)),
      "pass one of the nn::Activation enumerators");
}

long double MLP::parameters_of(const std::vector<std::int64_t>& widths) noexcept {
  long double parameters = 0;
  for (std::size_t k = 0; k + 1 < widths.size(); ++k) {
    parameters += static_cast<long double>(widths[k]) * static_cast<long double>(widths[k + 1]) +
                  static_cast<long double>(widths[k + 1]);
  }
  return parameters;
}

MLP::MLP(std::vector<std::int64_t> widths, Activation activation, DType dtype, Device device,
         std::uint64_t seed, std::uint64_t offset)
    : Module("MLP"), widths_(std::move(widths)), activation_(activation) {
  TENAX_EXPECTS(widths_.size() >= 2, UsageError,
                "nn::MLP: widths " + widths_text(widths_) +
                    " name fewer than two sizes, so there is no layer",
                "pass {d_in, hidden..., d_out}, e.g. {784, 256, 10}");
  for (const std::int64_t w : widths_) {
    TENAX_EXPECTS(w >= 1, UsageError,
                  "nn::MLP: widths " + widths_text(widths_) + " hold " + std::to_string(w) +
                      " but every width must be >= 1",
                  "pass positive layer widths");
  }
  TENAX_EXPECTS(static_cast<std::size_t>(activation) < std::size(kActivationNames), UsageError,
                "nn::MLP: unknown Activation " + std::to_string(static_cast<int>(activation)),
                "pass one of the nn::Activation enumerators (or parse_activation(name))");
  layers_.reserve(widths_.size() - 1);
  std::uint64_t next = offset;
  for (std::size_t i = 0; i + 1 < widths_.size(); ++i) {
    layers_.emplace_back(widths_[i], widths_[i + 1], dtype, device, seed, next);
    register_module(layer_name(i), layers_.back());
    next = layers_.back().end_offset();
  }
}

Variable MLP::forward(const Variable& x) const {
  Variable h = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    // Anomaly reports name the layer ("fc<i>", as in state_dict()) of every op it issues.
    const autodiff::TagScope tag(layer_name(i));
    h = layers_[i].forward(h);
    if (i + 1 < layers_.size()) h = activate(activation_, h);
  }
  return h;
}

std::uint64_t MLP::end_offset() const noexcept { return layers_.back().end_offset(); }

}  // namespace tenax::train::nn
