#include "tenax/solvers/gmres.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <utility>

#include "detail/format.hpp"
#include "detail/residual.hpp"
#include "tenax/core/checked_size.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_krylov.hpp"

namespace tenax::solvers {
namespace {

// The CPU f64 tensor holding `values`, for the saved state.
Tensor host_tensor(const std::vector<double>& values) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(values.size())}, DType::f64);
  std::copy(values.begin(), values.end(), t.data_as<double>());
  return t;
}

void read_host_tensor(const StateDict& state, std::string_view name, std::vector<double>& into) {
  const Tensor saved = state.tensor(name).to(Device::cpu());
  TENAX_EXPECTS(
      saved.dtype() == DType::f64 && saved.numel() == static_cast<std::int64_t>(into.size()),
      UsageError,
      "gmres: saved state entry '" + std::string(name) + "' is " + saved.describe() +
          " but this solver needs f64[" + std::to_string(into.size()) + "]",
      "load the state into a gmres solver with the restart length it was saved with");
  const double* values = saved.data_as<const double>();
  std::copy(values, values + into.size(), into.begin());
}

// The (restart + 1) x restart Hessenberg matrix's entry count, checked: a restart length typed
// with a few digits too many must end in a usage error that names it, not in a wrapped product.
std::size_t hessenberg_entries(std::int64_t restart) {
  const std::string what = "gmres restart = " + std::to_string(restart);
  const std::string fix = "use a restart length of at most a few hundred (30 is common)";
  const std::int64_t rows = size_sum(what + ": the Hessenberg matrix's rows", restart, 1, fix);
  return static_cast<std::size_t>(
      size_product(what + ": the Hessenberg matrix's entries", {rows, restart}, fix));
}

}  // namespace

Gmres::Gmres(SolverOptions options)
    : KrylovSolver(std::move(options)),
      restart_(this->options().restart),
      left_(this->options().preconditioner_side == "left"),
      hessenberg_(hessenberg_entries(restart_)),
      cosines_(static_cast<std::size_t>(restart_)),
      sines_(static_cast<std::size_t>(restart_)),
      g_(static_cast<std::size_t>(restart_ + 1)),
      column_(static_cast<std::size_t>(restart_ + 1)) {}

Tensor Gmres::basis_vector(std::int64_t i) const {
  return basis_.slice(i, i + 1).reshape({basis_.shape()[1]});
}

void Gmres::allocate_method() {
  const std::int64_t n = op().rows();
  if (!basis_.defined() || basis_.shape() != Shape{restart_ + 1, n} ||
      basis_.dtype() != op().dtype() || basis_.device() != op().device()) {
    basis_ = Tensor::empty({restart_ + 1, n}, op().dtype(), op().device());
  }
  ensure_vector(w_);
  if (active_preconditioner() != nullptr) ensure_vector(z_);
}

double Gmres::start_method() { return restart_cycle(); }

const Preconditioner* Gmres::left_preconditioner() const noexcept {
  return left_ ? active_preconditioner() : nullptr;
}

double Gmres::reference_norm() {
  const Preconditioner* m = left_preconditioner();
  if (m == nullptr) return KrylovSolver::reference_norm();
  m->apply(rhs(), z_);
  return ops::nrm2(z_);
}

double Gmres::restart_cycle() {
  const Tensor v0 = basis_vector(0);
  double beta = 0.0;
  if (const Preconditioner* m = left_preconditioner()) {
    (void)detail::compute_residual(op(), rhs(), solution(), w_);
    m->apply(w_, v0);
    beta = ops::nrm2(v0);
  } else {
    beta = std::sqrt(detail::compute_residual(op(), rhs(), solution(), v0));
  }
  if (beta > 0.0 && std::isfinite(beta)) ops::scale(1.0 / beta, v0);
  std::fill(g_.begin(), g_.end(), 0.0);
  g_[0] = beta;
  j_ = 0;
  return beta;
}

