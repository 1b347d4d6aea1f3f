/// Fused optimizer updates: one read/write pass over a parameter and its state, in place, without
/// allocating, with the semantics of PyTorch's single-tensor torch.optim.SGD / Adam / AdamW.
/// @file
/// Written as separate ops an Adam step reads and writes the parameter, the gradient and the two
/// moments five or six times (plus temporaries); here each element is loaded once, updated in
/// registers and stored once. Nothing is allocated, so an update cannot fail half-way for lack of
/// memory, and the caller (the optimizer) can allocate every buffer up front.
///
/// Operands: param, grad and the state tensors are defined, of one dtype (f32 or f64: the master
/// weights of mixed precision are f32), on one device, of one shape (any rank; used flattened).
/// param and the state are written; grad is only read. No written tensor may overlap another
/// operand in memory. Arithmetic is in the tensors' dtype: the per-step scalars (bias corrections,
/// step size, decay factor, 1 - beta, ...) are computed in double on the host and rounded to the
/// dtype once, as PyTorch rounds its Python-float scalars. The element-wise expressions are
/// written out per op below; neither backend contracts them into fused multiply-adds, so the CPU
/// and CUDA backends produce the same bits. Empty tensors are a no-op.
///
/// Errors: UsageError naming the op, the operand or value, what was expected and the fix, before
/// anything is written. CUDA tensors in a build without CUDA raise NotCompiledError. On a CUDA
/// device the update is enqueued on the device context's stream (asynchronous). Safe to call from
/// several threads on distinct parameters.
#pragma once

#include <cstdint>

#include "tenax/core/tensor.hpp"

namespace tenax::ops {

/// The hyper-parameters of one sgd_update call (torch.optim.SGD's, plus the step flag and a
/// gradient scale). Checked by sgd_update: lr, momentum, weight_decay >= 0 and finite; dampening
/// and grad_scale finite (grad_scale >= 0); nesterov needs momentum > 0 and dampening == 0 (as
/// PyTorch requires).
struct SgdStep {
  double lr = 0.0;            ///< learning rate
  double momentum = 0.0;      ///< momentum factor; 0 keeps no momentum buffer
  double dampening = 0.0;     ///< dampening of the momentum (1 - dampening scales g)
  double weight_decay = 0.0;  ///< L2 penalty added to the gradient
  bool nesterov = false;      ///< Nesterov momentum
  /// The optimizer's first step: the momentum buffer is created as a copy of g (only written, so
  /// it may hold anything before).
  bool first_step = false;
  /// Multiplies the gradient first: folds a clipping coefficient (or a loss-scale inverse) into
  /// the same pass; 1 leaves grad as it is.
  double grad_scale = 1.0;
};

/// One SGD step (torch.optim.SGD with maximize=False), in place. Per element, in the dtype:
/// ```
/// g = grad * grad_scale
/// if weight_decay != 0:  g = g + weight_decay * param
/// if momentum != 0:      buf = first_step ? g : momentum * buf + (1 - dampening) * g
///                        g = nesterov ? g + momentum * buf : buf
/// param = param - lr * g
/// ```
/// momentum_buffer (buf) is the SGD momentum state, shaped like param; it is not used (pass an
/// undefined Tensor) when momentum == 0, and must be defined otherwise (UsageError).
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                const SgdStep& s);

/// The hyper-parameters of one adam_update call (torch.optim.Adam's and AdamW's, plus the step
/// number and a gradient scale). Checked by adam_update: lr, eps, weight_decay >= 0 and finite;
/// 0 <= beta1, beta2 < 1; step >= 1; grad_scale finite and >= 0.
struct AdamStep {
  double lr = 0.0;                      ///< learning rate
  double beta1 = 0.9;                   ///< decay rate of the first moment (exp_avg)
  double beta2 = 0.999;                 ///< decay rate of the second moment (exp_avg_sq)
  double eps = 1e-8;                    ///< added to the denominator
  double weight_decay = 0.0;            ///< L2 penalty (Adam) or decoupled decay rate (AdamW)
  bool decoupled_weight_decay = false;  ///< AdamW's decoupled decay instead of Adam's L2 penalty
  std::int64_t step = 0;                ///< must be set: 1 on the first step
  double grad_scale = 1.0;              ///< multiplies the gradient first (1 leaves it as it is)
};

/// One Adam or AdamW step (torch.optim.Adam / AdamW, amsgrad=False, maximize=False), in place.
/// s.step is the 1-based number of this step (the count after increment: 1 on the first call). On
/// the host, in double: bias_correction1 = 1 - beta1^step, bias_correction2 = 1 - beta2^step,
/// step_size = lr / bias_correction1, bc2_sqrt = sqrt(bias_correction2). Per element, in the
/// dtype:
/// ```
/// g = grad * grad_scale
/// AdamW (decoupled_weight_decay), weight_decay != 0:  param = param * (1 - lr * weight_decay)
/// Adam, weight_decay != 0:                            g = g + weight_decay * param
/// exp_avg = lerp(exp_avg, g, 1 - beta1)      (PyTorch's lerp: exp_avg + w * (g - exp_avg)
///                                             for w < 0.5, else g - (g - exp_avg) * (1 - w))
/// exp_avg_sq = beta2 * exp_avg_sq + ((1 - beta2) * g) * g
/// denom = sqrt(exp_avg_sq) / bc2_sqrt + eps
/// param = param + (-step_size * exp_avg) / denom        (PyTorch's addcdiv_ order)
/// ```
/// exp_avg and exp_avg_sq are the first and second moments, shaped like param (zeros before the
/// first step, as PyTorch initialises them).
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const AdamStep& s);

}  // namespace tenax::ops
