#include "tenax/solvers/laplacian_operator.hpp"

#include <cmath>
#include <initializer_list>
#include <string>

#include "detail/format.hpp"
#include "tenax/core/checked_size.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_krylov.hpp"

namespace tenax::solvers {
namespace {

// -L applies through the fused stencil-and-dot kernel even when the dot is not needed: the
// stencil is memory-bound, and this is one pass where laplacian_5pt followed by scale(-1) would
// be two; the reduction rides along on values already in registers.
constexpr double kNegate = -1.0;

std::int64_t checked_extent(const char* op, const char* name, std::int64_t n) {
  TENAX_EXPECTS(n >= 1, UsageError,
                std::string(op) + ": " + name + " = " + std::to_string(n) +
                    " but the grid needs at least one point along each axis",
                "pass the number of interior grid points (boundary points are implicit zeros)");
  return n;
}

// The grid's point count, each extent checked and the product checked for overflow.
std::int64_t grid_points(const char* op, std::initializer_list<std::int64_t> extents) {
  return size_product(std::string(op) + ": the grid's points", extents,
                      "use a grid whose point count fits in 64 bits (and in memory)");
}

double checked_spacing(const char* op, const char* name, double h) {
  TENAX_EXPECTS(std::isfinite(h) && h > 0.0, UsageError,
                std::string(op) + ": " + name + " = " + detail::format_number(h) +
                    " but grid spacings must be positive and finite",
                "pass the distance between neighbouring grid points (1 / (n + 1) on the unit "
                "interval)");
  return h;
}

Tensor constant_vector(std::int64_t n, double value, DType dtype, Device device) {
  Tensor t = Tensor::empty({n}, dtype, device);
  ops::fill(t, value);
  return t;
}

}  // namespace

Laplacian2dOperator::Laplacian2dOperator(std::int64_t ny, std::int64_t nx, double hy, double hx,
                                         DType dtype, Device device)
    : LinearOperator(
          grid_points("Laplacian2dOperator", {checked_extent("Laplacian2dOperator", "ny", ny),
                                              checked_extent("Laplacian2dOperator", "nx", nx)}),
          grid_points("Laplacian2dOperator", {ny, nx}), dtype, device),
      ny_(ny),
      nx_(nx),
      hy_(checked_spacing("Laplacian2dOperator", "hy", hy)),
      hx_(checked_spacing("Laplacian2dOperator", "hx", hx)) {}

std::string Laplacian2dOperator::describe() const {
  return "-laplacian 5-point " + std::string(to_string(dtype())) + "[" + std::to_string(ny_) +
         ", " + std::to_string(nx_) + "] (hy " + detail::format_number(hy_) + ", hx " +
         detail::format_number(hx_) + ") on " + to_string(device());
}

void Laplacian2dOperator::apply_impl(const Tensor& x, const Tensor& y) const {
  (void)apply_dot_impl(x, y);
}

double Laplacian2dOperator::apply_dot_impl(const Tensor& x, const Tensor& y) const {
  return ops::laplacian_5pt_dot(x.reshape({ny_, nx_}), y.reshape({ny_, nx_}), hy_, hx_, kNegate);
}

Tensor Laplacian2dOperator::diagonal_impl() const {
  // The rounding of the stencil's own coefficients (stencil_bodies.hpp): computed in f64, then
  // stored in the operator's dtype.
  const double cy = 1.0 / (hy_ * hy_);
  const double cx = 1.0 / (hx_ * hx_);
  return constant_vector(rows(), 2.0 * (cy + cx), dtype(), device());
}

std::shared_ptr<const LinearOperator> Laplacian2dOperator::with_dtype_impl(DType dtype) const {
  return std::make_shared<const Laplacian2dOperator>(ny_, nx_, hy_, hx_, dtype, device());
}

Laplacian3dOperator::Laplacian3dOperator(std::int64_t nz, std::int64_t ny, std::int64_t nx,
                                         double hz, double hy, double hx, DType dtype,
                                         Device device)
    : LinearOperator(
          grid_points("Laplacian3dOperator", {checked_extent("Laplacian3dOperator", "nz", nz),
                                              checked_extent("Laplacian3dOperator", "ny", ny),
                                              checked_extent("Laplacian3dOperator", "nx", nx)}),
          grid_points("Laplacian3dOperator", {nz, ny, nx}), dtype, device),
      nz_(nz),
      ny_(ny),
      nx_(nx),
      hz_(checked_spacing("Laplacian3dOperator", "hz", hz)),
      hy_(checked_spacing("Laplacian3dOperator", "hy", hy)),
      hx_(checked_spacing("Laplacian3dOperator", "hx", hx)) {}

std::string Laplacian3dOperator::describe() const {
  return "-laplacian 7-point " + std::string(to_string(dtype())) + "[" + std::to_string(nz_) +
         ", " + std::to_string(ny_) + ", " + std::to_string(nx_) + "] (hz " +
         detail::format_number(hz_) + ", hy " + detail::format_number(hy_) + ", hx " +
         detail::format_number(hx_) + ") on " + to_string(device());
}

void Laplacian3dOperator::apply_impl(const Tensor& x, const Tensor& y) const {
  (void)apply_dot_impl(x, y);
}

double Laplacian3dOperator::apply_dot_impl(const Tensor& x, const Tensor& y) const {
  const Shape grid{nz_, ny_, nx_};
  return ops::laplacian_7pt_dot(x.reshape(grid), y.reshape(grid), hz_, hy_, hx_, kNegate);
}

Tensor Laplacian3dOperator::diagonal_impl() const {
  const double cz = 1.0 / (hz_ * hz_);
  const double cy = 1.0 / (hy_ * hy_);
  const double cx = 1.0 / (hx_ * hx_);
  return constant_vector(rows(), 2.0 * (cz + cy + cx), dtype(), device());
}

std::shared_ptr<const LinearOperator> Laplacian3dOperator::with_dtype_impl(DType dtype) const {
  return std::make_shared<const Laplacian3dOperator>(nz_, ny_, nx_, hz_, hy_, hx_, dtype, device());
}

}  // namespace tenax::solvers
