#include "tenax/solvers/dense_solve.hpp"

#include <Eigen/Dense>

#include <string>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::solvers {

Tensor dense_solve(const Tensor& a, const Tensor& b) {
  TENAX_EXPECTS(a.defined() && b.defined(), UsageError, "dense_solve: A or b is undefined",
                "pass a [n, n] matrix and an [n] vector");
  const std::int64_t n = a.shape().rank() == 2 ? a.shape()[0] : -1;
  TENAX_EXPECTS(n >= 0 && a.shape()[1] == n && b.shape() == Shape{n}, UsageError,
                "dense_solve: A is " + a.describe() + " and b is " + b.describe() +
                    " but A must be [n, n] and b [n]",
                "pass a square matrix and a vector of matching length");
  TENAX_EXPECTS((a.dtype() == DType::f64 || a.dtype() == DType::f32) && b.dtype() == a.dtype(),
                UsageError,
                "dense_solve: A is " + a.describe() + " and b is " + b.describe() +
                    " but both must be f64 or both f32",
                "cast them with ops::cast");
  TENAX_EXPECTS(a.device().is_cpu() && b.device().is_cpu(), UsageError,
                "dense_solve: A is " + a.describe() + " and b is " + b.describe() +
                    " but the dense solver runs on the CPU",
                "move them with to(Device::cpu())");

  const Tensor a64 = a.dtype() == DType::f64 ? a : ops::cast(a, DType::f64);
  const Tensor b64 = b.dtype() == DType::f64 ? b : ops::cast(b, DType::f64);
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> matrix(a64.data_as<const double>(), n, n);
  const Eigen::Map<const Eigen::VectorXd> rhs(b64.data_as<const double>(), n);
  const Eigen::FullPivLU<RowMajor> lu(matrix);
  TENAX_EXPECTS(lu.isInvertible(), UsageError,
                "dense_solve: A is singular to working precision (numerical rank " +
                    std::to_string(lu.rank()) + " of " + std::to_string(n) + ")",
                "check the matrix, or use an iterative solver on the consistent system");
  Tensor x = Tensor::empty({n}, DType::f64);
  Eigen::Map<Eigen::VectorXd>(x.data_as<double>(), n) = lu.solve(rhs);
  return a.dtype() == DType::f64 ? x : ops::cast(x, a.dtype());
}

}  // namespace tenax::solvers
