// The Laplacian stencils written once for every backend (backend_test.hpp): hand-computed grids
// with their boundaries, a padded reference on many shapes, and the fused explicit update equal
// to laplacian_5pt + axpby bit for bit, over whole grids and over blocks of rows read through a
// halo view.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend_test.hpp"
#include "kernels/linalg_test_helpers.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace tenax::stencil_cases {

using testing::make_tensor;
using testing::random_integers;
using testing::random_reals;
using testing::values_of;

inline const std::int64_t kShapes2d[][2] = {{1, 1}, {1, 5},   {4, 1},  {2, 2},
                                            {3, 3}, {17, 33}, {64, 70}};

// The Laplacian by the definition: copy u into a grid padded with one layer of zeros, then
// apply the stencil everywhere.
inline std::vector<double> reference_laplacian(const std::vector<double>& u, std::int64_t nz,
                                               std::int64_t ny, std::int64_t nx, double hz,
                                               double hy, double hx, bool three_d) {
  const std::int64_t pz = nz + 2, py = ny + 2, px = nx + 2;
  std::vector<double> p(static_cast<std::size_t>(pz * py * px), 0.0);
  auto at = [&](std::int64_t z, std::int64_t y, std::int64_t x) -> double& {
    return p[((z + 1) * py + (y + 1)) * px + (x + 1)];
  };
  for (std::int64_t z = 0; z < nz; ++z)
    for (std::int64_t y = 0; y < ny; ++y)
      for (std::int64_t x = 0; x < nx; ++x) at(z, y, x) = u[(z * ny + y) * nx + x];
  std::vector<double> out(u.size());
  for (std::int64_t z = 0; z < nz; ++z) {
    for (std::int64_t y = 0; y < ny; ++y) {
      for (std::int64_t x = 0; x < nx; ++x) {
        const double c = at(z, y, x);
        double v = (at(z, y, x - 1) - 2 * c + at(z, y, x + 1)) / (hx * hx) +
                   (at(z, y - 1, x) - 2 * c + at(z, y + 1, x)) / (hy * hy);
        if (three_d) v += (at(z - 1, y, x) - 2 * c + at(z + 1, y, x)) / (hz * hz);
        out[(z * ny + y) * nx + x] = v;
      }
    }
  }
  return out;
}

class StencilKernels : public testing::BackendTest {};

TEST_P(StencilKernels, Laplacian5ptMatchesAHandComputedGridIncludingTheBoundary) {
  const Tensor u = put(make_tensor({3, 4}, DType::f64, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  const Tensor out = Tensor::empty({3, 4}, DType::f64, device());
  ops::laplacian_5pt(u, out);
  const std::vector<double> want = {3, 2, 1, -5, -4, 0, 0, -9, -21, -14, -15, -29};
  EXPECT_EQ(values_of(out), want);

  ops::laplacian_5pt(u, out, 0.5);  // 1 / h^2 = 4
  std::vector<double> scaled = want;
  for (double& v : scaled) v *= 4;
  EXPECT_EQ(values_of(out), scaled);

  // hy = 1, hx = 2: 0.25 (west + east) + (south + north) - 2.5 center.
  ops::laplacian_5pt(u, out, 1.0, 2.0);
  const std::vector<double> aniso = {
      0.25 * 2 + 5 - 2.5 * 1,   0.25 * 4 + 6 - 2.5 * 2,   0.25 * 6 + 7 - 2.5 * 3,
      0.25 * 3 + 8 - 2.5 * 4,   0.25 * 6 + 10 - 2.5 * 5,  0.25 * 12 + 12 - 2.5 * 6,
      0.25 * 14 + 14 - 2.5 * 7, 0.25 * 7 + 16 - 2.5 * 8,  0.25 * 10 + 5 - 2.5 * 9,
      0.25 * 20 + 6 - 2.5 * 10, 0.25 * 22 + 7 - 2.5 * 11, 0.25 * 11 + 8 - 2.5 * 12};
  EXPECT_EQ(values_of(out), aniso);
}

TEST_P(StencilKernels, Laplacian7ptMatchesAHandComputedGridIncludingTheBoundary) {
  const Tensor u = put(make_tensor({2, 2, 2}, DType::f32, {1, 2, 3, 4, 5, 6, 7, 8}));
  const Tensor out = Tensor::empty({2, 2, 2}, DType::f32, device());
  ops::laplacian_7pt(u, out);
  EXPECT_EQ(values_of(out), (std::vector<double>{4, -1, -6, -11, -16, -21, -26, -31}));
}

TEST_P(StencilKernels, Laplacian5ptMatchesThePaddedReferenceOnManyShapes) {
  std::uint32_t seed = 1;
  for (const auto& [ny, nx] : kShapes2d) {
    for (const DType dtype : {DType::f64, DType::f32}) {
      const auto u = random_integers(ny * nx, 9, seed++);
      const Tensor out = Tensor::empty({ny, nx}, dtype, device());
      ops::laplacian_5pt(put(make_tensor({ny, nx}, dtype, u)), out);
      EXPECT_EQ(values_of(out), reference_laplacian(u, 1, ny, nx, 1, 1, 1, false))
          << ny << "x" << nx << " " << to_string(dtype);

      const auto r = random_reals(ny * nx, dtype, seed++);
      ops::laplacian_5pt(put(make_tensor({ny, nx}, dtype, r)), out, 0.3, 0.7);
      const auto want = reference_laplacian(r, 1, ny, nx, 1, 0.3, 0.7, false);
      const auto got = values_of(out);
      const double tol = dtype == DType::f64 ? 1e-12 : 1e-4;
      for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], tol);
    }
  }
}

