#include "tenax/train/autodiff/layer_ops.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autodiff/op_support.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_linalg.hpp"
#include "tenax/kernels/ops_nn.hpp"
#include "tenax/kernels/ops_shape.hpp"
#include "tenax/runtime/step_notices.hpp"
#include "tenax/train/autodiff/grain.hpp"
#include "tenax/train/autodiff/ops.hpp"

namespace tenax::train::autodiff {
namespace {

using namespace op_support;
using ops::Transpose;

// A softmax-like op: the value from `forward`, the gradient from the output through `grad`.
template <class Forward, class Grad>
Variable softmax_family(const char* op, const Variable& x, int axis, Forward&& forward,
                        Grad&& grad) {
  check_defined(op, "x", x);
  Tensor value = Tensor::empty_like(x.value());
  forward(x.value(), value);
  const Tensor y = value;  // the output, shared (not modified afterwards)
  return finish(op, {&x}, std::move(value), [&] {
    return [x, y, axis, grad](const Tensor& g) {
      Tensor dx = Tensor::empty_like(y);
      grad(y, g, axis, dx);
      Tape::accumulate_grad(x, std::move(dx));
    };
  });
}

// Samples and rows per sample of x [batch, ..., d] viewed as [rows, d].
struct Batch {
  std::int64_t samples;
  std::int64_t rows_per_sample;
};

Batch batch_of(const Tensor& x, std::int64_t d) {
  const std::int64_t samples = x.shape().rank() >= 2 ? x.shape()[0] : 1;
  const std::int64_t rows = d == 0 ? 0 : x.numel() / d;
  return {samples, samples == 0 ? 0 : rows / samples};
}

// The compute dtype of x: f64 for f64, f32 otherwise (master weights and row statistics).
DType compute_dtype(DType dtype) { return dtype == DType::f64 ? DType::f64 : DType::f32; }

}  // namespace

Variable softmax(const Variable& x, int axis) {
  return softmax_family(
      "softmax", x, axis,
      [axis](const Tensor& in, const Tensor& out) { ops::softmax(in, axis, out); },
      [](const Tensor& y, const Tensor& g, int a, const Tensor& dx) {
        ops::softmax_grad(y, g, a, dx);
      });
}

Variable log_softmax(const Variable& x, int axis) {
  return softmax_family(
      "log_softmax", x, axis,
      [axis](const Tensor& in, const Tensor& out) { ops::log_softmax(in, axis, out); },
      [](const Tensor& y, const Tensor& g, int a, const Tensor& dx) {
        ops::log_softmax_grad(y, g, a, dx);
      });
}

Variable causal_softmax(const Variable& x) {
  return softmax_family(
      "causal_softmax", x, -1,
      [](const Tensor& in, const Tensor& out) { ops::causal_softmax(in, out); },
      [](const Tensor& y, const Tensor& g, int a, const Tensor& dx) {
        ops::softmax_grad(y, g, a, dx);
      });
}

Variable gelu(const Variable& x, GeluApproximation approximation) {
  if (approximation == GeluApproximation::none) return gelu(x);
  TENAX_EXPECTS(approximation == GeluApproximation::tanh, UsageError,
                "autodiff::gelu: unknown GeluApproximation " +
                    std::to_string(static_cast<int>(approximation)),
                "pass GeluApproximation::none or GeluApproximation::tanh");
  check_defined("gelu_tanh", "x", x);
  return finish("gelu_tanh", {&x}, ops::gelu_tanh(x.value()), [&] {
    return [x](const Tensor& g) {
      Tape::accumulate_grad(x, ops::unary_mul(ops::UnaryOp::gelu_tanh_grad, x.value(), g));
    };
  });
}

Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps) {
  check_defined("layer_norm", "x", x);
  const Tensor& xv = x.value();
  TENAX_EXPECTS(xv.shape().rank() >= 1, UsageError,
                "autodiff::layer_norm: x is " + xv.describe() + ", a scalar",
                "pass x of shape [batch, ..., d]");
  const std::int64_t d = xv.shape()[xv.shape().rank() - 1];
  const DType master = compute_dtype(xv.dtype());
  for (const auto& [name, v] :
       {std::pair<const char*, const Variable*>{"weight", &weight}, {"bias", &bias}}) {
    if (!v->defined()) continue;
    TENAX_EXPECTS(v->value().dtype() == master && v->value().shape() == Shape{d} &&
                      v->value().device() == xv.device(),
                  UsageError,
                  std::string("autodiff::layer_norm: ") + name + " is " + v->value().describe() +
                      " for x " + xv.describe(),
                  std::string("pass ") + name + " of shape [" + std::to_string(d) + "] in " +
                      std::string(to_string(master)) + " on x's device (f32 master weights for " +
                      "f32, f16 and bf16 x; f64 for f64), or an undefined Variable for none");
  }
  const Batch batch = batch_of(xv, d);
  const std::int64_t rows = batch.samples * batch.rows_per_sample;
  Tensor value = Tensor::empty_like(xv);
  const Tensor mean = Tensor::empty(Shape{rows}, master, xv.device());
  const Tensor rstd = Tensor::empty(Shape{rows}, master, xv.device());
  const Tensor w = weight.defined() ? weight.value() : Tensor();
  const Tensor b = bias.defined() ? bias.value() : Tensor();
  ops::layer_norm(xv, w, b, eps, value, mean, rstd);
  if (weight.defined() && bias.defined()) {
    return finish("layer_norm", {&x, &weight, &bias}, std::move(value), [&] {
      return [x, weight, bias, mean, rstd, batch, d](const Tensor& g) {
        const Tensor& xv = x.value();
        if (x.requires_grad()) {
          Tensor dx = Tensor::empty_like(xv);
          ops::layer_norm_grad_input(g, xv, weight.value(), mean, rstd, dx);
          Tape::accumulate_grad(x, std::move(dx));
        }
        const bool want_w = weight.requires_grad();
        const bool want_b = bias.requires_grad();
        if (!want_w && !want_b) return;
        // Grain by grain: each grain's rows summed in order, then handed to the scope.
        const std::int64_t per = batch.rows_per_sample;
        const Tensor g_rows = g.reshape(Shape{batch.samples * per, d});
        const Tensor x_rows = xv.reshape(Shape{batch.samples * per, d});
        for_each_grain(batch.samples, [&](std::int64_t begin, std::int64_t end) {
          Tensor dw = want_w ? Tensor::empty_like(weight.value()) : Tensor();
          Tensor db = want_b ? Tensor::empty_like(bias.value()) : Tensor();
          ops::layer_norm_grad_params(
              g_rows.slice(begin * per, end * per), x_rows.slice(begin * per, end * per),
              mean.slice(begin * per, end * per), rstd.slice(begin * per, end * per), dw, db);
          const std::int64_t grain = GrainScope::grain_index(begin);
          if (want_w) Tape::accumulate_grain_grad(weight, dw, grain);
          if (want_b) Tape::accumulate_grain_grad(bias, db, grain);
        });
      };
    });
  }
  TENAX_EXPECTS(!weight.defined() && !bias.defined(), UsageError,
                "autodiff::layer_norm: only one of weight and bias is given",
                "pass both (elementwise_affine) or neither");
  return finish("layer_norm", {&x}, std::move(value), [&] {
    return [x, mean, rstd](const Tensor& g) {
      Tensor dx = Tensor::empty_like(x.value());
      ops::layer_norm_grad_input(g, x.value(), Tensor(), mean, rstd, dx);
      Tape::accumulate_grad(x, std::move(dx));
    };
  });
}

