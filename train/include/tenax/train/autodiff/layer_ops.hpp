/// Differentiable ops of transformer layers: softmax and log-softmax along an axis, the causal
/// softmax of attention, layer normalisation, embedding lookup, the tanh form of GELU, batched
/// matrix products, and the shape ops attention needs (reshape, permute, narrow). @file
/// The rules of ops.hpp hold: operands are defined Variables of one floating dtype on one device
/// (shape rules per op), errors are UsageError naming the op, the operands and the fix, values and
/// gradients are computed with tenax::ops on the operands' device.
///
/// Batches: the first axis of an op's operand is the batch of samples. The ops whose parameters
/// see every sample (layer_norm's weight and bias, embedding's table) hand their gradients to the
/// active GrainScope grain by grain (grain.hpp), each grain's rows summed in order, so a model
/// built of them trains with the same bits for any micro-batch and any number of ranks. The other
/// ops act on each sample alone and need nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops_linalg.hpp"
#include "tenax/train/autodiff/variable.hpp"

namespace tenax::train::autodiff {

/// @name Softmax
///@{

/// softmax(x) along `axis` (negative counts from the last): ops::softmax, gradient
/// ops::softmax_grad from the output.
[[nodiscard]] Variable softmax(const Variable& x, int axis);
/// log_softmax(x) along `axis`: ops::log_softmax, gradient ops::log_softmax_grad.
[[nodiscard]] Variable log_softmax(const Variable& x, int axis);
/// The causal softmax of attention scores x [..., T, T]: row q is the softmax of its first q + 1
/// elements, the rest 0 (ops::causal_softmax), gradient ops::softmax_grad.
[[nodiscard]] Variable causal_softmax(const Variable& x);
///@}

/// Which GELU: the exact erf form or GPT-2's tanh approximation (PyTorch's approximate=).
enum class GeluApproximation {
  none,  ///< x Phi(x) (autodiff::gelu(x))
  tanh   ///< 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
};
/// gelu(x) in the form asked for (any shape).
[[nodiscard]] Variable gelu(const Variable& x, GeluApproximation approximation);

/// Layer normalisation over the last axis of x [batch, ..., d] (PyTorch's layer_norm with
/// normalized_shape [d] and eps): (x - mean) / sqrt(var + eps) * weight + bias. weight and bias
/// are [d] master weights (f32 for f32, f16 and bf16 x; f64 for f64 x), either an undefined
/// Variable for none; the output has x's dtype. Their gradients are summed grain by grain (see
/// the file description). eps finite and > 0.
[[nodiscard]] Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias,
                                  double eps = 1e-5);

/// Rows of the table weight [vocab, d] at `indices` (i64 of shape [batch, ...], no gradient, on
/// the table's device) -> indices.shape + [d] in the table's dtype. The table's gradient sums the
/// rows of the output gradient at their indices, grain by grain (see the file description). An
/// index outside [0, vocab) is a UsageError on the CPU and a NaN row on CUDA.
[[nodiscard]] Variable embedding(const Variable& weight, const Tensor& indices);

/// Dropout of x [batch, ...] with probability p (0 <= p < 1): each element zeroed with
/// probability p, the others scaled by 1 / (1 - p), by a mask that is a function of (seed,
/// stream, the Runner's current step, the element's global sample -- its row in the micro-batch
/// plus the GrainScope's row offset -- and its place in the sample): the same mask for any
/// micro-batch, any number of ranks and after a resume (ops::dropout). `stream` tells a model's
/// dropouts apart. The gradient is the same mask applied to the output's gradient.
[[nodiscard]] Variable dropout(const Variable& x, double p, std::uint64_t seed,
                               std::uint32_t stream);

/// alpha * a b for a [..., m, k] and b [..., k, n], or alpha * a bᵀ for b [..., n, k] when
/// transpose_b is Transpose::yes, with the same leading axes (the batch of matrices) -> [..., m,
/// n]. One GEMM per matrix of the batch, in the operands' dtype (f16/bf16 with f32 accumulation).
[[nodiscard]] Variable batched_matmul(const Variable& a, const Variable& b,
                                      ops::Transpose transpose_b = ops::Transpose::no,
                                      double alpha = 1.0);

/// @name Shapes
///@{

/// x with another shape of the same element count (a view; the gradient is reshaped back).
[[nodiscard]] Variable reshape(const Variable& x, const Shape& shape);
/// x with its axes permuted (out axis i is x's axis dims[i]; a copy, as ops::permute); the
/// gradient is permuted back.
[[nodiscard]] Variable permute(const Variable& x, const std::vector<int>& dims);
/// Elements [begin, end) of x along `axis` (a copy, as ops::narrow); the gradient is the output
/// gradient padded with zeros back to x's shape.
[[nodiscard]] Variable narrow(const Variable& x, int axis, std::int64_t begin, std::int64_t end);
///@}

}  // namespace tenax::train::autodiff
