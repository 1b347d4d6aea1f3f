/// Direct solution of a small dense system A x = b by LU with full pivoting (Eigen), on the CPU.
/// For small systems (a coarse problem, a reference solution in tests): O(n^3) time, O(n^2)
/// memory. @file
#pragma once

#include "tenax/core/tensor.hpp"

namespace tenax::solvers {

/// The solution x of A x = b, a new [n] CPU tensor, for a [n, n] f64 or f32 CPU tensor A and an
/// [n] vector b of the same dtype; computed in f64, returned in A's dtype. Throws UsageError for
/// other shapes, dtypes or devices and when A is singular to working precision (naming its
/// numerical rank).
[[nodiscard]] Tensor dense_solve(const Tensor& a, const Tensor& b);

}  // namespace tenax::solvers
