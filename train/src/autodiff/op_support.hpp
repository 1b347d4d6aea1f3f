// What every differentiable op of this layer does the same way: check its operands, finish with
// the anomaly scan and a recorded node (or a constant), and the small tensor helpers of their
// backward closures. Internal to train/src/autodiff (ops.cpp, layer_ops.cpp).
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "detail/anomaly_scan.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/anomaly.hpp"
#include "tenax/train/autodiff/variable.hpp"

namespace tenax::train::autodiff::op_support {

inline std::string shape_of(const Variable& v) { return to_string(v.value().shape()); }

inline void check_defined(const char* op, const char* name, const Variable& v) {
  TENAX_EXPECTS(v.defined(), UsageError,
                std::string("autodiff::") + op + ": " + name + " is an undefined Variable",
                "pass a Variable made by Variable::parameter/constant or by an op");
  TENAX_EXPECTS(is_floating(v.value().dtype()), UsageError,
                std::string("autodiff::") + op + ": " + name + " is " + v.value().describe() +
                    ", not of a floating dtype",
                "cast it to f64 or f32 first (ops::cast)");
}

inline void check_same_device(const char* op, const char* name_a, const Variable& a,
                              const char* name_b, const Variable& b) {
  TENAX_EXPECTS(a.value().device() == b.value().device(), UsageError,
                std::string("autodiff::") + op + ": " + name_a + " is " + a.value().describe() +
                    " but " + name_b + " is " + b.value().describe(),
                "move both to one device (Tensor::to)");
}

inline void check_same_kind(const char* op, const char* name_a, const Variable& a,
                            const char* name_b, const Variable& b) {
  TENAX_EXPECTS(a.value().dtype() == b.value().dtype() && a.value().device() == b.value().device(),
                UsageError,
                std::string("autodiff::") + op + ": " + name_a + " is " + a.value().describe() +
                    " but " + name_b + " is " + b.value().describe(),
                "convert both to one dtype and device (ops::cast, Tensor::to)");
}

// Whether an op with these inputs records a node.
inline bool records(std::initializer_list<const Variable*> inputs) {
  if (!Tape::recording()) return false;
  for (const Variable* v : inputs) {
    if (v->defined() && v->requires_grad()) return true;
  }
  return false;
}

// The end of every op: the anomaly scan of its value (in anomaly mode), then a recorded node
// when an input requires grad and recording is on, a constant otherwise. `make_backward` is
// only called when a node is recorded.
template <typename MakeBackward>
Variable finish(const char* op, std::initializer_list<const Variable*> inputs, Tensor value,
                MakeBackward&& make_backward) {
  if (anomaly_mode()) detail::scan_forward(op, std::vector<const Variable*>(inputs), value);
  if (!records(inputs)) return Variable::constant(std::move(value));
  std::vector<Variable> operands;
  operands.reserve(inputs.size());
  for (const Variable* v : inputs) operands.push_back(*v);
  return Tape::record(op, std::move(operands), std::move(value), make_backward());
}

inline Tensor filled(const Shape& shape, DType dtype, Device device, double value) {
  Tensor t = Tensor::empty(shape, dtype, device);
  ops::fill(t, value);
  return t;
}

inline Tensor scalar_like(const Tensor& like, double value) {
  return filled(Shape{}, like.dtype(), like.device(), value);
}

// Value of a single-element gradient on the host (sum of one element is that element, exactly).
inline double scalar_value(const Tensor& grad) { return ops::sum(grad); }

// A copy of t scaled by c.
inline Tensor scaled(const Tensor& t, double c) {
  Tensor out = t.clone();
  ops::scale(c, out);
  return out;
}

// t converted to dtype (t itself when it already has it).
inline Tensor as_dtype(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? t : ops::cast(t, dtype);
}

// The dtype a loss is computed in: f64 when an operand is f64, f32 otherwise.
inline DType loss_dtype(DType a, DType b) {
  return a == DType::f64 || b == DType::f64 ? DType::f64 : DType::f32;
}

}  // namespace tenax::train::autodiff::op_support
