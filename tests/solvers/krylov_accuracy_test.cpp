// Each Krylov method on SPD (Poisson), non-symmetric (upwind convection-diffusion) and
// indefinite (shifted Poisson) systems, against a dense direct solve (Eigen LU): the reported
// status and residual, the true residual and the error all agree with the requested tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "solvers/test_problems.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_krylov.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/laplacian_operator.hpp"

namespace tenax::solvers {
namespace {

using testing::random_vector;
using testing::relative_error;
using testing::true_relative_residual;
using testing::zeros;

constexpr std::int64_t kGrid = 10;  // 100 unknowns
constexpr double kTolerance = 1e-10;

struct Problem {
  std::string name;
  CsrMatrix matrix;
  double condition_bound;  // generous bound on cond(A), scales the error tolerance
};

Problem spd() { return {"poisson", testing::poisson(kGrid), 100.0}; }
Problem nonsymmetric() {
  return {"convection-diffusion", testing::convection_diffusion(kGrid, 40.0, 20.0), 300.0};
}
Problem indefinite() { return {"shifted poisson", testing::shifted_poisson(kGrid), 300.0}; }

void expect_solves(const std::string& method, const Problem& problem, const std::string& pc,
                   const std::string& orthog = "mgs") {
  SCOPED_TRACE(method + " with pc=" + pc + " orthog=" + orthog + " on " + problem.name);
  SolverOptions options;
  options.orthogonalization = orthog;
  options.tolerance = kTolerance;
  options.max_iterations = 2000;
  options.preconditioner = pc;
  const auto solver = make_solver(method, options);
  const std::int64_t n = problem.matrix.rows();
  const Tensor b = random_vector(n, 11);
  const Tensor x = zeros(n);
  const SolveResult result = solver->solve(make_csr_operator(problem.matrix), b, x);

  ASSERT_EQ(result.status, SolveStatus::converged) << result.detail;
  EXPECT_GT(result.iterations, 0);
  EXPECT_LE(result.relative_residual, kTolerance);
  EXPECT_DOUBLE_EQ(result.relative_residual, result.residual / ops::nrm2(b));
  EXPECT_DOUBLE_EQ(result.initial_residual, ops::nrm2(b)) << "x0 = 0, so r0 = b";
  EXPECT_EQ(result.bad_iteration, -1);
  // The recurrence residual may drift from the true one by rounding; a factor 10 is ample.
  EXPECT_LE(true_relative_residual(problem.matrix, b, x), 10 * kTolerance);
  const auto reference = testing::reference_solution(problem.matrix, b);
  EXPECT_LE(relative_error(x, reference), 10 * problem.condition_bound * kTolerance);
}

TEST(KrylovAccuracy, CgSolvesSpd) {
  for (const char* pc : {"none", "jacobi", "ilu0"}) expect_solves("cg", spd(), pc);
}

// CG as the textbook sequence of separate ops (Hestenes-Stiefel, preconditioned), x0 = 0. The
// solver runs it in three fused passes, with x updated one pass later than here; every iterate
// and residual must keep these bits.
struct TextbookCg {
  Tensor x;
  std::vector<double> residuals;
};
TextbookCg textbook_cg(const LinearOperator& a, const Preconditioner* m, const Tensor& b,
                       std::int64_t iterations) {
  const std::int64_t n = a.rows();
  const DType dtype = a.dtype();
  const Tensor x = zeros(n, dtype), r = b.clone(), z = zeros(n, dtype);
  const Tensor p = zeros(n, dtype), q = zeros(n, dtype);
  if (m != nullptr) m->apply(r, z);
  const Tensor& zr = m != nullptr ? z : r;
  double rz = ops::dot(r, zr);
  ops::copy(p, zr);
  TextbookCg out;
  for (std::int64_t k = 0; k < iterations; ++k) {
    a.apply(p, q);
    const double alpha = rz / ops::dot(p, q);
    ops::axpby(alpha, p, 1.0, x);
    ops::axpby(-alpha, q, 1.0, r);
    if (m != nullptr) m->apply(r, z);
    const double rz_new = ops::dot(r, zr);
    ops::xpay(zr, rz_new / rz, p);
    rz = rz_new;
    out.residuals.push_back(ops::nrm2(r));
  }
  out.x = x;
  return out;
}

TEST(KrylovAccuracy, CgKeepsTheBitsOfTheTextbookSequenceOfOps) {
  const CsrMatrix matrix = testing::poisson(23);  // 529 rows
  for (const DType dtype : {DType::f64, DType::f32}) {
    const OperatorPtr a = make_csr_operator(matrix)->with_dtype(dtype);
    const Tensor b = random_vector(a->rows(), 5, dtype);
    for (const std::string pc : {"none", "jacobi", "ilu0"}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " pc=" + pc);
      const PreconditionerPtr m = pc == "none" ? nullptr : make_preconditioner(pc, a);
      const std::int64_t iterations = 15;
      const TextbookCg want = textbook_cg(*a, m.get(), b, iterations);
      SolverOptions options;
      options.tolerance = 0.0;
      options.max_iterations = iterations;
      options.preconditioner = pc;
      const auto solver = make_solver("cg", options);
      const Tensor x = zeros(a->rows(), dtype);
      solver->start(a, b, x);
      for (std::int64_t k = 0; k < iterations; ++k) {
        solver->iterate(1);
        EXPECT_EQ(solver->result().residual, want.residuals[static_cast<std::size_t>(k)])
            << "iteration " << k + 1;
      }
      EXPECT_EQ(solver->result().status, SolveStatus::max_iterations) << solver->result().detail;
      ASSERT_EQ(x.nbytes(), want.x.nbytes());
      EXPECT_EQ(std::memcmp(x.data(), want.x.data(), x.nbytes()), 0);
    }
  }
}

TEST(KrylovAccuracy, BiCgStabSolvesSpdNonSymmetricAndIndefinite) {
  for (const char* pc : {"none", "jacobi", "ilu0"}) {
    expect_solves("bicgstab", spd(), pc);
    expect_solves("bicgstab", nonsymmetric(), pc);
  }
  expect_solves("bicgstab", indefinite(), "none");
}

// BiCGSTAB as the textbook sequence of separate ops (van der Vorst, right preconditioned), x0 = 0.
// The solver runs it in five fused passes; every iterate and residual must keep these bits.
struct TextbookBiCgStab {
  Tensor x;
  double residual = 0.0;
};
TextbookBiCgStab textbook_bicgstab(const LinearOperator& a, const Preconditioner* m,
                                   const Tensor& b, std::int64_t iterations) {
  const std::int64_t n = a.rows();
  const DType dtype = a.dtype();
  const Tensor x = zeros(n, dtype), r = b.clone(), r_hat = b.clone();
  const Tensor p = zeros(n, dtype), v = zeros(n, dtype), t = zeros(n, dtype);
  const Tensor p_hat = zeros(n, dtype), s_hat = zeros(n, dtype);
  double rho_old = 1.0, alpha = 1.0, omega = 1.0, residual = 0.0;
  for (std::int64_t k = 0; k < iterations; ++k) {
    const double rho = ops::dot(r_hat, r);
    const double beta = (rho / rho_old) * (alpha / omega);
    ops::axpby(-omega, v, 1.0, p);
    ops::axpby(1.0, r, beta, p);
    if (m != nullptr) m->apply(p, p_hat);
    const Tensor& ph = m != nullptr ? p_hat : p;
    a.apply(ph, v);
    alpha = rho / ops::dot(r_hat, v);
    ops::axpby(-alpha, v, 1.0, r);
    rho_old = rho;
    if (m != nullptr) m->apply(r, s_hat);
    const Tensor& sh = m != nullptr ? s_hat : r;
    a.apply(sh, t);
    omega = ops::dot(t, r) / ops::dot(t, t);
    ops::axpby(alpha, ph, 1.0, x);
    ops::axpby(omega, sh, 1.0, x);
    ops::axpby(-omega, t, 1.0, r);
    residual = ops::nrm2(r);
  }
  return {x, residual};
}

TEST(KrylovAccuracy, BiCgStabKeepsTheBitsOfTheTextbookSequenceOfOps) {
  const CsrMatrix matrix = testing::convection_diffusion(23, 40.0, 20.0);  // 529 rows
  for (const DType dtype : {DType::f64, DType::f32}) {
    const OperatorPtr a = make_csr_operator(matrix)->with_dtype(dtype);
    const Tensor b = random_vector(a->rows(), 5, dtype);
    for (const std::string pc : {"none", "jacobi", "ilu0"}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " pc=" + pc);
      const PreconditionerPtr m = pc == "none" ? nullptr : make_preconditioner(pc, a);
      const std::int64_t iterations = 12;
      const TextbookBiCgStab want = textbook_bicgstab(*a, m.get(), b, iterations);
      SolverOptions options;
      options.tolerance = 0.0;
      options.max_iterations = iterations;
      options.preconditioner = pc;
      const Tensor x = zeros(a->rows(), dtype);
      const SolveResult result = make_solver("bicgstab", options)->solve(a, b, x);
      EXPECT_EQ(result.status, SolveStatus::max_iterations) << result.detail;
      EXPECT_EQ(result.iterations, iterations);
      EXPECT_EQ(result.residual, want.residual);
      ASSERT_EQ(x.nbytes(), want.x.nbytes());
      EXPECT_EQ(std::memcmp(x.data(), want.x.data(), x.nbytes()), 0);
    }
  }
}

