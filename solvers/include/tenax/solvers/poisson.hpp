/// Assembled Poisson matrices: the CSR form of the matrix-free operators of
/// laplacian_operator.hpp (-Δh with Dirichlet-zero boundaries), for tests, examples and the
/// preconditioners that need an assembled matrix (ILU(0)).
/// @file
/// Unknowns are the grid points in row-major order (index (z * ny + y) * nx + x). Each row stores
/// its entries in increasing column order; the off-diagonal values are -1/h_axis^2 and the
/// diagonal 2 * (sum of 1/h_axis^2), computed in f64 and rounded once to the value dtype. The
/// product equals the stencil's up to rounding (the stencil sums in another order).
#pragma once

#include <cstdint>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/kernels/csr_matrix.hpp"

namespace tenax::solvers {

/// The 5-point matrix on [ny, nx]: ny * nx rows. ny, nx >= 1; hy, hx > 0 and finite;
/// value_dtype f64 or f32, index_dtype i64 or i32: UsageError otherwise, and when the grid's
/// sizes overflow or the entries do not fit i32. Built on the host, then moved to `device`;
/// OutOfMemoryError (with the matrix's size in bytes) when the host arrays cannot be allocated.
[[nodiscard]] CsrMatrix poisson_2d_csr(std::int64_t ny, std::int64_t nx, double hy, double hx,
                                       DType value_dtype = DType::f64,
                                       DType index_dtype = DType::i64,
                                       Device device = Device::cpu());

/// The 7-point matrix on [nz, ny, nx]: nz * ny * nx rows; arguments, errors and placement as for
/// poisson_2d_csr.
[[nodiscard]] CsrMatrix poisson_3d_csr(std::int64_t nz, std::int64_t ny, std::int64_t nx, double hz,
                                       double hy, double hx, DType value_dtype = DType::f64,
                                       DType index_dtype = DType::i64,
                                       Device device = Device::cpu());

}  // namespace tenax::solvers
