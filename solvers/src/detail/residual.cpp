#include "residual.hpp"

#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::solvers::detail {

double compute_residual(const LinearOperator& a, const Tensor& b, const Tensor& x,
                        const Tensor& r) {
  a.apply(x, r);
  ops::axpby(1.0, b, -1.0, r);
  return ops::dot(r, r);
}

}  // namespace tenax::solvers::detail
