#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autodiff/op_support.hpp"
#include "detail/anomaly_scan.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_broadcast.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_linalg.hpp"
#include "tenax/kernels/ops_nn.hpp"
#include "tenax/train/autodiff/anomaly.hpp"
#include "tenax/train/autodiff/grain.hpp"
#include "tenax/train/autodiff/ops.hpp"

namespace tenax::train::autodiff {
namespace {
using ops::Transpose;
using namespace op_support;

}  // namespace

Variable matmul(const Variable& a, const Variable& b) {
  check_defined("matmul", "a", a);
  check_defined("matmul", "b", b);
  check_same_kind("matmul", "a", a, "b", b);
  const Shape& sa = a.value().shape();
  const Shape& sb = b.value().shape();
  TENAX_EXPECTS(sa.rank() == 2 && sb.rank() == 2 && sa[1] == sb[0], UsageError,
                "autodiff::matmul: a has shape " + to_string(sa) + " and b has shape " +
                    to_string(sb) + "; they must be 2-D [m, k] and [k, n]",
                "pass 2-D operands whose inner dimensions agree (reshape vectors to [n, 1])");
  return finish("matmul", {&a, &b}, ops::matmul(a.value(), b.value()), [&] {
    return [a, b](const Tensor& g) {
      if (a.requires_grad()) {  // dA = dC B^T
        Tensor ga = Tensor::empty_like(a.value());
        ops::gemm(g, b.value(), ga, 1.0, 0.0, Transpose::no, Transpose::yes);
        Tape::accumulate_grad(a, std::move(ga));
      }
      if (b.requires_grad()) {  // dB = A^T dC
        Tensor gb = Tensor::empty_like(b.value());
        ops::gemm(a.value(), g, gb, 1.0, 0.0, Transpose::yes, Transpose::no);
        Tape::accumulate_grad(b, std::move(gb));
      }
    };
  });
}

namespace {

bool is_half(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16; }

Variable linear_impl(const Variable& x, const Variable& weight, const Variable* bias) {
  check_defined("linear", "x", x);
  check_defined("linear", "weight", weight);
  check_same_device("linear", "x", x, "weight", weight);
  const DType dtype = x.value().dtype();
  const DType master = weight.value().dtype();
  TENAX_EXPECTS(master == dtype || (is_half(dtype) && master == DType::f32), UsageError,
                "autodiff::linear: x is " + x.value().describe() + " but weight is " +
                    weight.value().describe(),
                "give x the weight's dtype, or use f32 master weights with an f16/bf16 x");
  const Shape& sx = x.value().shape();
  const Shape& sw = weight.value().shape();
  TENAX_EXPECTS(sx.rank() >= 2 && sw.rank() == 2 && sx[sx.rank() - 1] == sw[1], UsageError,
                "autodiff::linear: x has shape " + to_string(sx) + " and weight has shape " +
                    to_string(sw) + "; they must be [batch, ..., in] and [out, in]",
                "store the weight as [out, in] (PyTorch nn.Linear layout) and batch the input "
                "as [batch, in] (or [batch, positions, in])");
  // x as rows [batch * per, in]: `per` rows of each sample (1 for a matrix), grains in samples.
  const std::int64_t samples = sx[0];
  const std::int64_t in = sw[1];
  // The rows: the product of x's leading extents (not numel / in, which is 0 / 0 for in == 0).
  std::int64_t batch = 1;
  for (int a = 0; a + 1 < sx.rank(); ++a) batch *= sx[a];
  const std::int64_t per = samples == 0 ? 1 : std::max<std::int64_t>(batch / samples, 1);
  const Tensor x_rows = x.value().reshape(Shape{batch, in});
  const std::int64_t out = sw[0];
  const Device device = x.value().device();
  if (bias != nullptr) {
    check_defined("linear", "bias", *bias);
    check_same_kind("linear", "weight", weight, "bias", *bias);
    TENAX_EXPECTS(bias->value().shape() == Shape{out}, UsageError,
                  "autodiff::linear: bias has shape " + shape_of(*bias) + " but weight has shape " +
                      to_string(sw) + "; bias must be [" + std::to_string(out) + "]",
                  "give the bias one element per output feature");
  }

  // The weights in the compute dtype: rounded once per call under mixed precision.
  const Tensor w = as_dtype(weight.value(), dtype);
  const Tensor b = bias != nullptr ? as_dtype(bias->value(), dtype) : Tensor();
  std::vector<std::int64_t> out_dims;
  for (int a = 0; a + 1 < sx.rank(); ++a) out_dims.push_back(sx[a]);
  out_dims.push_back(out);
  Tensor value = Tensor::empty(Shape{std::span<const std::int64_t>(out_dims)}, dtype, device);
  const Tensor value_rows = value.reshape(Shape{batch, out});
  const auto forward_rows = [&](std::int64_t begin, std::int64_t end) {
    const Tensor rows = value_rows.slice(begin, end);
    if (b.defined()) {  // the bias added as the product writes the rows
      ops::addmm(b, x_rows.slice(begin, end), w, rows, 1.0, Transpose::no, Transpose::yes);
    } else {
      ops::gemm(x_rows.slice(begin, end), w, rows, 1.0, 0.0, Transpose::no, Transpose::yes);
    }
  };
  // Each grain's rows get the bits they would get in a product of their own: one product per
  // grain, or one for all where the product's rows do not depend on its row count (bf16 on AMX:
  // fewer, larger products, the weight packed once).
  if (ops::gemm_rows_independent(dtype, device)) {
    forward_rows(0, batch);
  } else {
    for_each_grain(samples, [&](std::int64_t first, std::int64_t last) {
      forward_rows(first * per, last * per);
    });
  }

  const Variable bias_var = bias != nullptr ? *bias : Variable();
  auto make_backward = [&] {
    return [x, x_rows, weight, bias_var, w, samples, per, out](const Tensor& g_out) {
      const Tensor g = g_out.reshape(Shape{x_rows.shape()[0], out});
      Tensor gx = x.requires_grad() ? Tensor::empty_like(x_rows) : Tensor();
      // Parameter gradients in the master dtype, from products with f32 accumulation.
      Tensor gw = weight.requires_grad() ? Tensor::empty_like(weight.value()) : Tensor();
      const bool want_bias = bias_var.defined() && bias_var.requires_grad();
      Tensor gb =
          want_bias ? Tensor::empty(Shape{out}, bias_var.value().dtype(), g.device()) : Tensor();
      // dx = dy W: rows as in the forward pass (one product where rows are independent).
      const bool rows_independent = ops::gemm_rows_independent(g.dtype(), g.device());
      if (gx.defined() && rows_independent) ops::gemm(g, w, gx);
      for_each_grain(samples, [&](std::int64_t first, std::int64_t last) {
        const std::int64_t begin = first * per;
        const std::int64_t end = last * per;
        const Tensor g_rows = g.slice(begin, end);
        if (gx.defined() && !rows_independent) ops::gemm(g_rows, w, gx.slice(begin, end));
        if (gw.defined()) {  // dW = dy^T x, a sum over the grain's rows: grain by grain
          ops::gemm(g_rows, x_rows.slice(begin, end), gw, 1.0, 0.0, Transpose::yes, Transpose::no);
          Tape::accumulate_grain_grad(weight, gw, GrainScope::grain_index(first));
        }
        if (gb.defined()) {  // db: the column sums of dy, in the master dtype
          ops::bias_grad(g_rows, gb);
          Tape::accumulate_grain_grad(bias_var, gb, GrainScope::grain_index(first));
        }
      });
      if (gx.defined()) Tape::accumulate_grad(x, gx.reshape(x.value().shape()));
    };
  };
  if (bias != nullptr)
    return finish("linear", {&x, &weight, bias}, std::move(value), make_backward);
  return finish("linear", {&x, &weight}, std::move(value), make_backward);
}

}  // namespace

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  return linear_impl(x, weight, &bias);
}