double Gmres::orthogonalize(std::int64_t j) {
  const std::string& method = options().orthogonalization;
  if (method == "mgs") {
    // Modified Gram-Schmidt against v_0 .. v_j.
    for (std::int64_t i = 0; i <= j; ++i) {
      const Tensor vi = basis_vector(i);
      column_[i] = ops::dot(w_, vi);
      ops::axpby(-column_[i], vi, 1.0, w_);
    }
    return ops::dot(w_, w_);
  }
  // Classical Gram-Schmidt: the coefficients against v_0 .. v_j in one pass, then one
  // subtraction pass that also returns w.w; cgs2 repeats both and adds the corrections.
  const Tensor basis = basis_.slice(0, j + 1);
  const auto rows = static_cast<std::size_t>(j + 1);
  const std::span<double> h(column_.data(), rows);
  ops::basis_dots(basis, w_, h);
  double ww = ops::basis_subtract(basis, h, w_);
  if (method == "cgs2") {
    correction_.resize(rows);
    ops::basis_dots(basis, w_, correction_);
    ww = ops::basis_subtract(basis, correction_, w_);
    for (std::size_t i = 0; i < rows; ++i) h[i] += correction_[i];
  }
  return ww;
}

KrylovSolver::Step Gmres::step() {
  const std::int64_t j = j_;
  const Preconditioner* m = active_preconditioner();
  if (m != nullptr && left_) {
    op().apply(basis_vector(j), z_);
    m->apply(z_, w_);
  } else if (m != nullptr) {
    m->apply(basis_vector(j), z_);
    op().apply(z_, w_);
  } else {
    op().apply(basis_vector(j), w_);
  }
  const double subdiagonal = std::sqrt(orthogonalize(j));
  column_[j + 1] = subdiagonal;
  for (std::int64_t i = 0; i <= j + 1; ++i) {
    if (!std::isfinite(column_[i])) {
      return Step::failed(SolveStatus::non_finite, "Arnoldi coefficient h(" + std::to_string(i) +
                                                       ", " + std::to_string(j) +
                                                       ") = " + detail::format_number(column_[i]));
    }
  }
  // Earlier rotations, then the one that eliminates the subdiagonal.
  for (std::int64_t i = 0; i < j; ++i) {
    const double upper = cosines_[i] * column_[i] + sines_[i] * column_[i + 1];
    column_[i + 1] = -sines_[i] * column_[i] + cosines_[i] * column_[i + 1];
    column_[i] = upper;
  }
  double c = 1.0;
  double s = 0.0;
  if (subdiagonal != 0.0) {
    const double norm = std::hypot(column_[j], subdiagonal);
    c = column_[j] / norm;
    s = subdiagonal / norm;
    column_[j] = norm;
  }
  if (column_[j] == 0.0) {
    return Step::failed(SolveStatus::breakdown,
                        "the rotated Hessenberg matrix has a zero pivot at column " +
                            std::to_string(j) +
                            ": A M^-1 is singular on the Krylov space, so the least-squares "
                            "problem has no unique solution");
  }
  for (std::int64_t i = 0; i <= j; ++i) h(i, j) = column_[i];
  cosines_[j] = c;
  sines_[j] = s;
  g_[j + 1] = -s * g_[j];
  g_[j] = c * g_[j];
  j_ = j + 1;

  if (j_ == restart_ || subdiagonal == 0.0) {
    update_solution();
    return Step::done(restart_cycle());
  }
  ops::axpby(1.0 / subdiagonal, w_, 0.0, basis_vector(j_));
  return Step::done(std::fabs(g_[j_]));
}

void Gmres::update_solution() {
  const std::int64_t k = j_;
  if (k == 0) return;
  // Back substitution H y = g on the leading k x k upper triangle; column_ holds y.
  std::vector<double>& y = column_;
  for (std::int64_t i = k - 1; i >= 0; --i) {
    double sum = g_[i];
    for (std::int64_t l = i + 1; l < k; ++l) sum -= h(i, l) * y[l];
    y[i] = sum / h(i, i);
  }
  const Preconditioner* m = active_preconditioner();
  if (m == nullptr || left_) {
    for (std::int64_t i = 0; i < k; ++i) ops::axpby(y[i], basis_vector(i), 1.0, solution());
  } else {
    ops::axpby(y[0], basis_vector(0), 0.0, w_);
    for (std::int64_t i = 1; i < k; ++i) ops::axpby(y[i], basis_vector(i), 1.0, w_);
    m->apply(w_, z_);
    ops::axpby(1.0, z_, 1.0, solution());
  }
  j_ = 0;
}

