// Test problems for the solvers: small SPD (Poisson), non-symmetric (upwind convection-diffusion)
// and indefinite (shifted Poisson) systems with dense reference solutions, and helpers to
// measure errors and residuals in f64 on the host.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <vector>

#include "kernels/tensor_values.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/dense_solve.hpp"
#include "tenax/solvers/poisson.hpp"

namespace tenax::solvers::testing {

using tenax::testing::make_tensor;
using tenax::testing::values_of;

// n reals uniform in [-1, 1), deterministic in the seed.
inline std::vector<double> random_values(std::int64_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> out(static_cast<std::size_t>(n));
  for (double& v : out) v = dist(gen);
  return out;
}

inline Tensor random_vector(std::int64_t n, std::uint32_t seed, DType dtype = DType::f64) {
  return make_tensor(random_values(n, seed), dtype);
}

inline Tensor zeros(std::int64_t n, DType dtype = DType::f64, Device device = Device::cpu()) {
  return make_tensor(std::vector<double>(static_cast<std::size_t>(n), 0.0), dtype).to(device);
}

// A dense [n, n] CPU f64 tensor from row-major values.
inline Tensor dense(std::int64_t n, const std::vector<double>& values) {
  return make_tensor({n, n}, DType::f64, values);
}

// Grid spacing of an n-point interior grid on the unit interval.
inline double unit_spacing(std::int64_t n) { return 1.0 / static_cast<double>(n + 1); }

// -Δh on an [n, n] grid of the unit square, assembled.
inline CsrMatrix poisson(std::int64_t n) {
  return poisson_2d_csr(n, n, unit_spacing(n), unit_spacing(n));
}

// Eigenvalue (j, k) (1-based) of -Δh on an [n, n] grid of the unit square.
inline double poisson_eigenvalue(std::int64_t n, int j, int k) {
  const double h = unit_spacing(n);
  const double sj = std::sin(j * std::numbers::pi * h / 2.0);
  const double sk = std::sin(k * std::numbers::pi * h / 2.0);
  return 4.0 / (h * h) * (sj * sj + sk * sk);
}

// Eigenvector (j, k) of -Δh on an [n, n] grid: sin(j pi x) sin(k pi y) at the grid points.
inline std::vector<double> poisson_mode(std::int64_t n, int j, int k) {
  const double h = unit_spacing(n);
  std::vector<double> v(static_cast<std::size_t>(n * n));
  for (std::int64_t y = 0; y < n; ++y) {
    for (std::int64_t x = 0; x < n; ++x) {
      v[static_cast<std::size_t>(y * n + x)] =
          std::sin(j * std::numbers::pi * h * static_cast<double>(x + 1)) *
          std::sin(k * std::numbers::pi * h * static_cast<double>(y + 1));
    }
  }
  return v;
}

// -Δu + c . grad u on an [n, n] grid of the unit square, first-order upwind for c > 0:
// non-symmetric, and non-normal for strong convection.
inline CsrMatrix convection_diffusion(std::int64_t n, double cx, double cy) {
  const double h = unit_spacing(n);
  const double d = 1.0 / (h * h);
  const std::int64_t size = n * n;
  std::vector<double> a(static_cast<std::size_t>(size * size), 0.0);
  const auto at = [&](std::int64_t r, std::int64_t c) -> double& {
    return a[static_cast<std::size_t>(r * size + c)];
  };
  for (std::int64_t y = 0; y < n; ++y) {
    for (std::int64_t x = 0; x < n; ++x) {
      const std::int64_t i = y * n + x;
      at(i, i) = 4.0 * d + (cx + cy) / h;
      if (x > 0) at(i, i - 1) = -d - cx / h;
      if (x + 1 < n) at(i, i + 1) = -d;
      if (y > 0) at(i, i - n) = -d - cy / h;
      if (y + 1 < n) at(i, i + n) = -d;
    }
  }
  return CsrMatrix::from_dense(dense(size, a));
}

// -Δh - sigma I with sigma halfway between the two smallest eigenvalues: symmetric, with one
// negative eigenvalue.
inline CsrMatrix shifted_poisson(std::int64_t n) {
  const double sigma = 0.5 * (poisson_eigenvalue(n, 1, 1) + poisson_eigenvalue(n, 1, 2));
  Tensor a = poisson(n).to_dense();
  double* values = a.data_as<double>();
  for (std::int64_t i = 0; i < n * n; ++i) values[i * n * n + i] -= sigma;
  return CsrMatrix::from_dense(a);
}

// The solution of A x = b by a dense direct solve (Eigen LU).
inline std::vector<double> reference_solution(const CsrMatrix& a, const Tensor& b) {
  return values_of(dense_solve(a.to(Device::cpu()).to_dense(), b.to(Device::cpu())));
}

inline double norm(const std::vector<double>& v) {
  double sum = 0.0;
  for (const double e : v) sum += e * e;
  return std::sqrt(sum);
}

// ||x - reference|| / ||reference||.
inline double relative_error(const Tensor& x, const std::vector<double>& reference) {
  const std::vector<double> got = values_of(x);
  double diff = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    diff += (got[i] - reference[i]) * (got[i] - reference[i]);
  }
  return std::sqrt(diff) / norm(reference);
}

// ||b - A x|| / ||b|| with A x computed in f64 on the host from the entries of A (whatever
// its value dtype), so it measures x itself, not the arithmetic of the solve.
inline double true_relative_residual(const CsrMatrix& a, const Tensor& b, const Tensor& x) {
  const std::vector<double> row_ptr = values_of(a.row_ptr());
  const std::vector<double> col_idx = values_of(a.col_idx());
  const std::vector<double> values = values_of(a.values());
  const std::vector<double> bv = values_of(b);
  const std::vector<double> xv = values_of(x);
  std::vector<double> r(bv.size());
  for (std::size_t i = 0; i < bv.size(); ++i) {
    double ax = 0.0;
    for (auto p = static_cast<std::size_t>(row_ptr[i]);
         p < static_cast<std::size_t>(row_ptr[i + 1]); ++p) {
      ax += values[p] * xv[static_cast<std::size_t>(col_idx[p])];
    }
    r[i] = bv[i] - ax;
  }
  return norm(r) / norm(bv);
}

}  // namespace tenax::solvers::testing
