// Calls a generic lambda with a value of the C++ type of an f64 or f32 dtype. Operators and
// preconditioners validate their dtype on construction, so anything else cannot reach here.
// Internal to the solvers layer.
#pragma once

#include "tenax/core/dtype.hpp"

namespace tenax::solvers::detail {

template <class F>
decltype(auto) with_float_type(DType dtype, F&& body) {
  if (dtype == DType::f64) return body(double{});
  return body(float{});
}

}  // namespace tenax::solvers::detail
