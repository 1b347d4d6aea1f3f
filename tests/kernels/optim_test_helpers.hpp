// Helpers shared by the fused optimizer tests (kernels on CPU and GPU, solvers' Optimizer
// classes): the PyTorch reference cases of optim_reference.hpp, their inputs as tensors, the
// fused ops run through a case, and the comparison with PyTorch's values.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/optim_reference.hpp"
#include "kernels/tensor_values.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_optim.hpp"

namespace tenax::testing {

namespace optim_ref = optim_reference;

// Tolerance against PyTorch, per tensor: f32 within kF32Ulps units in the last place of the
// tensor's largest reference value, f64 within kF64Relative of it. The scale is the tensor's,
// not the element's: an update p - lr g that nearly cancels leaves a small element whose own
// relative error says nothing about the arithmetic. Drift is expected: PyTorch 1.13 forms
// Adam's first moment with mul/add rather than lerp, and its CPU kernels fuse multiply-adds
// where tenax does not.
inline constexpr double kF32Ulps = 4.0;
inline constexpr double kF64Relative = 1e-12;

inline double f32_ulp(double magnitude) {
  const auto f = static_cast<float>(std::fabs(magnitude));
  return static_cast<double>(std::nextafter(f, INFINITY)) - static_cast<double>(f);
}

// Whether `got` matches PyTorch's `want` in `dtype`, for a tensor whose largest reference
// magnitude is `scale`.
inline ::testing::AssertionResult near_reference(double got, double want, double scale,
                                                 DType dtype) {
  const double tolerance = dtype == DType::f32 ? kF32Ulps * f32_ulp(scale) : kF64Relative * scale;
  if (std::fabs(got - want) <= tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << got << " but PyTorch gives " << want << " (difference "
         << std::fabs(got - want) << " > tolerance " << tolerance << ")";
}

// Compares every element of `got` (any device) with PyTorch's `want`.
inline void expect_reference(const Tensor& got, const double (&want)[optim_ref::kLength],
                             DType dtype, const std::string& what) {
  const std::vector<double> values = values_of(got);
  ASSERT_EQ(values.size(), static_cast<std::size_t>(optim_ref::kLength)) << what;
  double scale = 0.0;
  for (const double w : want) scale = std::fmax(scale, std::fabs(w));
  for (int i = 0; i < optim_ref::kLength; ++i) {
    EXPECT_TRUE(near_reference(values[static_cast<std::size_t>(i)], want[i], scale, dtype))
        << what << " element " << i;
  }
}

inline const optim_ref::Values& reference_values(const optim_ref::Case& c, DType dtype) {
  return dtype == DType::f64 ? c.f64 : c.f32;
}

inline bool is_sgd(const optim_ref::Case& c) { return std::string_view(c.optimizer) == "sgd"; }

// The case's initial parameter and step-k gradient (unscaled) as CPU tensors of `dtype`.
inline Tensor reference_param(DType dtype) {
  std::vector<double> v(optim_ref::kLength);
  for (int i = 0; i < optim_ref::kLength; ++i)
    v[static_cast<std::size_t>(i)] = optim_ref::initial_param(i);
  return make_tensor(v, dtype);
}
inline Tensor reference_grad(int k, DType dtype) {
  std::vector<double> v(optim_ref::kLength);
  for (int i = 0; i < optim_ref::kLength; ++i)
    v[static_cast<std::size_t>(i)] = optim_ref::gradient(k, i);
  return make_tensor(v, dtype);
}

inline ops::SgdStep sgd_step_of(const optim_ref::Case& c, std::int64_t step) {
  ops::SgdStep s;
  s.lr = c.lr;
  s.momentum = c.momentum;
  s.dampening = c.dampening;
  s.weight_decay = c.weight_decay;
  s.nesterov = c.nesterov;
  s.first_step = step == 1;
  s.grad_scale = c.grad_scale;
  return s;
}

inline ops::AdamStep adam_step_of(const optim_ref::Case& c, std::int64_t step) {
  ops::AdamStep s;
  s.lr = c.lr;
  s.beta1 = c.beta1;
  s.beta2 = c.beta2;
  s.eps = c.eps;
  s.weight_decay = c.weight_decay;
  s.decoupled_weight_decay = std::string_view(c.optimizer) == "adamw";
  s.step = step;
  s.grad_scale = c.grad_scale;
  return s;
}

// A reference case run through ops::sgd_update / ops::adam_update on `device`: the parameter
// after each step and the two state buffers at the end (CPU copies).
struct OpsRun {
  std::vector<Tensor> params;  // after steps 1 .. kSteps
  Tensor buffer0;              // momentum_buffer or exp_avg (undefined for SGD without momentum)
  Tensor buffer1;              // exp_avg_sq (undefined for SGD)
};

// A CPU copy of t that later updates of t do not change (waits for t's device first).
inline Tensor snapshot(const Tensor& t) {
  if (!t.device().is_cpu()) tenax::cuda::context(t.device()).synchronize();
  return t.to(Device::cpu()).clone();
}

inline OpsRun run_with_ops(const optim_ref::Case& c, DType dtype, Device device) {
  const Tensor param = reference_param(dtype).to(device);
  Tensor buffer0;
  Tensor buffer1;
  if (is_sgd(c)) {
    if (c.momentum != 0.0) buffer0 = Tensor::empty(param.shape(), dtype, device);
  } else {
    buffer0 = Tensor::empty(param.shape(), dtype, device);
    buffer1 = Tensor::empty(param.shape(), dtype, device);
    ops::fill(buffer0, 0.0);
    ops::fill(buffer1, 0.0);
  }
  OpsRun run;
  for (int k = 0; k < optim_ref::kSteps; ++k) {
    const Tensor grad = reference_grad(k, dtype).to(device);
    if (is_sgd(c)) {
      ops::sgd_update(param, grad, buffer0, sgd_step_of(c, k + 1));
    } else {
      ops::adam_update(param, grad, buffer0, buffer1, adam_step_of(c, k + 1));
    }
    run.params.push_back(snapshot(param));
  }
  if (buffer0.defined()) run.buffer0 = snapshot(buffer0);
  if (buffer1.defined()) run.buffer1 = snapshot(buffer1);
  return run;
}

// Every value of `run` against the case's PyTorch values in `dtype`.
inline void expect_run_matches_reference(const OpsRun& run, const optim_ref::Case& c, DType dtype) {
  const optim_ref::Values& want = reference_values(c, dtype);
  const std::string name = std::string(c.name) + " " + std::string(to_string(dtype));
  for (int k = 0; k < optim_ref::kSteps; ++k) {
    expect_reference(run.params[static_cast<std::size_t>(k)], want.params[k], dtype,
                     name + " param after step " + std::to_string(k + 1));
  }
  if (run.buffer0.defined()) expect_reference(run.buffer0, want.buffer0, dtype, name + " buffer0");
  if (run.buffer1.defined()) expect_reference(run.buffer1, want.buffer1, dtype, name + " buffer1");
}

}  // namespace tenax::testing
