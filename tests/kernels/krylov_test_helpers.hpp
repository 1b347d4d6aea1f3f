// Helpers shared by the fused Krylov kernel tests (CPU and GPU): random operands, the 5-point
// matrix of a grid in CSR form (bits and same_bytes are in tensor_values.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/linalg_test_helpers.hpp"
#include "tenax/kernels/csr_matrix.hpp"

namespace tenax::testing {

// A CPU tensor of `shape` with values uniform in [-1, 1) rounded to `dtype`.
inline Tensor random_tensor(const Shape& shape, DType dtype, std::uint32_t seed) {
  return make_tensor(shape, dtype,
                     random_reals(static_cast<std::size_t>(shape.numel()), dtype, seed));
}

// The sparsity pattern of the 5-point Laplacian on an [ny, nx] grid (row y * nx + x couples to
// its in-grid neighbours, stored south, west, centre, east, north) with random values, so that
// every row sum is a genuine rounding sequence. Square, rows = ny * nx.
inline CsrMatrix five_point_csr(std::int64_t ny, std::int64_t nx, DType dtype, DType index,
                                std::uint32_t seed) {
  std::vector<double> row_ptr{0};
  std::vector<double> col_idx;
  for (std::int64_t y = 0; y < ny; ++y) {
    for (std::int64_t x = 0; x < nx; ++x) {
      const std::int64_t i = y * nx + x;
      if (y > 0) col_idx.push_back(static_cast<double>(i - nx));
      if (x > 0) col_idx.push_back(static_cast<double>(i - 1));
      col_idx.push_back(static_cast<double>(i));
      if (x + 1 < nx) col_idx.push_back(static_cast<double>(i + 1));
      if (y + 1 < ny) col_idx.push_back(static_cast<double>(i + nx));
      row_ptr.push_back(static_cast<double>(col_idx.size()));
    }
  }
  const auto nnz = static_cast<std::int64_t>(col_idx.size());
  return CsrMatrix(ny * nx, ny * nx, make_tensor(row_ptr, index), make_tensor(col_idx, index),
                   make_tensor({nnz}, dtype, random_reals(col_idx.size(), dtype, seed)));
}

}  // namespace tenax::testing
