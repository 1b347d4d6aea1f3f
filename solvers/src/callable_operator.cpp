#include "tenax/solvers/callable_operator.hpp"

#include <utility>

#include "tenax/core/error.hpp"

namespace tenax::solvers {

CallableOperator::CallableOperator(std::int64_t rows, std::int64_t cols, DType dtype, Device device,
                                   Function function, std::string name)
    : LinearOperator(rows, cols, dtype, device),
      function_(std::move(function)),
      name_(std::move(name)) {
  TENAX_EXPECTS(static_cast<bool>(function_), UsageError,
                "CallableOperator '" + name_ + "' was given an empty function",
                "pass a function (x, y) that writes y = A x");
}

std::string CallableOperator::describe() const {
  return "callable '" + name_ + "' " + std::string(to_string(dtype())) + "[" +
         std::to_string(rows()) + ", " + std::to_string(cols()) + "] on " + to_string(device());
}

void CallableOperator::apply_impl(const Tensor& x, const Tensor& y) const { function_(x, y); }

}  // namespace tenax::solvers
