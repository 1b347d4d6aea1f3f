#include <initializer_list>
#include <string>
#include <utility>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_linalg.hpp"
#include "tenax/solvers/autodiff/ops.hpp"

namespace tenax::solvers::autodiff {
namespace {

using ops::Transpose;

std::string shape_of(const Variable& v) { return to_string(v.value().shape()); }

void check_defined(const char* op, const char* name, const Variable& v) {
  TENAX_EXPECTS(v.defined(), UsageError,
                std::string("autodiff::") + op + ": " + name + " is an undefined Variable",
                "pass a Variable made by Variable::parameter/constant or by an op");
  TENAX_EXPECTS(is_floating(v.value().dtype()), UsageError,
                std::string("autodiff::") + op + ": " + name + " is " + v.value().describe() +
                    ", not of a floating dtype",
                "cast it to f64 or f32 first (ops::cast)");
}

void check_same_kind(const char* op, const char* name_a, const Variable& a, const char* name_b,
                     const Variable& b) {
  TENAX_EXPECTS(a.value().dtype() == b.value().dtype() && a.value().device() == b.value().device(),
                UsageError,
                std::string("autodiff::") + op + ": " + name_a + " is " + a.value().describe() +
                    " but " + name_b + " is " + b.value().describe(),
                "convert both to one dtype and device (ops::cast, Tensor::to)");
}

void check_same_shape(const char* op, const Variable& a, const Variable& b) {
  check_defined(op, "a", a);
  check_defined(op, "b", b);
  check_same_kind(op, "a", a, "b", b);
  TENAX_EXPECTS(a.value().shape() == b.value().shape(), UsageError,
                std::string("autodiff::") + op + ": a has shape " + shape_of(a) +
                    " but b has shape " + shape_of(b) + "; element-wise ops need one shape",
                "reshape or slice the operands to one shape (there is no broadcasting)");
}

// Whether an op with these inputs records a node.
bool records(std::initializer_list<const Variable*> inputs) {
  if (!Tape::recording()) return false;
  for (const Variable* v : inputs) {
    if (v->requires_grad()) return true;
  }
  return false;
}

Tensor filled(const Shape& shape, DType dtype, Device device, double value) {
  Tensor t = Tensor::empty(shape, dtype, device);
  ops::fill(t, value);
  return t;
}

Tensor scalar_like(const Tensor& like, double value) {
  return filled(Shape{}, like.dtype(), like.device(), value);
}

// Value of a single-element gradient on the host (sum of one element is that element, exactly).
double scalar_value(const Tensor& grad) { return ops::sum(grad); }

// A copy of t scaled by c.
Tensor scaled(const Tensor& t, double c) {
  Tensor out = t.clone();
  ops::scale(c, out);
  return out;
}

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
  Tensor value = ops::matmul(a.value(), b.value());
  if (!records({&a, &b})) return Variable::constant(std::move(value));
  return Tape::record(std::move(value), [a, b](const Tensor& g) {
    if (a.requires_grad()) {  // dA = dC B^T
      Tensor ga = Tensor::empty_like(a.value());
      ops::gemm(g, b.value(), ga, 1.0, 0.0, Transpose::no, Transpose::yes);
      Tape::accumulate_grad(a, ga);
    }
    if (b.requires_grad()) {  // dB = A^T dC
      Tensor gb = Tensor::empty_like(b.value());
      ops::gemm(a.value(), g, gb, 1.0, 0.0, Transpose::yes, Transpose::no);
      Tape::accumulate_grad(b, gb);
    }
  });
}

namespace {

Variable linear_impl(const Variable& x, const Variable& weight, const Variable* bias) {
  check_defined("linear", "x", x);
  check_defined("linear", "weight", weight);
  check_same_kind("linear", "x", x, "weight", weight);
  const Shape& sx = x.value().shape();
  const Shape& sw = weight.value().shape();
  TENAX_EXPECTS(sx.rank() == 2 && sw.rank() == 2 && sx[1] == sw[1], UsageError,
                "autodiff::linear: x has shape " + to_string(sx) + " and weight has shape " +
                    to_string(sw) + "; they must be [batch, in] and [out, in]",
                "store the weight as [out, in] (PyTorch nn.Linear layout) and batch the input "
                "as [batch, in]");
  const std::int64_t batch = sx[0];
  const std::int64_t out = sw[0];
  const DType dtype = x.value().dtype();
  const Device device = x.value().device();
  if (bias != nullptr) {
    check_defined("linear", "bias", *bias);
    check_same_kind("linear", "x", x, "bias", *bias);
    TENAX_EXPECTS(bias->value().shape() == Shape{out}, UsageError,
                  "autodiff::linear: bias has shape " + shape_of(*bias) + " but weight has shape " +
                      to_string(sw) + "; bias must be [" + std::to_string(out) + "]",
                  "give the bias one element per output feature");
  }

  Tensor value = Tensor::empty(Shape{batch, out}, dtype, device);
  double beta = 0.0;
  if (bias != nullptr) {
    // Broadcast the bias over rows with a rank-1 product ones[batch, 1] * bias[1, out]: exact
    // (each element is 1 * b_j), and it needs no op beyond gemm.
    const Tensor ones = filled(Shape{batch, 1}, dtype, device, 1.0);
    ops::gemm(ones, bias->value().reshape(Shape{1, out}), value);
    beta = 1.0;
  }
  ops::gemm(x.value(), weight.value(), value, 1.0, beta, Transpose::no, Transpose::yes);

  const Variable b = bias != nullptr ? *bias : Variable();
  const bool needs = bias != nullptr ? records({&x, &weight, bias}) : records({&x, &weight});
  if (!needs) return Variable::constant(std::move(value));
  return Tape::record(std::move(value), [x, weight, b](const Tensor& g) {
    if (x.requires_grad()) {  // dx = dy W: [batch, out] [out, in]
      Tensor gx = Tensor::empty_like(x.value());
      ops::gemm(g, weight.value(), gx);
      Tape::accumulate_grad(x, gx);
    }
    if (weight.requires_grad()) {  // dW = dy^T x: [out, batch] [batch, in]
      Tensor gw = Tensor::empty_like(weight.value());
      ops::gemm(g, x.value(), gw, 1.0, 0.0, Transpose::yes, Transpose::no);
      Tape::accumulate_grad(weight, gw);
    }
    if (b.defined() && b.requires_grad()) {  // db = dy^T ones: column sums of dy
      const std::int64_t rows = g.shape()[0];
      const std::int64_t cols = g.shape()[1];
      const Tensor ones = filled(Shape{rows, 1}, g.dtype(), g.device(), 1.0);
      Tensor gb = Tensor::empty(Shape{cols, 1}, g.dtype(), g.device());
      ops::gemm(g, ones, gb, 1.0, 0.0, Transpose::yes, Transpose::no);
      Tape::accumulate_grad(b, gb.reshape(Shape{cols}));
    }
  });
}

}  // namespace

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  return linear_impl(x, weight, &bias);
}

