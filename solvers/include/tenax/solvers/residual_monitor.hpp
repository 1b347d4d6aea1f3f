/// A residual monitor for the Krylov solvers (PETSc's -ksp_monitor, Ginkgo's convergence logger):
/// a callback set in SolverOptions::monitor that the solver calls once per iteration with the
/// residual it just checked, and ResidualHistory, a ready monitor that records them.
/// @file
/// ```
/// ResidualHistory history;
/// SolverOptions options;
/// options.monitor = history.monitor();
/// auto solver = make_solver("gmres", options);
/// solver->solve(a, b, x);
/// // history.records(): iterations 0 .. result().iterations; the last one carries
/// // result().residual and result().relative_residual
/// ```
/// When it is called: once by start() for iteration 0 (the initial residual), then once after
/// every completed iteration k = 1, 2, ..., with the residual norm the stopping criteria were
/// evaluated on (the method's header says which: recurrence, least-squares estimate or recomputed;
/// for left-preconditioned GMRES the preconditioned residual) and that norm over the method's
/// reference norm (result().relative_residual). An iteration that fails (breakdown, non_finite)
/// completes nothing and is not reported. load_state() restores a session without calling it: a
/// job that resumes keeps the history it needs in its own state. So a session run from start() to
/// the end calls it result().iterations + 1 times, and its last call carries result()'s numbers.
///
/// Cost: one test of an empty std::function per iteration when no monitor is set. The callback
/// runs on the solver's thread, inside iterate(); it must not throw (an exception propagates out
/// of iterate() and leaves the session between iterations) and must not call the solver.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace tenax::solvers {

/// One iteration's report to a monitor.
struct ResidualRecord {
  std::int64_t iteration = 0;      ///< 0 for the initial residual, then 1, 2, ...
  double residual = 0.0;           ///< the norm the criteria were evaluated on
  double relative_residual = 0.0;  ///< residual / the reference norm (||b||, or ||M^-1 b||)
};

/// The callback type of SolverOptions::monitor.
using ResidualMonitor = std::function<void(const ResidualRecord&)>;

/// A monitor that records every report in memory (24 bytes per iteration). Copies share the
/// records; not thread-safe (one solver at a time).
class ResidualHistory {
 public:
  ResidualHistory() : records_(std::make_shared<std::vector<ResidualRecord>>()) {}

  /// The callback to put in SolverOptions::monitor: appends each report to records(). It shares
  /// the records with this object, so it stays valid when the history is destroyed first.
  [[nodiscard]] ResidualMonitor monitor() const {
    return [records = records_](const ResidualRecord& r) { records->push_back(r); };
  }
  /// The reports so far, in the order they came.
  [[nodiscard]] const std::vector<ResidualRecord>& records() const noexcept { return *records_; }
  /// The residual norms alone, in order.
  [[nodiscard]] std::vector<double> residuals() const {
    std::vector<double> out;
    out.reserve(records_->size());
    for (const ResidualRecord& r : *records_) out.push_back(r.residual);
    return out;
  }
  /// Forgets the reports (before another solve).
  void clear() noexcept { records_->clear(); }

 private:
  std::shared_ptr<std::vector<ResidualRecord>> records_;
};

}  // namespace tenax::solvers
