/// DiffusionSimulation: a whole Workload stepping u_t = -alpha A u with the solvers layer's
/// DiffusionIntegrator (explicit Euler, RK4, implicit Euler or Crank–Nicolson) over the ranks of
/// A's partition: what a heat-equation job writes besides its operator and its initial values.
/// @file
/// The field u is the vector A acts on: this rank's elements of A's partition (a local operator:
/// all of them; a distributed one, DistributedLaplacian2dOperator or DistributedCsrOperator: the
/// rank's rows), so field() is a DistributedVector whose reductions are global, and a run gives
/// the bits of one process on any number of ranks.
///
/// The step transaction (workload.hpp): step() reserves everything the step allocates (the
/// integrator's work vectors and implicit system, the next field), so running out of memory
/// happens before the ranks agree; commit_step() computes (the operator's halo and the solver's
/// reductions are collectives, run once every rank agreed). An implicit solve that does not
/// converge, or an explicit step that leaves a NaN or Inf, makes check() name the step, the status
/// and the residual: the Runner rolls back to the last checkpoint and stops when it happens again.
/// The whole field is one unit of work (work_units() is 1: the integrators do not micro-batch).
///
/// State: the field under its name (split along axis 0 by A's partition, so a run resumes on
/// another number of ranks), the integrator's time, steps and scheme under "integrator". Not
/// thread-safe. The communicator of A's partition must outlive the simulation.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tenax/core/device.hpp"
#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/distributed_vector.hpp"
#include "tenax/runtime/step_times.hpp"
#include "tenax/runtime/workload.hpp"
#include "tenax/solvers/time_integrator.hpp"

namespace tenax::runtime {

/// u_t = -alpha A u stepped by a DiffusionIntegrator with a fixed dt (see the file).
class DiffusionSimulation final : public Workload {
 public:
  /// `comm`: the ranks of A's partition (a SingleRankCommunicator for a local A; UsageError when
  /// A is distributed over another number of ranks). `a`, `alpha`, `options`: the integrator's
  /// (its errors). `dt` > 0 and finite. `name`: the field's state entry (non-empty).
  DiffusionSimulation(Communicator& comm, solvers::OperatorPtr a, double alpha, double dt,
                      solvers::IntegratorOptions options = {}, std::string name = "u");

  /// The initial value of every element: `initial(index)` with the element's global index in
  /// [0, rows of A), on the host. Call before Runner::run; a run without it starts from zeros.
  void set_initial(std::function<double(std::int64_t index)> initial);

  /// This rank's part of the field, with global reductions (max, nrm2, gather, ...).
  [[nodiscard]] DistributedVector field() const;
  /// The simulated time: dt times the steps taken.
  [[nodiscard]] double time() const noexcept { return integrator_.time(); }
  /// The steps taken since the initial values.
  [[nodiscard]] std::int64_t steps() const noexcept { return integrator_.steps(); }
  /// The time step.
  [[nodiscard]] double dt() const noexcept { return dt_; }
  /// The integrator (its scheme, operator and options).
  [[nodiscard]] const solvers::DiffusionIntegrator& integrator() const noexcept {
    return integrator_;
  }
  /// The last step's solve (implicit schemes) or update (explicit ones).
  [[nodiscard]] const solvers::SolveResult& last_solve() const noexcept { return last_solve_; }
  /// The wall times of this process's last steps' computation (commit_step()).
  [[nodiscard]] const StepTimes& step_times() const noexcept { return times_; }

  /// @name Workload
  ///@{
  void init() override;
  [[nodiscard]] std::int64_t work_units() const override { return 1; }
  void step(std::int64_t step, std::int64_t micro_batch) override;
  void commit_step() override;
  void discard_step() override { staged_ = false; }
  [[nodiscard]] std::optional<std::string> check() const override { return problem_; }
  /// "simulated_time", "solver_iterations" and "solver_relative_residual" of the last step.
  [[nodiscard]] std::vector<StepMetric> step_metrics() const override;
  [[nodiscard]] StateDict save_state() const override;
  /// Refuses (UsageError) a field of another length or dtype: a checkpoint of another problem.
  void load_state(const StateDict& state) override;
  [[nodiscard]] Device device() const override { return integrator_.spatial_operator()->device(); }
  /// The field split along axis 0 as A's partition splits it.
  [[nodiscard]] StateLayout state_layout() const override;
  ///@}

 private:
  Communicator& comm_;
  solvers::DiffusionIntegrator integrator_;
  double dt_;
  std::string name_;
  kernels::ShardRange range_;
  std::function<double(std::int64_t)> initial_;
  Tensor u_;
  Tensor u_next_;
  solvers::SolveResult last_solve_;
  std::optional<std::string> problem_;
  bool staged_ = false;
  std::int64_t staged_step_ = 0;
  StepTimes times_;
};

}  // namespace tenax::runtime