Variable linear(const Variable& x, const Variable& weight) {
  return linear_impl(x, weight, nullptr);
}

namespace {

const char* binary_name(ops::BinaryOp op) {
  switch (op) {
    case ops::BinaryOp::add:
      return "add";
    case ops::BinaryOp::sub:
      return "sub";
    case ops::BinaryOp::mul:
      return "mul";
    case ops::BinaryOp::div:
      return "div";
    default:
      return "binary";
  }
}

// The gradient `grad` (of the broadcast shape) reduced to v's shape, then accumulated (handed
// over: an op's fresh result becomes v's first gradient without a copy).
void accumulate_reduced(const Variable& v, Tensor grad) {
  if (grad.shape() == v.value().shape()) {
    Tape::accumulate_grad(v, std::move(grad));
  } else {
    Tape::accumulate_grad(v, ops::sum_to(grad, v.value().shape()));
  }
}

Variable broadcasting_binary(ops::BinaryOp op, const Variable& a, const Variable& b) {
  const char* name = binary_name(op);
  check_defined(name, "a", a);
  check_defined(name, "b", b);
  check_same_kind(name, "a", a, "b", b);
  const bool same_shape = a.value().shape() == b.value().shape();
  if (!same_shape) {
    // Validates the shapes with a message naming both.
    (void)ops::broadcast_shape(a.value().shape(), b.value().shape());
  }
  Tensor value = same_shape ? ops::binary(op, a.value(), b.value())
                            : ops::broadcast_binary(op, a.value(), b.value());
  // div's gradient reads the output (shared, not modified afterwards).
  const Tensor y = op == ops::BinaryOp::div ? value : Tensor();
  auto make_backward = [&] {
    return [op, a, b, y](const Tensor& g) {
      const auto times = [](const Tensor& p, const Tensor& q) {
        return p.shape() == q.shape() ? ops::mul(p, q)
                                      : ops::broadcast_binary(ops::BinaryOp::mul, p, q);
      };
      const auto over = [](const Tensor& p, const Tensor& q) {
        return p.shape() == q.shape() ? ops::div(p, q)
                                      : ops::broadcast_binary(ops::BinaryOp::div, p, q);
      };
      switch (op) {
        case ops::BinaryOp::add:
          if (a.requires_grad()) accumulate_reduced(a, g);
          if (b.requires_grad()) accumulate_reduced(b, g);
          break;
        case ops::BinaryOp::sub:
          if (a.requires_grad()) accumulate_reduced(a, g);
          if (b.requires_grad()) accumulate_reduced(b, ops::neg(g));
          break;
        case ops::BinaryOp::mul:
          if (a.requires_grad()) accumulate_reduced(a, times(g, b.value()));
          if (b.requires_grad()) accumulate_reduced(b, times(g, a.value()));
          break;
        case ops::BinaryOp::div:  // d(a/b) = da / b - db * (a/b) / b
          if (a.requires_grad()) accumulate_reduced(a, over(g, b.value()));
          if (b.requires_grad()) accumulate_reduced(b, ops::neg(over(ops::mul(g, y), b.value())));
          break;
        default:
          break;
      }
    };
  };
  return finish(name, {&a, &b}, std::move(value), make_backward);
}

}  // namespace