Variable embedding(const Variable& weight, const Tensor& indices) {
  check_defined("embedding", "weight", weight);
  const Tensor& table = weight.value();
  TENAX_EXPECTS(table.shape().rank() == 2, UsageError,
                "autodiff::embedding: the table is " + table.describe(), "pass a table [vocab, d]");
  TENAX_EXPECTS(indices.defined() && indices.shape().rank() >= 1, UsageError,
                "autodiff::embedding: indices are " +
                    (indices.defined() ? indices.describe() : std::string("undefined")),
                "pass i64 token ids of shape [batch, ...]");
  std::vector<std::int64_t> dims;
  for (int a = 0; a < indices.shape().rank(); ++a) dims.push_back(indices.shape()[a]);
  const std::int64_t d = table.shape()[1];
  dims.push_back(d);
  Tensor value =
      Tensor::empty(Shape{std::span<const std::int64_t>(dims)}, table.dtype(), table.device());
  ops::embedding(table, indices, value);
  return finish("embedding", {&weight}, std::move(value), [&] {
    return [weight, indices, d](const Tensor& g) {
      const std::int64_t samples = indices.shape()[0];
      const std::int64_t per = samples == 0 ? 0 : indices.numel() / samples;
      const Tensor index_rows = indices.reshape(Shape{samples, per});
      const Tensor g_rows = g.reshape(Shape{samples, per, d});
      for_each_grain(samples, [&](std::int64_t begin, std::int64_t end) {
        Tensor dw = Tensor::empty_like(weight.value());
        ops::embedding_grad(index_rows.slice(begin, end), g_rows.slice(begin, end), dw);
        Tape::accumulate_grain_grad(weight, dw, GrainScope::grain_index(begin));
      });
    };
  });
}

