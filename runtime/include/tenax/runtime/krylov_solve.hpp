/// KrylovSolve: an iterative solve of A x = b (CG, BiCGSTAB or GMRES) as a whole Workload: a long
/// solve run by the Runner with checkpoints, resume on any number of ranks and its residual
/// history, with nothing of the solver's internals in the job.
/// @file
/// Each Runner step runs `iterations_per_step` iterations in commit_step() (after the ranks agreed:
/// the iterations' reductions are collectives). The solver allocates its vectors when the solve
/// starts (init() or load_state()), so step() allocates nothing and the solve never backs off
/// memory: the whole system is one unit of work. finished() is true once the solver stopped
/// (converged, or its iteration limit, a breakdown or a non-finite residual: result() says which;
/// a caller maps that to its exit status).
///
/// Ranks: A may be distributed (DistributedCsrOperator, DistributedLaplacian2dOperator); x and b
/// are then this rank's rows of A's partition, the reductions are global and the iterates are the
/// single-process bits. The checkpoint holds the solver's vectors split by rows (the solver names
/// them: KrylovSolver::split_entries), its scalars, the residual history (so a resumed solve's
/// history is that of an uninterrupted one) and this rank's solve time.
///
/// Not thread-safe. The operator, b and the communicator of A's partition must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/runtime/workload.hpp"
#include "tenax/solvers/krylov_solver.hpp"
#include "tenax/solvers/residual_monitor.hpp"

namespace tenax::runtime {

/// A x = b solved from x = 0 by `method`, a few iterations per Runner step (see the file).
class KrylovSolve final : public Workload {
 public:
  /// `method`: a make_solver name ("cg", "bicgstab", "gmres"); `options`: its options (their
  /// monitor, if any, is called after the solve's own history records each iteration);
  /// `iterations_per_step` >= 1. `a` non-null and square, `b` this rank's rows of the right-hand
  /// side (1-D, A's dtype and device). UsageError naming the value and the fix otherwise, and
  /// for what make_solver refuses.
  KrylovSolve(solvers::OperatorPtr a, Tensor b, const std::string& method,
              solvers::SolverOptions options = {}, std::int64_t iterations_per_step = 10);

  /// This rank's rows of the current iterate (the solution once finished() and converged).
  [[nodiscard]] const Tensor& solution() const noexcept { return x_; }
  /// The solve's outcome so far (status max_iterations while it runs) or its final one.
  [[nodiscard]] const solvers::SolveResult& result() const noexcept { return solver_->result(); }
  /// The solver (its method, options and preconditioner).
  [[nodiscard]] const solvers::KrylovSolver& solver() const noexcept { return *solver_; }
  /// Seconds this process spent iterating (the steps' commit_step(), device work included),
  /// carried across a resume.
  [[nodiscard]] double solve_seconds() const noexcept { return solve_seconds_; }
  /// The Runner steps that reach the solver's iteration limit (options().max_iterations) at
  /// iterations_per_step a step: the ceiling of their quotient, at least 1, without overflow for
  /// any limit. A job sets RunnerOptions::total_steps to it; the run ends sooner when the solve
  /// converges (finished()).
  [[nodiscard]] std::int64_t steps_to_iteration_limit() const noexcept;
  /// ||r|| after each iteration (entry 0: the initial residual) as the solver's criteria saw it,
  /// f64 on the CPU; result().iterations + 1 entries, across a resume too.
  [[nodiscard]] Tensor residual_history() const;

  /// @name Workload
  ///@{
  void init() override;
  [[nodiscard]] std::int64_t work_units() const override { return 1; }
  void step(std::int64_t step, std::int64_t micro_batch) override;
  void commit_step() override;
  /// "relative_residual" and "iterations" after the step.
  [[nodiscard]] std::vector<StepMetric> step_metrics() const override;
  [[nodiscard]] StateDict save_state() const override;
  /// Refuses (UsageError) a state of another method, length or history: another problem's, or a
  /// damaged one.
  void load_state(const StateDict& state) override;
  [[nodiscard]] bool finished() const override { return solver_->finished(); }
  /// The solver's vectors split by A's partition; this rank's length and solve time rank-local.
  [[nodiscard]] StateLayout state_layout() const override;
  [[nodiscard]] Device device() const override { return a_->device(); }
  ///@}

 private:
  void begin();

  solvers::OperatorPtr a_;
  Tensor b_;
  solvers::ResidualHistory history_;
  std::unique_ptr<solvers::KrylovSolver> solver_;
  std::int64_t iterations_per_step_;
  Tensor x_;
  double solve_seconds_ = 0.0;
  bool begun_ = false;  // init() or load_state() started the session
};

}  // namespace tenax::runtime
