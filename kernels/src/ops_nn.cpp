// Checked front end of the neural-network ops: validate, then run the kernel of the tensors'
// device.
#include "tenax/kernels/ops_nn.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenax/core/text.hpp"
#include "tenax/kernels/checks.hpp"
#include "tenax/kernels/detail/nn_kernels.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::ops {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

// The compute dtype of a floating storage dtype: f64 for f64, f32 otherwise.
DType compute_dtype(DType storage) { return storage == DType::f64 ? DType::f64 : DType::f32; }

void check_no_overlap(std::string_view op, std::string_view out_name, const Tensor& out,
                      std::string_view in_name, const Tensor& in) {
  TENAX_EXPECTS(
      !detail::overlaps(out, in), UsageError,
      std::string(op) + ": " + std::string(out_name) + ", " + out.describe() + ", overlaps " +
          std::string(in_name) + ", " + in.describe() + ", in memory, but " +
          std::string(out_name) + " is written",
      "pass a separate tensor for " + std::string(out_name) + " (e.g. a new " + "Tensor::empty)");
}

// Every defined output shares no memory with any defined input or other output.
void check_outputs_apart(std::string_view op, std::initializer_list<detail::NamedTensor> outputs,
                         std::initializer_list<detail::NamedTensor> inputs) {
  for (auto out = outputs.begin(); out != outputs.end(); ++out) {
    if (!out->second->defined()) continue;
    for (const detail::NamedTensor& in : inputs) {
      if (in.second->defined()) {
        check_no_overlap(op, out->first, *out->second, in.first, *in.second);
      }
    }
    for (auto other = std::next(out); other != outputs.end(); ++other) {
      if (other->second->defined()) {
        check_no_overlap(op, out->first, *out->second, other->first, *other->second);
      }
    }
  }
}

// A double parameter as the kernels use it, rounded to the compute type of `dtype` (f32 for f32,
// f16 and bf16): finite there, and positive (`positive`) or zero exactly when the double is --
// so that 1e300 does not become inf and 1e-300 not 0 after the checks in double passed.
void check_in_compute_type(std::string_view op, std::string_view name, double value, DType dtype,
                           bool positive) {
  if (compute_dtype(dtype) != DType::f32) return;
  const auto rounded = static_cast<float>(value);
  const bool kept =
      std::isfinite(rounded) && (positive ? rounded > 0.0F : (rounded == 0.0F) == (value == 0.0));
  TENAX_EXPECTS(kept, UsageError,
                std::string(op) + ": " + std::string(name) + " " + format_number(value) + " is " +
                    format_number(static_cast<double>(rounded)) + " in f32, the compute type of " +
                    std::string(to_string(dtype)) + " operands",
                "pass " + std::string(name) +
                    " within f32's range, between about 1.2e-38 and 3.4e38 in magnitude");
}

// logits [B, C] floating with C >= 1, labels [B] i64 on the logits' device. Returns {B, C}.
struct Rows {
  std::int64_t rows;
  std::int64_t classes;
};

Rows check_logits_and_labels(std::string_view op, const Tensor& logits, const Tensor& labels) {
  detail::check_defined(op, "logits", logits);
  detail::check_defined(op, "labels", labels);
  detail::check_floating(op, "logits", logits);
  TENAX_EXPECTS(logits.shape().rank() == 2, UsageError,
                std::string(op) + ": logits is " + logits.describe() +
                    " but must be a matrix [B, C] of B rows of C class logits",
                "reshape it to [B, C] with reshape(...)");
  const Rows shape{logits.shape()[0], logits.shape()[1]};
  TENAX_EXPECTS(shape.classes > 0, UsageError,
                std::string(op) + ": logits is " + logits.describe() +
                    ", which has no classes (C == 0), so the softmax is undefined",
                "pass logits with at least one class per row");
  detail::check_same_device(op, "logits", logits, "labels", labels);
  TENAX_EXPECTS(
      labels.dtype() == DType::i64, UsageError,
      std::string(op) + ": labels is " + labels.describe() + " but class labels must be i64",
      "store the class indices as i64 (one per row of logits)");
  TENAX_EXPECTS(labels.shape().rank() == 1 && labels.shape()[0] == shape.rows, UsageError,
                std::string(op) + ": labels is " + labels.describe() + " but logits is " +
                    logits.describe() + ", which needs one label per row",
                "pass labels of shape [" + str(shape.rows) + "]");
  return shape;
}

}  // namespace

