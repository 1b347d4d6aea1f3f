/// Runtime dtype and op enums -> compile-time types, for the backends' launch code.
/// @file
///   dispatch_float(t.dtype(), "axpby", [&](auto tag) {
///     using S = typename decltype(tag)::type;  // double, float, Half or BFloat16
///     ...
///   });
///
/// S is the storage type; the bodies compute Half and BFloat16 in float (compute_t<S>).
/// Internal to the kernels layer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tenax/core/dtype.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/elementwise_bodies.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::kernels::detail {

template <class T>
struct TypeTag {
  using type = T;
};

[[noreturn]] inline void throw_unsupported_dtype(std::string_view op, DType dtype,
                                                 std::string_view accepted) {
  throw UsageError(
      std::string(op) + ": dtype " + std::string(to_string(dtype)) + " is not supported",
      "use one of " + std::string(accepted) + " (convert with ops::cast)");
}

/// Calls f(TypeTag<S>{}) for the floating storage type of `dtype`.
template <class F>
decltype(auto) dispatch_float(DType dtype, std::string_view op, F&& f) {
  switch (dtype) {
    case DType::f64:
      return f(TypeTag<double>{});
    case DType::f32:
      return f(TypeTag<float>{});
    case DType::f16:
      return f(TypeTag<Half>{});
    case DType::bf16:
      return f(TypeTag<BFloat16>{});
    default:
      throw_unsupported_dtype(op, dtype, "f64, f32, f16, bf16");
  }
}

/// Calls f(TypeTag<S>{}) for any dtype (floating and integer).
template <class F>
decltype(auto) dispatch_all(DType dtype, std::string_view op, F&& f) {
  switch (dtype) {
    case DType::i64:
      return f(TypeTag<std::int64_t>{});
    case DType::i32:
      return f(TypeTag<std::int32_t>{});
    case DType::u8:
      return f(TypeTag<std::uint8_t>{});
    default:
      return dispatch_float(dtype, op, static_cast<F&&>(f));
  }
}

/// Calls f(Op{}) with the functor of elementwise_bodies.hpp that implements `op`.
template <class F>
decltype(auto) dispatch_unary(ops::UnaryOp op, F&& f) {
  switch (op) {
    case ops::UnaryOp::neg:
      return f(NegOp{});
    case ops::UnaryOp::abs:
      return f(AbsOp{});
    case ops::UnaryOp::exp:
      return f(ExpOp{});
    case ops::UnaryOp::log:
      return f(LogOp{});
    case ops::UnaryOp::sqrt:
      return f(SqrtOp{});
    case ops::UnaryOp::tanh:
      return f(TanhOp{});
    case ops::UnaryOp::relu:
      return f(ReluOp{});
    case ops::UnaryOp::sigmoid:
      return f(SigmoidOp{});
    case ops::UnaryOp::square:
      return f(SquareOp{});
    case ops::UnaryOp::step:
      return f(StepOp{});
    case ops::UnaryOp::erf:
      return f(ErfOp{});
    case ops::UnaryOp::gelu:
      return f(GeluOp{});
    case ops::UnaryOp::gelu_grad:
      return f(GeluGradOp{});
    case ops::UnaryOp::gelu_tanh:
      return f(GeluTanhOp{});
    case ops::UnaryOp::gelu_tanh_grad:
      return f(GeluTanhGradOp{});
  }
  throw UsageError("unary: unknown UnaryOp " + std::to_string(static_cast<int>(op)),
                   "pass one of the ops::UnaryOp enumerators");
}

template <class F>
decltype(auto) dispatch_binary(ops::BinaryOp op, F&& f) {
  switch (op) {
    case ops::BinaryOp::add:
      return f(AddOp{});
    case ops::BinaryOp::sub:
      return f(SubOp{});
    case ops::BinaryOp::mul:
      return f(MulOp{});
    case ops::BinaryOp::div:
      return f(DivOp{});
    case ops::BinaryOp::maximum:
      return f(MaximumOp{});
    case ops::BinaryOp::minimum:
      return f(MinimumOp{});
  }
  throw UsageError("binary: unknown BinaryOp " + std::to_string(static_cast<int>(op)),
                   "pass one of the ops::BinaryOp enumerators");
}

}  // namespace tenax::kernels::detail
