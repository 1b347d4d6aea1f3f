// The reduction order of reduce_bodies.hpp written out plainly, as the oracle the kernels'
// reductions must match bit for bit: 16 lanes per block of kReduceBlock terms, a halving tree per
// block, then pairwise levels over the block partials.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tenax/kernels/detail/reduce_bodies.hpp"

namespace tenax::testing {

// The sum of term(0) .. term(n - 1) in the documented order.
template <class Term>
double documented_reduction(std::int64_t n, const Term& term) {
  std::vector<double> partials;
  for (std::int64_t begin = 0; begin < n; begin += kernels::kReduceBlock) {
    const std::int64_t end = std::min(n, begin + kernels::kReduceBlock);
    std::vector<double> lanes(kernels::kReduceLanes, 0.0);
    for (std::int64_t i = begin; i < end; ++i) {
      lanes[static_cast<std::size_t>((i - begin) % kernels::kReduceLanes)] += term(i);
    }
    for (std::size_t s = lanes.size() / 2; s > 0; s /= 2) {
      for (std::size_t j = 0; j < s; ++j) lanes[j] += lanes[j + s];
    }
    partials.push_back(lanes[0]);
  }
  while (partials.size() > 1) {
    std::vector<double> next;
    for (std::size_t i = 0; i + 1 < partials.size(); i += 2) {
      next.push_back(partials[i] + partials[i + 1]);
    }
    if (partials.size() % 2 != 0) next.push_back(partials.back());
    partials = next;
  }
  return partials.empty() ? 0.0 : partials[0];
}

inline double documented_sum(const std::vector<double>& x) {
  return documented_reduction(static_cast<std::int64_t>(x.size()),
                              [&](std::int64_t i) { return x[static_cast<std::size_t>(i)]; });
}

// sum_i a_i * b_i (the values already widened to double, as the kernels' dot terms are).
inline double documented_dot(const std::vector<double>& a, const std::vector<double>& b) {
  return documented_reduction(static_cast<std::int64_t>(a.size()), [&](std::int64_t i) {
    const auto k = static_cast<std::size_t>(i);
    return a[k] * b[k];
  });
}

}  // namespace tenax::testing
