#include "tenax/train/nn/layer_norm.hpp"

#include <cmath>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/layer_ops.hpp"

namespace tenax::train::nn {
namespace {

Tensor filled(std::int64_t d, DType dtype, Device device, double value) {
  TENAX_EXPECTS(dtype == DType::f32 || dtype == DType::f64, UsageError,
                "nn::LayerNorm: dtype " + std::string(to_string(dtype)) +
                    " was asked for the parameters, but master weights are f32 or f64",
                "build the layer in f32 (or f64) and feed it f16/bf16 inputs for mixed precision");
  Tensor t = Tensor::empty(Shape{d}, dtype, device);
  ops::fill(t, value);
  return t;
}

}  // namespace

LayerNorm::LayerNorm(std::int64_t d, DType dtype, Device device, double eps)
    : Module("LayerNorm"), eps_(eps) {
  TENAX_EXPECTS(d >= 1, UsageError,
                "nn::LayerNorm: d = " + std::to_string(d) + " but a row needs at least one element",
                "pass the size of the last axis, >= 1");
  TENAX_EXPECTS(std::isfinite(eps) && eps > 0, UsageError,
                "nn::LayerNorm: eps = " + format_number(eps) + " but it must be finite and > 0",
                "pass a small positive eps (PyTorch's default is 1e-5)");
  weight_ = register_parameter("weight", filled(d, dtype, device, 1.0));
  bias_ = register_parameter("bias", filled(d, dtype, device, 0.0));
}

autodiff::Variable LayerNorm::forward(const autodiff::Variable& x) const {
  return autodiff::layer_norm(x, weight_, bias_, eps_);
}

}  // namespace tenax::train::nn