Variable dropout(const Variable& x, double p, std::uint64_t seed, std::uint32_t stream) {
  check_defined("dropout", "x", x);
  const ops::DropoutKey key{seed, stream, static_cast<std::uint32_t>(runtime::current_step()),
                            GrainScope::row_offset()};
  Tensor value = Tensor::empty_like(x.value());
  ops::dropout(x.value(), p, key, value);
  return finish("dropout", {&x}, std::move(value), [&] {
    return [x, p, key](const Tensor& g) {
      Tensor dx = Tensor::empty_like(g);
      ops::dropout(g, p, key, dx);  // the same mask, the same scale
      Tape::accumulate_grad(x, std::move(dx));
    };
  });
}

Variable batched_matmul(const Variable& a, const Variable& b, Transpose transpose_b, double alpha) {
  check_defined("batched_matmul", "a", a);
  check_defined("batched_matmul", "b", b);
  check_same_kind("batched_matmul", "a", a, "b", b);
  const Shape& sa = a.value().shape();
  const Shape& sb = b.value().shape();
  const int r = sa.rank();
  bool leading_equal = r >= 2 && sb.rank() == r;
  std::int64_t count = 1;
  for (int i = 0; leading_equal && i + 2 < r; ++i) {
    leading_equal = sa[i] == sb[i];
    count *= sa[i];
  }
  const bool tb = transpose_b == Transpose::yes;
  const std::int64_t m = leading_equal ? sa[r - 2] : 0;
  const std::int64_t k = leading_equal ? sa[r - 1] : 0;
  const std::int64_t n = leading_equal ? (tb ? sb[r - 2] : sb[r - 1]) : 0;
  TENAX_EXPECTS(leading_equal && (tb ? sb[r - 1] : sb[r - 2]) == k, UsageError,
                "autodiff::batched_matmul: a has shape " + to_string(sa) + " and b has shape " +
                    to_string(sb) + (tb ? " (used transposed)" : ""),
                "pass a [..., m, k] and b [..., k, n] (or [..., n, k] with Transpose::yes) with "
                "the same leading axes");
  std::vector<std::int64_t> dims;
  for (int i = 0; i < r; ++i) dims.push_back(i == r - 1 ? n : sa[i]);
  const Shape out_shape{std::span<const std::int64_t>(dims)};
  const DType dtype = a.value().dtype();
  const Device device = a.value().device();
  Tensor value = Tensor::empty(out_shape, dtype, device);
  const auto matrices = [count](const Tensor& t, std::int64_t rows, std::int64_t cols) {
    return t.reshape(Shape{count, rows, cols});
  };
  {
    const Tensor A = matrices(a.value(), m, k);
    const Tensor B = tb ? matrices(b.value(), n, k) : matrices(b.value(), k, n);
    ops::gemm_batched(A, B, matrices(value, m, n), alpha, 0.0, Transpose::no, transpose_b);
  }
  return finish("batched_matmul", {&a, &b}, std::move(value), [&] {
    return [a, b, tb, alpha, m, k, n, matrices](const Tensor& g) {
      const Tensor G = matrices(g, m, n);
      const Tensor A = matrices(a.value(), m, k);
      const Tensor B = tb ? matrices(b.value(), n, k) : matrices(b.value(), k, n);
      if (a.requires_grad()) {  // dA = alpha dC op(B)^T
        Tensor ga = Tensor::empty_like(a.value());
        ops::gemm_batched(G, B, matrices(ga, m, k), alpha, 0.0, Transpose::no,
                          tb ? Transpose::no : Transpose::yes);
        Tape::accumulate_grad(a, std::move(ga));  // the view above is gone: ga is adopted
      }
      if (b.requires_grad()) {  // dB = alpha A^T dC, or (dC^T A) for b used transposed
        Tensor gb = Tensor::empty_like(b.value());
        {  // the view goes before gb is handed over (then it is adopted, not copied)
          const Tensor GB = tb ? matrices(gb, n, k) : matrices(gb, k, n);
          if (tb) {
            ops::gemm_batched(G, A, GB, alpha, 0.0, Transpose::yes, Transpose::no);
          } else {
            ops::gemm_batched(A, G, GB, alpha, 0.0, Transpose::yes, Transpose::no);
          }
        }
        Tape::accumulate_grad(b, std::move(gb));
      }
    };
  });
}

