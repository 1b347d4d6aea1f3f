// Checked front end of compare and where (ops_select.hpp).
#include "tenax/kernels/ops_select.hpp"

#include <string>
#include <string_view>

#include "axis_split.hpp"
#include "tenax/kernels/checks.hpp"
#include "tenax/kernels/detail/tensor_ops_kernels.hpp"

namespace tenax::ops {
namespace {

std::string compare_name(CompareOp op) { return std::string("compare(") + to_string(op) + ")"; }

void check_mask(std::string_view op, const Tensor& cond, const Tensor& a) {
  detail::check_defined(op, "cond", cond);
  TENAX_EXPECTS(cond.dtype() == DType::u8, UsageError,
                std::string(op) + ": cond is " + cond.describe() +
                    " but a mask must be u8 (0 false, anything else true)",
                "build the mask with ops::compare (which gives u8)");
  detail::check_same_shape_and_device(op, "cond", cond, "a", a);
}

}  // namespace

const char* to_string(CompareOp op) noexcept {
  switch (op) {
    case CompareOp::eq:
      return "eq";
    case CompareOp::ne:
      return "ne";
    case CompareOp::lt:
      return "lt";
    case CompareOp::le:
      return "le";
    case CompareOp::gt:
      return "gt";
    case CompareOp::ge:
      return "ge";
  }
  return "unknown CompareOp";
}

Tensor compare(CompareOp op, const Tensor& a, const Tensor& b) {
  detail::check_compatible(compare_name(op), "a", a, "b", b);
  Tensor out = Tensor::empty(a.shape(), DType::u8, a.device());
  compare_into(op, a, b, out);
  return out;
}

void compare_into(CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const std::string name = compare_name(op);
  TENAX_EXPECTS(op <= CompareOp::ge, UsageError,
                "compare: unknown CompareOp " + std::to_string(static_cast<int>(op)),
                "pass one of the ops::CompareOp enumerators");
  detail::check_compatible(name, "a", a, "b", b);
  detail::check_out(name, out, a.shape(), DType::u8, a);
  detail::check_same_or_disjoint(name, "out", out, "a", a);
  detail::check_same_or_disjoint(name, "out", out, "b", b);
  if (out.numel() == 0) return;
  const kernels::CompareArgs args{op, a, b, out};
  if (out.device().is_cpu()) {
    kernels::cpu::compare(args);
  } else {
    kernels::cuda::compare(args);
  }
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  detail::check_compatible("where", "a", a, "b", b);
  check_mask("where", cond, a);
  Tensor out = Tensor::empty_like(a);
  where_into(cond, a, b, out);
  return out;
}

void where_into(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  detail::check_compatible("where", "a", a, "b", b);
  check_mask("where", cond, a);
  detail::check_out("where", out, a.shape(), a.dtype(), a);
  detail::check_same_or_disjoint("where", "out", out, "a", a);
  detail::check_same_or_disjoint("where", "out", out, "b", b);
  detail::check_same_or_disjoint("where", "out", out, "cond", cond);
  if (out.numel() == 0) return;
  const kernels::WhereArgs args{cond, a, b, out};
  if (out.device().is_cpu()) {
    kernels::cpu::where(args);
  } else {
    kernels::cuda::where(args);
  }
}

}  // namespace tenax::ops
