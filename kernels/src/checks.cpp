#include "tenax/kernels/checks.hpp"

#include <cmath>
#include <sstream>
#include <string>

namespace tenax::ops::detail {

void check_defined(std::string_view op, std::string_view name, const Tensor& t) {
  TENAX_EXPECTS(t.defined(), UsageError,
                std::string(op) + ": " + std::string(name) + " is an undefined tensor",
                "create it with Tensor::empty or an op before passing it");
}

void check_same_device(std::string_view op, std::string_view a_name, const Tensor& a,
                       std::string_view b_name, const Tensor& b) {
  TENAX_EXPECTS(a.device() == b.device(), UsageError,
                std::string(op) + ": " + std::string(a_name) + " is on " + to_string(a.device()) +
                    " but " + std::string(b_name) + " is on " + to_string(b.device()),
                "move one with to(device) so that both are on the same device");
}

void check_same_dtype(std::string_view op, std::string_view a_name, const Tensor& a,
                      std::string_view b_name, const Tensor& b) {
  TENAX_EXPECTS(a.dtype() == b.dtype(), UsageError,
                std::string(op) + ": " + std::string(a_name) + " is " +
                    std::string(to_string(a.dtype())) + " but " + std::string(b_name) + " is " +
                    std::string(to_string(b.dtype())),
                "cast one with ops::cast(tensor, dtype) so that both have the same dtype");
}

void check_same_shape(std::string_view op, std::string_view a_name, const Tensor& a,
                      std::string_view b_name, const Tensor& b) {
  TENAX_EXPECTS(a.shape() == b.shape(), UsageError,
                std::string(op) + ": " + std::string(a_name) + " has shape " +
                    to_string(a.shape()) + " but " + std::string(b_name) + " has shape " +
                    to_string(b.shape()),
                "pass tensors of the same shape (slice or reshape one of them)");
}

void check_floating(std::string_view op, std::string_view name, const Tensor& t) {
  TENAX_EXPECTS(is_floating(t.dtype()), UsageError,
                std::string(op) + ": " + std::string(name) + " is " + t.describe() +
                    " but the op needs a floating-point dtype",
                "cast it to f64, f32, f16 or bf16 with ops::cast");
}

void check_compatible(std::string_view op, std::string_view a_name, const Tensor& a,
                      std::string_view b_name, const Tensor& b) {
  check_defined(op, a_name, a);
  check_defined(op, b_name, b);
  check_same_device(op, a_name, a, b_name, b);
  check_same_dtype(op, a_name, a, b_name, b);
  check_same_shape(op, a_name, a, b_name, b);
}

void check_all_compatible(std::string_view op, std::initializer_list<NamedTensor> operands) {
  const NamedTensor& first = *operands.begin();
  check_defined(op, first.first, *first.second);
  for (const NamedTensor& other : operands) {
    if (other.second == first.second) continue;
    check_compatible(op, first.first, *first.second, other.first, *other.second);
  }
}

bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.nbytes() == 0 || b.nbytes() == 0 || a.device() != b.device()) return false;
  const auto* a0 = static_cast<const unsigned char*>(a.data());
  const auto* b0 = static_cast<const unsigned char*>(b.data());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

void check_no_overlap(std::string_view op, const NamedTensor& out,
                      std::initializer_list<NamedTensor> others) {
  for (const NamedTensor& other : others) {
    TENAX_EXPECTS(!overlaps(*out.second, *other.second), UsageError,
                  std::string(op) + ": " + std::string(out.first) + " overlaps " +
                      std::string(other.first) + " in memory, but " + std::string(out.first) +
                      " is written",
                  "pass separate tensors (e.g. Tensor::empty_like(" + std::string(other.first) +
                      ")) for " + std::string(out.first) + " and " + std::string(other.first));
  }
}

