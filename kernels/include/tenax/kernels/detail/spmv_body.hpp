/// The SpMV row body shared by the CPU and CUDA backends (see stencil_bodies.hpp for the idea):
/// y[row] = alpha * (A x)[row] + beta * y[row], summing the row's entries in storage order. @file
#pragma once

#include <cstdint>

#include "tenax/core/host_device.hpp"

namespace tenax::kernels::detail {

/// The sum of values[j] * x[col_idx[j]] over the entries [begin, end), in storage order.
template <class T, class I>
TENAX_HD inline T csr_range_dot(const I* col_idx, const T* values, const T* x, I begin, I end) {
  T sum = T(0);
  for (I j = begin; j < end; ++j) sum += values[j] * x[col_idx[j]];
  return sum;
}

template <class T, class I>
TENAX_HD inline T csr_row_dot(const I* row_ptr, const I* col_idx, const T* values, const T* x,
                              std::int64_t row) {
  return csr_range_dot(col_idx, values, x, row_ptr[row], row_ptr[row + 1]);
}

/// With beta == 0 the old y is not read, so y may hold garbage (NaN) on entry, as in BLAS.
template <class T, class I>
TENAX_HD inline void spmv_row(const I* row_ptr, const I* col_idx, const T* values, const T* x,
                              T alpha, T beta, T* y, std::int64_t row) {
  const T dot = csr_row_dot(row_ptr, col_idx, values, x, row);
  y[row] = beta == T(0) ? alpha * dot : alpha * dot + beta * y[row];
}

}  // namespace tenax::kernels::detail
