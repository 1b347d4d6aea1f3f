/// KrylovSolver: the common driver of the iterative methods (CG, BiCGSTAB, GMRES), as a
/// resumable session.
/// @file
/// ```
/// auto solver = make_solver("cg", options);
/// SolveResult result = solver->solve(a, b, x);      // x: initial guess in, solution out
/// ```
/// or, driven in chunks (a long solve inside a job that checkpoints):
/// ```
/// solver->start(a, b, x);
/// while (!solver->iterate(100)) { ...; solver->save_state(state, "solver"); }
/// SolveResult result = solver->result();
/// ```
/// and resumed after a restart, in a fresh process with a fresh solver object:
/// ```
/// solver->start(a, b, x);                            // same operator and right-hand side
/// solver->load_state(state, "solver");               // x and the iteration state restored
/// while (!solver->iterate(100)) { ... }
/// ```
/// The resumed solve ends with bitwise the same x and residual as an uninterrupted one: every
/// vector, scalar and count the method carries from one iteration to the next is saved, and every
/// kernel the solvers use is deterministic.
///
/// Convergence is a returned status (SolveResult), never an exception. Exceptions are for misuse
/// (UsageError: operands that do not fit the operator, calls out of order, state saved by another
/// method), device faults and out-of-memory.
///
/// Work vectors are allocated by start() (from the default memory resource of the operator's
/// device, reused by later sessions of the same solver when the size, dtype and device agree),
/// never inside iterate(). Residual norms are 2-norms of the unpreconditioned residual b - A x
/// (but for left-preconditioned GMRES: M^-1 (b - A x), see gmres.hpp); each method's header says
/// which residual it reports (recurrence or recomputed). SolverOptions::monitor, when set, is
/// called with each of them (residual_monitor.hpp).
///
/// A solver object is not thread-safe; distinct objects may run concurrently on distinct vectors.
/// The operator, b and x must stay alive and unmodified (except x, by the solver) while a session
/// runs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/solvers/linear_operator.hpp"
#include "tenax/solvers/preconditioner.hpp"
#include "tenax/solvers/solve_status.hpp"
#include "tenax/solvers/solver_options.hpp"
#include "tenax/solvers/stopping_criteria.hpp"

namespace tenax::solvers {

/// The driver shared by the Krylov methods: one session at a time solves A x = b from x's
/// initial guess (start(), iterate(), result()), and can be saved and resumed bit for bit
/// (save_state(), load_state()). ConjugateGradient, BiCgStab and Gmres implement the iteration;
/// make_solver builds them by name. See the file description for the contract.
class KrylovSolver {
 public:
  /// Validates the options (UsageError) and builds the stopping criteria from them.
  explicit KrylovSolver(SolverOptions options);
  KrylovSolver(const KrylovSolver&) = delete;
  KrylovSolver& operator=(const KrylovSolver&) = delete;
  virtual ~KrylovSolver();

  /// "cg", "bicgstab" or "gmres": the name make_solver knows the method by.
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// The options given to the constructor (validated; fixed for the solver's lifetime).
  [[nodiscard]] const SolverOptions& options() const noexcept { return options_; }

  /// The criteria evaluated after each iteration: built from options(), or those given to
  /// set_criteria().
  [[nodiscard]] const StoppingCriteria& criteria() const noexcept { return criteria_; }
  /// Replaces the criteria built from the options; used from the next iteration on. solve()
  /// iterates until a criterion stops the session, so the set should hold a MaxIterations.
  void set_criteria(StoppingCriteria criteria);

  /// Uses `m` for every later session instead of building options().preconditioner for each
  /// operator at start(); nullptr returns to the options. It must match the operator's size,
  /// dtype and device (checked at start()).
  void set_preconditioner(PreconditionerPtr m);

  /// start(a, b, x), then iterate until finished; returns result().
  SolveResult solve(const OperatorPtr& a, const Tensor& b, const Tensor& x);

  /// Begins a session for A x = b with x holding the initial guess: validates the operands
  /// (square operator, b and x 1-D vectors of its size, dtype and device), builds the
  /// preconditioner named by options() (kept from the previous session when `a` is the same
  /// operator object, so repeated solves pay its setup once), allocates the work vectors,
  /// computes the initial residual and evaluates the criteria once (an initial guess that
  /// already satisfies them finishes with 0 iterations).
  void start(const OperatorPtr& a, const Tensor& b, const Tensor& x);
  /// Allocates the work vectors (and builds the preconditioner) that start(a, b, x) needs, without
  /// starting a session: no operator application and no reduction, hence no collective when the
  /// operands are split across ranks. A job that acquires its memory before a step's collectives
  /// (runtime::Workload::step) calls it first; start() with operands of the same size, dtype and
  /// device then allocates nothing. Validates as start() does; afterwards the solver is
  /// finished() and holds no session of its own (start() begins one).
  void reserve(const OperatorPtr& a, const Tensor& b, const Tensor& x);
  /// Runs at most max_steps (>= 0) iterations; returns finished(). After it returns true, x
  /// holds the final iterate and result() the final status. UsageError before start().
  bool iterate(std::int64_t max_steps);

