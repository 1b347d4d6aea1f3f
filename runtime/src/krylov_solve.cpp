#include "tenax/runtime/krylov_solve.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "tenax/core/context.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/runtime/solver_layout.hpp"
#include "tenax/solvers/factory.hpp"

namespace tenax::runtime {
namespace {

// The options with a monitor that records the history first and then calls the caller's.
solvers::SolverOptions recording(solvers::SolverOptions options,
                                 const solvers::ResidualHistory& history) {
  solvers::ResidualMonitor record = history.monitor();
  if (options.monitor) {
    options.monitor = [record,
                       theirs = std::move(options.monitor)](const solvers::ResidualRecord& r) {
      record(r);
      theirs(r);
    };
  } else {
    options.monitor = std::move(record);
  }
  return options;
}

}  // namespace

KrylovSolve::KrylovSolve(solvers::OperatorPtr a, Tensor b, const std::string& method,
                         solvers::SolverOptions options, std::int64_t iterations_per_step)
    : a_(std::move(a)), b_(std::move(b)), iterations_per_step_(iterations_per_step) {
  TENAX_EXPECTS(a_ != nullptr, UsageError, "KrylovSolve: the operator is null",
                "pass the system's operator A (a CsrOperator, a distributed one, ...)");
  TENAX_EXPECTS(
      iterations_per_step_ >= 1, UsageError,
      "KrylovSolve: " + std::to_string(iterations_per_step_) + " iterations per step is not >= 1",
      "run at least one iteration per Runner step (10 is a good default)");
  solver_ = solvers::make_solver(method, recording(std::move(options), history_));
  // The operands as start() checks them, before any collective: a wrong b fails here.
  x_ = Tensor::empty({a_->cols()}, a_->dtype(), a_->device());
  solver_->reserve(a_, b_, x_);
}

Tensor KrylovSolve::residual_history() const {
  const std::vector<double> residuals = history_.residuals();
  Tensor out = Tensor::empty({static_cast<std::int64_t>(residuals.size())}, DType::f64);
  for (std::size_t k = 0; k < residuals.size(); ++k) out.data_as<double>()[k] = residuals[k];
  return out;
}

std::int64_t KrylovSolve::steps_to_iteration_limit() const noexcept {
  const std::int64_t limit = solver_->options().max_iterations;
  const std::int64_t per_step = iterations_per_step_;
  return std::max<std::int64_t>(1, limit / per_step + (limit % per_step != 0 ? 1 : 0));
}

void KrylovSolve::begin() {
  history_.clear();
  ops::fill(x_, 0.0);
  solver_->start(a_, b_, x_);
  begun_ = true;
}

void KrylovSolve::init() {
  begin();
  solve_seconds_ = 0.0;
}

void KrylovSolve::step(std::int64_t /*step*/, std::int64_t /*micro_batch*/) {
  TENAX_EXPECTS(begun_, UsageError, "KrylovSolve: a step before the solve started",
                "let the Runner call init() or load_state() first");
}

void KrylovSolve::commit_step() {
  const auto start = std::chrono::steady_clock::now();
  solver_->iterate(iterations_per_step_);
  if (a_->device().is_cuda()) cuda::context(a_->device()).synchronize();
  solve_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<StepMetric> KrylovSolve::step_metrics() const {
  const solvers::SolveResult& r = solver_->result();
  return {{"relative_residual", r.relative_residual},
          {"iterations", static_cast<double>(r.iterations)}};
}

StateDict KrylovSolve::save_state() const {
  StateDict state;
  solver_->save_state(state, "solver");
  state.set("solve_seconds", solve_seconds_);
  state.set("residual_history", residual_history());
  return state;
}

void KrylovSolve::load_state(const StateDict& state) {
  begin();
  // The saved length is the saving rank's; on a resume on another number of ranks the entry
  // comes from another rank's file (rank-local), and the vectors' shapes, which load_state
  // checks, say the same.
  StateDict mine = state;
  const std::string length = solvers::KrylovSolver::rank_local_entry("solver");
  if (mine.contains(length)) mine.set(length, a_->partition().range.count);
  solver_->load_state(mine, "solver");
  solve_seconds_ = state.real("solve_seconds");
  // The history is part of the state (load_state does not call the monitor).
  const Tensor saved = state.tensor("residual_history").to(Device::cpu());
  TENAX_EXPECTS(saved.dtype() == DType::f64 && saved.numel() == result().iterations + 1, UsageError,
                "KrylovSolve: the checkpoint's residual history is " + saved.describe() +
                    " for a solve at iteration " + std::to_string(result().iterations),
                "the checkpoint is damaged or from another program; start the run afresh");
  history_.clear();
  const solvers::ResidualMonitor record = history_.monitor();
  for (std::int64_t k = 0; k < saved.numel(); ++k) {
    record({k, saved.data_as<const double>()[k], 0.0});
  }
}

StateLayout KrylovSolve::state_layout() const {
  StateLayout layout = solver_state_layout(*solver_, "solver", a_->partition().range);
  layout.rank_local.push_back("solve_seconds");
  return layout;
}

}  // namespace tenax::runtime
