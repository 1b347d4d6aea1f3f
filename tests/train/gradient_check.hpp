// Gradient checks for the autodiff tests: analytic gradients against central finite differences
// in f64, on CPU tensors of deterministic random values.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/autodiff/variable.hpp"

namespace tenax::train::autodiff::testing {

// A CPU f64 tensor of uniform values in [low, high), deterministic in the seed.
inline Tensor random_tensor(const Shape& shape, std::uint32_t seed, double low = -1.0,
                            double high = 1.0) {
  Tensor t = Tensor::empty(shape, DType::f64);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(low, high);
  double* p = t.data_as<double>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = dist(gen);
  return t;
}

inline std::vector<double> values(const Tensor& t) {
  const double* p = t.data_as<double>();
  return {p, p + t.numel()};
}

inline double scalar_of(const Variable& v) { return ops::sum(v.value()); }

using Forward = std::function<Variable(const std::vector<Variable>&)>;

// Reduces a non-scalar op output to a scalar with fixed random weights, so that every output
// element's gradient takes part in the check with a different weight.
inline Variable weighted_sum(const Variable& out, std::uint32_t seed) {
  return sum(mul(out, Variable::constant(random_tensor(out.value().shape(), seed))));
}

// Analytic gradients of `forward` with respect to every input against central differences
// (step h), as relative error over each input's gradient: ||g - fd|| / max(||fd||, 1e-3).
inline void check_gradients(const std::vector<Tensor>& inputs, const Forward& forward,
                            double tolerance = 1e-6, double h = 1e-5) {
  std::vector<Variable> params;
  for (const Tensor& t : inputs) params.push_back(Variable::parameter(t.clone()));
  const Variable loss = forward(params);
  ASSERT_TRUE(loss.requires_grad());
  backward(loss);
  ASSERT_EQ(Tape::size(), 0u);

  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::vector<double> analytic = values(params[i].grad());
    std::vector<double> numeric(analytic.size());
    double* x = params[i].value().data_as<double>();
    {
      NoGradScope no_grad;
      for (std::size_t j = 0; j < numeric.size(); ++j) {
        const double saved = x[j];
        x[j] = saved + h;
        const double up = scalar_of(forward(params));
        x[j] = saved - h;
        const double down = scalar_of(forward(params));
        x[j] = saved;
        numeric[j] = (up - down) / (2.0 * h);
      }
    }
    double diff2 = 0.0;
    double ref2 = 0.0;
    for (std::size_t j = 0; j < numeric.size(); ++j) {
      diff2 += (analytic[j] - numeric[j]) * (analytic[j] - numeric[j]);
      ref2 += numeric[j] * numeric[j];
    }
    const double rel = std::sqrt(diff2) / std::max(std::sqrt(ref2), 1e-3);
    EXPECT_LT(rel, tolerance) << "input " << i << " of shape "
                              << to_string(params[i].value().shape());
  }
  EXPECT_EQ(Tape::size(), 0u) << "finite differences ran without recording";
}

}  // namespace tenax::train::autodiff::testing
