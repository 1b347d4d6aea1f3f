// The solvers on a CUDA device against the CPU, the reference: the same methods, operators and
// options give the same status and, within the tolerance, the same solution. Skips with the
// reason where no CUDA device is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "solvers/test_problems.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/mixed_precision.hpp"
#include "tenax/solvers/time_integrator.hpp"

namespace tenax::solvers {
namespace {

using testing::random_vector;
using testing::zeros;

class SolversGpu : public tenax::testing::GpuTest {
 protected:
  static std::vector<double> fetch(const Tensor& t) {
    if (t.device().is_cuda()) tenax::cuda::context(t.device()).synchronize();
    return testing::values_of(t);
  }
  static double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
    double diff = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) diff += (a[i] - b[i]) * (a[i] - b[i]);
    return std::sqrt(diff) / testing::norm(b);
  }
};

TEST_F(SolversGpu, EveryMethodMatchesTheCpu) {
  const CsrMatrix spd = testing::poisson(20);
  const CsrMatrix nonsymmetric = testing::convection_diffusion(20, 30.0, 10.0);
  const Tensor b = random_vector(400, 1);
  struct Case {
    const char* method;
    const char* options;
    const CsrMatrix* matrix;
  };
  const Case cases[] = {{"cg", "tol=1e-10", &spd},
                        {"cg", "tol=1e-10,pc=jacobi", &spd},
                        {"bicgstab", "tol=1e-10", &nonsymmetric},
                        {"bicgstab", "tol=1e-10,pc=jacobi", &nonsymmetric},
                        {"gmres", "tol=1e-10,restart=20", &nonsymmetric},
                        {"gmres", "tol=1e-10,restart=20,pc=jacobi", &nonsymmetric},
                        {"gmres", "tol=1e-10,restart=20,orthog=cgs", &nonsymmetric},
                        {"gmres", "tol=1e-10,restart=20,orthog=cgs2,pc=jacobi", &nonsymmetric}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.method) + " " + c.options);
    const SolverOptions options = parse_solver_options(c.options);
    const Tensor x_cpu = zeros(400);
    const SolveResult cpu =
        make_solver(c.method, options)->solve(make_csr_operator(*c.matrix), b, x_cpu);
    const Tensor x_gpu = zeros(400, DType::f64, gpu());
    const SolveResult on_gpu =
        make_solver(c.method, options)
            ->solve(make_csr_operator(c.matrix->to(gpu())), b.to(gpu()), x_gpu);
    ASSERT_EQ(cpu.status, SolveStatus::converged) << cpu.detail;
    EXPECT_EQ(on_gpu.status, cpu.status) << on_gpu.detail;
    EXPECT_NEAR(static_cast<double>(on_gpu.iterations), static_cast<double>(cpu.iterations), 2.0);
    EXPECT_LE(on_gpu.relative_residual, 1e-10);
    EXPECT_LE(relative_difference(fetch(x_gpu), fetch(x_cpu)), 1e-8);
  }
}

TEST_F(SolversGpu, MatrixFreeCgMatchesTheCpu) {
  const std::int64_t n = 48;
  const double h = testing::unit_spacing(n);
  const Tensor b = random_vector(n * n, 2);
  const auto solve_on = [&](Device device) {
    const OperatorPtr a =
        std::make_shared<const Laplacian2dOperator>(n, n, h, h, DType::f64, device);
    const Tensor x = zeros(n * n, DType::f64, device);
    const SolveResult result =
        make_solver("cg", parse_solver_options("tol=1e-11,pc=jacobi"))->solve(a, b.to(device), x);
    EXPECT_EQ(result.status, SolveStatus::converged) << result.detail;
    return fetch(x);
  };
  EXPECT_LE(relative_difference(solve_on(gpu()), solve_on(Device::cpu())), 1e-9);
}

TEST_F(SolversGpu, MixedPrecisionReaches1e12OnTheGpu) {
  const CsrMatrix a = testing::poisson(64);
  const Tensor b = random_vector(4096, 3);
  const Tensor x = zeros(4096, DType::f64, gpu());
  const RefinementResult result =
      MixedPrecisionRefinement().solve(make_csr_operator(a.to(gpu())), b.to(gpu()), x);
  ASSERT_EQ(result.outer.status, SolveStatus::converged) << result.outer.detail;
  EXPECT_LE(testing::true_relative_residual(a, b, x.to(Device::cpu())), 2e-12);
}

TEST_F(SolversGpu, CrankNicolsonStepsMatchTheCpu) {
  const std::int64_t n = 32;
  const double h = testing::unit_spacing(n);
  const Tensor u0 = random_vector(n * n, 4);
  const auto run_on = [&](Device device) {
    DiffusionIntegrator integrator =
        make_heat_integrator(n, n, h, h, 1.0, IntegratorOptions{}, DType::f64, device);
    const Tensor u = u0.to(device).clone();
    for (int s = 0; s < 5; ++s) EXPECT_TRUE(integrator.step(u, 1e-3).converged());
    return fetch(u);
  };
  EXPECT_LE(relative_difference(run_on(gpu()), run_on(Device::cpu())), 1e-9);
}

TEST_F(SolversGpu, ResumingOnTheGpuIsBitwiseIdentical) {
  const OperatorPtr a = make_csr_operator(testing::poisson(24).to(gpu()));
  const Tensor b = random_vector(576, 5).to(gpu());
  const SolverOptions options = parse_solver_options("tol=1e-12,restart=30");
  for (const std::string_view method : solver_names()) {
    const Tensor whole = zeros(576, DType::f64, gpu());
    const SolveResult uninterrupted = make_solver(method, options)->solve(a, b, whole);
    StateDict state;
    {
      const auto first = make_solver(method, options);
      first->start(a, b, zeros(576, DType::f64, gpu()));
      ASSERT_FALSE(first->iterate(37)) << method;
      first->save_state(state, "s");
    }
    const auto second = make_solver(method, options);
    const Tensor x = zeros(576, DType::f64, gpu());
    second->start(a, b, x);
    second->load_state(state, "s");
    while (!second->iterate(100)) {
    }
    EXPECT_EQ(second->result().residual, uninterrupted.residual) << method;
    EXPECT_EQ(fetch(x), fetch(whole)) << method;
  }
}

TEST_F(SolversGpu, Ilu0OnTheGpuIsAUsageError) {
  const OperatorPtr a = make_csr_operator(testing::poisson(8).to(gpu()));
  EXPECT_THROW((void)make_preconditioner("ilu0", a), UsageError);
}

}  // namespace
}  // namespace tenax::solvers
