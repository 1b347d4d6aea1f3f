// The assembled convection–diffusion matrix: its every entry on a small grid, beta h = 0 as the
// 5-point Laplacian, the upwind asymmetry and diagonal dominance, the value and index dtypes,
// a GMRES solve of A x = A 1, and the refusals (each naming the value and the fix).
#include "tenax/solvers/convection_diffusion.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "host_memory_limit.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/manufactured.hpp"
#include "tenax/solvers/poisson.hpp"

namespace tenax::solvers {
namespace {

using tenax::testing::expect_usage_error;

using tenax::testing::values_of;

std::vector<std::int64_t> indices_of(const Tensor& t) {
  std::vector<std::int64_t> out;
  for (std::int64_t k = 0; k < t.numel(); ++k) {
    out.push_back(t.dtype() == DType::i32 ? t.data_as<std::int32_t>()[k]
                                          : t.data_as<std::int64_t>()[k]);
  }
  return out;
}

TEST(ConvectionDiffusion, EveryEntryOfATwoByThreeGrid) {
  // Points y * 3 + x; each row south, west, centre, east, north (those inside the grid).
  const CsrMatrix a = convection_diffusion_2d_csr(2, 3, 0.5);
  EXPECT_EQ(a.rows(), 6);
  EXPECT_EQ(a.cols(), 6);
  EXPECT_EQ(a.nnz(), 5 * 6 - 2 * (2 + 3));
  EXPECT_EQ(a.dtype(), DType::f64);
  EXPECT_EQ(a.index_dtype(), DType::i64);
  EXPECT_EQ(indices_of(a.row_ptr()), (std::vector<std::int64_t>{0, 3, 7, 10, 13, 17, 20}));
  EXPECT_EQ(indices_of(a.col_idx()),
            (std::vector<std::int64_t>{0, 1, 3,     // (0, 0): centre, east, north
                                       0, 1, 2, 4,  // (0, 1): west, centre, east, north
                                       1, 2, 5,     // (0, 2): west, centre, north
                                       0, 3, 4,     // (1, 0): south, centre, east
                                       1, 3, 4, 5,  // (1, 1): south, west, centre, east
                                       2, 4, 5}));  // (1, 2): south, west, centre
  // Row by row as above: centre 4 + 2 * 0.5 = 5, upwind (south, west) -1 - 0.5, downwind -1.
  EXPECT_EQ(values_of(a.values()),
            (std::vector<double>{5,    -1, -1, -1.5, 5,    -1, -1, -1.5, 5,    -1,
                                 -1.5, 5,  -1, -1.5, -1.5, 5,  -1, -1.5, -1.5, 5}));
}

TEST(ConvectionDiffusion, WithoutConvectionIsTheFivePointLaplacianTimesHSquared) {
  const CsrMatrix a = convection_diffusion_2d_csr(4, 5, 0.0);
  const CsrMatrix laplacian = poisson_2d_csr(4, 5, 1.0, 1.0);
  EXPECT_EQ(indices_of(a.row_ptr()), indices_of(laplacian.row_ptr()));
  EXPECT_EQ(indices_of(a.col_idx()), indices_of(laplacian.col_idx()));
  EXPECT_EQ(values_of(a.values()), values_of(laplacian.values()));
}

TEST(ConvectionDiffusion, UpwindConvectionIsNonSymmetricAndDiagonallyDominant) {
  const std::int64_t n = 6;
  const double beta_h = 2.0;
  const std::vector<double> d = values_of(convection_diffusion_2d_csr(n, n, beta_h).to_dense());
  const auto at = [&](std::int64_t r, std::int64_t c) { return d[r * n * n + c]; };
  const std::int64_t centre = 2 * n + 3;             // (y 2, x 3)
  EXPECT_EQ(at(centre, centre - 1), -1.0 - beta_h);  // west: upwind
  EXPECT_EQ(at(centre - 1, centre), -1.0);           // its transpose: downwind
  EXPECT_EQ(at(centre, centre - n), -1.0 - beta_h);  // south
  EXPECT_EQ(at(centre - n, centre), -1.0);
  for (std::int64_t r = 0; r < n * n; ++r) {
    double off_diagonal = 0.0;
    for (std::int64_t c = 0; c < n * n; ++c) {
      if (c != r) off_diagonal += std::fabs(at(r, c));
    }
    EXPECT_GE(at(r, r), off_diagonal) << "row " << r;
  }
}

TEST(ConvectionDiffusion, ValueAndIndexDtypesAndDevice) {
  const CsrMatrix wide = convection_diffusion_2d_csr(7, 5, 0.1);
  const CsrMatrix narrow = convection_diffusion_2d_csr(7, 5, 0.1, DType::f32, DType::i32);
  EXPECT_EQ(narrow.dtype(), DType::f32);
  EXPECT_EQ(narrow.index_dtype(), DType::i32);
  EXPECT_EQ(narrow.device(), Device::cpu());
  EXPECT_EQ(indices_of(narrow.row_ptr()), indices_of(wide.row_ptr()));
  EXPECT_EQ(indices_of(narrow.col_idx()), indices_of(wide.col_idx()));
  // Each value computed in f64 and rounded once.
  const std::vector<double> f64_values = values_of(wide.values());
  const std::vector<double> f32_values = values_of(narrow.values());
  ASSERT_EQ(f32_values.size(), f64_values.size());
  for (std::size_t k = 0; k < f64_values.size(); ++k) {
    EXPECT_EQ(f32_values[k], static_cast<double>(static_cast<float>(f64_values[k]))) << k;
  }
  EXPECT_EQ(f32_values[0], static_cast<double>(static_cast<float>(4.0 + 2.0 * 0.1)));
}

TEST(ConvectionDiffusion, GmresSolvesTheSystemOfAllOnes) {
  const OperatorPtr a = make_csr_operator(convection_diffusion_2d_csr(12, 10, 1.5));
  const ManufacturedSolution ones = manufactured_ones(*a);
  const Tensor x = Tensor::empty({a->cols()}, DType::f64);
  ops::fill(x, 0.0);
  const auto solver =
      make_solver("gmres", {.tolerance = 1e-12, .max_iterations = 500, .restart = 40});
  const SolveResult result = solver->solve(a, ones.rhs, x);
  EXPECT_EQ(result.status, SolveStatus::converged);
  for (const double value : values_of(x)) EXPECT_NEAR(value, 1.0, 1e-9);
}

TEST(ConvectionDiffusion, BadSizesAndParametersAreRefusedNamingTheValue) {
  expect_usage_error([] { (void)convection_diffusion_2d_csr(0, 3, 0.5); }, "0 x 3 points",
                     "interior points");
  expect_usage_error([] { (void)convection_diffusion_2d_csr(3, -2, 0.5); }, "3 x -2 points",
                     "interior points");
  expect_usage_error(
      [] { (void)convection_diffusion_2d_csr(3, 3, std::numeric_limits<double>::quiet_NaN()); },
      "beta_h is nan but must be finite", "convection strength");
  expect_usage_error(
      [] { (void)convection_diffusion_2d_csr(3, 3, std::numeric_limits<double>::infinity()); },
      "beta_h is inf", "convection strength");
  expect_usage_error([] { (void)convection_diffusion_2d_csr(3, 3, 1e308); },
                     "beta_h 1e+308 gives the centre entry 4 + 2 beta_h = inf, beyond the range of "
                     "f64",
                     "a beta_h of a size the matrix can hold");
  expect_usage_error([] { (void)convection_diffusion_2d_csr(3, 3, -1e39, DType::f32); },
                     "beyond the range of f32", "a beta_h of a size");
  (void)convection_diffusion_2d_csr(3, 3, -1e39);  // f64 holds it
  expect_usage_error([] { (void)convection_diffusion_2d_csr(3, 3, 0.5, DType::i32); },
                     "value dtype i32 is not supported", "DType::f64 or DType::f32");
  expect_usage_error([] { (void)convection_diffusion_2d_csr(3, 3, 0.5, DType::f64, DType::f64); },
                     "index dtype f64 is not supported", "DType::i64 or DType::i32");
}

// Sizes are checked before anything is allocated: a grid whose points overflow 64 bits, entries
// beyond an i32 index, and arrays beyond the memory pool are refused with their sizes.
TEST(ConvectionDiffusion, SizesAreCheckedAndTheArraysRespectTheMemoryLimit) {
  expect_usage_error([] { (void)convection_diffusion_2d_csr(4000000000, 4000000000, 0.5); },
                     "convection_diffusion_2d_csr: the grid's points", "a smaller grid");
  expect_usage_error([] { (void)convection_diffusion_2d_csr(3037000000, 3037000000, 0.5); },
                     "convection_diffusion_2d_csr: the matrix entries", "a smaller grid");
  expect_usage_error(
      [] { (void)convection_diffusion_2d_csr(21000, 21000, 0.5, DType::f64, DType::i32); },
      "2204916000 entries do not fit the i32 index dtype", "DType::i64");
  const tenax::testing::HostMemoryLimit limit(std::size_t{32} << 20);
  try {
    (void)convection_diffusion_2d_csr(2000, 2000, 0.5);
    FAIL() << "a 4 000 000-row matrix fit a 32 MiB pool";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(e.cause().find("convection_diffusion_2d_csr: the matrix of 4000000 rows and "
                             "19992000 entries"),
              std::string::npos)
        << e.cause();
  }
  EXPECT_EQ(convection_diffusion_2d_csr(100, 100, 0.5).nnz(), 5 * 100 * 100 - 4 * 100);
}

}  // namespace
}  // namespace tenax::solvers
