// Argument checks for ops beyond those of checks.hpp. Each throws UsageError naming the op, the
// operand and the fix.
#pragma once

#include <string_view>

#include "tenax/core/tensor.hpp"

namespace tenax::ops::detail {

// t has at least one element (for reductions without an identity, such as max).
void check_not_empty(std::string_view op, std::string_view name, const Tensor& t);
// a and b have the same shape and the same device (any dtypes).
void check_same_shape_and_device(std::string_view op, std::string_view a_name, const Tensor& a,
                                 std::string_view b_name, const Tensor& b);
// value is finite (not NaN or infinite).
void check_finite(std::string_view op, std::string_view name, double value);
// value is finite and > 0.
void check_positive(std::string_view op, std::string_view name, double value);

}  // namespace tenax::ops::detail