Variable reshape(const Variable& x, const Shape& shape) {
  check_defined("reshape", "x", x);
  TENAX_EXPECTS(shape.numel() == x.value().numel(), UsageError,
                "autodiff::reshape: x has shape " + shape_of(x) + " (" +
                    std::to_string(x.value().numel()) + " elements) but the new shape " +
                    to_string(shape) + " holds " + std::to_string(shape.numel()),
                "pass a shape with the same element count");
  return finish("reshape", {&x}, x.value().reshape(shape), [&] {
    return [x](const Tensor& g) { Tape::accumulate_grad(x, g.reshape(x.value().shape())); };
  });
}

Variable permute(const Variable& x, const std::vector<int>& dims) {
  check_defined("permute", "x", x);
  Tensor value = ops::permute(x.value(), dims);  // checks dims
  const int r = x.value().shape().rank();
  std::vector<int> inverse(static_cast<std::size_t>(r));
  for (int i = 0; i < r; ++i) {
    const int axis = dims[static_cast<std::size_t>(i)] < 0 ? dims[static_cast<std::size_t>(i)] + r
                                                           : dims[static_cast<std::size_t>(i)];
    inverse[static_cast<std::size_t>(axis)] = i;
  }
  return finish("permute", {&x}, std::move(value), [&] {
    return [x, inverse](const Tensor& g) { Tape::accumulate_grad(x, ops::permute(g, inverse)); };
  });
}

Variable narrow(const Variable& x, int axis, std::int64_t begin, std::int64_t end) {
  check_defined("narrow", "x", x);
  Tensor value = ops::narrow(x.value(), axis, begin, end);  // checks axis and bounds
  const int r = x.value().shape().rank();
  const int a = axis < 0 ? axis + r : axis;
  return finish("narrow", {&x}, std::move(value), [&] {
    return
        [x, a, begin, end](const Tensor& g) { Tape::accumulate_grad_range(x, a, begin, end, g); };
  });
}

}  // namespace tenax::train::autodiff
