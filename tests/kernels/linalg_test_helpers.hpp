// Helpers shared by the linear-algebra tests: random inputs and naive references (tensors from
// values and back come from tensor_values.hpp).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "tensor_values.hpp"

namespace tenax::testing {

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
