#include "tenax/solvers/jacobi_preconditioner.hpp"

#include <cmath>
#include <string>

#include "detail/float_dispatch.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::solvers {
namespace {

// 1 / diag(A), computed on the host in the operator's dtype: setup runs once, and checking each
// entry there lets the error name the offending row.
Tensor inverted_diagonal(const LinearOperator& a) {
  const Tensor diagonal = a.diagonal().to(Device::cpu());
  return detail::with_float_type(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor inverse = Tensor::empty_like(diagonal);
    const T* d = diagonal.data_as<const T>();
    T* out = inverse.data_as<T>();
    for (std::int64_t i = 0; i < diagonal.numel(); ++i) {
      // A subnormal entry passes the first test but its inverse overflows to inf.
      const T inverse_entry = T(1) / d[i];
      TENAX_EXPECTS(d[i] != T(0) && std::isfinite(static_cast<double>(d[i])) &&
                        std::isfinite(static_cast<double>(inverse_entry)),
                    UsageError,
                    "jacobi: diagonal entry " + std::to_string(i) + " of " + a.describe() + " is " +
                        format_number(static_cast<double>(d[i])) +
                        (d[i] != T(0) && std::isfinite(static_cast<double>(d[i]))
                             ? ", whose inverse overflows"
                             : "") +
                        ", so diag(A) cannot be inverted",
                    "use pc=none or pc=ilu0, or check the matrix (a zero on the diagonal often "
                    "means a missing entry)");
      out[i] = inverse_entry;
    }
    return inverse.to(a.device());
  });
}

}  // namespace

JacobiPreconditioner::JacobiPreconditioner(const LinearOperator& a)
    : Preconditioner(a.rows(), a.cols(), a.dtype(), a.device()),
      inverse_diagonal_(inverted_diagonal(a)),
      of_(a.describe()) {}

std::string JacobiPreconditioner::describe() const { return "jacobi preconditioner of " + of_; }

void JacobiPreconditioner::apply_impl(const Tensor& r, const Tensor& z) const {
  ops::binary_into(ops::BinaryOp::mul, inverse_diagonal_, r, z);
}

}  // namespace tenax::solvers
