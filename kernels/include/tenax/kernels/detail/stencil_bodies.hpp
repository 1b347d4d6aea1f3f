/// Stencil bodies shared by the CPU and CUDA backends: the arithmetic of one output point,
/// written once as TENAX_HD functions (see host_device.hpp).
/// @file
/// Grids are contiguous row-major: 2-D [ny, nx] (index y * nx + x) and 3-D [nz, ny, nx]
/// (index (z * ny + y) * nx + x). Boundaries are Dirichlet zero: a neighbour outside the grid
/// counts as 0. Each *_point function takes the gathered values and does the arithmetic in a
/// fixed order; each *_at function gathers with the boundary rule and calls *_point. Backends may
/// gather interior points without the bounds tests but must call *_point, so that every backend
/// computes bit-for-bit the same expression.
#pragma once

#include <cstdint>

#include "tenax/core/host_device.hpp"

namespace tenax::kernels {

/// Coefficients of the discrete Laplacian: c_axis = 1 / h_axis^2, diag = 2 * (sum of c_axis).
/// Computed once on the host so that every backend uses the same rounded values.
template <class T>
struct Laplacian2dCoefficients {
  T cy, cx, diag;
};
template <class T>
struct Laplacian3dCoefficients {
  T cz, cy, cx, diag;
};

template <class T>
[[nodiscard]] inline Laplacian2dCoefficients<T> laplacian_coefficients(double hy, double hx) {
  const double cy = 1.0 / (hy * hy);
  const double cx = 1.0 / (hx * hx);
  return {static_cast<T>(cy), static_cast<T>(cx), static_cast<T>(2.0 * (cy + cx))};
}
template <class T>
[[nodiscard]] inline Laplacian3dCoefficients<T> laplacian_coefficients(double hz, double hy,
                                                                       double hx) {
  const double cz = 1.0 / (hz * hz);
  const double cy = 1.0 / (hy * hy);
  const double cx = 1.0 / (hx * hx);
  return {static_cast<T>(cz), static_cast<T>(cy), static_cast<T>(cx),
          static_cast<T>(2.0 * (cz + cy + cx))};
}

/// (u[y][x-1] + u[y][x+1]) / hx^2 + (u[y-1][x] + u[y+1][x]) / hy^2 - 2 (1/hx^2 + 1/hy^2) u[y][x]
template <class T>
TENAX_HD inline T laplacian_5pt_point(T center, T west, T east, T south, T north,
                                      const Laplacian2dCoefficients<T>& c) {
  const T along_x = c.cx * (west + east);
  const T along_y = c.cy * (south + north);
  return (along_x + along_y) - c.diag * center;
}

template <class T>
TENAX_HD inline T laplacian_5pt_at(const T* u, std::int64_t ny, std::int64_t nx, std::int64_t y,
                                   std::int64_t x, const Laplacian2dCoefficients<T>& c) {
  const std::int64_t i = y * nx + x;
  const T zero = T(0);
  const T west = x > 0 ? u[i - 1] : zero;
  const T east = x + 1 < nx ? u[i + 1] : zero;
  const T south = y > 0 ? u[i - nx] : zero;
  const T north = y + 1 < ny ? u[i + nx] : zero;
  return laplacian_5pt_point(u[i], west, east, south, north, c);
}

/// The explicit heat update of one point from its Laplacian: c * laplacian + u, the expression
/// axpby(c, laplacian, 1, u) evaluates (1 * u is exact).
template <class T>
TENAX_HD inline T explicit_update_point(T center, T laplacian, T c) {
  return c * laplacian + center;
}

/// The 7-point analogue: the 5-point terms plus (u[z-1] + u[z+1]) / hz^2.
template <class T>
TENAX_HD inline T laplacian_7pt_point(T center, T west, T east, T south, T north, T below, T above,
                                      const Laplacian3dCoefficients<T>& c) {
  const T along_x = c.cx * (west + east);
  const T along_y = c.cy * (south + north);
  const T along_z = c.cz * (below + above);
  return ((along_x + along_y) + along_z) - c.diag * center;
}

template <class T>
TENAX_HD inline T laplacian_7pt_at(const T* u, std::int64_t nz, std::int64_t ny, std::int64_t nx,
                                   std::int64_t z, std::int64_t y, std::int64_t x,
                                   const Laplacian3dCoefficients<T>& c) {
  const std::int64_t plane = ny * nx;
  const std::int64_t i = (z * ny + y) * nx + x;
  const T zero = T(0);
  const T west = x > 0 ? u[i - 1] : zero;
  const T east = x + 1 < nx ? u[i + 1] : zero;
  const T south = y > 0 ? u[i - nx] : zero;
  const T north = y + 1 < ny ? u[i + nx] : zero;
  const T below = z > 0 ? u[i - plane] : zero;
  const T above = z + 1 < nz ? u[i + plane] : zero;
  return laplacian_7pt_point(u[i], west, east, south, north, below, above, c);
}

}  // namespace tenax::kernels