Variable add(const Variable& a, const Variable& b) {
  return broadcasting_binary(ops::BinaryOp::add, a, b);
}
Variable sub(const Variable& a, const Variable& b) {
  return broadcasting_binary(ops::BinaryOp::sub, a, b);
}
Variable mul(const Variable& a, const Variable& b) {
  return broadcasting_binary(ops::BinaryOp::mul, a, b);
}
Variable div(const Variable& a, const Variable& b) {
  return broadcasting_binary(ops::BinaryOp::div, a, b);
}

Variable relu(const Variable& x) {
  check_defined("relu", "x", x);
  Tensor value = ops::relu(x.value());
  const Tensor y = value;  // the output's value, shared (it is not modified afterwards)
  return finish("relu", {&x}, std::move(value), [&] {
    return [x, y](const Tensor& g) {
      // relu'(x) = step(x), read off the output: y > 0 exactly where x > 0.
      Tape::accumulate_grad(x, ops::unary_mul(ops::UnaryOp::step, y, g));
    };
  });
}

Variable gelu(const Variable& x) {
  check_defined("gelu", "x", x);
  return finish("gelu", {&x}, ops::gelu(x.value()), [&] {
    return [x](const Tensor& g) {
      Tape::accumulate_grad(x, ops::unary_mul(ops::UnaryOp::gelu_grad, x.value(), g));
    };
  });
}

Variable tanh(const Variable& x) {
  check_defined("tanh", "x", x);
  Tensor value = ops::tanh(x.value());
  const Tensor y = value;
  return finish("tanh", {&x}, std::move(value), [&] {
    return [x, y](const Tensor& g) {
      // d tanh = 1 - y^2
      Tensor d = Tensor::empty_like(y);
      ops::fill(d, 1.0);
      ops::axpby(-1.0, ops::square(y), 1.0, d);
      Tape::accumulate_grad(x, ops::mul(g, d));
    };
  });
}

