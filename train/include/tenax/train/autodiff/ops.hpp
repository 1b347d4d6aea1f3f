/// Differentiable ops on Variables (see variable.hpp for the tape and backward()).
/// @file
/// Each op computes its value with tenax::ops on the device of its operands and, when recording
/// is on and an input requires grad, records a backward closure built from tenax::ops too, so the
/// same code runs on the CPU and on CUDA. Operands must be defined Variables with one floating
/// dtype and one device; shape rules are given per op. Violations throw UsageError naming the op,
/// the operands' shapes and the fix, before anything is computed or recorded.
///
/// Scalar results (sum, mean, the losses) are tensors of shape [] on the operands' device; their
/// backward reads the incoming gradient back to the host (one small synchronising read).
///
/// Every op names itself to the tape and, in anomaly mode (anomaly.hpp), scans its output and the
/// gradients it produces. Ops that reduce over the batch follow the active GrainScope
/// (grain.hpp), so that gradient accumulation is independent of the micro-batch.
#pragma once

#include "tenax/core/tensor.hpp"
#include "tenax/train/autodiff/variable.hpp"

namespace tenax::train::autodiff {

/// A[m, k] * B[k, n] -> [m, n] (2-D operands of one floating dtype, on one device).
[[nodiscard]] Variable matmul(const Variable& a, const Variable& b);

/// x W^T + b for x [batch, in], weight [out, in], bias [out] -> [batch, out]: the layout of
/// PyTorch's nn.Linear, so weights map one to one. d bias is the column sum of d out. x may have
/// more axes, [batch, ..., in] -> [batch, ..., out] (the positions of a sequence): every row of
/// every sample is transformed alike, and the grains (below) count samples, each with all its
/// rows.
///
/// Mixed precision: x may be f16 or bf16 while weight and bias are f32 master weights. The
/// product then runs in x's dtype with f32 accumulation (ops::gemm): the weights are rounded to
/// x's dtype once per call, the output is x's dtype, and the weight and bias gradients are
/// accumulated in f32 straight from the f16/bf16 products (never rounded to 16 bits).
/// Within a GrainScope the GEMMs run one grain of rows at a time (grain.hpp).
[[nodiscard]] Variable linear(const Variable& x, const Variable& weight, const Variable& bias);
/// x W^T without a bias.
[[nodiscard]] Variable linear(const Variable& x, const Variable& weight);

/// @name Element-wise arithmetic
///@{

/// a + b, a - b, a * b and a / b, element-wise with NumPy broadcasting (ops::broadcast_shape):
/// shapes are aligned on the right and each dimension is equal or 1 in one operand; the result
/// has the broadcast shape. a and b share one floating dtype and one device. The gradient of a
/// broadcast operand is summed back to its shape (ops::sum_to). Operands of one shape take the
/// plain element-wise kernels.
[[nodiscard]] Variable add(const Variable& a, const Variable& b);
[[nodiscard]] Variable sub(const Variable& a, const Variable& b);
[[nodiscard]] Variable mul(const Variable& a, const Variable& b);
[[nodiscard]] Variable div(const Variable& a, const Variable& b);
///@}

/// @name Element-wise activations
///@{

/// relu, gelu, tanh, sigmoid and exp of each element of x (any shape, x's dtype). relu's
/// derivative is taken as 0 at 0 (as PyTorch does). gelu is the exact form
/// x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (PyTorch's approximate="none").
[[nodiscard]] Variable relu(const Variable& x);
[[nodiscard]] Variable gelu(const Variable& x);
[[nodiscard]] Variable tanh(const Variable& x);
[[nodiscard]] Variable sigmoid(const Variable& x);
[[nodiscard]] Variable exp(const Variable& x);
///@}
/// Natural logarithm; log(0) = -inf (anomaly mode reports it).
[[nodiscard]] Variable log(const Variable& x);

/// x converted to `dtype` (a floating dtype); the gradient is converted back to x's dtype.
[[nodiscard]] Variable cast(const Variable& x, DType dtype);

/// c * x for a constant c.
[[nodiscard]] Variable scale(const Variable& x, double c);

/// @name Reductions to a scalar
///@{

/// Sum and mean of all elements -> shape [] in x's dtype (summed in f64 in the fixed order of
/// ops::sum, then rounded once). The sum of an empty tensor is 0; its mean is a UsageError.
[[nodiscard]] Variable sum(const Variable& x);
[[nodiscard]] Variable mean(const Variable& x);
///@}

/// How a loss reduces over its batch: the loss is (sum of the per-sample terms) / divisor.
struct LossOptions {
  /// 0 (the default): PyTorch's reduction "mean" (cross_entropy: the rows of the batch, every
  /// position of a sequence; mse_loss: all elements). Gradient accumulation passes the count of
  /// the global batch (times the positions of a sample) instead, so that each micro-batch's loss
  /// is its exact share of the global mean and the gradients add up to the gradient of the
  /// global mean.
  double divisor = 0;
};

/// sum((pred - target)^2) / divisor -> shape [] (PyTorch's MSELoss, reduction "mean", by
/// default). pred and target have one shape and may differ in floating dtype: the loss is
/// computed in f32 for f32/f16/bf16 operands (f64 when either is f64), and returned in that
/// dtype. The gradient of pred is computed in that precision and rounded once to pred's dtype.
/// target usually does not require grad, but may.
[[nodiscard]] Variable mse_loss(const Variable& pred, const Variable& target,
                                const LossOptions& options = {});

/// Softmax cross-entropy of logits [batch, classes] against labels [batch] (i64 class indices,
/// on the logits' device; no gradient) -> shape [] (PyTorch's CrossEntropyLoss, reduction
/// "mean", by default). Logits of a sequence, [batch, positions, classes] against labels [batch,
/// positions], count every position: the mean is over batch * positions terms, and a grain's
/// loss sum holds all the positions of its samples. Computed in f32 whatever the logits' dtype (f64
/// for f64 logits) and returned in that dtype; the logits' gradient is computed in that precision
/// and rounded once to their dtype. A label outside [0, classes) is a UsageError on the CPU and a
/// NaN loss on CUDA.
[[nodiscard]] Variable cross_entropy(const Variable& logits, const Tensor& labels,
                                     const LossOptions& options = {});

}  // namespace tenax::train::autodiff
