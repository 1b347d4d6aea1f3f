/// CsrMatrix: a sparse matrix in compressed sparse row form, on one device.
/// @file
/// Three 1-D tensors on the same device: row_ptr (rows + 1 entries), col_idx and values (nnz
/// entries each). The index tensors are both i32 or both i64; values are f64 or f32. Row r holds
/// the entries row_ptr[r] .. row_ptr[r + 1] - 1, in any column order (duplicates add up).
///
/// The constructor validates the structure and throws UsageError naming the fault and its fix:
/// wrong dtypes or ranks, sizes that do not agree, row_ptr not starting at 0 or decreasing,
/// column indices outside [0, cols). Validating a matrix on a CUDA device copies row_ptr and
/// col_idx to the host once. A CsrMatrix is a view like Tensor: copying it shares the storage.
/// Not synchronised: do not modify the tensors while another thread uses the matrix.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tenax/core/tensor.hpp"

namespace tenax {

namespace kernels::detail {
struct CsrCompactIndex;
}  // namespace kernels::detail

/// A validated sparse matrix in CSR form (see this file): the operand of ops::spmv and of the
/// solvers' CsrOperator.
class CsrMatrix {
 public:
  CsrMatrix() = default;  ///< an empty 0 x 0 matrix with no storage (defined() is false)
  /// Takes the three tensors (sharing their storage) after validating them as described in this
  /// file: rows, cols >= 0; row_ptr and col_idx 1-D, both i32 or both i64; values 1-D f64 or
  /// f32; all three on one device; row_ptr with rows + 1 entries, starting at 0, non-decreasing
  /// and ending at nnz; col_idx and values with nnz entries each; every column in [0, cols).
  /// Throws UsageError naming the first fault.
  CsrMatrix(std::int64_t rows, std::int64_t cols, Tensor row_ptr, Tensor col_idx, Tensor values);

  /// The nonzeros of a dense 2-D f64 or f32 CPU tensor (entries != 0, so NaN is kept and -0.0
  /// dropped), in row-major order, with i64 (default) or i32 indices; values keep the dense
  /// dtype. Throws UsageError for another rank, device, dtype or index dtype.
  [[nodiscard]] static CsrMatrix from_dense(const Tensor& dense, DType index_dtype = DType::i64);

  /// @name Structure
  ///@{

  /// The matrix as constructed: its size, stored entry count (duplicates counted), the three
  /// tensors (shared, not copied), the device they live on, the value dtype (f64 or f32) and the
  /// index dtype (i32 or i64). For a default-constructed matrix the tensors are undefined and
  /// device(), dtype() and index_dtype() carry no meaning.
  [[nodiscard]] std::int64_t rows() const noexcept { return rows_; }
  [[nodiscard]] std::int64_t cols() const noexcept { return cols_; }
  [[nodiscard]] std::int64_t nnz() const noexcept { return nnz_; }
  [[nodiscard]] const Tensor& row_ptr() const noexcept { return row_ptr_; }
  [[nodiscard]] const Tensor& col_idx() const noexcept { return col_idx_; }
  [[nodiscard]] const Tensor& values() const noexcept { return values_; }
  [[nodiscard]] Device device() const noexcept { return values_.device(); }
  [[nodiscard]] DType dtype() const noexcept { return values_.dtype(); }
  [[nodiscard]] DType index_dtype() const noexcept { return row_ptr_.dtype(); }
  ///@}
  /// Whether the matrix has storage (false only for a default-constructed one).
  [[nodiscard]] bool defined() const noexcept { return row_ptr_.defined(); }

  /// A copy on `device` (already validated, so not validated again; the compact index is not
  /// carried over). Returns `*this` when the matrix is already there or is not defined.
  [[nodiscard]] CsrMatrix to(Device device) const;
  /// The dense [rows, cols] tensor on the CPU, of the value dtype (duplicates summed; an
  /// undefined matrix gives an f64 [0, 0] tensor). For tests and small matrices.
  [[nodiscard]] Tensor to_dense() const;

  /// "csr f64[4, 5] (nnz 7, i64 indices) on cpu", or "empty csr matrix" when not defined.
  [[nodiscard]] std::string describe() const;

  /// This matrix with a compact index for the CPU products (ops::spmv, spmv_dot, spmv_dots): 16-bit
  /// column offsets where every entry lies within 32767 columns of its row, 8-bit codes into a
  /// table where the matrix has at most 256 distinct values, and which groups of four rows share
  /// a shape (vector loads). Fewer bytes and instructions, the same bits (but a NaN's payload where
  /// two NaNs meet in a row). Shares the storage; the index is a snapshot: row_ptr, col_idx and
  /// values must not change afterwards (CsrOperator compacts once). Returns *this for a matrix on
  /// a CUDA device, one that is already compact, one that allows none of the three, and any matrix
  /// when the environment sets TENAX_CSR_COMPACT=0 (UsageError for a value other than 0, off,
  /// 1 or on). The index is allocated from the CPU's memory resource (OutOfMemoryError as for
  /// any tensor).
  [[nodiscard]] CsrMatrix compacted() const;
  /// The bytes a product streams from the matrix: row_ptr, and each entry's column and value as
  /// col_idx and values store them or, with a compact index, as it encodes them (2 bytes for an
  /// offset, 1 for a code; the table of values stays in cache and is not counted).
  [[nodiscard]] std::int64_t product_bytes() const noexcept;
  /// The compact index built by compacted(), or nullptr.
  [[nodiscard]] const kernels::detail::CsrCompactIndex* compact_index() const noexcept {
    return compact_.get();
  }

 private:
  struct Validated {};
  CsrMatrix(Validated, std::int64_t rows, std::int64_t cols, Tensor row_ptr, Tensor col_idx,
            Tensor values);

  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  std::int64_t nnz_ = 0;
  Tensor row_ptr_;
  Tensor col_idx_;
  Tensor values_;
  std::shared_ptr<const kernels::detail::CsrCompactIndex> compact_;
};

/// Whether the environment leaves the compact CSR index on (TENAX_CSR_COMPACT unset, empty, 1 or
/// on; off for 0 or off). Throws UsageError naming any other value, with the fix.
[[nodiscard]] bool compact_csr_index_enabled();

}  // namespace tenax