  /// Whether start() (or reserve()) has been called on this object; stays true once a session
  /// finishes.
  [[nodiscard]] bool started() const noexcept { return a_ != nullptr; }
  /// Whether the current session has stopped: result() is final and iterate() runs nothing
  /// more. False before the first start(); true after reserve().
  [[nodiscard]] bool finished() const noexcept { return finished_; }
  /// The outcome so far (status max_iterations while running) or the final one.
  [[nodiscard]] const SolveResult& result() const noexcept { return result_; }
  /// The preconditioner of the current session (nullptr before start()).
  [[nodiscard]] const PreconditionerPtr& preconditioner() const noexcept {
    return session_preconditioner_;
  }

  /// Saves the session under `<prefix>/...` (prefix non-empty): method name, counters, the
  /// residual norms the criteria need, x and every vector and scalar of the method (tensors are
  /// copies on the session's device, so the solver may continue after saving). UsageError before
  /// start().
  void save_state(StateDict& state, std::string_view prefix) const;
  /// Restores a session saved by save_state into this started session: the state must come from
  /// the same method with the same options-dependent shapes (GMRES restart), preconditioner name,
  /// vector length and dtype, for a right-hand side of the same norm, in this build's layout
  /// version; anything else throws UsageError saying what differs. x is overwritten with the
  /// saved iterate; the counters, result() and finished() are restored. Tensors may live on any
  /// device (they are copied). A session saved when it stopped at its iteration limit goes on when
  /// this solver's limit (options().max_iterations, which a resume may change) is larger: CG and
  /// BiCGSTAB continue exactly where they stopped (the same iterates as a solve that never
  /// stopped), GMRES starts a new cycle from the saved x (stopping folded its cycle into x).
  void load_state(const StateDict& state, std::string_view prefix);

  /// An entry of save_state() that holds vectors of the system's length (see split_entries()).
  struct SplitEntry {
    std::string name;  ///< the entry, `<prefix>/...`
    int axis = 0;      ///< the axis of the system's rows: 0 for a vector, 1 for GMRES's basis
  };
  /// The entries save_state(state, prefix) writes whose extent along `axis` is the system's
  /// length: x and the method's vectors (known before start(), from the method and whether a
  /// preconditioner is set or named, so a Workload may ask from construction on). When the operands
  /// are one rank's rows of a distributed system, these are the rank's slabs of the checkpoint
  /// (runtime::solver_state_layout turns them into a Workload's StateLayout); every other entry is
  /// the same on every rank but rank_local_entry(). The solver names its own vectors, so a job
  /// never does.
  [[nodiscard]] std::vector<SplitEntry> split_entries(std::string_view prefix) const;
  /// The one entry of save_state() that differs between the ranks of a distributed system: the
  /// rank's length, `<prefix>/length`.
  [[nodiscard]] static std::string rank_local_entry(std::string_view prefix);

  /// The memory traffic of one iteration as the method is written, for an achieved-bandwidth
  /// figure: bytes = applies * (the operator's product bytes + two vectors) + passes * one vector.
  struct IterationTraffic {
    double applies = 0.0;  ///< operator products (each reads the operator and x, writes y)
    double passes = 0.0;   ///< other reads or writes of a whole vector of the system's length
  };
  /// The traffic per iteration of a session at `iterations` iterations (GMRES's Gram-Schmidt work
  /// grows along a cycle: averaged over the part of a cycle that many iterations fill), with the
  /// preconditioner options() names: none or jacobi. nullopt where it is not modelled: ILU(0), or
  /// a preconditioner given by set_preconditioner(). The counts follow the methods' fused kernels
  /// (each method's source says which vectors each kernel reads and writes).
  [[nodiscard]] std::optional<IterationTraffic> iteration_traffic(std::int64_t iterations) const;

 protected:
  /// A method's report of one iteration: the residual norm the criteria are evaluated on, or the
  /// failure (breakdown, non_finite) that stopped it, with x left at the last consistent iterate.
  struct Step {
    double residual = 0.0;              ///< the residual norm after the iteration
    std::optional<StopReason> failure;  ///< set when the iteration could not be completed

