/// ScaledShiftedOperator: alpha * A + beta * I for a square operator A, without assembling it.
/// Implicit time steps solve with (I + dt * alpha * (-Δh)) this way, and shifted test problems
/// (A - sigma I) are built from it.
/// @file
/// apply computes A x into y, then y = alpha * y + beta * x (one more pass). The diagonal is
/// alpha * diag(A) + beta when A has one; with_dtype casts A. Keeps A alive (shared).
#pragma once

#include <string>

#include "tenax/solvers/linear_operator.hpp"

namespace tenax::solvers {

/// alpha * A + beta * I for a square A, applied as A x followed by one axpby; A's size, dtype
/// and device. It has a diagonal and a dtype cast exactly when A does.
class ScaledShiftedOperator final : public LinearOperator {
 public:
  /// A must be non-null and square; alpha and beta finite. Throws UsageError otherwise.
  ScaledShiftedOperator(const OperatorPtr& a, double alpha, double beta);

  /// @name Terms
  ///@{

  /// The terms of alpha * A + beta * I, as given to the constructor (inner() is A, kept alive).
  [[nodiscard]] const OperatorPtr& inner() const noexcept { return a_; }
  [[nodiscard]] double alpha() const noexcept { return alpha_; }
  [[nodiscard]] double beta() const noexcept { return beta_; }
  ///@}

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] bool has_diagonal() const noexcept override { return a_->has_diagonal(); }
  /// A's: alpha A + beta I is split across ranks as A is.
  [[nodiscard]] kernels::ShardPartition partition() const noexcept override {
    return a_->partition();
  }
  [[nodiscard]] bool supports_dtype_cast() const noexcept override {
    return a_->supports_dtype_cast();
  }

 private:
  ScaledShiftedOperator(const LinearOperator& checked_a, OperatorPtr a, double alpha, double beta);

  void apply_impl(const Tensor& x, const Tensor& y) const override;
  Tensor diagonal_impl() const override;
  std::shared_ptr<const LinearOperator> with_dtype_impl(DType dtype) const override;

  OperatorPtr a_;
  double alpha_;
  double beta_;
};

/// std::make_shared<const ScaledShiftedOperator>(a, alpha, beta), as an OperatorPtr; throws as
/// the constructor does.
[[nodiscard]] OperatorPtr scale_and_shift(OperatorPtr a, double alpha, double beta);

}  // namespace tenax::solvers
