// The CSR matrix of a constant-coefficient stencil on a grid with Dirichlet-zero boundaries: the
// assembly shared by poisson_2d_csr, poisson_3d_csr and convection_diffusion_2d_csr. Internal.
#pragma once

#include <cstdint>
#include <vector>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/kernels/csr_matrix.hpp"

namespace tenax::solvers::detail {

// One axis of the grid: its extent (>= 1), its stride in the flattened index, and the entries
// that couple a point to its neighbour one step down (minus) and one step up (plus) the axis.
struct StencilAxis {
  std::int64_t extent;
  std::int64_t stride;
  double minus;
  double plus;
};

// UsageError naming `op` unless value_dtype is f64 or f32 and index_dtype i64 or i32.
void expect_csr_dtypes(const char* op, DType value_dtype, DType index_dtype);

// The matrix of the stencil: one row per grid point (axes ordered slowest first, extents >= 1,
// dtypes checked by the caller), `diagonal` on the diagonal and each axis's minus and plus
// entries where the neighbour is inside the grid, in increasing column order. The values are
// given in f64 and rounded once to value_dtype. Sizes are checked before anything is allocated:
// UsageError (naming `op`) when the points or entries overflow 64 bits or the entries do not fit
// an i32 index, OutOfMemoryError with the matrix's bytes when the host arrays cannot be
// allocated. Built on the host, then moved to `device`.
[[nodiscard]] CsrMatrix stencil_csr(const char* op, const std::vector<StencilAxis>& axes,
                                    double diagonal, DType value_dtype, DType index_dtype,
                                    Device device);

}  // namespace tenax::solvers::detail