void check_alias(std::string_view op, std::string_view out_name, const Tensor& out,
                 std::string_view in_name, const Tensor& in) {
  const bool same = out.device() == in.device() && out.data() == in.data() &&
                    out.shape() == in.shape() && out.dtype() == in.dtype();
  TENAX_EXPECTS(same || !overlaps(out, in), UsageError,
                std::string(op) + ": " + std::string(out_name) + ", " + out.describe() +
                    ", overlaps " + std::string(in_name) + ", " + in.describe() +
                    ", in memory without being it",
                "pass as " + std::string(out_name) + " " + std::string(in_name) +
                    " itself (in place) or a tensor that shares no memory with it (e.g. a new "
                    "Tensor::empty)");
}

namespace {

std::string format(double value) {
  std::ostringstream text;
  text.precision(17);
  text << value;
  return text.str();
}

}  // namespace

void check_not_empty(std::string_view op, std::string_view name, const Tensor& t) {
  TENAX_EXPECTS(t.numel() > 0, UsageError,
                std::string(op) + ": " + std::string(name) + " is " + t.describe() +
                    ", which has no elements, so the result is undefined",
                "pass a tensor with at least one element");
}

void check_same_shape_and_device(std::string_view op, std::string_view a_name, const Tensor& a,
                                 std::string_view b_name, const Tensor& b) {
  check_defined(op, a_name, a);
  check_defined(op, b_name, b);
  check_same_device(op, a_name, a, b_name, b);
  check_same_shape(op, a_name, a, b_name, b);
}

void check_finite(std::string_view op, std::string_view name, double value) {
  TENAX_EXPECTS(std::isfinite(value), UsageError,
                std::string(op) + ": " + std::string(name) + " is " + format(value),
                "pass a finite " + std::string(name));
}

void check_positive(std::string_view op, std::string_view name, double value) {
  TENAX_EXPECTS(std::isfinite(value) && value > 0.0, UsageError,
                std::string(op) + ": " + std::string(name) + " is " + format(value) +
                    " but must be finite and greater than 0",
                "pass a finite, positive " + std::string(name));
}

void check_rank(std::string_view op, std::string_view name, const Tensor& t, int rank,
                std::string_view what) {
  TENAX_EXPECTS(t.shape().rank() == rank, UsageError,
                std::string(op) + ": " + std::string(name) + " has shape " + to_string(t.shape()) +
                    " but must be " + std::string(what),
                "reshape it with reshape(...) to " + std::string(what));
}

void check_f64_or_f32(std::string_view op, std::string_view name, const Tensor& t) {
  TENAX_EXPECTS(t.dtype() == DType::f64 || t.dtype() == DType::f32, UsageError,
                std::string(op) + ": " + std::string(name) + " is " + t.describe() +
                    " but the op supports f64 and f32",
                "cast it to f64 or f32 with ops::cast");
}

void check_spacing(std::string_view op, std::string_view name, double h) {
  TENAX_EXPECTS(std::isfinite(h) && h > 0.0, UsageError,
                std::string(op) + ": grid spacing " + std::string(name) + " = " +
                    std::to_string(h) + " but must be positive and finite",
                "pass the distance between neighbouring grid points");
}

}  // namespace tenax::ops::detail

namespace tenax::ops::detail {

int check_axis(std::string_view op, std::string_view name, const Tensor& t, int axis) {
  const int rank = t.shape().rank();
  TENAX_EXPECTS(rank > 0, UsageError,
                std::string(op) + ": " + std::string(name) + ", " + t.describe() +
                    ", has rank 0, so it has no axis " + std::to_string(axis),
                "reshape it to rank 1 first (e.g. x.reshape({1}))");
  TENAX_EXPECTS(axis >= -rank && axis < rank, UsageError,
                std::string(op) + ": axis " + std::to_string(axis) + " is out of range for " +
                    std::string(name) + ", " + t.describe() + " (rank " + std::to_string(rank) +
                    ")",
                "pass an axis in [" + std::to_string(-rank) + ", " + std::to_string(rank) +
                    "); a negative axis counts from the last (-1 is the last axis)");
  return axis < 0 ? axis + rank : axis;
}

}  // namespace tenax::ops::detail
