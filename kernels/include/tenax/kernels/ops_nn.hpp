/// Neural-network ops: softmax cross-entropy over class logits, softmax and log-softmax along an
/// axis (causal for attention), layer normalisation and embedding lookup, each with its gradient.
/// @file
/// The rules below were written for the cross-entropy and hold for every op of this file: one
/// thread per row (or per column, for the sums over rows), its elements in a fixed order; compute
/// in f32 for f32, f16 and bf16 (f64 for f64); empty operands do nothing.
///
/// Shapes: logits [B, C] (C >= 1 classes per row) of any floating dtype; labels [B] of dtype i64,
/// each a class index in [0, C); losses [B] of dtype f32 (f64 when the logits are f64); grad
/// [B, C] of the logits' dtype. All on one device. Violations throw UsageError naming the op, the
/// operands and the fix.
///
/// Precision: everything is computed in f32 for f32, f16 and bf16 logits (loaded into f32,
/// whatever the storage) and in f64 for f64 logits, with each row's maximum subtracted before
/// exp, so logits of any magnitude (1e4, say) neither overflow nor lose the loss's precision.
/// Each row is handled by one thread, one column after the other in a fixed order; rows run in
/// parallel. The CPU and CUDA results agree within a few units in the last place (exp and log are
/// each backend's math library), not bit for bit. NaN or infinite logits give a NaN or infinite
/// loss (and gradient) for their row, which anomaly detection reports.
///
/// Labels outside [0, C): the CPU backend throws UsageError naming the row, the label and C,
/// before writing anything. The CUDA backend cannot throw from the device: it writes NaN into
/// that row's loss (and every element of that row's gradient) and the other rows normally, so
/// anomaly detection (ops::find_nonfinite on the losses or gradients) reports it.
///
/// On a CUDA device the ops are enqueued on the device context's stream; a build without CUDA
/// throws NotCompiledError for CUDA tensors.
#pragma once

#include <cstdint>

#include "tenax/core/tensor.hpp"

namespace tenax::ops {

/// losses[i] = logsumexp(logits[i, :]) - logits[i, labels[i]], computed as
/// log(sum_j exp(logits[i, j] - m_i)) - (logits[i, labels[i]] - m_i) with m_i the row maximum.
void softmax_cross_entropy(const Tensor& logits, const Tensor& labels, const Tensor& losses);

/// grad[i, j] = scale * (softmax(logits[i, :])_j - (j == labels[i] ? 1 : 0)), the gradient of
/// scale * losses[i] with respect to logits[i, j]. The softmax is recomputed from the logits (not
/// stored by the forward op) and the whole expression is evaluated in f32 (f64 for f64 logits)
/// and rounded once when stored, so a loss-scaled f16 or bf16 gradient keeps the small
/// probabilities that rounding the softmax to f16 first would flush. For a mean loss pass
/// scale = loss_scale / B. scale must be finite, and in f32 range when that is the compute type
/// (neither inf nor 0 there unless it is 0). grad may be the logits tensor itself (in-place);
/// otherwise it must not overlap the logits.
void softmax_cross_entropy_grad(const Tensor& logits, const Tensor& labels, double scale,
                                const Tensor& grad);

/// @name Softmax along an axis
///@{

/// y = softmax(x) along `axis` (negative counts from the last, Python-style): each line of x
/// along the axis is shifted by its maximum, exponentiated and divided by its sum, in the compute
/// type, and rounded once on store. x and y have one floating dtype, shape and device (y may be x
/// itself). A line of -inf only gives NaN, as in PyTorch.
void softmax(const Tensor& x, int axis, const Tensor& y);
/// y = log_softmax(x) along `axis` = x - max - log(sum exp(x - max)), same rules as softmax.
void log_softmax(const Tensor& x, int axis, const Tensor& y);
/// The causal softmax of attention: x is [..., T, T] (scores of queries q against keys j), and
/// row q of each matrix is the softmax of its first q + 1 elements, the others 0 -- as softmax
/// after masking j > q with -inf, without the mask. Same rules as softmax.
void causal_softmax(const Tensor& x, const Tensor& y);
/// dx = y (dy - sum(dy y)) along `axis`, the gradient through y = softmax(x) (or causal_softmax:
/// its zeros get dx = 0) from y itself. y, dy and dx have one dtype, shape and device; dx may be
/// dy.
void softmax_grad(const Tensor& y, const Tensor& dy, int axis, const Tensor& dx);
/// dx = dy - exp(y) sum(dy) along `axis`, the gradient through y = log_softmax(x).
void log_softmax_grad(const Tensor& y, const Tensor& dy, int axis, const Tensor& dx);
///@}

/// @name Layer normalisation over the last axis
///@{

/// y = (x - mean) / sqrt(var + eps) * weight + bias over the last axis of x [..., d] (PyTorch's
/// layer_norm with normalized_shape [d]): mean and biased variance in the compute type, two passes
/// over each row in order. weight and bias are [d] in the compute type (f32 master weights for
/// f32, f16 and bf16 x; f64 for f64), either undefined for none. mean and rstd (= 1 /
/// sqrt(var + eps)) are written, [rows] in the compute type with rows = x.numel() / d, for the
/// gradients. eps finite and > 0, and not 0 in f32 when that is the compute type (1e-300 is).
/// y has x's dtype, shape and device; y, mean and rstd overlap no input and no other output.
void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                const Tensor& y, const Tensor& mean, const Tensor& rstd);
/// dx of layer_norm from dy (x's dtype and shape), x, weight (or undefined) and the saved mean
/// and rstd: with g = dy weight and xhat = (x - mean) rstd, dx = rstd (g - mean(g) - xhat
/// mean(g xhat)) per row. dx may be dy itself; otherwise it overlaps no input.
void layer_norm_grad_input(const Tensor& dy, const Tensor& x, const Tensor& weight,
                           const Tensor& mean, const Tensor& rstd, const Tensor& dx);