void Gmres::finish_method() { update_solution(); }

// The cycle was folded into x when the solve stopped: a new one starts from x.
void Gmres::resume_method() { (void)restart_cycle(); }

std::vector<KrylovSolver::SplitEntry> Gmres::method_split_entries() const {
  std::vector<SplitEntry> entries = {{"basis", 1}};
  return entries;
}

// 1 product + 3 passes (the norm, the scaling into the basis) + 5 (j + 1) for modified
// Gram-Schmidt's step j (a dot and an axpby per basis vector), j averaged over the part of a cycle
// the iterations fill, (m + 1) / 2 for full cycles; Jacobi adds 3 (one scaling). Classical
// Gram-Schmidt: 2 (scaling) + 2 (j + 1) + 3 (the dots read the basis and w, the subtraction the
// basis and w and writes w, its norm fused); cgs2 twice that work, 2 + 4 (j + 1) + 6. A restart's
// residual and solution update are not counted.
KrylovSolver::IterationTraffic Gmres::method_iteration_traffic(bool jacobi,
                                                               std::int64_t iterations) const {
  const double steps_in_cycle = static_cast<double>(std::max<std::int64_t>(
      1, std::min(options().restart, std::max<std::int64_t>(iterations, 1))));
  const double basis_reads = (steps_in_cycle + 1) / 2;  // j + 1 averaged over a cycle
  const double extra = jacobi ? 3.0 : 0.0;
  const std::string& orthogonalization = options().orthogonalization;
  if (orthogonalization == "cgs") return {1.0, extra + 5 + 2 * basis_reads};
  if (orthogonalization == "cgs2") return {1.0, extra + 8 + 4 * basis_reads};
  return {1.0, extra + 3 + 5 * basis_reads};
}

void Gmres::save_method(StateDict& state) const {
  state.set("restart", restart_);
  state.set("side", options().preconditioner_side);
  state.set("j", j_);
  save_tensor(state, "basis", basis_.slice(0, j_ + 1));
  state.set("hessenberg", host_tensor(hessenberg_));
  state.set("cosines", host_tensor(cosines_));
  state.set("sines", host_tensor(sines_));
  state.set("g", host_tensor(g_));
}

void Gmres::load_method(const StateDict& state) {
  TENAX_EXPECTS(
      state.integer("restart") == restart_, UsageError,
      "gmres: the state was saved with restart " + std::to_string(state.integer("restart")) +
          " but this solver has restart " + std::to_string(restart_),
      "configure restart=" + std::to_string(state.integer("restart")) + " to resume this solve");
  // States saved before the side existed are right-preconditioned.
  const std::string side = state.contains("side") ? state.text("side") : std::string("right");
  TENAX_EXPECTS(side == options().preconditioner_side, UsageError,
                "gmres: the state was saved with pc_side=" + side +
                    " but this solver has pc_side=" + options().preconditioner_side,
                "configure pc_side=" + side + " to resume this solve");
  const std::int64_t j = state.integer("j");
  TENAX_EXPECTS(j >= 0 && j < restart_, UsageError,
                "gmres: the saved cycle position j = " + std::to_string(j) + " is outside [0, " +
                    std::to_string(restart_) + ")",
                "the state is damaged; restart the solve");
  load_vector(state, "basis", basis_.slice(0, j + 1));
  read_host_tensor(state, "hessenberg", hessenberg_);
  read_host_tensor(state, "cosines", cosines_);
  read_host_tensor(state, "sines", sines_);
  read_host_tensor(state, "g", g_);
  j_ = j;
}

}  // namespace tenax::solvers
