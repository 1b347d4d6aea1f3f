/// Element-wise comparisons (producing u8 masks) and selection by a mask.
/// @file
/// Operands have one shape (no broadcasting here; ops_broadcast.hpp broadcasts arithmetic only)
/// and one device. A mask is a u8 tensor: 0 is false, any other value true (tenax has no bool
/// dtype). Comparisons take every dtype; f16 and bf16 compare their exact values (widened to f32),
/// NaN compares unequal to everything (ne gives 1, the others 0), -0 equals +0. The results are
/// the same bits on the CPU and CUDA backends. Errors: UsageError naming the op, the operands and
/// the fix. An `out` may be an input itself (same storage and shape; every element is read before
/// it is written, by the same thread), but must not otherwise overlap an input.
#pragma once

#include <cstdint>

#include "tenax/core/tensor.hpp"

namespace tenax::ops {

/// The comparisons of compare(): out[i] = 1 when a[i] OP b[i] holds, 0 otherwise.
enum class CompareOp : std::uint8_t {
  eq,  ///< a == b
  ne,  ///< a != b (1 when either is NaN)
  lt,  ///< a < b
  le,  ///< a <= b
  gt,  ///< a > b
  ge   ///< a >= b
};

/// The op's name as messages show it, e.g. "le" ("unknown CompareOp" outside the enum).
[[nodiscard]] const char* to_string(CompareOp op) noexcept;

/// a OP b element by element into a new u8 tensor of a's shape on a's device. a and b have one
/// shape, dtype and device (any dtype).
[[nodiscard]] Tensor compare(CompareOp op, const Tensor& a, const Tensor& b);
/// compare into `out`: u8, a's shape and device.
void compare_into(CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out);

/// @name Shorthands for compare
///@{

/// compare(CompareOp::NAME, a, b) for the op of the same name.
[[nodiscard]] inline Tensor eq(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::eq, a, b);
}
[[nodiscard]] inline Tensor ne(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::ne, a, b);
}
[[nodiscard]] inline Tensor lt(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::lt, a, b);
}
[[nodiscard]] inline Tensor le(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::le, a, b);
}
[[nodiscard]] inline Tensor gt(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::gt, a, b);
}
[[nodiscard]] inline Tensor ge(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::ge, a, b);
}
///@}

/// out[i] = a[i] where cond[i] != 0, b[i] otherwise (copied bit for bit), in a new tensor like a.
/// cond is u8 with a's shape and device; a and b have one shape, dtype (any) and device.
[[nodiscard]] Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/// where into `out` (a's shape, dtype and device); out may be a or b itself.
void where_into(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);

}  // namespace tenax::ops
