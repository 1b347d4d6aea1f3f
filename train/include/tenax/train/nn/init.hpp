/// Parameter initialisers with the distributions of PyTorch's torch.nn.init, drawn from tenax's
/// counter-based Philox generator (ops::random_uniform / ops::random_normal).
/// @file
/// Each value is a pure function of (seed, offset, element index): the same bits on the CPU and
/// on CUDA, for every thread count and in every process, so a model initialised from a seed is
/// reproducible without saving it. The values are not PyTorch's (another generator); the
/// distributions are. A draw of n values uses Philox blocks [offset, offset + ceil(n / 4))
/// (ops_elementwise.hpp), so every initialiser returns the next free offset, offset +
/// ceil(n / 4): pass it to the next draw so that no two tensors share random numbers.
///
/// Fans follow torch.nn.init._calculate_fan_in_and_fan_out: w has rank >= 2, shape
/// [out, in, k...] (a 2-D Linear weight is [out, in]); fan_in = in * prod(k), fan_out =
/// out * prod(k). Gains follow torch.nn.init.calculate_gain.
///
/// Errors (UsageError naming the function, the value and the fix): w undefined, not of a
/// floating dtype, or of rank < 2; a, gain, low/high not finite (gain < 0). An empty w is left
/// as it is and the offset returned unchanged (PyTorch warns and does nothing). w is written on
/// its device, asynchronously on CUDA (ordered on the device's stream).
#pragma once

#include <cstdint>

#include "tenax/core/tensor.hpp"

namespace tenax::train::nn {

/// Which fan scales a Kaiming initialiser: fan_in preserves the variance of the activations in
/// the forward pass, fan_out that of the gradients in the backward pass.
enum class FanMode { fan_in, fan_out };

/// sqrt(5), nn.Linear's choice of Kaiming's a (its reset_parameters calls
/// kaiming_uniform_(weight, a=math.sqrt(5))). The literal rounds to std::sqrt(5.0).
inline constexpr double kLinearKaimingA = 2.2360679774997896964;

/// Philox blocks used by a draw of `numel` values: ceil(numel / 4).
[[nodiscard]] std::uint64_t philox_blocks(std::int64_t numel);

/// @name Fans
///@{

/// fan_in = in * prod(k) and fan_out = out * prod(k) for a weight w of shape [out, in, k...]
/// (torch.nn.init._calculate_fan_in_and_fan_out). UsageError when w is undefined, not of a
/// floating dtype, or of rank < 2.
[[nodiscard]] std::int64_t fan_in(const Tensor& w);
[[nodiscard]] std::int64_t fan_out(const Tensor& w);
///@}

/// calculate_gain("leaky_relu", a) = sqrt(2 / (1 + a^2)) (a = 0: relu's sqrt(2)).
[[nodiscard]] double leaky_relu_gain(double a);

/// Kaiming (He) uniform: U(-bound, bound) with bound = gain * sqrt(3 / fan), gain =
/// leaky_relu_gain(a), fan by `mode`: torch.nn.init.kaiming_uniform_(w, a, mode, "leaky_relu").
/// The default a = sqrt(5) is nn.Linear's (bound = 1 / sqrt(fan_in)); pass a = 0 for relu nets.
std::uint64_t kaiming_uniform(const Tensor& w, std::uint64_t seed, std::uint64_t offset,
                              double a = kLinearKaimingA, FanMode mode = FanMode::fan_in);

/// Kaiming (He) normal: N(0, std^2) with std = gain / sqrt(fan): kaiming_normal_(w, a, mode,
/// "leaky_relu"). The default a = 0 is PyTorch's (He initialisation for relu).
std::uint64_t kaiming_normal(const Tensor& w, std::uint64_t seed, std::uint64_t offset,
                             double a = 0.0, FanMode mode = FanMode::fan_in);

/// Xavier (Glorot) uniform: U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out)).
std::uint64_t xavier_uniform(const Tensor& w, std::uint64_t seed, std::uint64_t offset,
                             double gain = 1.0);

/// Xavier (Glorot) normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
std::uint64_t xavier_normal(const Tensor& w, std::uint64_t seed, std::uint64_t offset,
                            double gain = 1.0);

/// U(low, high) for any floating t of any rank (nn.Linear's bias): ops::random_uniform plus the
/// next offset.
std::uint64_t uniform(const Tensor& t, std::uint64_t seed, std::uint64_t offset, double low,
                      double high);

/// N(mean, std^2) for any floating t of any rank (nn.Embedding's N(0, 1); GPT-2's N(0, 0.02^2)):
/// ops::random_normal plus the next offset. std finite and >= 0.
std::uint64_t normal(const Tensor& t, std::uint64_t seed, std::uint64_t offset, double mean,
                     double std);

}  // namespace tenax::train::nn
