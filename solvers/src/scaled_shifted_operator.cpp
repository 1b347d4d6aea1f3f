#include "tenax/solvers/scaled_shifted_operator.hpp"

#include <cmath>
#include <utility>

#include "detail/format.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::solvers {
namespace {

const LinearOperator& checked(const OperatorPtr& a, double alpha, double beta) {
  TENAX_EXPECTS(a != nullptr, UsageError, "ScaledShiftedOperator: the operator A is null",
                "pass the operator to scale and shift");
  TENAX_EXPECTS(a->rows() == a->cols(), UsageError,
                "ScaledShiftedOperator: " + a->describe() +
                    " is not square, so alpha A + beta I is undefined",
                "shift a square operator");
  TENAX_EXPECTS(std::isfinite(alpha) && std::isfinite(beta), UsageError,
                "ScaledShiftedOperator: alpha = " + std::to_string(alpha) +
                    " and beta = " + std::to_string(beta) + " must both be finite",
                "pass finite coefficients");
  return *a;
}

}  // namespace

ScaledShiftedOperator::ScaledShiftedOperator(const OperatorPtr& a, double alpha, double beta)
    : ScaledShiftedOperator(checked(a, alpha, beta), a, alpha, beta) {}

ScaledShiftedOperator::ScaledShiftedOperator(const LinearOperator& checked_a, OperatorPtr a,
                                             double alpha, double beta)
    : LinearOperator(checked_a.rows(), checked_a.cols(), checked_a.dtype(), checked_a.device()),
      a_(std::move(a)),
      alpha_(alpha),
      beta_(beta) {}

std::string ScaledShiftedOperator::describe() const {
  return detail::format_number(alpha_) + " * (" + a_->describe() + ") + " +
         detail::format_number(beta_) + " * I";
}

void ScaledShiftedOperator::apply_impl(const Tensor& x, const Tensor& y) const {
  a_->apply(x, y);
  ops::axpby(beta_, x, alpha_, y);
}

Tensor ScaledShiftedOperator::diagonal_impl() const {
  Tensor diagonal = a_->diagonal();
  Tensor shift = Tensor::empty_like(diagonal);
  ops::fill(shift, beta_);
  ops::axpby(alpha_, diagonal, 1.0, shift);
  return shift;
}

std::shared_ptr<const LinearOperator> ScaledShiftedOperator::with_dtype_impl(DType dtype) const {
  return scale_and_shift(a_->with_dtype(dtype), alpha_, beta_);
}

OperatorPtr scale_and_shift(OperatorPtr a, double alpha, double beta) {
  return std::make_shared<const ScaledShiftedOperator>(std::move(a), alpha, beta);
}

}  // namespace tenax::solvers
