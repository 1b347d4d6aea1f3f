/// CallableOperator: a LinearOperator whose product is computed by user code, for operators that
/// are neither assembled nor one of the built-in stencils.
/// @file
/// The function receives validated operands (x: 1-D of cols() elements, y: 1-D of rows()
/// elements, both of the operator's dtype and on its device, not overlapping) and must write
/// y = A x, overwriting y (its contents on entry are unspecified). It is called from the thread
/// that runs the solver; an exception it throws reaches the caller of the solver. It has no
/// diagonal and no dtype cast: Jacobi and mixed-precision refinement need them supplied some other
/// way (assemble a CsrOperator, or pass the inner operator explicitly).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tenax/solvers/linear_operator.hpp"

namespace tenax::solvers {

/// A rows x cols operator whose product is `function(x, y)` (see the file description for the
/// contract). No diagonal, no dtype cast, no fused dot products (apply_dot and the rest apply,
/// then ops::dot).
class CallableOperator final : public LinearOperator {
 public:
  /// The product: writes y = A x for validated x and y (see the file description). Whatever it
  /// captures must stay valid while the operator is in use.
  using Function = std::function<void(const Tensor& x, const Tensor& y)>;

  /// `name` appears in messages ("callable 'advection' f64[100, 100] on cpu"). Throws UsageError
  /// for an empty function, for negative sizes and for a dtype other than f64 or f32.
  CallableOperator(std::int64_t rows, std::int64_t cols, DType dtype, Device device,
                   Function function, std::string name = "callable");

  [[nodiscard]] std::string describe() const override;

 private:
  void apply_impl(const Tensor& x, const Tensor& y) const override;

  Function function_;
  std::string name_;
};

}  // namespace tenax::solvers