void softmax_cross_entropy(const Tensor& logits, const Tensor& labels, const Tensor& losses) {
  constexpr std::string_view op = "softmax_cross_entropy";
  const Rows shape = check_logits_and_labels(op, logits, labels);
  detail::check_defined(op, "losses", losses);
  detail::check_same_device(op, "logits", logits, "losses", losses);
  const DType loss_dtype = logits.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const std::string wanted = std::string(to_string(loss_dtype)) + "[" + str(shape.rows) + "]";
  TENAX_EXPECTS(
      losses.dtype() == loss_dtype && losses.shape().rank() == 1 && losses.shape()[0] == shape.rows,
      UsageError,
      std::string(op) + ": losses is " + losses.describe() + " but logits is " + logits.describe() +
          ", whose losses are " + wanted,
      "pass losses = Tensor::empty({" + str(shape.rows) +
          "}, DType::" + std::string(to_string(loss_dtype)) +
          ", device) (f32 for f32/f16/bf16 logits, f64 for f64)");
  check_no_overlap(op, "losses", losses, "logits", logits);
  check_no_overlap(op, "losses", losses, "labels", labels);
  if (shape.rows == 0) return;
  const kernels::SoftmaxCrossEntropyArgs args{logits, labels, losses, shape.rows, shape.classes};
  if (logits.device().is_cpu()) {
    kernels::cpu::softmax_cross_entropy(args);
  } else {
    kernels::cuda::softmax_cross_entropy(args);
  }
}

void softmax_cross_entropy_grad(const Tensor& logits, const Tensor& labels, double scale,
                                const Tensor& grad) {
  constexpr std::string_view op = "softmax_cross_entropy_grad";
  const Rows shape = check_logits_and_labels(op, logits, labels);
  detail::check_defined(op, "grad", grad);
  detail::check_same_device(op, "logits", logits, "grad", grad);
  detail::check_same_dtype(op, "logits", logits, "grad", grad);
  detail::check_same_shape(op, "logits", logits, "grad", grad);
  detail::check_finite(op, "scale", scale);
  check_in_compute_type(op, "scale", scale, logits.dtype(), /*positive=*/false);
  if (grad.data() != logits.data()) check_no_overlap(op, "grad", grad, "logits", logits);
  check_no_overlap(op, "grad", grad, "labels", labels);
  if (shape.rows == 0) return;
  const kernels::SoftmaxCrossEntropyGradArgs args{logits, labels,     scale,
                                                  grad,   shape.rows, shape.classes};
  if (logits.device().is_cpu()) {
    kernels::cpu::softmax_cross_entropy_grad(args);
  } else {
    kernels::cuda::softmax_cross_entropy_grad(args);
  }
}