TEST(KrylovAccuracy, GmresSolvesSpdNonSymmetricAndIndefinite) {
  for (const char* orthog : {"mgs", "cgs", "cgs2"}) {
    for (const char* pc : {"none", "jacobi", "ilu0"}) {
      expect_solves("gmres", spd(), pc, orthog);
      expect_solves("gmres", nonsymmetric(), pc, orthog);
      expect_solves("gmres", indefinite(), pc, orthog);
    }
  }
}

// max |V^T V - I| over the Arnoldi vectors of one open cycle of `steps` steps, read back from the
// saved state.
double orthogonality_loss(const std::string& orthog, std::int64_t steps) {
  SolverOptions options;
  options.tolerance = 0.0;
  options.max_iterations = 10 * steps;  // not finished after `steps`: the cycle stays open
  options.restart = steps + 1;
  options.orthogonalization = orthog;
  const auto solver = make_solver("gmres", options);
  const CsrMatrix a = testing::convection_diffusion(kGrid, 40.0, 20.0);
  const Tensor b = random_vector(a.rows(), 3);
  const Tensor x = zeros(a.rows());
  solver->start(make_csr_operator(a), b, x);
  EXPECT_FALSE(solver->iterate(steps));
  StateDict state;
  solver->save_state(state, "s");
  double worst = 0.0;
  std::vector<Tensor> v;
  for (std::int64_t i = 0; i <= steps; ++i) {
    v.push_back(state.tensor("s/gmres/basis").slice(i, i + 1).reshape({a.rows()}));
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    for (std::size_t k = 0; k <= i; ++k) {
      const double want = i == k ? 1.0 : 0.0;
      worst = std::max(worst, std::fabs(ops::dot(v[i], v[k]) - want));
    }
  }
  return worst;
}

