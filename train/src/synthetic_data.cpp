// The synthetic sets of synthetic_data.hpp. The Philox streams and the element order are part of
// the contract (a seed gives the same samples in every release): the inputs draw from offset 0,
// the noise from the offset past them.
#include "tenax/train/synthetic_data.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::train {
namespace {

void check_size_and_noise(const char* name, std::int64_t samples, double noise) {
  TENAX_EXPECTS(samples >= 1, UsageError,
                std::string(name) + ": samples = " + std::to_string(samples),
                "ask for at least one sample");
  TENAX_EXPECTS(std::isfinite(noise) && noise >= 0.0, UsageError,
                std::string(name) + ": noise = " + format_number(noise),
                "give a finite, non-negative standard deviation (0: no noise)");
}

}  // namespace

ArrayData regression_data(std::int64_t samples, double noise, std::uint64_t seed) {
  check_size_and_noise("regression_data", samples, noise);
  const std::int64_t n = samples;
  ArrayData d;
  d.x = Tensor::empty(Shape{n, 2}, DType::f32);
  ops::random_uniform(d.x, seed, 0, -1.0, 1.0);
  Tensor eps = Tensor::empty(Shape{n}, DType::f32);
  ops::random_normal(eps, seed, static_cast<std::uint64_t>((2 * n + 3) / 4), 0.0, noise);
  d.y = Tensor::empty(Shape{n, 1}, DType::f32);
  const float* x = d.x.data_as<float>();
  const float* e = eps.data_as<float>();
  float* y = d.y.data_as<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    const double a = x[2 * i];
    const double b = x[2 * i + 1];
    y[i] = static_cast<float>(std::sin(std::numbers::pi * a) * std::cos(std::numbers::pi * b) +
                              0.5 * a * b + e[i]);
  }
  return d;
}

ArrayData spirals_data(std::int64_t samples, double noise, std::uint64_t seed) {
  check_size_and_noise("spirals_data", samples, noise);
  const std::int64_t n = samples;
  ArrayData d;
  d.classes = 2;
  Tensor t = Tensor::empty(Shape{n}, DType::f32);
  ops::random_uniform(t, seed, 0, 0.05, 1.0);
  Tensor eps = Tensor::empty(Shape{n, 2}, DType::f32);
  ops::random_normal(eps, seed, static_cast<std::uint64_t>((n + 3) / 4), 0.0, noise);
  d.x = Tensor::empty(Shape{n, 2}, DType::f32);
  d.y = Tensor::empty(Shape{n}, DType::i64);
  const float* tt = t.data_as<float>();
  const float* e = eps.data_as<float>();
  float* x = d.x.data_as<float>();
  std::int64_t* y = d.y.data_as<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t c = i % 2;
    const double r = tt[i];
    const double angle = 3.0 * std::numbers::pi * r + static_cast<double>(c) * std::numbers::pi;
    x[2 * i] = static_cast<float>(r * std::cos(angle) + e[2 * i]);
    x[2 * i + 1] = static_cast<float>(r * std::sin(angle) + e[2 * i + 1]);
    y[i] = c;
  }
  return d;
}

}  // namespace tenax::train
