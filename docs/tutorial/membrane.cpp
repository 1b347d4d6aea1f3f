// The solve tutorial's job (docs/tutorial-solve.md): a square membrane fixed on its edges, under a
// uniform load: -Δu = 1 on the unit square, u = 0 on the edges, on an n x n grid. A Krylov method
// chosen by name (--solver cg --pc jacobi --solver.tol 1e-8) solves it; each Runner step is a few
// iterations, so the solve checkpoints, and resumes mid-solve with the bits of an unbroken one.
#include <tenax/tenax.hpp>

#include <cstdio>

namespace rt = tenax::runtime;
namespace solvers = tenax::solvers;

int main(int argc, char** argv) {
  tenax::app::App app("membrane",
                      "a loaded membrane: -(u_xx + u_yy) = 1 on the unit square, solved resumably",
                      {.steps = 0, .checkpoint_every = 10});
  auto& n = app.setting("n", std::int64_t{127}, "grid points per side, odd (one at the centre)")
                .at_least(1)
                .expect([](std::int64_t v) { return v % 2 == 1; }, "an odd number");
  auto& per_step =
      app.setting("iterations-per-step", std::int64_t{10}, "iterations per step").at_least(1);
  app.section("Linear solver (--solver, --pc, --solver.*)");
  const tenax::app::SolverSettings solve(app, {.options = {.max_iterations = 5000}});
  return app.main(argc, argv, [&](tenax::app::Job& job) {
    const double h = 1.0 / (n() + 1.0);  // the 5-point matrix of -Δ, and the load b = 1
    const solvers::OperatorPtr a = solvers::make_csr_operator(solvers::poisson_2d_csr(
        n(), n(), h, h, tenax::DType::f64, tenax::DType::i64, job.device()));
    tenax::Tensor b = a->make_vector();
    tenax::ops::fill(b, 1.0);
    rt::KrylovSolve membrane(a, b, solve.method(), solve.options(), per_step());  // from u = 0
    rt::RunnerOptions run = job.runner_options();
    run.total_steps = membrane.steps_to_iteration_limit();  // it ends sooner once converged
    const rt::RunResult ran = job.run(membrane, run);
    if (ran.status != rt::RunStatus::completed) return ran.exit_code;
    const solvers::SolveResult& result = membrane.result();
    const tenax::Tensor u = membrane.solution().to(tenax::Device::cpu());
    std::printf("membrane: %s after %lld iterations, relative residual %.2e, u(1/2, 1/2) = %.8f\n",
                std::string(solvers::to_string(result.status)).c_str(),
                static_cast<long long>(result.iterations), result.relative_residual,
                u.data_as<double>()[u.numel() / 2]);  // the middle grid point (n is odd)
    return result.converged() ? 0 : 2;
  });
}