namespace {

// Runs `kernel` on the backend of `device`.
template <class Args>
void run(Device device, void (*cpu)(const Args&), void (*cuda)(const Args&), const Args& args) {
  if (device.is_cpu()) {
    cpu(args);
  } else {
    cuda(args);
  }
}

// x viewed as [outer, n, inner] around `axis`.
struct Lines {
  std::int64_t outer = 1;
  std::int64_t n = 1;
  std::int64_t inner = 1;
};

Lines lines_of(const Shape& shape, int axis) {
  Lines lines;
  for (int a = 0; a < shape.rank(); ++a) {
    if (a < axis) lines.outer *= shape[a];
    if (a > axis) lines.inner *= shape[a];
  }
  lines.n = shape[axis];
  return lines;
}

// `t` is undefined or [d] of `dtype` on `device`.
void check_vector(std::string_view op, std::string_view name, const Tensor& t, std::int64_t d,
                  DType dtype, Device device) {
  if (!t.defined()) return;
  TENAX_EXPECTS(
      t.dtype() == dtype && t.device() == device && t.shape() == Shape{d}, UsageError,
      std::string(op) + ": " + std::string(name) + " is " + t.describe() + " but must be " +
          std::string(to_string(dtype)) + "[" + str(d) + "] on " + to_string(device),
      "pass " + std::string(name) + " of the last axis' size in " + std::string(to_string(dtype)) +
          " (f32 master weights for f32, f16 and bf16 inputs; f64 for f64)");
}

void softmax_lines(std::string_view op, const Tensor& x, int axis, const Tensor& y, bool log,
                   bool causal) {
  detail::check_defined(op, "x", x);
  detail::check_floating(op, "x", x);
  detail::check_compatible(op, "x", x, "y", y);
  if (!causal) axis = detail::check_axis(op, "x", x, axis);
  if (y.data() != x.data()) check_no_overlap(op, "y", y, "x", x);
  if (x.numel() == 0) return;
  const Lines lines = lines_of(x.shape(), axis);
  run(x.device(), &kernels::cpu::softmax, &kernels::cuda::softmax,
      kernels::SoftmaxArgs{x, y, lines.outer, lines.n, lines.inner, log, causal});
}

void softmax_lines_grad(std::string_view op, const Tensor& y, const Tensor& dy, int axis,
                        const Tensor& dx, bool log) {
  detail::check_defined(op, "y", y);
  detail::check_floating(op, "y", y);
  detail::check_all_compatible(op, {{"y", &y}, {"dy", &dy}, {"dx", &dx}});
  axis = detail::check_axis(op, "y", y, axis);
  check_no_overlap(op, "dx", dx, "y", y);
  if (dx.data() != dy.data()) check_no_overlap(op, "dx", dx, "dy", dy);
  if (y.numel() == 0) return;
  const Lines lines = lines_of(y.shape(), axis);
  run(y.device(), &kernels::cpu::softmax_grad, &kernels::cuda::softmax_grad,
      kernels::SoftmaxGradArgs{y, dy, dx, lines.outer, lines.n, lines.inner, log});
}

// x [..., d] floating with rank >= 1; returns {rows, d}.
struct RowsOf {
  std::int64_t rows;
  std::int64_t d;
};

// `what` says what the op does along the last axis.
RowsOf rows_of_last_axis(std::string_view op, const Tensor& x, std::string_view name = "x",
                         std::string_view what = "it is normalised over its last axis") {
  detail::check_defined(op, name, x);
  detail::check_floating(op, name, x);
  TENAX_EXPECTS(x.shape().rank() >= 1, UsageError,
                std::string(op) + ": " + std::string(name) + " is " + x.describe() +
                    ", a scalar, but " + std::string(what),
                "pass " + std::string(name) + " of shape [..., d]");
  const std::int64_t d = x.shape()[x.shape().rank() - 1];
  return {d == 0 ? 0 : x.numel() / d, d};
}

void check_stats(std::string_view op, const Tensor& x, const RowsOf& shape, const Tensor& mean,
                 const Tensor& rstd) {
  const DType c = compute_dtype(x.dtype());
  for (const auto& [name, t] :
       {std::pair<const char*, const Tensor*>{"mean", &mean}, {"rstd", &rstd}}) {
    detail::check_defined(op, name, *t);
    TENAX_EXPECTS(
        t->dtype() == c && t->device() == x.device() && t->shape() == Shape{shape.rows}, UsageError,
        std::string(op) + ": " + name + " is " + t->describe() + " but x is " + x.describe() +
            ", whose row statistics are " + std::string(to_string(c)) + "[" + str(shape.rows) + "]",
        "pass " + std::string(name) + " = Tensor::empty({" + str(shape.rows) +
            "}, DType::" + std::string(to_string(c)) + ", device)");
  }
}

}  // namespace