TEST(KrylovAccuracy, GmresBasesStayOrthonormal) {
  // Early in a cycle every variant keeps the basis orthonormal.
  for (const char* orthog : {"mgs", "cgs", "cgs2"}) {
    EXPECT_LT(orthogonality_loss(orthog, 8), 1e-12) << orthog;
  }
  // Once the residual has fallen by many decades the Krylov basis is ill-conditioned: mgs and cgs
  // lose orthogonality (by about 1e-3 here; GMRES stays backward stable with mgs), cgs2 does not.
  const double cgs2 = orthogonality_loss("cgs2", 40);
  EXPECT_LT(cgs2, 1e-13);
  EXPECT_GT(orthogonality_loss("mgs", 40), 1e6 * cgs2);
  EXPECT_GT(orthogonality_loss("cgs", 40), 1e6 * cgs2);
}

TEST(KrylovAccuracy, GmresWithoutRestartsConvergesWithinTheDimension) {
  // Full GMRES (restart >= n) minimises over the whole Krylov space, so it converges in at most
  // n steps in exact arithmetic; allow a few more for rounding.
  SolverOptions options;
  options.tolerance = 1e-9;
  options.restart = 100;
  const auto solver = make_solver("gmres", options);
  const CsrMatrix a = testing::convection_diffusion(kGrid, 40.0, 20.0);
  const Tensor b = random_vector(100, 3);
  const SolveResult result = solver->solve(make_csr_operator(a), b, zeros(100));
  ASSERT_EQ(result.status, SolveStatus::converged) << result.detail;
  EXPECT_LE(result.iterations, 100);
}

