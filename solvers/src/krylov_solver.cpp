#include "tenax/solvers/krylov_solver.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/solvers/factory.hpp"

namespace tenax::solvers {
namespace {

// Version of the saved layout; bump it when the entries change meaning.
constexpr std::int64_t kStateVersion = 1;

bool fails_at_an_iteration(SolveStatus status) {
  return status == SolveStatus::breakdown || status == SolveStatus::non_finite;
}

}  // namespace

KrylovSolver::KrylovSolver(SolverOptions options)
    : options_(std::move(options)), criteria_(StoppingCriteria::from_options(options_)) {}

KrylovSolver::~KrylovSolver() = default;

void KrylovSolver::set_criteria(StoppingCriteria criteria) { criteria_ = std::move(criteria); }

void KrylovSolver::set_preconditioner(PreconditionerPtr m) { preconditioner_ = std::move(m); }

SolveResult KrylovSolver::solve(const OperatorPtr& a, const Tensor& b, const Tensor& x) {
  start(a, b, x);
  // Enough steps for the whole solve in one call (the limit itself stops it), without overflowing
  // at max_iters = INT64_MAX.
  const std::int64_t all_steps = options_.max_iterations < std::numeric_limits<std::int64_t>::max()
                                     ? options_.max_iterations + 1
                                     : options_.max_iterations;
  while (!iterate(all_steps)) {
  }
  return result_;
}

void KrylovSolver::open_session(const OperatorPtr& a, const Tensor& b, const Tensor& x) {
  const std::string who(name());
  TENAX_EXPECTS(a != nullptr, UsageError, who + ": start() was given a null operator",
                "pass the operator A of the system A x = b");
  TENAX_EXPECTS(a->rows() == a->cols(), UsageError, who + ": " + a->describe() + " is not square",
                "Krylov methods solve square systems; use a least-squares method otherwise");
  a->check_vector(who + " start: b", b, a->rows());
  a->check_vector(who + " start: x", x, a->cols());
  TENAX_EXPECTS(x.buffer() != b.buffer() || x.offset() + x.numel() <= b.offset() ||
                    b.offset() + b.numel() <= x.offset(),
                UsageError, who + ": x and b share storage, but x is overwritten by the solve",
                "pass x and b as separate tensors (x = b.clone() for a copy of b as the guess)");

  if (preconditioner_ != nullptr) {
    session_preconditioner_ = preconditioner_;
    preconditioner_from_options_ = false;
  } else if (!preconditioner_from_options_ || a.get() != a_.get() ||
             session_preconditioner_->name() != options_.preconditioner) {
    // Rebuilt only for a new operator: repeated solves with one operator (time steps, the inner
    // solves of mixed-precision refinement) pay the setup once.
    session_preconditioner_ = make_preconditioner(options_.preconditioner, a);
    preconditioner_from_options_ = true;
  }
  const Preconditioner& m = *session_preconditioner_;
  TENAX_EXPECTS(m.rows() == a->rows() && m.dtype() == a->dtype() && m.device() == a->device(),
                UsageError,
                who + ": the preconditioner " + m.describe() + " does not fit " + a->describe(),
                "build the preconditioner for this operator (make_preconditioner(name, a))");

  a_ = a;
  b_ = b;
  x_ = x;
  iteration_ = 0;
  finished_ = false;
  result_ = SolveResult{};
}

void KrylovSolver::reserve(const OperatorPtr& a, const Tensor& b, const Tensor& x) {
  open_session(a, b, x);
  allocate_method();
  finished_ = true;
}

void KrylovSolver::start(const OperatorPtr& a, const Tensor& b, const Tensor& x) {
  open_session(a, b, x);
  // On a distributed operator ||b|| and the method's reductions are over every rank's shard.
  const kernels::GlobalReductions global = a_->reductions();
  allocate_method();
  rhs_norm_ = reference_norm();
  // The methods form residual norms and their coefficients from sums of squares in f64: for a
  // right-hand side below 2^-511 those underflow (a residual of 0: "converged" at x = 0), above
  // 2^511 they overflow (inf from finite elements included). Refused with the scale; every
  // rank has the same global norm.
  TENAX_EXPECTS(
      !(rhs_norm_ > 0.0 && rhs_norm_ < 0x1p-511) &&
          !(rhs_norm_ > 0x1p511 && (std::isfinite(rhs_norm_) || ops::count_nonfinite(b_) == 0)),
      UsageError,
      "the right-hand side's norm ||b|| = " + format_number(rhs_norm_) +
          " is outside [1.5e-154, 6.7e153], where the squares that Krylov methods sum in f64 " +
          (rhs_norm_ < 1.0 ? "underflow to 0" : "overflow to inf"),
      "rescale the system: multiply A and b (or b alone, then x) by a power of two that brings "
      "||b|| near 1");
  const double initial = start_method();
  result_.initial_residual = initial;
  record_residual(initial);
  notify_monitor();
  if (auto reason = criteria_.evaluate(check_at(0, initial))) stop(*reason, 0);
}

bool KrylovSolver::iterate(std::int64_t max_steps) {
  require_started("iterate");
  TENAX_EXPECTS(max_steps >= 0, UsageError,
                std::string(name()) + ": iterate(" + std::to_string(max_steps) +
                    ") was asked for a negative number of steps",
                "pass the largest number of iterations to run now (>= 0)");
  const kernels::GlobalReductions global = a_->reductions();
  for (std::int64_t s = 0; s < max_steps && !finished_; ++s) {
    const Step outcome = step();
    if (outcome.failure) {
      stop(*outcome.failure, iteration_ + 1);
      break;
    }
    ++iteration_;
    record_residual(outcome.residual);
    notify_monitor();
    if (auto reason = criteria_.evaluate(check_at(iteration_, outcome.residual))) {
      stop(*reason, iteration_);
    }
  }
  return finished_;
}

const Preconditioner* KrylovSolver::active_preconditioner() const noexcept {
  if (session_preconditioner_ == nullptr || session_preconditioner_->is_identity()) return nullptr;
  return session_preconditioner_.get();
}

bool KrylovSolver::preconditions() const noexcept {
  if (session_preconditioner_ != nullptr) return active_preconditioner() != nullptr;
  if (preconditioner_ != nullptr) return !preconditioner_->is_identity();
  return options_.preconditioner != "none";
}

bool KrylovSolver::residual_converged(double residual) const {
  return criteria_.converged(check_at(iteration_ + 1, residual));
}

void KrylovSolver::ensure_vector(Tensor& t) const {
  const std::int64_t n = a_->rows();
  if (t.defined() && t.shape() == Shape{n} && t.dtype() == a_->dtype() &&
      t.device() == a_->device()) {
    return;
  }
  t = a_->make_vector();
}

void KrylovSolver::save_tensor(StateDict& state, std::string_view name, const Tensor& t) {
  state.set(name, t.clone());
}

void KrylovSolver::load_vector(const StateDict& state, std::string_view name,
                               const Tensor& into) const {
  const Tensor& saved = state.tensor(name);
  TENAX_EXPECTS(saved.shape() == into.shape() && saved.dtype() == into.dtype(), UsageError,
                std::string(this->name()) + ": saved state entry '" + std::string(name) + "' is " +
                    saved.describe() + " but this session needs " +
                    std::string(to_string(into.dtype())) + to_string(into.shape()),
                "load the state into a session started with the same operator size and dtype");
  ops::copy(into, saved);
}

std::vector<KrylovSolver::SplitEntry> KrylovSolver::split_entries(std::string_view prefix) const {
  const std::string scope(prefix);
  std::vector<SplitEntry> entries{{scope + "/x", 0}};
  for (SplitEntry entry : method_split_entries()) {
    entry.name = scope + "/" + std::string(name()) + "/" + entry.name;
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::optional<KrylovSolver::IterationTraffic> KrylovSolver::iteration_traffic(
    std::int64_t iterations) const {
  const std::string& named = options_.preconditioner;
  if (preconditioner_ != nullptr || (named != "none" && named != "jacobi")) return std::nullopt;
  return method_iteration_traffic(named == "jacobi", iterations);
}

std::string KrylovSolver::rank_local_entry(std::string_view prefix) {
  return std::string(prefix) + "/length";
}

void KrylovSolver::save_state(StateDict& state, std::string_view prefix) const {
  require_started("save_state");
  TENAX_EXPECTS(!prefix.empty(), UsageError,
                std::string(name()) + ": save_state was given an empty prefix",
                "pass the scope to save under, e.g. \"solver\"");
  // Built under plain names, then merged under the prefix: the mirror of scope() in load_state.
  StateDict own;
  own.set("version", kStateVersion);
  own.set("method", std::string(name()));
  own.set("preconditioner", std::string(session_preconditioner_->name()));
  own.set("length", a_->rows());
  own.set("iteration", iteration_);
  own.set("finished", static_cast<std::int64_t>(finished_ ? 1 : 0));
  own.set("status", std::string(to_string(result_.status)));
  own.set("bad_iteration", result_.bad_iteration);
  own.set("detail", result_.detail);
  own.set("rhs_norm", rhs_norm_);
  own.set("initial_residual", result_.initial_residual);
  own.set("residual", result_.residual);
  save_tensor(own, "x", x_);
  StateDict method;
  save_method(method);
  own.merge(name(), method);
  state.merge(prefix, own);
}

void KrylovSolver::load_state(const StateDict& state, std::string_view prefix) {
  require_started("load_state");
  const std::string who(name());
  const StateDict saved = state.scope(prefix);
  TENAX_EXPECTS(!saved.empty(), UsageError,
                who + ": the state has no entries under '" + std::string(prefix) + "/'",
                "pass the prefix given to save_state");
  TENAX_EXPECTS(saved.integer("version") == kStateVersion, UsageError,
                who + ": the state has layout version " + std::to_string(saved.integer("version")) +
                    " but this build reads " + std::to_string(kStateVersion),
                "resume with the build that saved the state, or restart the solve");
  TENAX_EXPECTS(
      saved.text("method") == who, UsageError,
      who + ": the state under '" + std::string(prefix) + "' was saved by " + saved.text("method"),
      "load it into a '" + saved.text("method") + "' solver (make_solver(\"" +
          saved.text("method") + "\", ...))");
  TENAX_EXPECTS(
      saved.text("preconditioner") == session_preconditioner_->name(), UsageError,
      who + ": the state was saved with preconditioner '" + saved.text("preconditioner") +
          "' but this session uses '" + std::string(session_preconditioner_->name()) + "'",
      "configure the same preconditioner (pc=" + saved.text("preconditioner") + ") before start()");
  TENAX_EXPECTS(saved.integer("length") == a_->rows(), UsageError,
                who + ": the state is for vectors of length " +
                    std::to_string(saved.integer("length")) + " but this session solves " +
                    std::to_string(a_->rows()) + " unknowns",
                "start the session with the operator the state was saved for");
  TENAX_EXPECTS(saved.real("rhs_norm") == rhs_norm_, UsageError,
                who + ": the state was saved for a right-hand side with ||b|| = " +
                    std::to_string(saved.real("rhs_norm")) +
                    " but this session has ||b|| = " + std::to_string(rhs_norm_),
                "start the session with the right-hand side the state was saved for");

  load_vector(saved, "x", x_);
  // A method may reduce its vectors while loading or resuming (over every rank's shard).
  const kernels::GlobalReductions global = a_->reductions();
  load_method(saved.scope(who));
  iteration_ = saved.integer("iteration");
  finished_ = saved.integer("finished") != 0;
  result_.status = solve_status_from_string(saved.text("status"));
  result_.bad_iteration = saved.integer("bad_iteration");
  result_.detail = saved.text("detail");
  result_.initial_residual = saved.real("initial_residual");
  record_residual(saved.real("residual"));
  // Stopped by an iteration limit that is larger now (a resume may raise it): the solve goes on.
  if (finished_ && result_.status == SolveStatus::max_iterations &&
      iteration_ < options_.max_iterations) {
    finished_ = false;
    const SolveResult fresh;
    result_.status = fresh.status;
    result_.detail.clear();
    result_.bad_iteration = fresh.bad_iteration;
    resume_method();
  }
}

void KrylovSolver::require_started(std::string_view call) const {
  TENAX_EXPECTS(started(), UsageError,
                std::string(name()) + ": " + std::string(call) + "() before start()",
                "call start(a, b, x) first");
}

void KrylovSolver::stop(const StopReason& reason, std::int64_t bad_iteration) {
  finished_ = true;
  result_.status = reason.status;
  result_.detail = reason.status == SolveStatus::converged ? std::string() : reason.detail;
  if (fails_at_an_iteration(reason.status)) result_.bad_iteration = bad_iteration;
  finish_method();
}

double KrylovSolver::reference_norm() { return ops::nrm2(b_); }

void KrylovSolver::notify_monitor() const {
  if (!options_.monitor) return;
  options_.monitor(ResidualRecord{iteration_, result_.residual, result_.relative_residual});
}

void KrylovSolver::record_residual(double residual) {
  result_.iterations = iteration_;
  result_.residual = residual;
  result_.relative_residual = residual / (rhs_norm_ > 0.0 ? rhs_norm_ : 1.0);
}

ResidualCheck KrylovSolver::check_at(std::int64_t iteration, double residual) const {
  return ResidualCheck{iteration, residual, result_.initial_residual, rhs_norm_};
}

}  // namespace tenax::solvers