void softmax(const Tensor& x, int axis, const Tensor& y) {
  softmax_lines("softmax", x, axis, y, false, false);
}

void log_softmax(const Tensor& x, int axis, const Tensor& y) {
  softmax_lines("log_softmax", x, axis, y, true, false);
}

void causal_softmax(const Tensor& x, const Tensor& y) {
  constexpr std::string_view op = "causal_softmax";
  detail::check_defined(op, "x", x);
  const Shape& s = x.shape();
  TENAX_EXPECTS(s.rank() >= 2 && s[s.rank() - 1] == s[s.rank() - 2], UsageError,
                std::string(op) + ": x is " + x.describe() +
                    " but must end in a square [T, T] of query rows against key columns",
                "pass attention scores of shape [..., T, T]");
  softmax_lines(op, x, s.rank() - 1, y, false, true);
}

void softmax_grad(const Tensor& y, const Tensor& dy, int axis, const Tensor& dx) {
  softmax_lines_grad("softmax_grad", y, dy, axis, dx, false);
}

void log_softmax_grad(const Tensor& y, const Tensor& dy, int axis, const Tensor& dx) {
  softmax_lines_grad("log_softmax_grad", y, dy, axis, dx, true);
}

void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  constexpr std::string_view op = "layer_norm";
  const RowsOf shape = rows_of_last_axis(op, x);
  detail::check_compatible(op, "x", x, "y", y);
  const DType c = compute_dtype(x.dtype());
  check_vector(op, "weight", weight, shape.d, c, x.device());
  check_vector(op, "bias", bias, shape.d, c, x.device());
  detail::check_positive(op, "eps", eps);
  check_in_compute_type(op, "eps", eps, x.dtype(), /*positive=*/true);
  check_stats(op, x, shape, mean, rstd);
  check_outputs_apart(op, {{"y", &y}, {"mean", &mean}, {"rstd", &rstd}},
                      {{"x", &x}, {"weight", &weight}, {"bias", &bias}});
  if (shape.rows == 0 || shape.d == 0) return;
  run(x.device(), &kernels::cpu::layer_norm, &kernels::cuda::layer_norm,
      kernels::LayerNormArgs{x, weight, bias, eps, y, mean, rstd, shape.rows, shape.d});
}

void layer_norm_grad_input(const Tensor& dy, const Tensor& x, const Tensor& weight,
                           const Tensor& mean, const Tensor& rstd, const Tensor& dx) {
  constexpr std::string_view op = "layer_norm_grad_input";
  const RowsOf shape = rows_of_last_axis(op, x);
  detail::check_all_compatible(op, {{"x", &x}, {"dy", &dy}, {"dx", &dx}});
  check_vector(op, "weight", weight, shape.d, compute_dtype(x.dtype()), x.device());
  check_stats(op, x, shape, mean, rstd);
  check_outputs_apart(op, {{"dx", &dx}},
                      {{"x", &x}, {"weight", &weight}, {"mean", &mean}, {"rstd", &rstd}});
  if (dx.data() != dy.data()) check_no_overlap(op, "dx", dx, "dy", dy);
  if (shape.rows == 0 || shape.d == 0) return;
  run(x.device(), &kernels::cpu::layer_norm_grad_input, &kernels::cuda::layer_norm_grad_input,
      kernels::LayerNormGradInputArgs{dy, x, weight, mean, rstd, dx, shape.rows, shape.d});
}

