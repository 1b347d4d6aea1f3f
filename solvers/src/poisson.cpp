#include "tenax/solvers/poisson.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "detail/stencil_csr.hpp"
#include "tenax/core/checked_size.hpp"
#include "tenax/core/error.hpp"

namespace tenax::solvers {
namespace {

using detail::StencilAxis;

// -Δh along one axis: the coupling 1/h^2 to both neighbours.
StencilAxis laplacian_axis(std::int64_t extent, std::int64_t stride, double h) {
  const double coupling = 1.0 / (h * h);
  return {extent, stride, -coupling, -coupling};
}

void check_grid(const char* op, const std::vector<StencilAxis>& axes, const double* spacings,
                DType value_dtype, DType index_dtype) {
  for (std::size_t a = 0; a < axes.size(); ++a) {
    TENAX_EXPECTS(axes[a].extent >= 1, UsageError,
                  std::string(op) + ": a grid extent is " + std::to_string(axes[a].extent) +
                      " but must be at least 1",
                  "pass the number of interior points along each axis");
    TENAX_EXPECTS(std::isfinite(spacings[a]) && spacings[a] > 0.0, UsageError,
                  std::string(op) + ": a grid spacing is " + std::to_string(spacings[a]) +
                      " but must be positive and finite",
                  "pass the distance between neighbouring grid points");
  }
  detail::expect_csr_dtypes(op, value_dtype, index_dtype);
}

// The diagonal 2 * (sum of 1/h_axis^2), in f64.
double laplacian_diagonal(const std::vector<StencilAxis>& axes) {
  double diagonal = 0.0;
  for (const StencilAxis& axis : axes) diagonal += 2.0 * -axis.minus;
  return diagonal;
}

}  // namespace

CsrMatrix poisson_2d_csr(std::int64_t ny, std::int64_t nx, double hy, double hx, DType value_dtype,
                         DType index_dtype, Device device) {
  const double spacings[] = {hy, hx};
  const std::vector<StencilAxis> axes = {laplacian_axis(ny, nx, hy), laplacian_axis(nx, 1, hx)};
  check_grid("poisson_2d_csr", axes, spacings, value_dtype, index_dtype);
  return detail::stencil_csr("poisson_2d_csr", axes, laplacian_diagonal(axes), value_dtype,
                             index_dtype, device);
}

CsrMatrix poisson_3d_csr(std::int64_t nz, std::int64_t ny, std::int64_t nx, double hz, double hy,
                         double hx, DType value_dtype, DType index_dtype, Device device) {
  const double spacings[] = {hz, hy, hx};
  // The z stride ny * nx is checked with the points in stencil_csr; check_grid rejects extents
  // below 1 first, so the product is only formed for positive extents.
  const std::int64_t plane = checked_multiply(ny, nx).value_or(std::int64_t{-1});
  const std::vector<StencilAxis> axes = {laplacian_axis(nz, plane, hz), laplacian_axis(ny, nx, hy),
                                         laplacian_axis(nx, 1, hx)};
  check_grid("poisson_3d_csr", axes, spacings, value_dtype, index_dtype);
  TENAX_EXPECTS(plane > 0, UsageError,
                "poisson_3d_csr: a plane of the grid (" + std::to_string(ny) + " * " +
                    std::to_string(nx) + " points) cannot be counted below 2^63",
                "use a smaller grid");
  return detail::stencil_csr("poisson_3d_csr", axes, laplacian_diagonal(axes), value_dtype,
                             index_dtype, device);
}

}  // namespace tenax::solvers
