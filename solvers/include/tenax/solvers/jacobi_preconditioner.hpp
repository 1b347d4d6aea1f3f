/// Jacobi preconditioning: M = diag(A), so z = r / diag(A) element-wise. Works on every backend
/// and for every operator that can give its diagonal (assembled, stencil, scaled/shifted of
/// those). CG fuses it into its vector update (ops::pcg_jacobi_update). @file
#pragma once

#include <string>
#include <string_view>

#include "tenax/solvers/preconditioner.hpp"

namespace tenax::solvers {

/// M = diag(A), held as the vector 1 / diag(A) in A's dtype on A's device (inverse_diagonal()).
/// Does not keep A alive. make_preconditioner("jacobi", a) builds one.
class JacobiPreconditioner final : public Preconditioner {
 public:
  /// Reads the diagonal of `a` once. Throws UsageError when `a` has no diagonal or a diagonal
  /// entry is zero or not finite (naming the row and the fix).
  explicit JacobiPreconditioner(const LinearOperator& a);

  [[nodiscard]] std::string_view name() const noexcept override { return "jacobi"; }
  [[nodiscard]] const Tensor* inverse_diagonal() const noexcept override {
    return &inverse_diagonal_;
  }
  [[nodiscard]] std::string describe() const override;

 private:
  void apply_impl(const Tensor& r, const Tensor& z) const override;

  Tensor inverse_diagonal_;
  std::string of_;
};

}  // namespace tenax::solvers