void layer_norm_grad_params(const Tensor& dy, const Tensor& x, const Tensor& mean,
                            const Tensor& rstd, const Tensor& dweight, const Tensor& dbias) {
  constexpr std::string_view op = "layer_norm_grad_params";
  const RowsOf shape = rows_of_last_axis(op, x);
  detail::check_compatible(op, "x", x, "dy", dy);
  const DType c = compute_dtype(x.dtype());
  check_vector(op, "dweight", dweight, shape.d, c, x.device());
  check_vector(op, "dbias", dbias, shape.d, c, x.device());
  check_stats(op, x, shape, mean, rstd);
  check_outputs_apart(op, {{"dweight", &dweight}, {"dbias", &dbias}},
                      {{"dy", &dy}, {"x", &x}, {"mean", &mean}, {"rstd", &rstd}});
  if (!dweight.defined() && !dbias.defined()) return;
  if (shape.rows == 0) {  // a sum over no rows
    if (dweight.defined()) fill(dweight, 0.0);
    if (dbias.defined()) fill(dbias, 0.0);
    return;
  }
  if (shape.d == 0) return;
  run(x.device(), &kernels::cpu::layer_norm_grad_params, &kernels::cuda::layer_norm_grad_params,
      kernels::LayerNormGradParamsArgs{dy, x, mean, rstd, dweight, dbias, shape.rows, shape.d});
}

void bias_grad(const Tensor& dy, const Tensor& dbias) {
  constexpr std::string_view op = "bias_grad";
  const RowsOf shape = rows_of_last_axis(op, dy, "dy", "its columns (last axis) are summed");
  detail::check_defined(op, "dbias", dbias);
  check_vector(op, "dbias", dbias, shape.d, compute_dtype(dy.dtype()), dy.device());
  check_no_overlap(op, "dbias", dbias, "dy", dy);
  if (shape.rows == 0) {  // a sum over no rows
    fill(dbias, 0.0);
    return;
  }
  if (shape.d == 0) return;
  run(dy.device(), &kernels::cpu::bias_grad, &kernels::cuda::bias_grad,
      kernels::BiasGradArgs{dy, dbias, shape.rows, shape.d});
}

namespace {

// weight [vocab, d] floating, indices i64 on its device; `rows` the shape indices.shape + [d].
Shape check_table(std::string_view op, const Tensor& weight, const Tensor& indices,
                  std::string_view rows_name, const Tensor& rows) {
  detail::check_defined(op, "weight", weight);
  detail::check_defined(op, "indices", indices);
  detail::check_floating(op, "weight", weight);
  TENAX_EXPECTS(weight.shape().rank() == 2, UsageError,
                std::string(op) + ": the table is " + weight.describe() +
                    " but must be [vocab, d]: one row per token",
                "pass the embedding weight as a matrix [vocab, d]");
  detail::check_same_device(op, "weight", weight, "indices", indices);
  TENAX_EXPECTS(
      indices.dtype() == DType::i64, UsageError,
      std::string(op) + ": indices is " + indices.describe() + " but token indices must be i64",
      "store the token ids as i64");
  std::vector<std::int64_t> dims;
  for (int a = 0; a < indices.shape().rank(); ++a) dims.push_back(indices.shape()[a]);
  dims.push_back(weight.shape()[1]);
  const Shape wanted{std::span<const std::int64_t>(dims)};
  detail::check_defined(op, rows_name, rows);
  TENAX_EXPECTS(
      rows.dtype() == weight.dtype() && rows.device() == weight.device() && rows.shape() == wanted,
      UsageError,
      std::string(op) + ": " + std::string(rows_name) + " is " + rows.describe() + " but indices " +
          to_string(indices.shape()) + " into a table " + weight.describe() + " need " +
          std::string(to_string(weight.dtype())) + to_string(wanted),
      "pass " + std::string(rows_name) +
          " of shape indices.shape + [d] in the table's "
          "dtype");
  check_no_overlap(op, rows_name, rows, "weight", weight);
  check_no_overlap(op, rows_name, rows, "indices", indices);
  return wanted;
}

}  // namespace

void embedding(const Tensor& weight, const Tensor& indices, const Tensor& out) {
  check_table("embedding", weight, indices, "out", out);
  // With d == 0 the CPU kernel still runs: it checks the indices (CUDA has no row to mark NaN).
  if (indices.numel() == 0 || (out.numel() == 0 && !out.device().is_cpu())) return;
  run(weight.device(), &kernels::cpu::embedding, &kernels::cuda::embedding,
      kernels::EmbeddingArgs{weight, indices, out, indices.numel(), weight.shape()[1],
                             weight.shape()[0]});
}

