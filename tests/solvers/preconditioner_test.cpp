// Preconditioners: what Jacobi and ILU(0) compute, the errors for matrices they cannot handle,
// and that they cut iteration counts where they should.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "solvers/test_problems.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/ilu0_preconditioner.hpp"
#include "tenax/solvers/jacobi_preconditioner.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/scaled_shifted_operator.hpp"

namespace tenax::solvers {
namespace {

using testing::make_tensor;
using testing::random_vector;
using testing::values_of;
using testing::zeros;

CsrMatrix csr(std::int64_t rows, const std::vector<double>& row_ptr,
              const std::vector<double>& col_idx, const std::vector<double>& values) {
  return CsrMatrix(rows, rows, make_tensor(row_ptr, DType::i64), make_tensor(col_idx, DType::i64),
                   make_tensor(values, DType::f64));
}

// The 1-D Poisson matrix tridiag(-1, 2, -1) of size n.
CsrMatrix tridiagonal(std::int64_t n) {
  std::vector<double> a(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    a[static_cast<std::size_t>(i * n + i)] = 2.0;
    if (i > 0) a[static_cast<std::size_t>(i * n + i - 1)] = -1.0;
    if (i + 1 < n) a[static_cast<std::size_t>(i * n + i + 1)] = -1.0;
  }
  return CsrMatrix::from_dense(testing::dense(n, a));
}

// -Δh + diag(c) with c spread over four decades: the diagonal varies, so Jacobi helps.
CsrMatrix variable_coefficient(std::int64_t n) {
  Tensor a = testing::poisson(n).to_dense();
  const std::vector<double> c = testing::random_values(n * n, 21);
  double* values = a.data_as<double>();
  for (std::int64_t i = 0; i < n * n; ++i) values[i * n * n + i] += 1e4 * std::pow(10.0, 2 * c[i]);
  return CsrMatrix::from_dense(a);
}

std::int64_t iterations(const std::string& method, const std::string& pc, const CsrMatrix& a) {
  SolverOptions options;
  options.tolerance = 1e-10;
  options.max_iterations = 5000;
  options.preconditioner = pc;
  const SolveResult result =
      make_solver(method, options)
          ->solve(make_csr_operator(a), random_vector(a.rows(), 5), zeros(a.rows()));
  EXPECT_EQ(result.status, SolveStatus::converged) << method << " pc=" << pc;
  return result.iterations;
}

TEST(Jacobi, DividesByTheDiagonal) {
  const OperatorPtr a =
      make_csr_operator(CsrMatrix::from_dense(testing::dense(3, {4, 1, 0, 1, -2, 0, 0, 0, 0.5})));
  const JacobiPreconditioner m(*a);
  const Tensor z = Tensor::empty({3}, DType::f64);
  m.apply(make_tensor({2.0, 3.0, 1.0}, DType::f64), z);
  EXPECT_EQ(values_of(z), (std::vector<double>{0.5, -1.5, 2.0}));
  EXPECT_EQ(values_of(*m.inverse_diagonal()), (std::vector<double>{0.25, -0.5, 2.0}));
}

TEST(Jacobi, WorksOnAShiftedStencilAndRejectsAZeroDiagonal) {
  const OperatorPtr shifted =
      scale_and_shift(std::make_shared<const Laplacian2dOperator>(3, 3, 0.5, 0.5), 2.0, 1.0);
  const JacobiPreconditioner m(*shifted);
  for (const double d : values_of(*m.inverse_diagonal())) EXPECT_DOUBLE_EQ(d, 1.0 / 33.0);

  const OperatorPtr singular =
      make_csr_operator(CsrMatrix::from_dense(testing::dense(2, {1, 1, 1, 0})));
  try {
    JacobiPreconditioner bad(*singular);
    FAIL() << "a zero diagonal was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("diagonal entry 1"), std::string::npos) << e.what();
    EXPECT_NE(e.fix().find("pc=none"), std::string::npos) << e.fix();
  }
  // A subnormal diagonal entry is not zero, but its inverse overflows to inf.
  const OperatorPtr tiny =
      make_csr_operator(CsrMatrix::from_dense(testing::dense(2, {1e-310, 1, 0, 1})));
  try {
    JacobiPreconditioner bad(*tiny);
    FAIL() << "a diagonal whose inverse overflows was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("diagonal entry 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is 1e-310, whose inverse overflows"), std::string::npos)
        << e.what();
  }
}

TEST(Ilu0, IsTheExactFactorisationOfATridiagonalMatrix) {
  // LU of a tridiagonal matrix has no fill-in, so ILU(0) = LU and M^-1 = A^-1.
  const CsrMatrix a = tridiagonal(20);
  const Ilu0Preconditioner m(a);
  const Tensor b = random_vector(20, 3);
  const Tensor z = Tensor::empty({20}, DType::f64);
  m.apply(b, z);
  EXPECT_LE(testing::relative_error(z, testing::reference_solution(a, b)), 1e-13);
  // So preconditioned CG converges in one iteration.
  SolverOptions options;
  options.preconditioner = "ilu0";
  options.tolerance = 1e-12;
  const SolveResult result = make_solver("cg", options)->solve(make_csr_operator(a), b, zeros(20));
  EXPECT_EQ(result.status, SolveStatus::converged);
  EXPECT_EQ(result.iterations, 1);
}

TEST(Ilu0, SortsColumnsAndSumsDuplicatesFirst) {
  // The same 3 x 3 matrix [[4, -1, 0], [-1, 4, -1], [0, -1, 4]] stored sorted, and stored with
  // rows out of order and the diagonal of row 1 split into two entries.
  const CsrMatrix sorted = csr(3, {0, 2, 5, 7}, {0, 1, 0, 1, 2, 1, 2}, {4, -1, -1, 4, -1, -1, 4});
  const CsrMatrix shuffled =
      csr(3, {0, 2, 6, 8}, {1, 0, 2, 1, 0, 1, 2, 1}, {-1, 4, -1, 3, -1, 1, 4, -1});
  const Tensor r = make_tensor({1.0, -2.0, 0.5}, DType::f64);
  const Tensor z1 = Tensor::empty({3}, DType::f64);
  const Tensor z2 = Tensor::empty({3}, DType::f64);
  Ilu0Preconditioner(sorted).apply(r, z1);
  Ilu0Preconditioner(shuffled).apply(r, z2);
  EXPECT_EQ(values_of(z1), values_of(z2));
}

TEST(Ilu0, NamesTheRowOfAMissingDiagonalOrAZeroPivot) {
  try {
    Ilu0Preconditioner bad(csr(2, {0, 1, 2}, {1, 0}, {1.0, 1.0}));
    FAIL() << "a missing diagonal was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("row 0"), std::string::npos) << e.what();
    EXPECT_NE(e.fix().find("pc=jacobi"), std::string::npos) << e.fix();
  }
  try {
    // [[1, 1], [1, 1]]: the second pivot is 1 - 1 * 1 = 0.
    Ilu0Preconditioner bad(csr(2, {0, 2, 4}, {0, 1, 0, 1}, {1, 1, 1, 1}));
    FAIL() << "a zero pivot was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("pivot of row 1"), std::string::npos) << e.what();
  }
}

TEST(Ilu0, F32MatricesFactorInF32) {
  const CsrMatrix a = poisson_2d_csr(6, 6, 0.1, 0.1, DType::f32);
  const Ilu0Preconditioner m(a);
  EXPECT_EQ(m.dtype(), DType::f32);
  const Tensor z = Tensor::empty({36}, DType::f32);
  m.apply(random_vector(36, 1, DType::f32), z);
  EXPECT_EQ(ops::count_nonfinite(z), 0);
}

TEST(PreconditionerEffect, JacobiCutsIterationsWhenTheDiagonalVaries) {
  const CsrMatrix a = variable_coefficient(16);
  const std::int64_t plain = iterations("cg", "none", a);
  const std::int64_t jacobi = iterations("cg", "jacobi", a);
  EXPECT_LT(2 * jacobi, plain) << "cg: none " << plain << ", jacobi " << jacobi;
  EXPECT_LT(iterations("bicgstab", "jacobi", a), iterations("bicgstab", "none", a));
  EXPECT_LT(iterations("gmres", "jacobi", a), iterations("gmres", "none", a));
}

TEST(PreconditionerEffect, Ilu0CutsIterations) {
  const CsrMatrix spd = testing::poisson(16);
  const std::int64_t plain = iterations("cg", "none", spd);
  const std::int64_t ilu0 = iterations("cg", "ilu0", spd);
  EXPECT_LT(ilu0 * 3, plain * 2) << "cg: none " << plain << ", ilu0 " << ilu0;
  const CsrMatrix nonsymmetric = testing::convection_diffusion(16, 40.0, 20.0);
  for (const char* method : {"bicgstab", "gmres"}) {
    const std::int64_t none = iterations(method, "none", nonsymmetric);
    const std::int64_t with = iterations(method, "ilu0", nonsymmetric);
    EXPECT_LT(with * 3, none * 2) << method << ": none " << none << ", ilu0 " << with;
  }
}

}  // namespace
}  // namespace tenax::solvers
