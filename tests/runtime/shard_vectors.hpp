// Vectors for the tests of operators and solvers split across ranks: a reproducible random
// vector every rank cuts its shard from, and the bit pattern of a double for exact comparisons.
#pragma once

#include <bit>
#include <cstdint>
#include <random>

#include "tenax/core/tensor.hpp"

namespace tenax::testing {

[[nodiscard]] inline std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

// n f64 values uniform in [-1, 1) from `seed`.
[[nodiscard]] inline Tensor random_vector(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  Tensor t = Tensor::empty({n}, DType::f64);
  for (std::int64_t i = 0; i < n; ++i) t.data_as<double>()[i] = value(random);
  return t;
}

}  // namespace tenax::testing
