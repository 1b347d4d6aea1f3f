/// Systems whose solution is known, to measure a solver's or a discretisation's error: the
/// manufactured solution of the Poisson problem on the unit square or cube, and x = 1 (b = A 1)
/// for any operator. @file
/// The Poisson solution is u = g(x) g(y) [g(z)] with g(t) = t (1 - t) e^t, zero on the boundary,
/// and f = -Δu = sum over the axes of a(t_axis) times g of the other coordinates, with
/// a(t) = -g''(t) = t (t + 3) e^t. It is not an eigenvector of -Δh (a sine product would be, and
/// CG would finish in one iteration) and not a low-degree polynomial (the stencil would be
/// exact), so a converged solve of -Δh u_h = f differs from u by the discretisation error, O(h^2).
///
/// Its grid has n interior points per side, spacing h = 1 / (n + 1), point (i, j[, k]) at
/// ((i + 1) h, (j + 1) h[, (k + 1) h]), numbered with x fastest (index (k * n + j) * n + i): the
/// unknowns of poisson_2d_csr(n, n, h, h) and poisson_3d_csr(n, n, n, h, h, h) (poisson.hpp) and
/// of Laplacian2dOperator / Laplacian3dOperator of the same sizes (laplacian_operator.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/solvers/linear_operator.hpp"

namespace tenax::solvers {

/// A right-hand side and the exact solution that goes with it. The right-hand side is what a
/// solver is given: a tensor in the solve's dtype on its device. The solution is the reference an
/// approximation is measured against: f64 values in host memory outside the memory pool, so that
/// holding it through a solve takes no room from the solve (TENAX_MEMORY_LIMIT is the solve's).
struct ManufacturedSolution {
  std::vector<double> solution;  ///< the exact x, in f64
  Tensor rhs;  ///< b: in the dtype and on the device asked for (A's, for manufactured_ones)
};

/// The manufactured solution of this file for -Δu = f on the unit square (dim 2) or cube
/// (dim 3) with n interior points per side: u at the n^dim grid points, and f there rounded once
/// (from f64) to `dtype` (f64 or f32) on `device`. Throws UsageError naming the value and the fix
/// for dim other than 2 or 3, n < 1, n^dim beyond 64-bit sizes and another dtype;
/// OutOfMemoryError (with the bytes) when the host cannot hold u and f, or the right-hand side
/// does not fit the memory pool (TENAX_MEMORY_LIMIT).
[[nodiscard]] ManufacturedSolution manufactured_poisson(int dim, std::int64_t n,
                                                        DType dtype = DType::f64,
                                                        Device device = Device::cpu());

/// x = 1 (a.cols() ones) and b = A 1 (in A's dtype, on A's device), for any operator: a system
/// whose exact solution is known whatever A is. For a distributed operator, this rank's rows of
/// both, and the call is collective, as every apply. Throws what a.apply throws; OutOfMemoryError
/// when the vectors do not fit.
[[nodiscard]] ManufacturedSolution manufactured_ones(const LinearOperator& a);

}  // namespace tenax::solvers