Variable linear(const Variable& x, const Variable& weight) {
  return linear_impl(x, weight, nullptr);
}

Variable add(const Variable& a, const Variable& b) {
  check_same_shape("add", a, b);
  Tensor value = ops::add(a.value(), b.value());
  if (!records({&a, &b})) return Variable::constant(std::move(value));
  return Tape::record(std::move(value), [a, b](const Tensor& g) {
    Tape::accumulate_grad(a, g);
    Tape::accumulate_grad(b, g);
  });
}

Variable sub(const Variable& a, const Variable& b) {
  check_same_shape("sub", a, b);
  Tensor value = ops::sub(a.value(), b.value());
  if (!records({&a, &b})) return Variable::constant(std::move(value));
  return Tape::record(std::move(value), [a, b](const Tensor& g) {
    Tape::accumulate_grad(a, g);
    if (b.requires_grad()) Tape::accumulate_grad(b, ops::neg(g));
  });
}

Variable mul(const Variable& a, const Variable& b) {
  check_same_shape("mul", a, b);
  Tensor value = ops::mul(a.value(), b.value());
  if (!records({&a, &b})) return Variable::constant(std::move(value));
  return Tape::record(std::move(value), [a, b](const Tensor& g) {
    if (a.requires_grad()) Tape::accumulate_grad(a, ops::mul(g, b.value()));
    if (b.requires_grad()) Tape::accumulate_grad(b, ops::mul(g, a.value()));
  });
}

Variable relu(const Variable& x) {
  check_defined("relu", "x", x);
  Tensor value = ops::relu(x.value());
  if (!records({&x})) return Variable::constant(std::move(value));
  const Tensor y = value;  // the output's value, shared (it is not modified afterwards)
  return Tape::record(std::move(value), [x, y](const Tensor& g) {
    // relu'(x) = step(x), read off the output: y > 0 exactly where x > 0.
    const Tensor mask = ops::step(y);
    Tape::accumulate_grad(x, ops::mul(g, mask));
  });
}

