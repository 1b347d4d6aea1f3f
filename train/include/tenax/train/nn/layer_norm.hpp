/// LayerNorm: normalisation over the last axis with a learned gain and shift, as PyTorch's
/// nn.LayerNorm(d, eps) with elementwise_affine (weight 1 and bias 0 at construction). @file
#pragma once

#include <cstdint>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/train/autodiff/variable.hpp"
#include "tenax/train/nn/module.hpp"

namespace tenax::train::nn {

/// y = (x - mean) / sqrt(var + eps) * weight + bias over the last axis of x [batch, ..., d]
/// (autodiff::layer_norm); registers `weight` and `bias`, both [d].
class LayerNorm : public Module {
 public:
  /// d >= 1; dtype f32 or f64 (master weights: x may be f16/bf16 against f32 ones); eps finite
  /// and > 0. UsageError naming the value otherwise.
  LayerNorm(std::int64_t d, DType dtype, Device device, double eps = 1e-5);

  /// The normalised x (x's dtype and shape).
  [[nodiscard]] autodiff::Variable forward(const autodiff::Variable& x) const;

  /// The gain [d] (a parameter, 1 at construction).
  [[nodiscard]] const autodiff::Variable& weight() const noexcept { return weight_; }
  /// The shift [d] (a parameter, 0 at construction).
  [[nodiscard]] const autodiff::Variable& bias() const noexcept { return bias_; }
  /// The eps given to the constructor.
  [[nodiscard]] double eps() const noexcept { return eps_; }

 private:
  double eps_;
  autodiff::Variable weight_;
  autodiff::Variable bias_;
};

}  // namespace tenax::train::nn
