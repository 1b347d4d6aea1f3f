// CsrMatrix: a sparse matrix in compressed sparse row form, on one device.
//
// Three 1-D tensors on the same device: row_ptr (rows + 1 entries), col_idx and values (nnz
// entries each). The index tensors are both i32 or both i64; values are f64 or f32. Row r holds
// the entries row_ptr[r] .. row_ptr[r + 1] - 1, in any column order (duplicates add up).
//
// The constructor validates the structure and throws UsageError naming the fault and its fix:
// wrong dtypes or ranks, sizes that do not agree, row_ptr not starting at 0 or decreasing,
// column indices outside [0, cols). Validating a matrix on a CUDA device copies row_ptr and
// col_idx to the host once. A CsrMatrix is a view like Tensor: copying it shares the storage.
// Not synchronised: do not modify the tensors while another thread uses the matrix.
#pragma once

#include <cstdint>
#include <string>

#include "tenax/core/tensor.hpp"

namespace tenax {

class CsrMatrix {
 public:
  CsrMatrix() = default;  // an empty 0 x 0 matrix with no storage
  CsrMatrix(std::int64_t rows, std::int64_t cols, Tensor row_ptr, Tensor col_idx, Tensor values);

  // The nonzeros of a dense 2-D f64 or f32 CPU tensor, with i64 (default) or i32 indices.
  [[nodiscard]] static CsrMatrix from_dense(const Tensor& dense, DType index_dtype = DType::i64);

  [[nodiscard]] std::int64_t rows() const noexcept { return rows_; }
  [[nodiscard]] std::int64_t cols() const noexcept { return cols_; }
  [[nodiscard]] std::int64_t nnz() const noexcept { return nnz_; }
  [[nodiscard]] const Tensor& row_ptr() const noexcept { return row_ptr_; }
  [[nodiscard]] const Tensor& col_idx() const noexcept { return col_idx_; }
  [[nodiscard]] const Tensor& values() const noexcept { return values_; }
  [[nodiscard]] Device device() const noexcept { return values_.device(); }
  [[nodiscard]] DType dtype() const noexcept { return values_.dtype(); }
  [[nodiscard]] DType index_dtype() const noexcept { return row_ptr_.dtype(); }
  [[nodiscard]] bool defined() const noexcept { return row_ptr_.defined(); }

  // A copy on `device` (already validated, so not validated again). Returns *this when there.
  [[nodiscard]] CsrMatrix to(Device device) const;
  // The dense [rows, cols] tensor on the CPU (duplicates summed). For tests and small matrices.
  [[nodiscard]] Tensor to_dense() const;

  // "csr f64[4, 5] (nnz 7, i64 indices) on cpu"
  [[nodiscard]] std::string describe() const;

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
};

}  // namespace tenax
