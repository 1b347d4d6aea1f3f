#include "tenax/solvers/convection_diffusion.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "detail/format.hpp"
#include "detail/stencil_csr.hpp"
#include "tenax/core/error.hpp"

namespace tenax::solvers {

CsrMatrix convection_diffusion_2d_csr(std::int64_t ny, std::int64_t nx, double beta_h,
                                      DType value_dtype, DType index_dtype, Device device) {
  constexpr const char* kOp = "convection_diffusion_2d_csr";
  TENAX_EXPECTS(ny >= 1 && nx >= 1, UsageError,
                std::string(kOp) + ": the grid is " + std::to_string(ny) + " x " +
                    std::to_string(nx) + " points, but each extent must be at least 1",
                "pass the number of interior points along y and x");
  detail::expect_csr_dtypes(kOp, value_dtype, index_dtype);
  TENAX_EXPECTS(
      std::isfinite(beta_h), UsageError,
      std::string(kOp) + ": beta_h is " + detail::format_number(beta_h) + " but must be finite",
      "pass the convection strength beta times the grid spacing h (0: no convection; "
      "values above 1 make the matrix strongly non-symmetric)");
  // The upwind entries (west and south) and the centre, in f64; both must be finite in the
  // value dtype too (they are rounded to it once, when stored).
  const double upwind = -1.0 - beta_h;
  const double centre = 4.0 + 2.0 * beta_h;
  const double largest = value_dtype == DType::f32
                             ? static_cast<double>(std::numeric_limits<float>::max())
                             : std::numeric_limits<double>::max();
  TENAX_EXPECTS(std::abs(centre) <= largest && std::abs(upwind) <= largest, UsageError,
                std::string(kOp) + ": beta_h " + detail::format_number(beta_h) +
                    " gives the centre entry 4 + 2 beta_h = " + detail::format_number(centre) +
                    ", beyond the range of " + std::string(to_string(value_dtype)),
                "pass a beta_h of a size the matrix can hold (values above 1 already make it "
                "strongly non-symmetric)");
  // Axes slowest first: y (stride nx), then x. South and west are the upwind neighbours.
  const std::vector<detail::StencilAxis> axes = {{ny, nx, upwind, -1.0}, {nx, 1, upwind, -1.0}};
  return detail::stencil_csr(kOp, axes, centre, value_dtype, index_dtype, device);
}

}  // namespace tenax::solvers