TEST(KrylovAccuracy, MatrixFreeStencilGivesTheAssembledSolution) {
  // -Δh in 3-D, once as a stencil and once assembled: CG agrees to the tolerance.
  const std::int64_t nz = 5, ny = 6, nx = 7;
  const double h = 0.125;
  const OperatorPtr stencil = std::make_shared<const Laplacian3dOperator>(nz, ny, nx, h, h, h);
  const CsrMatrix assembled = poisson_3d_csr(nz, ny, nx, h, h, h);
  const Tensor b = random_vector(nz * ny * nx, 5);
  SolverOptions options;
  options.tolerance = 1e-12;
  for (const char* pc : {"none", "jacobi"}) {
    options.preconditioner = pc;
    const Tensor x = zeros(b.numel());
    const SolveResult result = make_solver("cg", options)->solve(stencil, b, x);
    ASSERT_EQ(result.status, SolveStatus::converged) << result.detail;
    EXPECT_LE(relative_error(x, testing::reference_solution(assembled, b)), 1e-10) << pc;
  }
}

TEST(KrylovAccuracy, AWarmStartAtTheSolutionFinishesWithoutIterating) {
  const CsrMatrix a = testing::poisson(kGrid);
  const Tensor b = random_vector(100, 8);
  const auto reference = testing::reference_solution(a, b);
  for (const std::string_view method : solver_names()) {
    const Tensor x = testing::make_tensor(reference, DType::f64);
    const SolveResult result = make_solver(method)->solve(make_csr_operator(a), b, x);
    EXPECT_EQ(result.status, SolveStatus::converged) << method;
    EXPECT_EQ(result.iterations, 0) << method;
    EXPECT_EQ(testing::values_of(x), reference) << method << " left x alone";
  }
}

TEST(KrylovAccuracy, AZeroRightHandSideGivesZero) {
  const OperatorPtr a = make_csr_operator(testing::poisson(kGrid));
  for (const std::string_view method : solver_names()) {
    const Tensor x = random_vector(100, 9);
    const SolveResult result = make_solver(method)->solve(a, zeros(100), x);
    ASSERT_EQ(result.status, SolveStatus::converged) << method << ": " << result.detail;
    EXPECT_LE(ops::nrm2(x), 1e-8) << method;
    EXPECT_EQ(result.relative_residual, result.residual) << "||b|| = 0: relative = absolute";
  }
}

TEST(KrylovAccuracy, F32SolvesReachF32Accuracy) {
  const CsrMatrix a = poisson_2d_csr(kGrid, kGrid, testing::unit_spacing(kGrid),
                                     testing::unit_spacing(kGrid), DType::f32);
  const Tensor b = random_vector(100, 10, DType::f32);
  SolverOptions options;
  options.tolerance = 1e-5;
  for (const std::string_view method : solver_names()) {
    const Tensor x = zeros(100, DType::f32);
    const SolveResult result = make_solver(method, options)->solve(make_csr_operator(a), b, x);
    ASSERT_EQ(result.status, SolveStatus::converged) << method << ": " << result.detail;
    EXPECT_LE(true_relative_residual(a, b, x), 1e-4) << method;
  }
}

}  // namespace
}  // namespace tenax::solvers
