/// Linear layers and multi-layer perceptrons over autodiff Variables, laid out, initialised and
/// named like PyTorch's nn.Linear, so that weights and state-dict names map one to one.
/// @file
/// Both are Modules (module.hpp): a Linear registers `weight` and `bias`, an MLP its layers
/// `fc0`, `fc1`, ..., so its state dict holds `fc0.weight`, `fc0.bias`, ... Parameters are master
/// weights: f32 (or f64) tensors on one device, held as autodiff::Variable::parameter, so
/// backward() accumulates their gradients and an Optimizer updates them in place. forward() calls
/// autodiff::linear, which also takes an f16/bf16 input against the f32 weights (mixed precision;
/// the output then has the input's dtype).
///
/// Initialisation is counter-based (init.hpp): a layer built from (seed, offset) holds the same
/// bits on every device and in every process; end_offset() is where the next draw starts, and an
/// MLP chains its layers' offsets. The values differ from PyTorch's (another generator); the
/// distributions are nn.Linear's: weight kaiming_uniform(a = sqrt(5)), i.e.
/// U(-1/sqrt(in), 1/sqrt(in)), then bias U(-1/sqrt(in), 1/sqrt(in)).
///
/// Errors are UsageError naming the value, the expectation and the fix. Not thread-safe: a model
/// is used by one thread at a time (the autodiff tape is per thread).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/train/autodiff/variable.hpp"
#include "tenax/train/nn/module.hpp"

namespace tenax::train::nn {

/// y = x W^T + b: x [batch, in] -> [batch, out]; weight [out, in], bias [out].
class Linear : public Module {
 public:
  /// in, out >= 1; dtype f32 or f64 (UsageError otherwise). Draws the weight at (seed, offset)
  /// and the bias right after, on `device`.
  Linear(std::int64_t in_features, std::int64_t out_features, DType dtype, Device device,
         std::uint64_t seed, std::uint64_t offset = 0);
  /// y = x W^T: as the constructor, with no bias (PyTorch's bias=False); the weight is drawn
  /// alike, and end_offset() follows it.
  [[nodiscard]] static Linear without_bias(std::int64_t in_features, std::int64_t out_features,
                                           DType dtype, Device device, std::uint64_t seed,
                                           std::uint64_t offset = 0);

  /// autodiff::linear(x, weight(), bias()) for x [batch, in_features()] in the parameters'
  /// dtype, or in f16/bf16 against f32 parameters (the output then has x's dtype); UsageError
  /// otherwise.
  [[nodiscard]] autodiff::Variable forward(const autodiff::Variable& x) const;

  /// @name Parameters and sizes
  ///@{

  /// The parameters, weight [out_features, in_features] and bias [out_features]
  /// (Variable::parameter leaves: handles to the live tensors; the bias is undefined without
  /// one), and the layer's sizes.
  [[nodiscard]] const autodiff::Variable& weight() const noexcept { return weight_; }
  [[nodiscard]] const autodiff::Variable& bias() const noexcept { return bias_; }
  [[nodiscard]] std::int64_t in_features() const noexcept { return in_; }
  [[nodiscard]] std::int64_t out_features() const noexcept { return out_; }
  ///@}

  /// The Philox offset after this layer's draws: the `offset` of the next initialisation.
  [[nodiscard]] std::uint64_t end_offset() const noexcept { return end_offset_; }

 private:
  Linear(std::int64_t in_features, std::int64_t out_features, DType dtype, Device device,
         std::uint64_t seed, std::uint64_t offset, bool bias);

  std::int64_t in_;
  std::int64_t out_;
  autodiff::Variable weight_;
  autodiff::Variable bias_;
  std::uint64_t end_offset_;
};

/// The nonlinearity between an MLP's layers (gelu: the exact erf form, autodiff::gelu).
enum class Activation {
  relu,    ///< max(x, 0)
  gelu,    ///< x * Phi(x), the exact erf form
  tanh,    ///< tanh(x)
  sigmoid  ///< 1 / (1 + exp(-x))
};

/// "relu", "gelu", "tanh" or "sigmoid" (parse_activation reads it back); "unknown" for a value
/// outside the enumeration.
[[nodiscard]] std::string_view to_string(Activation activation) noexcept;
/// "relu", "gelu", "tanh" or "sigmoid"; UsageError listing them otherwise.
[[nodiscard]] Activation parse_activation(std::string_view name);
/// activation(x), differentiable (autodiff::relu, gelu, tanh or sigmoid); UsageError for a
/// value outside the enumeration.
[[nodiscard]] autodiff::Variable activate(Activation activation, const autodiff::Variable& x);

/// Linear layers of widths {d_in, h1, ..., d_out} (at least two widths, each >= 1) with the
/// activation between consecutive layers and none after the last: fc0, act, fc1, act, ..., fcN,
/// registered as the submodules `fc0`, `fc1`, ...
class MLP : public Module {
 public:
  /// Layer `fc<i>` maps widths[i] to widths[i + 1], in `dtype` (f32 or f64) on `device`; the
  /// layers draw their parameters from `seed` one after the other, starting at Philox `offset`
  /// (each at the previous layer's end_offset()). UsageError for fewer than two widths, a width
  /// below 1, an unknown activation or another dtype.
  MLP(std::vector<std::int64_t> widths, Activation activation, DType dtype, Device device,
      std::uint64_t seed, std::uint64_t offset = 0);

  /// x [batch, d_in] -> [batch, d_out]. Each layer's ops run under autodiff::TagScope(`fc<i>`),
  /// so anomaly reports name the layer.
  [[nodiscard]] autodiff::Variable forward(const autodiff::Variable& x) const;

  /// @name Structure
  ///@{

  /// The layers fc0, fc1, ... in order, and the widths and activation given to the constructor.
  [[nodiscard]] const std::vector<Linear>& layers() const noexcept { return layers_; }
  [[nodiscard]] const std::vector<std::int64_t>& widths() const noexcept { return widths_; }
  [[nodiscard]] Activation activation() const noexcept { return activation_; }
  ///@}

  /// The Philox offset after the last layer's draws: the `offset` of the next initialisation.
  [[nodiscard]] std::uint64_t end_offset() const noexcept;

  /// The parameters (weights and biases) an MLP of these widths holds, counted without building
  /// it (in long double, so that widths whose count overflows 64 bits still compare): for
  /// checking that a model fits before it is allocated.
  [[nodiscard]] static long double parameters_of(const std::vector<std::int64_t>& widths) noexcept;

 private:
  std::vector<std::int64_t> widths_;
  Activation activation_;
  std::vector<Linear> layers_;
};

}  // namespace tenax::train::nn