Variable sigmoid(const Variable& x) {
  check_defined("sigmoid", "x", x);
  Tensor value = ops::sigmoid(x.value());
  const Tensor y = value;
  return finish("sigmoid", {&x}, std::move(value), [&] {
    return [x, y](const Tensor& g) {
      // d sigmoid = y (1 - y)
      Tensor d = Tensor::empty_like(y);
      ops::fill(d, 1.0);
      ops::axpby(-1.0, y, 1.0, d);
      Tape::accumulate_grad(x, ops::mul(g, ops::mul(y, d)));
    };
  });
}

Variable exp(const Variable& x) {
  check_defined("exp", "x", x);
  Tensor value = ops::exp(x.value());
  const Tensor y = value;
  return finish("exp", {&x}, std::move(value), [&] {
    return [x, y](const Tensor& g) { Tape::accumulate_grad(x, ops::mul(g, y)); };
  });
}

Variable log(const Variable& x) {
  check_defined("log", "x", x);
  return finish("log", {&x}, ops::log(x.value()), [&] {
    return [x](const Tensor& g) { Tape::accumulate_grad(x, ops::div(g, x.value())); };
  });
}

Variable cast(const Variable& x, DType dtype) {
  check_defined("cast", "x", x);
  TENAX_EXPECTS(
      is_floating(dtype), UsageError,
      "autodiff::cast: target dtype " + std::string(to_string(dtype)) + " is not a floating dtype",
      "cast to f64, f32, f16 or bf16");
  return finish("cast", {&x}, ops::cast(x.value(), dtype), [&] {
    return [x](const Tensor& g) { Tape::accumulate_grad(x, ops::cast(g, x.value().dtype())); };
  });
}

Variable scale(const Variable& x, double c) {
  check_defined("scale", "x", x);
  return finish("scale", {&x}, scaled(x.value(), c), [&] {
    return [x, c](const Tensor& g) { Tape::accumulate_grad(x, scaled(g, c)); };
  });
}

Variable sum(const Variable& x) {
  check_defined("sum", "x", x);
  return finish("sum", {&x}, scalar_like(x.value(), ops::sum(x.value())), [&] {
    return [x](const Tensor& g) {
      const Tensor& v = x.value();
      Tape::accumulate_grad(x, filled(v.shape(), v.dtype(), v.device(), scalar_value(g)));
    };
  });
}

Variable mean(const Variable& x) {
  check_defined("mean", "x", x);
  const std::int64_t n = x.value().numel();
  TENAX_EXPECTS(n > 0, UsageError,
                "autodiff::mean: x has shape " + shape_of(x) + " with no elements",
                "take the mean of a non-empty tensor");
  const double inv_n = 1.0 / static_cast<double>(n);
  return finish("mean", {&x}, scalar_like(x.value(), ops::sum(x.value()) * inv_n), [&] {
    return [x, inv_n](const Tensor& g) {
      const Tensor& v = x.value();
      Tape::accumulate_grad(x, filled(v.shape(), v.dtype(), v.device(), scalar_value(g) * inv_n));
    };
  });
}

namespace {

// The divisor of a loss: options.divisor, or `mean_count` for the default mean.
double loss_divisor(const char* op, const LossOptions& options, std::int64_t mean_count) {
  TENAX_EXPECTS(options.divisor >= 0 && std::isfinite(options.divisor), UsageError,
                std::string("autodiff::") + op + ": LossOptions::divisor is " +
                    std::to_string(options.divisor),
                "use 0 for the mean, or the number of samples (elements) of the global batch");
  return options.divisor > 0 ? options.divisor : static_cast<double>(mean_count);
}

// Sum over the grains of the rows of `terms` (rows on dim 0) of term_sum(grain rows), each added
// to the GrainScope's loss sum, in order.
template <typename GrainSum>
double sum_over_grains(std::int64_t rows, GrainSum&& grain_sum) {
  double total = 0;
  for_each_grain(rows, [&](std::int64_t begin, std::int64_t end) {
    const double part = grain_sum(begin, end);
    GrainScope::add_loss(part);
    total += part;
  });
  return total;
}

}  // namespace

