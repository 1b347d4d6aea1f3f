/// Preconditioner: an operator z = M^-1 r that approximates A^-1, applied by the solvers to each
/// residual. It is a LinearOperator (apply validates the operands the same way), square, with the
/// dtype and device of the operator it was built for. Built once per operator (the setup cost is
/// in the constructor) and immutable afterwards, so one preconditioner may serve several solves.
/// @file
/// Implementations: IdentityPreconditioner ("none"), JacobiPreconditioner ("jacobi",
/// jacobi_preconditioner.hpp) and Ilu0Preconditioner ("ilu0", ilu0_preconditioner.hpp); build
/// them by name with make_preconditioner (factory.hpp).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tenax/solvers/linear_operator.hpp"

namespace tenax::solvers {

/// Base of the preconditioners: a square LinearOperator whose apply(r, z) computes z = M^-1 r.
/// A subclass builds M in its constructor, overrides name(), describe() and the product, and
/// may expose inverse_diagonal() or is_identity() so that the solvers take their fused paths.
class Preconditioner : public LinearOperator {
 public:
  using LinearOperator::LinearOperator;

  /// The name make_preconditioner knows it by.
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// M^-1 as a vector when M is diagonal, so that solvers can fuse its application into their
  /// vector updates (ops::pcg_jacobi_update); nullptr otherwise.
  [[nodiscard]] virtual const Tensor* inverse_diagonal() const noexcept { return nullptr; }
  /// True for M = I: solvers then run their unpreconditioned form.
  [[nodiscard]] virtual bool is_identity() const noexcept { return false; }
};

/// How solvers hold a preconditioner: shared and immutable (KrylovSolver::set_preconditioner,
/// make_preconditioner).
using PreconditionerPtr = std::shared_ptr<const Preconditioner>;

/// M = I: apply copies r into z.
class IdentityPreconditioner final : public Preconditioner {
 public:
  /// M = I for `size` >= 0 unknowns in `dtype` (f64 or f32) on `device`; UsageError otherwise.
  IdentityPreconditioner(std::int64_t size, DType dtype, Device device);
  [[nodiscard]] std::string_view name() const noexcept override { return "none"; }
  [[nodiscard]] bool is_identity() const noexcept override { return true; }
  [[nodiscard]] std::string describe() const override;

 private:
  void apply_impl(const Tensor& r, const Tensor& z) const override;
};

}  // namespace tenax::solvers