void embedding_grad(const Tensor& indices, const Tensor& dy, const Tensor& dweight) {
  check_table("embedding_grad", dweight, indices, "dy", dy);
  if (indices.numel() == 0) {  // no rows: a sum of nothing
    fill(dweight, 0.0);
    return;
  }
  if (dweight.numel() == 0 && !dweight.device().is_cpu()) return;  // the CPU checks the indices
  // f16/bf16 sums run in f32 and are rounded once (the rule of every 16-bit op).
  const DType compute = compute_dtype(dweight.dtype());
  const Tensor sums = compute == dweight.dtype()
                          ? dweight
                          : Tensor::empty(dweight.shape(), compute, dweight.device());
  run(dweight.device(), &kernels::cpu::embedding_grad, &kernels::cuda::embedding_grad,
      kernels::EmbeddingGradArgs{indices, dy, sums, indices.numel(), dweight.shape()[1],
                                 dweight.shape()[0]});
  if (sums.data() != dweight.data()) cast_into(dweight, sums);
}

void dropout(const Tensor& x, double p, const DropoutKey& key, const Tensor& y) {
  constexpr std::string_view op = "dropout";
  detail::check_defined(op, "x", x);
  detail::check_floating(op, "x", x);
  detail::check_compatible(op, "x", x, "y", y);
  TENAX_EXPECTS(x.shape().rank() >= 1, UsageError,
                std::string(op) + ": x is " + x.describe() +
                    ", a scalar, but samples are its "
                    "first axis",
                "pass x of shape [samples, ...]");
  TENAX_EXPECTS(p >= 0.0 && p < 1.0, UsageError,
                std::string(op) + ": p = " + std::to_string(p) + " is outside [0, 1)",
                "pass the probability of zeroing an element, 0 <= p < 1");
  TENAX_EXPECTS(key.first_sample >= 0, UsageError,
                std::string(op) + ": the first sample is " + std::to_string(key.first_sample),
                "pass the global index of x's first sample, >= 0");
  // The Philox counter holds the element, the sample and the stream in 32-bit words (the
  // stream's high bit marks dropout): beyond them the masks would repeat.
  constexpr std::int64_t kWord = std::int64_t{1} << 32;
  const std::int64_t samples = x.shape().rank() >= 1 ? x.shape()[0] : 0;
  TENAX_EXPECTS(key.first_sample <= kWord - samples, UsageError,
                std::string(op) + ": samples " + std::to_string(key.first_sample) + " to " +
                    std::to_string(key.first_sample + samples - 1) +
                    " reach past 2^32, where the masks would repeat",
                "number the samples within the batch (the mask also depends on the step)");
  TENAX_EXPECTS(samples == 0 || x.numel() / samples <= kWord, UsageError,
                std::string(op) + ": x is " + x.describe() + ", whose " +
                    std::to_string(samples == 0 ? 0 : x.numel() / samples) +
                    " elements per sample reach past 2^32, where the masks would repeat",
                "split each sample over the first axis (reshape x to [more samples, ...])");
  TENAX_EXPECTS(key.stream < 0x80000000U, UsageError,
                std::string(op) + ": the stream is " + std::to_string(key.stream) +
                    ", at or beyond 2^31, whose masks would repeat those of stream " +
                    std::to_string(key.stream & 0x7fffffffU),
                "number the dropouts of a model from 0, below 2^31");
  if (y.data() != x.data()) check_no_overlap(op, "y", y, "x", x);
  if (x.numel() == 0) return;
  const std::int64_t per_sample = x.numel() / x.shape()[0];
  run(x.device(), &kernels::cpu::dropout, &kernels::cuda::dropout,
      kernels::DropoutArgs{x, y, per_sample, key.first_sample, key.seed, key.step, key.stream, p});
}

}  // namespace tenax::ops
