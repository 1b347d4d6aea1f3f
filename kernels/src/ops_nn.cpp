// Checked front end of the softmax cross-entropy ops: validate, then run the kernel of the
// tensors' device.
#include "tenax/kernels/ops_nn.hpp"

#include <cstdint>
#include <string>
#include <string_view>

#include "tenax/kernels/checks.hpp"
#include "tenax/kernels/detail/nn_kernels.hpp"

namespace tenax::ops {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

void check_no_overlap(std::string_view op, std::string_view out_name, const Tensor& out,
                      std::string_view in_name, const Tensor& in) {
  TENAX_EXPECTS(
      !detail::overlaps(out, in), UsageError,
      std::string(op) + ": " + std::string(out_name) + ", " + out.describe() + ", overlaps " +
          std::string(in_name) + ", " + in.describe() + ", in memory, but " +
          std::string(out_name) + " is written",
      "pass a separate tensor for " + std::string(out_name) + " (e.g. a new " + "Tensor::empty)");
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

}  // namespace tenax::ops
