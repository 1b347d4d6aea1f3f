// r = b - A x, the residual every method starts (and GMRES restarts) from. Internal.
#pragma once

#include "tenax/core/tensor.hpp"
#include "tenax/solvers/linear_operator.hpp"

namespace tenax::solvers::detail {

// Writes r = b - A x and returns r.r (ops::dot, so the same bits as the fused kernels' r.r).
// Two passes: A x into r, then r = b - r.
double compute_residual(const LinearOperator& a, const Tensor& b, const Tensor& x, const Tensor& r);

}  // namespace tenax::solvers::detail
