#include "tenax/train/nn/init.hpp"

#include <cmath>
#include <string>
#include <string_view>

#include "tenax/core/error.hpp"
#include "tenax/core/key_values.hpp"
#include "tenax/core/text.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::train::nn {
namespace {

using tenax::format_number;

void check_tensor(std::string_view who, const Tensor& t, int min_rank) {
  TENAX_EXPECTS(t.defined(), UsageError, "nn::" + std::string(who) + ": the tensor is undefined",
                "pass a tensor made with Tensor::empty (the parameter to initialise)");
  TENAX_EXPECTS(
      is_floating(t.dtype()), UsageError,
      "nn::" + std::string(who) + ": the tensor is " + t.describe() + ", not of a floating dtype",
      "initialise parameters of dtype f32 or f64 (or f16/bf16)");
  TENAX_EXPECTS(t.shape().rank() >= min_rank, UsageError,
                "nn::" + std::string(who) + ": the tensor has shape " + to_string(t.shape()) +
                    " but fans need rank >= 2 ([out, in, ...])",
                "initialise weights of rank >= 2 with it; draw biases and vectors with "
                "nn::uniform");
}

void check_finite(std::string_view who, std::string_view name, double value) {
  TENAX_EXPECTS(std::isfinite(value), UsageError,
                "nn::" + std::string(who) + ": " + std::string(name) + " = " +
                    format_number(value) + " but it must be finite",
                "pass a finite " + std::string(name));
}

void check_gain(std::string_view who, double gain) {
  TENAX_EXPECTS(std::isfinite(gain) && gain >= 0.0, UsageError,
                "nn::" + std::string(who) + ": gain = " + format_number(gain) +
                    " but it must be finite and >= 0",
                "pass a gain such as 1 (linear, sigmoid) or 5/3 (tanh)");
}

std::int64_t receptive_field(const Tensor& w) {
  std::int64_t r = 1;
  for (int d = 2; d < w.shape().rank(); ++d) r *= w.shape()[d];
  return r;
}

std::int64_t fan(const Tensor& w, FanMode mode) {
  return mode == FanMode::fan_in ? fan_in(w) : fan_out(w);
}

// kaiming_*'s standard deviation gain / sqrt(fan) for w, after checking w and a for `who` (0 for
// an empty w, which draws nothing).
double kaiming_stddev(std::string_view who, const Tensor& w, double a, FanMode mode) {
  check_tensor(who, w, 2);
  check_finite(who, "a", a);
  if (w.numel() == 0) return 0.0;
  return leaky_relu_gain(a) / std::sqrt(static_cast<double>(fan(w, mode)));
}

// xavier_*'s scale sqrt(numerator / (fan_in + fan_out)) for w, after checking w and gain for
// `who` (0 for an empty w, which draws nothing).
double xavier_scale(std::string_view who, const Tensor& w, double gain, double numerator) {
  check_tensor(who, w, 2);
  check_gain(who, gain);
  if (w.numel() == 0) return 0.0;
  const auto fans = static_cast<double>(fan_in(w) + fan_out(w));
  return gain * std::sqrt(numerator / fans);
}

std::uint64_t draw_uniform(const Tensor& t, std::uint64_t seed, std::uint64_t offset,
                           double bound) {
  if (t.numel() == 0) return offset;
  ops::random_uniform(t, seed, offset, -bound, bound);
  return offset + philox_blocks(t.numel());
}

std::uint64_t draw_normal(const Tensor& t, std::uint64_t seed, std::uint64_t offset,
                          double stddev) {
  if (t.numel() == 0) return offset;
  ops::random_normal(t, seed, offset, 0.0, stddev);
  return offset + philox_blocks(t.numel());
}

}  // namespace

std::uint64_t philox_blocks(std::int64_t numel) {
  return numel <= 0 ? 0 : (static_cast<std::uint64_t>(numel) + 3) / 4;
}

std::int64_t fan_in(const Tensor& w) {
  check_tensor("fan_in", w, 2);
  return w.shape()[1] * receptive_field(w);
}

std::int64_t fan_out(const Tensor& w) {
  check_tensor("fan_out", w, 2);
  return w.shape()[0] * receptive_field(w);
}

double leaky_relu_gain(double a) { return std::sqrt(2.0 / (1.0 + a * a)); }

std::uint64_t kaiming_uniform(const Tensor& w, std::uint64_t seed, std::uint64_t offset, double a,
                              FanMode mode) {
  const double stddev = kaiming_stddev("kaiming_uniform", w, a, mode);
  return draw_uniform(w, seed, offset, std::sqrt(3.0) * stddev);
}

std::uint64_t kaiming_normal(const Tensor& w, std::uint64_t seed, std::uint64_t offset, double a,
                             FanMode mode) {
  return draw_normal(w, seed, offset, kaiming_stddev("kaiming_normal", w, a, mode));
}

std::uint64_t xavier_uniform(const Tensor& w, std::uint64_t seed, std::uint64_t offset,
                             double gain) {
  return draw_uniform(w, seed, offset, xavier_scale("xavier_uniform", w, gain, 6.0));
}

std::uint64_t xavier_normal(const Tensor& w, std::uint64_t seed, std::uint64_t offset,
                            double gain) {
  return draw_normal(w, seed, offset, xavier_scale("xavier_normal", w, gain, 2.0));
}

std::uint64_t uniform(const Tensor& t, std::uint64_t seed, std::uint64_t offset, double low,
                      double high) {
  check_tensor("uniform", t, 0);
  check_finite("uniform", "low", low);
  check_finite("uniform", "high", high);
  TENAX_EXPECTS(
      low <= high, UsageError,
      "nn::uniform: low = " + format_number(low) + " is above high = " + format_number(high),
      "pass low <= high");
  if (t.numel() == 0) return offset;
  ops::random_uniform(t, seed, offset, low, high);
  return offset + philox_blocks(t.numel());
}

std::uint64_t normal(const Tensor& t, std::uint64_t seed, std::uint64_t offset, double mean,
                     double std) {
  check_tensor("normal", t, 0);
  check_finite("normal", "mean", mean);
  check_finite("normal", "std", std);
  TENAX_EXPECTS(std >= 0, UsageError, "nn::normal: std = " + format_number(std) + " is negative",
                "pass a standard deviation >= 0");
  if (t.numel() == 0) return offset;
  ops::random_normal(t, seed, offset, mean, std);
  return offset + philox_blocks(t.numel());
}

}  // namespace tenax::train::nn
