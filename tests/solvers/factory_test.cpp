// Creation by name and options from text: the names and keys that work, and the errors that
// list the valid ones for those that do not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "solvers/test_problems.hpp"
#include "tenax/solvers/callable_operator.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/laplacian_operator.hpp"

namespace tenax::solvers {
namespace {

// The message and fix of the UsageError f throws ("" when it throws none).
template <class F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return std::string(e.what()) + " | fix: " + e.fix();
  }
  return "";
}

TEST(SolverOptions, ParsesKeyValueTextWithCommasNewlinesAndComments) {
  const SolverOptions options = parse_solver_options(
      "tol=1e-10, max_iters=500\n# a comment, ignored = yes\nrestart=40 atol=1e-14\n"
      "divtol=1e3,pc=jacobi");
  EXPECT_EQ(options.tolerance, 1e-10);
  EXPECT_EQ(options.max_iterations, 500);
  EXPECT_EQ(options.restart, 40);
  EXPECT_EQ(options.absolute_tolerance, 1e-14);
  EXPECT_EQ(options.divergence_factor, 1e3);
  EXPECT_EQ(options.preconditioner, "jacobi");
  EXPECT_EQ(parse_solver_options("divtol=inf").divergence_factor, INFINITY);
}

TEST(SolverOptions, KeepsDefaultsAndLetsLaterEntriesWin) {
  SolverOptions defaults;
  defaults.max_iterations = 77;
  const SolverOptions options = parse_solver_options("tol=1e-3,tol=1e-5", defaults);
  EXPECT_EQ(options.tolerance, 1e-5);
  EXPECT_EQ(options.max_iterations, 77);
  EXPECT_EQ(parse_solver_options("").max_iterations, SolverOptions{}.max_iterations);
}

TEST(SolverOptions, TextFormRoundTripsExactly) {
  SolverOptions options;
  options.tolerance = 1.0 / 3.0;
  options.absolute_tolerance = 2.5e-13;
  options.max_iterations = 1234;
  options.restart = 17;
  options.divergence_factor = INFINITY;
  options.preconditioner = "ilu0";
  options.preconditioner_side = "left";
  const SolverOptions back = parse_solver_options(to_string(options));
  EXPECT_EQ(back.tolerance, options.tolerance);
  EXPECT_EQ(back.absolute_tolerance, options.absolute_tolerance);
  EXPECT_EQ(back.max_iterations, options.max_iterations);
  EXPECT_EQ(back.restart, options.restart);
  EXPECT_EQ(back.orthogonalization, options.orthogonalization);
  EXPECT_EQ(back.divergence_factor, options.divergence_factor);
  EXPECT_EQ(back.preconditioner, options.preconditioner);
  EXPECT_EQ(back.preconditioner_side, "left");
  EXPECT_NE(usage_error_of([] {
              (void)parse_solver_options("pc_side=up");
            }).find("pc_side = 'up' is not a preconditioning side"),
            std::string::npos);
  EXPECT_EQ(to_string(SolverOptions{}),
            "tol=1e-08,atol=0,max_iters=1000,restart=30,orthog=mgs,divtol=1e+05,pc=none,"
            "pc_side=right");
}

TEST(SolverOptions, UnknownKeysListTheValidOnes) {
  const std::string error = usage_error_of([] { (void)parse_solver_options("tolerance=1e-8"); });
  EXPECT_NE(error.find("solver options: unknown option 'tolerance'"), std::string::npos) << error;
  EXPECT_NE(error.find("tol, atol, max_iters, restart, orthog, divtol, pc"), std::string::npos)
      << error;
}

TEST(SolverOptions, MalformedAndOutOfRangeValuesAreNamed) {
  EXPECT_NE(usage_error_of([] { (void)parse_solver_options("tol"); }).find("key=value"),
            std::string::npos);
  EXPECT_NE(usage_error_of([] { (void)parse_solver_options("tol=abc"); }).find("tol=abc"),
            std::string::npos);
  EXPECT_NE(
      usage_error_of([] { (void)parse_solver_options("max_iters=1.5"); }).find("whole number"),
      std::string::npos);
  EXPECT_NE(usage_error_of([] { (void)parse_solver_options("tol=-1"); }).find("tol"),
            std::string::npos);
  EXPECT_NE(usage_error_of([] { (void)parse_solver_options("restart=0"); }).find("restart"),
            std::string::npos);
  EXPECT_NE(usage_error_of([] { (void)parse_solver_options("divtol=0.5"); }).find("divtol"),
            std::string::npos);
  const std::string orthog =
      usage_error_of([] { (void)parse_solver_options("orthog=householder"); });
  EXPECT_NE(orthog.find("'householder'"), std::string::npos) << orthog;
  EXPECT_NE(orthog.find("mgs, cgs, cgs2"), std::string::npos) << orthog;
  EXPECT_EQ(parse_solver_options("orthog=cgs2").orthogonalization, "cgs2");
  const std::string pc = usage_error_of([] { (void)parse_solver_options("pc=amg"); });
  EXPECT_NE(pc.find("'amg'"), std::string::npos) << pc;
  EXPECT_NE(pc.find("none, jacobi, ilu0"), std::string::npos) << pc;
}