Variable mse_loss(const Variable& pred, const Variable& target, const LossOptions& options) {
  check_defined("mse_loss", "pred", pred);
  check_defined("mse_loss", "target", target);
  check_same_device("mse_loss", "pred", pred, "target", target);
  TENAX_EXPECTS(pred.value().shape() == target.value().shape(), UsageError,
                "autodiff::mse_loss: pred has shape " + shape_of(pred) + " but target has shape " +
                    shape_of(target),
                "give the target the shape of the prediction (e.g. [batch, out])");
  const std::int64_t n = pred.value().numel();
  TENAX_EXPECTS(n > 0, UsageError,
                "autodiff::mse_loss: pred has shape " + shape_of(pred) + " with no elements",
                "pass a non-empty batch");
  const double divisor = loss_divisor("mse_loss", options, n);
  const DType dtype = loss_dtype(pred.value().dtype(), target.value().dtype());
  const Tensor diff = ops::sub(as_dtype(pred.value(), dtype), as_dtype(target.value(), dtype));
  const std::int64_t rows = pred.value().shape().rank() > 0 ? pred.value().shape()[0] : 1;
  const Tensor diff_rows = pred.value().shape().rank() > 0 ? diff : diff.reshape(Shape{1});
  const double total = sum_over_grains(rows, [&](std::int64_t begin, std::int64_t end) {
    const Tensor part = diff_rows.slice(begin, end);
    return ops::dot(part, part);
  });
  return finish("mse_loss", {&pred, &target}, scalar_like(diff, total / divisor), [&] {
    return [pred, target, diff, divisor](const Tensor& g) {
      // d/d pred = 2 (pred - target) / divisor, d/d target = the negative; computed in the
      // loss dtype and rounded once to the operand's dtype.
      const double c = 2.0 * scalar_value(g) / divisor;
      if (pred.requires_grad()) {
        Tape::accumulate_grad(pred, as_dtype(scaled(diff, c), pred.value().dtype()));
      }
      if (target.requires_grad()) {
        Tape::accumulate_grad(target, as_dtype(scaled(diff, -c), target.value().dtype()));
      }
    };
  });
}

Variable cross_entropy(const Variable& logits, const Tensor& labels, const LossOptions& options) {
  check_defined("cross_entropy", "logits", logits);
  const Shape& shape = logits.value().shape();
  const int r = shape.rank();
  TENAX_EXPECTS(r >= 2 && shape[0] > 0 && shape[r - 1] > 0, UsageError,
                "autodiff::cross_entropy: logits have shape " + to_string(shape),
                "pass logits of shape [batch, classes] (or [batch, positions, classes]) with "
                "batch, classes >= 1");
  std::vector<std::int64_t> label_dims;
  for (int a = 0; a + 1 < r; ++a) label_dims.push_back(shape[a]);
  const Shape label_shape{std::span<const std::int64_t>(label_dims)};
  TENAX_EXPECTS(
      labels.defined() && labels.dtype() == DType::i64 && labels.shape() == label_shape &&
          labels.device() == logits.value().device(),
      UsageError,
      "autodiff::cross_entropy: labels are " +
          (labels.defined() ? labels.describe() : std::string("undefined")) + " for logits " +
          logits.value().describe(),
      "pass i64 class indices of shape " + to_string(label_shape) + " on the logits' device");
  // Rows [batch * per, classes]: `per` positions of each sample, grains in samples.
  const std::int64_t classes = shape[r - 1];
  const std::int64_t samples = shape[0];
  const std::int64_t rows = logits.value().numel() / classes;
  const std::int64_t per = rows / samples;
  const Tensor logit_rows = logits.value().reshape(Shape{rows, classes});
  const Tensor label_rows = labels.reshape(Shape{rows});
  const double divisor = loss_divisor("cross_entropy", options, rows);
  const DType dtype = loss_dtype(logits.value().dtype(), logits.value().dtype());
  Tensor losses = Tensor::empty(Shape{rows}, dtype, logits.value().device());
  ops::softmax_cross_entropy(logit_rows, label_rows, losses);
  const double total = sum_over_grains(samples, [&](std::int64_t first, std::int64_t last) {
    return ops::sum(losses.slice(first * per, last * per));
  });
  return finish("cross_entropy", {&logits}, scalar_like(losses, total / divisor), [&] {
    return [logits, logit_rows, label_rows, divisor](const Tensor& g) {
      Tensor grad = Tensor::empty_like(logit_rows);
      ops::softmax_cross_entropy_grad(logit_rows, label_rows, scalar_value(g) / divisor, grad);
      Tape::accumulate_grad(logits, grad.reshape(logits.value().shape()));
    };
  });
}

}  // namespace tenax::train::autodiff
