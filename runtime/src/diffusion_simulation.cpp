#include "tenax/runtime/diffusion_simulation.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "tenax/core/context.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::runtime {
namespace {

// The integrator, built after the arguments the constructor checks itself.
solvers::DiffusionIntegrator checked_integrator(Communicator& comm, solvers::OperatorPtr a,
                                                double alpha, double dt,
                                                solvers::IntegratorOptions options) {
  TENAX_EXPECTS(std::isfinite(dt) && dt > 0.0, UsageError,
                "DiffusionSimulation: the time step dt = " + std::to_string(dt) +
                    " is not a finite number > 0",
                "pass the time step the scheme is stable for (explicit Euler: at most h^2 / "
                "(4 alpha) on the 2-D Laplacian)");
  TENAX_EXPECTS(a != nullptr, UsageError, "DiffusionSimulation: the operator is null",
                "pass the spatial operator A of u_t = -alpha A u (e.g. a Laplacian2dOperator)");
  TENAX_EXPECTS(
      a->partition().distributed() || comm.size() == 1, UsageError,
      "DiffusionSimulation: a local operator (every rank would hold and step the whole field) on " +
          std::to_string(comm.size()) + " ranks",
      "pass an operator distributed over the ranks (DistributedLaplacian2dOperator, "
      "DistributedCsrOperator), or run on one rank");
  const kernels::ShardPartition partition = a->partition();
  TENAX_EXPECTS(!partition.distributed() || partition.ranks->group() == &comm, UsageError,
                "DiffusionSimulation: the operator is distributed over another communicator than "
                "the one given (its reductions and the field's would not be the same ranks')",
                "pass the communicator the operator was built over (the job's, job.comm())");
  return {std::move(a), alpha, std::move(options)};
}

}  // namespace

DiffusionSimulation::DiffusionSimulation(Communicator& comm, solvers::OperatorPtr a, double alpha,
                                         double dt, solvers::IntegratorOptions options,
                                         std::string name)
    : comm_(comm),
      integrator_(checked_integrator(comm, std::move(a), alpha, dt, std::move(options))),
      dt_(dt),
      name_(std::move(name)),
      range_(integrator_.spatial_operator()->partition().range) {
  TENAX_EXPECTS(!name_.empty(), UsageError, "DiffusionSimulation: the field's name is empty",
                "name the field (its state entry and output dataset), e.g. \"u\"");
}

void DiffusionSimulation::set_initial(std::function<double(std::int64_t index)> initial) {
  initial_ = std::move(initial);
}

DistributedVector DiffusionSimulation::field() const {
  TENAX_EXPECTS(u_.defined(), UsageError,
                "DiffusionSimulation::field before the run started: there is no field yet",
                "call it after Runner::run (or init())");
  return {comm_, range_, u_};
}

void DiffusionSimulation::init() {
  // Computed in f64 on the host, then cast to A's dtype (the integrator's time and steps start
  // at 0 with the integrator; a resume restores them with the field).
  const Tensor values = Tensor::empty({range_.count}, DType::f64);
  auto* v = values.data_as<double>();
  for (std::int64_t k = 0; k < range_.count; ++k)
    v[k] = initial_ ? initial_(range_.first + k) : 0.0;
  const DType dtype = integrator_.spatial_operator()->dtype();
  u_ = (dtype == DType::f64 ? values : ops::cast(values, dtype)).to(device());
  u_next_ = Tensor();
  problem_.reset();
  staged_ = false;
}

void DiffusionSimulation::step(std::int64_t step, std::int64_t /*micro_batch*/) {
  if (!u_next_.defined()) u_next_ = Tensor::empty_like(u_);
  integrator_.reserve(u_next_, dt_);
  staged_step_ = step;
  staged_ = true;
}

void DiffusionSimulation::commit_step() {
  TENAX_EXPECTS(staged_, UsageError, "DiffusionSimulation: commit with no step staged",
                "call step() before commit_step()");
  times_.start();
  // The step runs on a copy: a state saved before it (save_state shares u, and an asynchronous
  // checkpoint may still be writing it) and a rejected step leave u as it was.
  ops::copy(u_next_, u_);
  const solvers::SolveResult result = integrator_.step(u_next_, dt_);
  std::swap(u_, u_next_);
  last_solve_ = result;
  problem_.reset();
  if (!result.converged()) {
    const solvers::TimeScheme scheme = integrator_.options().scheme;
    const bool solves = scheme == solvers::TimeScheme::implicit_euler ||
                        scheme == solvers::TimeScheme::crank_nicolson;
    // An explicit step's detail says it all; a solve's iterations and residual matter.
    problem_ = "the " + std::string(solvers::to_string(scheme)) + " step " +
               std::to_string(staged_step_ + 1) + " ended with " +
               std::string(solvers::to_string(result.status)) +
               (solves ? " after " + std::to_string(result.iterations) +
                             " iterations (relative residual " +
                             std::to_string(result.relative_residual) + ")"
                       : std::string()) +
               (result.detail.empty() ? "" : ": " + result.detail);
  }
  if (device().is_cuda()) cuda::context(device()).synchronize();
  times_.stop();
  staged_ = false;
}

std::vector<StepMetric> DiffusionSimulation::step_metrics() const {
  return {{"simulated_time", time()},
          {"solver_iterations", static_cast<double>(last_solve_.iterations)},
          {"solver_relative_residual", last_solve_.relative_residual}};
}

StateDict DiffusionSimulation::save_state() const {
  StateDict state;
  state.set(name_, u_);
  integrator_.save_state(state, "integrator");
  return state;
}

void DiffusionSimulation::load_state(const StateDict& state) {
  const Tensor& u = state.tensor(name_);
  const DType dtype = integrator_.spatial_operator()->dtype();
  TENAX_EXPECTS(u.shape() == Shape{range_.count} && u.dtype() == dtype, UsageError,
                "the checkpoint holds " + name_ + " as " + u.describe() +
                    " but this rank of the simulation holds it as " +
                    std::string(to_string(dtype)) + "[" + std::to_string(range_.count) + "]",
                "resume the same problem (the same grid and dtype), or use a new --run-dir");
  u_ = u.to(device()).clone();
  u_next_ = Tensor();
  integrator_.load_state(state, "integrator");
  problem_.reset();
  staged_ = false;
}

StateLayout DiffusionSimulation::state_layout() const {
  return {.shards = {{name_, 0, range_.first, range_.first + range_.count, range_.total}},
          .rank_local = {}};
}

}  // namespace tenax::runtime