TEST_P(StencilKernels, Laplacian7ptMatchesThePaddedReferenceOnManyShapes) {
  const std::int64_t shapes[][3] = {{1, 1, 1}, {1, 3, 4},  {3, 1, 5},   {2, 2, 1},
                                    {3, 3, 3}, {5, 9, 17}, {20, 16, 12}};
  std::uint32_t seed = 50;
  for (const auto& [nz, ny, nx] : shapes) {
    for (const DType dtype : {DType::f64, DType::f32}) {
      const auto u = random_integers(nz * ny * nx, 9, seed++);
      const Tensor out = Tensor::empty({nz, ny, nx}, dtype, device());
      ops::laplacian_7pt(put(make_tensor({nz, ny, nx}, dtype, u)), out);
      EXPECT_EQ(values_of(out), reference_laplacian(u, nz, ny, nx, 1, 1, 1, true))
          << nz << "x" << ny << "x" << nx << " " << to_string(dtype);

      const auto r = random_reals(nz * ny * nx, dtype, seed++);
      ops::laplacian_7pt(put(make_tensor({nz, ny, nx}, dtype, r)), out, 0.5, 0.25, 2.0);
      const auto want = reference_laplacian(r, nz, ny, nx, 0.5, 0.25, 2.0, true);
      const auto got = values_of(out);
      const double tol = dtype == DType::f64 ? 1e-12 : 1e-4;
      for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], tol);
    }
  }
}

// The fused explicit update equals laplacian_5pt + axpby bit for bit: over the whole grid, and
// for blocks of rows read through a halo view (the heat2d step), whatever the block size.
TEST_P(StencilKernels, Laplacian5ptUpdateEqualsLaplacianThenAxpbyBitwiseOnWholeGridsAndHaloBlocks) {
  std::uint32_t seed = 77;
  for (const auto& [ny, nx] : kShapes2d) {
    for (const DType dtype : {DType::f64, DType::f32}) {
      const Tensor u = put(make_tensor({ny, nx}, dtype, random_reals(ny * nx, dtype, seed++)));
      const double c = 0.23;
      const Tensor laplacian = Tensor::empty({ny, nx}, dtype, device());
      ops::laplacian_5pt(u, laplacian, 0.3, 0.7);
      const Tensor expected = u.clone();
      ops::axpby(c, laplacian, 1.0, expected);

      const Tensor whole = Tensor::empty({ny, nx}, dtype, device());
      ops::laplacian_5pt_update(u, whole, 0, c, 0.3, 0.7);
      EXPECT_EQ(values_of(whole), values_of(expected))
          << ny << "x" << nx << " " << to_string(dtype);

      for (const std::int64_t block : {std::int64_t{1}, std::int64_t{3}, ny}) {
        const Tensor blocked = Tensor::empty({ny, nx}, dtype, device());
        for (std::int64_t r0 = 0; r0 < ny; r0 += block) {
          const std::int64_t r1 = std::min(ny, r0 + block);
          const std::int64_t top = r0 > 0 ? r0 - 1 : 0;
          const std::int64_t bottom = r1 < ny ? r1 + 1 : ny;
          ops::laplacian_5pt_update(u.slice(top, bottom), blocked.slice(r0, r1), r0 - top, c, 0.3,
                                    0.7);
        }
        EXPECT_EQ(values_of(blocked), values_of(expected))
            << ny << "x" << nx << " blocks of " << block << " " << to_string(dtype);
      }
    }
  }
}

}  // namespace tenax::stencil_cases
