// Helpers shared by the linear-algebra tests: tensors from values and back, naive references.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "tenax/core/half.hpp"
#include "tenax/core/tensor.hpp"

namespace tenax::testing {

// The value `v` as stored in `dtype` (f16/bf16 round to nearest even), read back as double.
inline double round_to(DType dtype, double v) {
  switch (dtype) {
    case DType::f32:
      return static_cast<float>(v);
    case DType::f16:
      return half_bits_to_float(float_to_half_bits(static_cast<float>(v)));
    case DType::bf16:
      return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v)));
    default:
      return v;
  }
}

// A CPU tensor of `shape` and `dtype` holding `values` (rounded to the dtype).
inline Tensor make_tensor(const Shape& shape, DType dtype, const std::vector<double>& values) {
  Tensor t = Tensor::empty(shape, dtype);
  for (std::size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case DType::f64:
        t.data_as<double>()[i] = values[i];
        break;
      case DType::f32:
        t.data_as<float>()[i] = static_cast<float>(values[i]);
        break;
      case DType::f16:
        t.data_as<Half>()[i] = to_half(static_cast<float>(values[i]));
        break;
      case DType::bf16:
        t.data_as<BFloat16>()[i] = to_bfloat16(static_cast<float>(values[i]));
        break;
      default:
        break;
    }
  }
  return t;
}

// The elements of a floating tensor (on any device) as doubles.
inline std::vector<double> values_of(const Tensor& tensor) {
  const Tensor t = tensor.to(Device::cpu());
  std::vector<double> out(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()) {
      case DType::f64:
        out[i] = t.data_as<double>()[i];
        break;
      case DType::f32:
        out[i] = t.data_as<float>()[i];
        break;
      case DType::f16:
        out[i] = to_float(t.data_as<Half>()[i]);
        break;
      case DType::bf16:
        out[i] = to_float(t.data_as<BFloat16>()[i]);
        break;
      default:
        break;
    }
  }
  return out;
}

// n integers uniform in [-range, range], as doubles.
inline std::vector<double> random_integers(std::size_t n, int range, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-range, range);
  std::vector<double> out(n);
  for (double& v : out) v = dist(gen);
  return out;
}

// n reals uniform in [-1, 1), rounded to `dtype`.
inline std::vector<double> random_reals(std::size_t n, DType dtype, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> out(n);
  for (double& v : out) v = round_to(dtype, dist(gen));
  return out;
}

// C = alpha op(A) op(B) + beta C by the textbook triple loop in double; a is stored
// [ta ? k : m, ta ? m : k], b [tb ? n : k, tb ? k : n], c [m, n].
inline std::vector<double> naive_gemm(const std::vector<double>& a, const std::vector<double>& b,
                                      std::vector<double> c, std::int64_t m, std::int64_t n,
                                      std::int64_t k, bool ta, bool tb, double alpha, double beta) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double x = ta ? a[p * m + i] : a[i * k + p];
        const double y = tb ? b[j * k + p] : b[p * n + j];
        sum += x * y;
      }
      const double old = beta == 0.0 ? 0.0 : beta * c[i * n + j];
      c[i * n + j] = alpha * sum + old;
    }
  }
  return c;
}

}  // namespace tenax::testing