Variable tanh(const Variable& x) {
  check_defined("tanh", "x", x);
  Tensor value = ops::tanh(x.value());
  if (!records({&x})) return Variable::constant(std::move(value));
  const Tensor y = value;
  return Tape::record(std::move(value), [x, y](const Tensor& g) {
    // d tanh = 1 - y^2
    Tensor d = Tensor::empty_like(y);
    ops::fill(d, 1.0);
    ops::axpby(-1.0, ops::square(y), 1.0, d);
    Tape::accumulate_grad(x, ops::mul(g, d));
  });
}

Variable sigmoid(const Variable& x) {
  check_defined("sigmoid", "x", x);
  Tensor value = ops::sigmoid(x.value());
  if (!records({&x})) return Variable::constant(std::move(value));
  const Tensor y = value;
  return Tape::record(std::move(value), [x, y](const Tensor& g) {
    // d sigmoid = y (1 - y)
    Tensor d = Tensor::empty_like(y);
    ops::fill(d, 1.0);
    ops::axpby(-1.0, y, 1.0, d);
    Tape::accumulate_grad(x, ops::mul(g, ops::mul(y, d)));
  });
}

Variable scale(const Variable& x, double c) {
  check_defined("scale", "x", x);
  Tensor value = scaled(x.value(), c);
  if (!records({&x})) return Variable::constant(std::move(value));
  return Tape::record(std::move(value),
                      [x, c](const Tensor& g) { Tape::accumulate_grad(x, scaled(g, c)); });
}

Variable sum(const Variable& x) {
  check_defined("sum", "x", x);
  Tensor value = scalar_like(x.value(), ops::sum(x.value()));
  if (!records({&x})) return Variable::constant(std::move(value));
  return Tape::record(std::move(value), [x](const Tensor& g) {
    const Tensor& v = x.value();
    Tape::accumulate_grad(x, filled(v.shape(), v.dtype(), v.device(), scalar_value(g)));
  });
}

Variable mean(const Variable& x) {
  check_defined("mean", "x", x);
  const std::int64_t n = x.value().numel();
  TENAX_EXPECTS(n > 0, UsageError,
                "autodiff::mean: x has shape " + shape_of(x) + " with no elements",
                "take the mean of a non-empty tensor");
  const double inv_n = 1.0 / static_cast<double>(n);
  Tensor value = scalar_like(x.value(), ops::sum(x.value()) * inv_n);
  if (!records({&x})) return Variable::constant(std::move(value));
  return Tape::record(std::move(value), [x, inv_n](const Tensor& g) {
    const Tensor& v = x.value();
    Tape::accumulate_grad(x, filled(v.shape(), v.dtype(), v.device(), scalar_value(g) * inv_n));
  });
}

Variable mse_loss(const Variable& pred, const Variable& target) {
  check_defined("mse_loss", "pred", pred);
  check_defined("mse_loss", "target", target);
  check_same_kind("mse_loss", "pred", pred, "target", target);
  TENAX_EXPECTS(pred.value().shape() == target.value().shape(), UsageError,
                "autodiff::mse_loss: pred has shape " + shape_of(pred) + " but target has shape " +
                    shape_of(target),
                "give the target the shape of the prediction (e.g. [batch, out])");
  const std::int64_t n = pred.value().numel();
  TENAX_EXPECTS(n > 0, UsageError,
                "autodiff::mse_loss: pred has shape " + shape_of(pred) + " with no elements",
                "pass a non-empty batch");
  const double inv_n = 1.0 / static_cast<double>(n);
  const Tensor diff = ops::sub(pred.value(), target.value());
  Tensor value = scalar_like(diff, ops::dot(diff, diff) * inv_n);
  if (!records({&pred, &target})) return Variable::constant(std::move(value));
  return Tape::record(std::move(value), [pred, target, diff, inv_n](const Tensor& g) {
    // d/d pred = 2 (pred - target) / n, d/d target = the negative.
    const double c = 2.0 * scalar_value(g) * inv_n;
    if (pred.requires_grad()) Tape::accumulate_grad(pred, scaled(diff, c));
    if (target.requires_grad()) Tape::accumulate_grad(target, scaled(diff, -c));
  });
}

}  // namespace tenax::solvers::autodiff
