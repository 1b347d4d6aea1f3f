/// A CSR matrix read back to the host with i64 indices and values in their own type T (double or
/// float, the matrix's dtype), for the setup work that is done once on the CPU: diagonal
/// extraction, incomplete factorisations, splitting rows across ranks. @file
#pragma once

#include <cstdint>
#include <vector>

#include "tenax/kernels/csr_matrix.hpp"

namespace tenax::solvers {

/// A host copy of a CSR matrix in standard vectors: row r stores its entries at positions
/// [row_ptr[r], row_ptr[r + 1]) of col_idx and values, in the matrix's storage order (not
/// necessarily sorted, duplicates kept).
template <class T>
struct HostCsr {
  std::int64_t rows = 0;              ///< number of rows
  std::int64_t cols = 0;              ///< number of columns
  std::vector<std::int64_t> row_ptr;  ///< rows + 1 offsets, from 0 to the number of entries
  std::vector<std::int64_t> col_idx;  ///< column of each entry, widened to i64
  std::vector<T> values;              ///< value of each entry
};

/// `matrix` copied to the host as a HostCsr (through a copy to the CPU when it lives on a
/// device). T must be the element type of the matrix's dtype (double for f64, float for f32):
/// UsageError otherwise. The result owns its data and is independent of `matrix`.
template <class T>
[[nodiscard]] HostCsr<T> read_host_csr(const CsrMatrix& matrix) {
  const CsrMatrix host = matrix.to(Device::cpu());
  HostCsr<T> out;
  out.rows = host.rows();
  out.cols = host.cols();
  const auto widen = [](const Tensor& t) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(t.numel()));
    if (t.dtype() == DType::i64) {
      const auto* p = t.data_as<const std::int64_t>();
      v.assign(p, p + t.numel());
    } else {
      const auto* p = t.data_as<const std::int32_t>();
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = p[i];
    }
    return v;
  };
  out.row_ptr = widen(host.row_ptr());
  out.col_idx = widen(host.col_idx());
  const T* values = host.values().data_as<const T>();
  out.values.assign(values, values + host.nnz());
  return out;
}

}  // namespace tenax::solvers
