/// CsrOperator: an assembled sparse matrix as a LinearOperator.
/// @file
/// apply is ops::spmv, apply_dot the fused ops::spmv_dot (one pass over the matrix and the
/// vectors). The diagonal is available (duplicates summed, 0 where a row stores no diagonal
/// entry), and with_dtype casts the values (the index arrays are shared). Works on every backend
/// the matrix lives on. The CsrMatrix storage is shared, not copied: do not modify its tensors
/// while the operator is in use.
#pragma once

#include <memory>
#include <string>

#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/solvers/linear_operator.hpp"

namespace tenax::solvers {

/// A = an assembled CSR matrix (rows x cols, its dtype and device), with fused products, a
/// diagonal and a dtype cast. The one operator ilu0 preconditioning accepts.
class CsrOperator final : public LinearOperator {
 public:
  /// Wraps `matrix` (its tensors are shared, not copied) with its CPU products reading the
  /// compact index of CsrMatrix::compacted() (fewer bytes, the same bits), built here once: the
  /// matrix's tensors must not change afterwards. Throws UsageError for a matrix without storage,
  /// OutOfMemoryError when the compact index does not fit.
  explicit CsrOperator(CsrMatrix matrix);

  /// The matrix applied, sharing its tensors with the one given to the constructor.
  [[nodiscard]] const CsrMatrix& matrix() const noexcept { return matrix_; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] bool has_diagonal() const noexcept override { return true; }
  [[nodiscard]] bool supports_dtype_cast() const noexcept override { return true; }

 private:
  void apply_impl(const Tensor& x, const Tensor& y) const override;
  double apply_dot_impl(const Tensor& x, const Tensor& y) const override;
  Dots apply_dots_impl(const Tensor& x, const Tensor& y, const Tensor& w,
                       bool with_yy) const override;
  Tensor diagonal_impl() const override;
  std::shared_ptr<const LinearOperator> with_dtype_impl(DType dtype) const override;

  CsrMatrix matrix_;
};

/// The entries (r, r + column_offset) of a CSR matrix for r < min(rows, cols - column_offset),
/// duplicates summed in storage order from 0, 0 where a row stores none; on the matrix's device.
/// The diagonal of CsrOperator (offset 0), and of a rank's rows of a distributed matrix whose
/// local columns start at column_offset. UsageError for an offset outside [0, cols].
[[nodiscard]] Tensor csr_diagonal(const CsrMatrix& matrix, std::int64_t column_offset = 0);

/// std::make_shared<const CsrOperator>(matrix), as an OperatorPtr.
[[nodiscard]] OperatorPtr make_csr_operator(CsrMatrix matrix);

}  // namespace tenax::solvers
