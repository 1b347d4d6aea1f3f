// The solve tutorial's job (docs/tutorial-solve.md): a square membrane fixed on its edges, under a
// uniform load: -Δu = 1 on the unit square, u = 0 on the edges, on an n x n grid. A Krylov method
// chosen by name (--solver cg --pc jacobi --solver.tol 1e-8) solves it; each Runner step is a few
// iterations, so the solve checkpoints, and resumes mid-solve with the bits of an unbroken one.
#include <tenax/tenax.hpp>

#include <cstdio>

namespace rt = tenax::runtime;
namespace solvers = tenax::solvers;

class Membrane final : public rt::Workload {
 public:
  Membrane(std::int64_t n, tenax::Device device, std::unique_ptr<solvers::KrylovSolver> solver,
           std::int64_t iterations_per_step)
      : a_(solvers::make_csr_operator(solvers::poisson_2d_csr(
            n, n, 1.0 / (n + 1.0), 1.0 / (n + 1.0), tenax::DType::f64, tenax::DType::i64, device))),
        b_(a_->make_vector()),
        solver_(std::move(solver)),
        iterations_per_step_(iterations_per_step) {
    tenax::ops::fill(b_, 1.0);  // the load
  }

  void init() override { start(); }  // u = 0 to begin with
  std::int64_t work_units() const override { return 1; }

  // start() took all the memory the iterations use: nothing to acquire, nothing to stage. The
  // iterations run in commit_step() and update u and the solver's vectors in place.
  void step(std::int64_t /*step*/, std::int64_t /*micro_batch*/) override {}
  void commit_step() override { solver_->iterate(iterations_per_step_); }

  // The whole solve: u, the method's vectors and scalars, the iteration count, the residuals.
  tenax::StateDict save_state() const override {
    tenax::StateDict state;
    solver_->save_state(state, "solver");
    return state;
  }
  void load_state(const tenax::StateDict& state) override {
    start();
    solver_->load_state(state, "solver");
  }
  // Converged (or the iteration limit reached): the Runner checkpoints and ends the run.
  bool finished() const override { return solver_->finished(); }
  std::vector<rt::StepMetric> step_metrics() const override {
    return {{"relative_residual", solver_->result().relative_residual}};
  }
  tenax::Device device() const override { return a_->device(); }

  const solvers::SolveResult& result() const { return solver_->result(); }
  double centre() const {  // u(1/2, 1/2): the middle grid point (n is odd)
    return u_.to(tenax::Device::cpu()).data_as<double>()[u_.numel() / 2];
  }

 private:
  void start() {
    u_ = a_->make_vector();
    tenax::ops::fill(u_, 0.0);
    solver_->start(a_, b_, u_);
  }

  solvers::OperatorPtr a_;
  tenax::Tensor b_, u_;
  std::unique_ptr<solvers::KrylovSolver> solver_;
  std::int64_t iterations_per_step_;
};

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
    const solvers::SolverOptions options = solve.options();
    Membrane membrane(n(), job.device(), solvers::make_solver(solve.method(), options), per_step());
    rt::RunnerOptions run = job.runner_options();       // steps enough for the iteration limit
    const std::int64_t limit = options.max_iterations;  // (rounded up, without overflowing)
    run.total_steps = limit / per_step() + (limit % per_step() != 0);
    const rt::RunResult ran = job.run(membrane, run);
    if (ran.status != rt::RunStatus::completed) return ran.exit_code;
    const solvers::SolveResult& result = membrane.result();
    std::printf("membrane: %s after %lld iterations, relative residual %.2e, u(1/2, 1/2) = %.8f\n",
                std::string(solvers::to_string(result.status)).c_str(),
                static_cast<long long>(result.iterations), result.relative_residual,
                membrane.centre());
    return result.converged() ? 0 : 2;
  });
}