    /// A completed iteration whose residual norm is `residual`.
    [[nodiscard]] static Step done(double residual) { return {residual, std::nullopt}; }
    /// An iteration stopped by `status` (breakdown or non_finite), `detail` saying why in words;
    /// the session stops with bad_iteration set to this iteration.
    [[nodiscard]] static Step failed(SolveStatus status, std::string detail) {
      return {0.0, StopReason{status, std::move(detail)}};
    }
  };

  /// @name Session operands
  ///@{

  /// For the methods: the session's operator A, right-hand side b and iterate x (which the
  /// method updates in place), and the number of completed iterations. Valid once started().
  [[nodiscard]] const LinearOperator& op() const noexcept { return *a_; }
  [[nodiscard]] const Tensor& rhs() const noexcept { return b_; }
  [[nodiscard]] const Tensor& solution() const noexcept { return x_; }
  [[nodiscard]] std::int64_t iteration() const noexcept { return iteration_; }
  ///@}

  /// The norm relative residuals and the relative tolerance are measured against, computed by
  /// start() after allocate_method(): ||b|| (left-preconditioned GMRES: ||M^-1 b||).
  virtual double reference_norm();
  /// The preconditioner to apply, or nullptr for none (identity).
  [[nodiscard]] const Preconditioner* active_preconditioner() const noexcept;
  /// Whether the session preconditions (active_preconditioner() is set); before start(), whether
  /// it will: a preconditioner set that is not the identity, or one named by the options.
  [[nodiscard]] bool preconditions() const noexcept;
  /// Whether `residual` at the iteration being computed meets a convergence criterion.
  [[nodiscard]] bool residual_converged(double residual) const;
  /// `t` reused when it is a 1-D vector of the session's length, dtype and device; otherwise
  /// replaced by a new one (LinearOperator::make_vector). For the methods' work vectors, called
  /// from allocate_method().
  void ensure_vector(Tensor& t) const;

  /// @name Method state helpers
  ///@{

  /// For save_method() and load_method(), with names relative to the method's scope:
  /// save_tensor stores a copy of `t` under `name`; load_vector copies the saved entry `name`
  /// (on any device) into `into`, throwing UsageError when its shape or dtype differs.
  static void save_tensor(StateDict& state, std::string_view name, const Tensor& t);
  void load_vector(const StateDict& state, std::string_view name, const Tensor& into) const;
  ///@}

 private:
  /// Allocates the work vectors (ensure_vector): what start_method() and reserve() need first.
  virtual void allocate_method() = 0;
  /// Sets up the iteration from x (after allocate_method()); returns ||b - A x||.
  virtual double start_method() = 0;
  /// Calls options().monitor, when set, with the residual just recorded.
  void notify_monitor() const;
  /// start() and reserve(): the operands checked and the session's preconditioner built.
  void open_session(const OperatorPtr& a, const Tensor& b, const Tensor& x);
  /// Computes iteration iteration() + 1.
  virtual Step step() = 0;
  /// Called once when the session stops for any reason (GMRES folds its pending update into x).
  virtual void finish_method() {}
  /// Called when a session that stopped at its iteration limit goes on under a larger one (see
  /// load_state): a method whose finish_method() changed its state starts anew from x here.
  virtual void resume_method() {}
  virtual void save_method(StateDict& state) const = 0;
  virtual void load_method(const StateDict& state) = 0;
  /// The entries save_method() writes that hold vectors of the session's length, relative to
  /// the method's scope, with the axis of that length.
  [[nodiscard]] virtual std::vector<SplitEntry> method_split_entries() const = 0;
  /// The method's iteration_traffic() with (`jacobi`) or without a Jacobi preconditioner.
  [[nodiscard]] virtual IterationTraffic method_iteration_traffic(
      bool jacobi, std::int64_t iterations) const = 0;

  void require_started(std::string_view call) const;
  void stop(const StopReason& reason, std::int64_t bad_iteration);
  void record_residual(double residual);
  [[nodiscard]] ResidualCheck check_at(std::int64_t iteration, double residual) const;

  SolverOptions options_;
  StoppingCriteria criteria_;
  PreconditionerPtr preconditioner_;  ///< set by the user; overrides options_.preconditioner

  OperatorPtr a_;
  Tensor b_;
  Tensor x_;
  PreconditionerPtr session_preconditioner_;
  bool preconditioner_from_options_ = false;  ///< session_preconditioner_ was built by start()
  double rhs_norm_ = 0.0;
  std::int64_t iteration_ = 0;
  bool finished_ = false;
  SolveResult result_;
};

}  // namespace tenax::solvers
