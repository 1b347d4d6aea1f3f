/// ILU(0): the incomplete LU factorisation of a CSR matrix with the sparsity pattern of the
/// matrix itself (no fill-in), M = L U with L unit lower triangular. Applying it is one forward
/// and one backward triangular solve, z = U^-1 L^-1 r, sequential by nature: CPU only.
/// @file
/// For a symmetric matrix the factors satisfy U = D L^T, so M is symmetric too and CG may use it
/// (it is then IC(0) in LDL^T form); it is positive definite for M-matrices such as Poisson.
/// The factorisation is computed in the matrix's dtype, once, in the constructor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/solvers/preconditioner.hpp"

namespace tenax::solvers {

/// M = L U, the ILU(0) factors of a square CSR matrix on the CPU, held on the host in the
/// matrix's dtype (the matrix itself is not kept). make_preconditioner("ilu0", a) builds one for
/// a CsrOperator.
class Ilu0Preconditioner final : public Preconditioner {
 public:
  /// Factors `a` (duplicate entries of a row are summed first). Throws UsageError when the
  /// matrix has no storage, is not on the CPU, is not square, lacks a diagonal entry in some row,
  /// or meets a zero or non-finite pivot (naming the row and the fix: pc=jacobi, or reorder /
  /// shift the matrix).
  explicit Ilu0Preconditioner(const CsrMatrix& a);
  ~Ilu0Preconditioner() override;

  [[nodiscard]] std::string_view name() const noexcept override { return "ilu0"; }
  [[nodiscard]] std::string describe() const override;

 private:
  void apply_impl(const Tensor& r, const Tensor& z) const override;

  struct Factors;
  std::unique_ptr<const Factors> factors_;
  std::string of_;
};

}  // namespace tenax::solvers
