/// Matrix-free Laplacian operators: -Δh on a 2-D grid [ny, nx] (5-point stencil) or a 3-D grid
/// [nz, ny, nx] (7-point stencil) with Dirichlet-zero boundaries (neighbours outside the grid
/// count as 0), spacings in the grid's length unit. The sign makes them symmetric positive
/// definite, so CG applies directly.
/// @file
/// Vectors are 1-D of length nx*ny (*nz), the row-major flattening of the grid (index
/// (z * ny + y) * nx + x); the operator reshapes views of them to the grid, copying nothing.
/// apply and apply_dot are one pass each (ops::laplacian_5pt_dot / laplacian_7pt_dot with
/// scale -1, the arithmetic of ops::laplacian_5pt / laplacian_7pt). The diagonal is the constant
/// 2 (1/hx^2 + 1/hy^2 (+ 1/hz^2)); with_dtype gives the same stencil in another dtype.
#pragma once

#include <cstdint>
#include <string>

#include "tenax/solvers/linear_operator.hpp"

namespace tenax::solvers {

/// -Δh on a 2-D grid [ny, nx] (5-point stencil, Dirichlet-zero boundaries): a square operator
/// of ny * nx unknowns, symmetric positive definite, matrix-free. poisson_2d_csr assembles the
/// same matrix.
class Laplacian2dOperator final : public LinearOperator {
 public:
  /// ny, nx >= 1 grid points; hy, hx > 0 and finite. Throws UsageError otherwise (and for a dtype
  /// other than f64 or f32).
  Laplacian2dOperator(std::int64_t ny, std::int64_t nx, double hy, double hx,
                      DType dtype = DType::f64, Device device = Device::cpu());

  /// @name Grid
  ///@{

  /// The grid as given to the constructor: ny() x nx() points (y the slow axis of the row-major
  /// vectors), spaced hy() and hx() apart in the grid's length unit.
  [[nodiscard]] std::int64_t ny() const noexcept { return ny_; }
  [[nodiscard]] std::int64_t nx() const noexcept { return nx_; }
  [[nodiscard]] double hy() const noexcept { return hy_; }
  [[nodiscard]] double hx() const noexcept { return hx_; }
  ///@}

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] bool has_diagonal() const noexcept override { return true; }
  [[nodiscard]] bool supports_dtype_cast() const noexcept override { return true; }

 private:
  void apply_impl(const Tensor& x, const Tensor& y) const override;
  double apply_dot_impl(const Tensor& x, const Tensor& y) const override;
  Tensor diagonal_impl() const override;
  std::shared_ptr<const LinearOperator> with_dtype_impl(DType dtype) const override;

  std::int64_t ny_;
  std::int64_t nx_;
  double hy_;
  double hx_;
};

/// -Δh on a 3-D grid [nz, ny, nx] (7-point stencil, Dirichlet-zero boundaries): a square
/// operator of nz * ny * nx unknowns, symmetric positive definite, matrix-free. poisson_3d_csr
/// assembles the same matrix.
class Laplacian3dOperator final : public LinearOperator {
 public:
  /// nz, ny, nx >= 1 grid points; hz, hy, hx > 0 and finite. Throws UsageError otherwise (and for
  /// a dtype other than f64 or f32).
  Laplacian3dOperator(std::int64_t nz, std::int64_t ny, std::int64_t nx, double hz, double hy,
                      double hx, DType dtype = DType::f64, Device device = Device::cpu());

  /// @name Grid
  ///@{

  /// The grid extents as given to the constructor: nz() x ny() x nx() points, z the slowest axis
  /// of the row-major vectors.
  [[nodiscard]] std::int64_t nz() const noexcept { return nz_; }
  [[nodiscard]] std::int64_t ny() const noexcept { return ny_; }
  [[nodiscard]] std::int64_t nx() const noexcept { return nx_; }
  ///@}

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] bool has_diagonal() const noexcept override { return true; }
  [[nodiscard]] bool supports_dtype_cast() const noexcept override { return true; }

 private:
  void apply_impl(const Tensor& x, const Tensor& y) const override;
  double apply_dot_impl(const Tensor& x, const Tensor& y) const override;
  Tensor diagonal_impl() const override;
  std::shared_ptr<const LinearOperator> with_dtype_impl(DType dtype) const override;

  std::int64_t nz_;
  std::int64_t ny_;
  std::int64_t nx_;
  double hz_;
  double hy_;
  double hx_;
};

}  // namespace tenax::solvers
