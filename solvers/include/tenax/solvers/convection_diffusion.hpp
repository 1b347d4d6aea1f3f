/// An assembled convection–diffusion matrix: a non-symmetric test system for BiCGSTAB and GMRES
/// whose difficulty one parameter sets. @file
/// The operator is -Δu + beta (u_x + u_y) on a grid of ny x nx interior points with spacing h
/// and Dirichlet-zero boundaries, with first-order upwind differences for the convection (a flow
/// along +x and +y), scaled by h^2 so that the matrix has no 1/h^2 factor. Each row holds
///
///     centre 4 + 2 beta h,   west and south -1 - beta h,   east and north -1
///
/// (the neighbours outside the grid dropped). beta h = 0 is the 5-point Laplacian h^2 (-Δh);
/// beta h > 0 makes the matrix non-symmetric, more so as beta h grows, and keeps it diagonally
/// dominant (an M-matrix: every Krylov method converges on it). beta h < 0 gives downwind
/// differences: the matrix loses diagonal dominance, and at beta h = -2 its diagonal is 0.
///
/// Unknowns are the grid points in row-major order (index y * nx + x); each row stores its
/// entries in increasing column order: south, west, centre, east, north. The values are computed
/// in f64 and rounded once to the value dtype.
#pragma once

#include <cstdint>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/kernels/csr_matrix.hpp"

namespace tenax::solvers {

/// The convection–diffusion matrix of this file on [ny, nx]: ny * nx rows, 5 ny nx - 2 (ny + nx)
/// entries. ny, nx >= 1; beta_h finite, with every entry finite in value_dtype (|beta_h| below
/// about 1e38 for f32); value_dtype f64 or f32, index_dtype i64 or i32: UsageError naming the
/// value and the fix otherwise, and when the grid's sizes overflow or the entries do not fit i32.
/// Built on the host (arrays from the memory pool, so TENAX_MEMORY_LIMIT holds), then moved to
/// `device`; OutOfMemoryError (with the matrix's size in bytes) when the host arrays cannot be
/// allocated.
[[nodiscard]] CsrMatrix convection_diffusion_2d_csr(std::int64_t ny, std::int64_t nx, double beta_h,
                                                    DType value_dtype = DType::f64,
                                                    DType index_dtype = DType::i64,
                                                    Device device = Device::cpu());

}  // namespace tenax::solvers
