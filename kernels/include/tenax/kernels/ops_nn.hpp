/// Neural-network loss ops: softmax cross-entropy over class logits, and its gradient.
/// @file
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
/// scale = loss_scale / B. scale must be finite. grad may be the logits tensor itself (in-place);
/// otherwise it must not overlap the logits.
void softmax_cross_entropy_grad(const Tensor& logits, const Tensor& labels, double scale,
                                const Tensor& grad);

}  // namespace tenax::ops