/// dweight = sum over rows of dy xhat and dbias = sum over rows of dy ([d], compute type; either
/// undefined when not wanted), each column summed over the rows in order, overwritten; they
/// overlap no input and not each other.
void layer_norm_grad_params(const Tensor& dy, const Tensor& x, const Tensor& mean,
                            const Tensor& rstd, const Tensor& dweight, const Tensor& dbias);
///@}

/// @name Bias gradient
///@{

/// The gradient of a bias [d] added to every row of a [..., d] tensor (a Linear layer's):
/// dbias[j] = the sum over the rows of dy [..., d] of column j, in dy's compute type (dbias is f32
/// for f32, f16 and bf16 dy, f64 for f64), the rows in order; overwritten, 0 for no rows. One
/// pass over dy. UsageError for an undefined or integer dy, a dbias of another length, dtype or
/// device, or one that overlaps dy.
void bias_grad(const Tensor& dy, const Tensor& dbias);
///@}

/// @name Embedding lookup
///@{

/// out[..., :] = weight[indices[...], :]: weight [vocab, d] of a floating dtype, indices of dtype
/// i64 and any shape, out of shape indices.shape + [d] with weight's dtype, on one device. An
/// index outside [0, vocab) is a UsageError on the CPU (naming its position and value) and a NaN
/// row on CUDA.
void embedding(const Tensor& weight, const Tensor& indices, const Tensor& out);
/// dweight [vocab, d] = the sum, for each row v, of the rows of dy (shape indices.shape + [d], the
/// dtype of dweight) whose index is v, added in the order of the indices in the compute type (f32
/// for f16/bf16, rounded once); rows no index names are 0. dweight is overwritten.
void embedding_grad(const Tensor& indices, const Tensor& dy, const Tensor& dweight);
///@}

/// @name Dropout
///@{

/// What a dropout mask is a function of, besides the element: the element's position is
/// (sample, element of the sample), the sample counted in the whole batch.
struct DropoutKey {
  std::uint64_t seed = 0;         ///< the run's seed
  std::uint32_t stream = 0;       ///< which dropout of the model (each its own mask)
  std::uint32_t step = 0;         ///< the optimizer step (the mask changes every step)
  std::int64_t first_sample = 0;  ///< the global index of x's first sample (x's first axis)
};

/// y = x * keep / (1 - p): x of any floating dtype and shape [samples, ...] (rank >= 1), element
/// e of sample first_sample + s kept when its uniform, drawn by Philox from (key.seed,
/// key.stream, key.step, global sample, e), is >= p. So the mask is the same for any
/// micro-batch, any number of ranks and after a resume, and the same call on the output
/// gradient is the backward. 0 <= p < 1 (UsageError otherwise; p = 0 copies). y may be x. The
/// counter's words are 32-bit: samples first_sample.. must stay below 2^32, a sample's elements
/// at most 2^32 and key.stream below 2^31 (beyond them masks would repeat: UsageError).
void dropout(const Tensor& x, double p, const DropoutKey& key, const Tensor& y);
///@}

}  // namespace tenax::ops
