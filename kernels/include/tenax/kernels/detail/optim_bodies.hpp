/// Bodies of the fused optimizer kernels of ops_optim.hpp, written once for both backends.
/// @file
/// The *Coefficients structs hold the per-step scalars, computed on the host in double and rounded
/// to T once (sgd_coefficients / adam_coefficients, called by both backends, so both get the same
/// bits). The *Body functors update element i in T with exactly the expressions ops_optim.hpp
/// states; the CPU backend runs them from for_each loops, the CUDA backend from a grid-stride
/// loop. Neither contracts a * b + c into a fused multiply-add (-ffp-contract=off, --fmad=false),
/// and sqrtf / sqrt and division are correctly rounded on both, so both store the same bits.
///
/// The option flags are members rather than template parameters: they are uniform over a launch,
/// so the branches cost nothing measurable in a memory-bound pass, and one instantiation per
/// dtype keeps the CUDA build small. T is double (f64) or float (f32). Internal to the kernels
/// layer.
#pragma once

#include <math.h>  // the global sqrtf / sqrt that CUDA also declares for device code

#include <cmath>
#include <cstdint>

#include "tenax/core/host_device.hpp"
#include "tenax/kernels/ops_optim.hpp"

namespace tenax::kernels {

TENAX_HD inline float optim_sqrt(float v) { return sqrtf(v); }
TENAX_HD inline double optim_sqrt(double v) { return sqrt(v); }

// ---- SGD ----

template <class T>
struct SgdCoefficients {
  T lr;
  T momentum;
  T one_minus_dampening;
  T weight_decay;
  T grad_scale;
  bool use_weight_decay;
  bool use_momentum;
  bool nesterov;
  bool first_step;
};

/// Host: the step's scalars as ops::sgd_update rounds them (1 - dampening in double first, as
/// PyTorch computes `1 - dampening` in Python).
template <class T>
SgdCoefficients<T> sgd_coefficients(const ops::SgdStep& s) {
  return {static_cast<T>(s.lr),
          static_cast<T>(s.momentum),
          static_cast<T>(1.0 - s.dampening),
          static_cast<T>(s.weight_decay),
          static_cast<T>(s.grad_scale),
          s.weight_decay != 0.0,
          s.momentum != 0.0,
          s.nesterov,
          s.first_step};
}

/// param[i], momentum_buffer[i] (when use_momentum) updated from grad[i].
template <class T>
struct SgdBody {
  T* param;
  const T* grad;
  T* buf;  ///< null without momentum
  SgdCoefficients<T> c;
  TENAX_HD void operator()(std::int64_t i) const {
    const T p = param[i];
    T g = grad[i] * c.grad_scale;
    if (c.use_weight_decay) g = g + c.weight_decay * p;
    if (c.use_momentum) {
      const T b = c.first_step ? g : c.momentum * buf[i] + c.one_minus_dampening * g;
      buf[i] = b;
      g = c.nesterov ? g + c.momentum * b : b;
    }
    // p + (-lr) g, PyTorch's add_(g, alpha=-lr): the same bits, since negation is exact.
    param[i] = p - c.lr * g;
  }
};

// ---- Adam / AdamW ----

template <class T>
struct AdamCoefficients {
  T grad_scale;
  T weight_decay;            ///< coupled (Adam) decay, used when coupled_decay
  T decay;                   ///< 1 - lr * weight_decay, used when decoupled_decay
  T lerp_weight;             ///< 1 - beta1
  T lerp_weight_complement;  ///< 1 - lerp_weight, computed in T as PyTorch's lerp does
  T beta2;
  T one_minus_beta2;
  T bias_correction2_sqrt;
  T eps;
  T neg_step_size;
  bool coupled_decay;
  bool decoupled_decay;
  bool lerp_weight_small;  ///< |lerp_weight| < 0.5: PyTorch's choice of lerp formula
};

/// Host: the step's scalars, in double first (as PyTorch computes them in Python), then rounded.
template <class T>
AdamCoefficients<T> adam_coefficients(const ops::AdamStep& s) {
  const auto step = static_cast<double>(s.step);
  const double bias_correction1 = 1.0 - std::pow(s.beta1, step);
  const double bias_correction2 = 1.0 - std::pow(s.beta2, step);
  const double step_size = s.lr / bias_correction1;
  const bool decay = s.weight_decay != 0.0;
  const auto lerp_weight = static_cast<T>(1.0 - s.beta1);
  return {static_cast<T>(s.grad_scale),
          static_cast<T>(s.weight_decay),
          static_cast<T>(1.0 - s.lr * s.weight_decay),
          lerp_weight,
          static_cast<T>(1) - lerp_weight,
          static_cast<T>(s.beta2),
          static_cast<T>(1.0 - s.beta2),
          static_cast<T>(std::sqrt(bias_correction2)),
          static_cast<T>(s.eps),
          static_cast<T>(-step_size),
          decay && !s.decoupled_weight_decay,
          decay && s.decoupled_weight_decay,
          (lerp_weight < static_cast<T>(0) ? -lerp_weight : lerp_weight) < static_cast<T>(0.5)};
}

/// param[i], exp_avg[i], exp_avg_sq[i] updated from grad[i].
template <class T>
struct AdamBody {
  T* param;
  const T* grad;
  T* exp_avg;
  T* exp_avg_sq;
  AdamCoefficients<T> c;
  TENAX_HD void operator()(std::int64_t i) const {
    T p = param[i];
    T g = grad[i] * c.grad_scale;
    if (c.decoupled_decay) p = p * c.decay;
    if (c.coupled_decay) g = g + c.weight_decay * p;
    const T m0 = exp_avg[i];
    const T m = c.lerp_weight_small ? m0 + c.lerp_weight * (g - m0)
                                    : g - (g - m0) * c.lerp_weight_complement;
    const T v = c.beta2 * exp_avg_sq[i] + (c.one_minus_beta2 * g) * g;
    const T denom = optim_sqrt(v) / c.bias_correction2_sqrt + c.eps;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    param[i] = p + (c.neg_step_size * m) / denom;
  }
};

}  // namespace tenax::kernels