TEST(Factory, MakesEachSolverByName) {
  for (const std::string_view name : solver_names()) {
    const auto solver = make_solver(name, parse_solver_options("restart=12"));
    EXPECT_EQ(solver->name(), name);
    EXPECT_EQ(solver->options().restart, 12);
  }
  const std::string error = usage_error_of([] { (void)make_solver("minres"); });
  EXPECT_NE(error.find("unknown solver 'minres'"), std::string::npos) << error;
  EXPECT_NE(error.find("cg, bicgstab, gmres"), std::string::npos) << error;
  EXPECT_NE(usage_error_of([] {
              SolverOptions bad;
              bad.max_iterations = -3;
              (void)make_solver("cg", bad);
            }),
            "");
}

TEST(Factory, AGmresRestartBeyondAnyMemoryIsNamed) {
  // (restart + 1) * restart Hessenberg entries: 99999999999 overflows the product, INT64_MAX the
  // row count. Both must be a usage error naming the restart, not a wrapped allocation.
  for (const std::int64_t restart :
       {std::int64_t{99999999999}, std::numeric_limits<std::int64_t>::max()}) {
    SolverOptions options;
    options.restart = restart;
    const std::string error = usage_error_of([&] { (void)make_solver("gmres", options); });
    EXPECT_NE(error.find("gmres restart = " + std::to_string(restart)), std::string::npos) << error;
    EXPECT_NE(error.find("30 is common"), std::string::npos) << error;
  }
  SolverOptions fine;
  fine.restart = 3000;  // 72 MB of Hessenberg: allowed
  EXPECT_EQ(make_solver("gmres", fine)->options().restart, 3000);
}

TEST(Factory, MakesEachPreconditionerByName) {
  const OperatorPtr a = make_csr_operator(testing::poisson(4));
  for (const std::string_view name : preconditioner_names()) {
    const PreconditionerPtr m = make_preconditioner(name, a);
    EXPECT_EQ(m->name(), name);
    EXPECT_EQ(m->rows(), 16);
    EXPECT_EQ(m->is_identity(), name == "none");
    EXPECT_EQ(m->inverse_diagonal() != nullptr, name == "jacobi");
  }
  const std::string error = usage_error_of([&] { (void)make_preconditioner("ssor", a); });
  EXPECT_NE(error.find("none, jacobi, ilu0"), std::string::npos) << error;
}

TEST(Factory, Ilu0OnAMatrixFreeOperatorNamesTheFix) {
  const OperatorPtr stencil = std::make_shared<const Laplacian2dOperator>(4, 4, 1.0, 1.0);
  const std::string error = usage_error_of([&] { (void)make_preconditioner("ilu0", stencil); });
  EXPECT_NE(error.find("assembled CSR"), std::string::npos) << error;
  EXPECT_NE(error.find("pc=jacobi"), std::string::npos) << error;
  EXPECT_NE(error.find("CsrOperator"), std::string::npos) << error;
}

TEST(Factory, Ilu0OnAGpuOperatorNamesTheFix) {
  // Constructing a stencil operator on cuda:0 touches no device memory, so this runs anywhere.
  const OperatorPtr gpu_stencil =
      std::make_shared<const Laplacian2dOperator>(4, 4, 1.0, 1.0, DType::f64, Device::cuda(0));
  const std::string error = usage_error_of([&] { (void)make_preconditioner("ilu0", gpu_stencil); });
  EXPECT_NE(error.find("CPU only"), std::string::npos) << error;
  EXPECT_NE(error.find("pc=jacobi on cuda:0"), std::string::npos) << error;
}

TEST(Factory, JacobiNeedsADiagonal) {
  const OperatorPtr callable = std::make_shared<const CallableOperator>(
      4, 4, DType::f64, Device::cpu(), [](const Tensor&, const Tensor&) {}, "opaque");
  const std::string error = usage_error_of([&] { (void)make_preconditioner("jacobi", callable); });
  EXPECT_NE(error.find("callable 'opaque'"), std::string::npos) << error;
  EXPECT_NE(error.find("cannot provide its diagonal"), std::string::npos) << error;
}

}  // namespace
}  // namespace tenax::solvers
