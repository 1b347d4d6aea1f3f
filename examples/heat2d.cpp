// heat2d: the 2-D heat equation u_t = alpha (u_xx + u_yy) on the unit square with u = 0 on the
// boundary, the 5-point Laplacian in space, run by the tenax Runner: checkpoints, resume,
// out-of-memory backoff, anomaly rollback and restart on device faults.
//
// Time schemes (--scheme): explicit (FTCS, the default, below), rk4, implicit (backward Euler)
// and cn (Crank-Nicolson); the last three are the solvers layer's DiffusionIntegrator on the
// whole grid (the implicit ones solve with CG, warm-started from u).
//
// Several ranks (mpirun -np N): FTCS divides the grid's rows, with a halo row exchanged with each
// neighbour per step. The integrators divide the grid's points in block-aligned ranges (a range
// may end inside a row) and run on runtime::DistributedLaplacian2dOperator with the reductions
// across the ranks, so their CG takes the single-process iterations and gives its bits. Either
// split is stored with each checkpoint, so a run resumes on another number of ranks. --dt sets the
// time step; the default is --courant times the FTCS limit h^2/(4 alpha). An implicit step whose
// solve does not converge is an anomaly: the Runner rolls back and, when it happens again, stops
// with the solver's report.
//
// Grid: n interior points per side; point (i, j) sits at x = (i+1)/(n+1), y = (j+1)/(n+1) and
// is stored at u[j][i]. An FTCS step writes the new field into a second one from the memory pool
// in one sweep; when memory runs out it updates the field in place in blocks of rows through two
// block buffers instead (see Heat2d::ftcs). The rows per block are the step's micro-batch, so a
// smaller block after an out-of-memory backoff gives the same field bit for bit, and every
// buffer is allocated before the field changes, so a step that fails leaves the state as it was
// and can be retried.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "tenax/app/app.hpp"
#include "tenax/app/problem_size.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/random.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/io/run_config.hpp"
#include "tenax/io/state_file.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/distributed_laplacian.hpp"
#include "tenax/runtime/runner.hpp"
#include "tenax/runtime/sharded_reductions.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/time_integrator.hpp"

namespace {

using tenax::Device;
using tenax::DType;
using tenax::StateDict;
using tenax::Tensor;

// heat2d's settings, each declared once: the flag, its check, its help and what a resume may
// change. --steps changes freely (a longer or shorter run of the same steps); the time step
// (--courant, --dt) and the implicit solve's tolerance with --allow-config-change (the field stays
// a valid state at its time t; the steps still to run are computed differently). The grid, the
// diffusivity, the scheme (whose state the checkpoint holds) and the initial condition define
// the problem being run and never change.
struct Settings {
  explicit Settings(tenax::app::App& app)
      : n(app.setting("n", std::int64_t{256}, "interior grid points per side").at_least(1)),
        alpha(app.setting("alpha", 1.0, "diffusivity").above(0.0)),
        scheme(app.setting("scheme", "explicit",
                           "time scheme: explicit (FTCS), rk4, implicit (backward Euler) or cn "
                           "(Crank-Nicolson)")
                   .one_of({"explicit", "rk4", "implicit", "cn"})),
        // Recorded only without --dt: with one, the fraction has no effect.
        courant(app.setting("courant", 0.9,
                            "dt as a fraction of the FTCS stability limit h^2/(4 alpha)")
                    .above(0.0)
                    .at_most(1.0)
                    .safe_to_change()
                    .recorded_when([this] { return dt() == 0; })),
        dt(app.setting("dt", 0.0, "time step (0: --courant times the FTCS limit)")
               .at_least(0.0)
               .safe_to_change()),
        // Recorded only for the schemes that solve.
        solver_tol(app.setting("solver-tol", 1e-10,
                               "relative tolerance of the implicit schemes' CG solve per step")
                       .above(0.0)
                       .safe_to_change()
                       .recorded_when([this] { return by_points(); })),
        initial(app.setting("initial", "sine", "initial condition: sine, gauss or random")
                    .one_of({"sine", "gauss", "random"})),
        // Recorded only for a random initial field.
        seed(
            app.setting("seed", std::uint64_t{1}, "seed of --initial random").recorded_when([this] {
              return initial() == "random";
            })),
        output(app.setting("output", "", "write the final field to this HDF5 file (dataset /u)")
                   .empty_means("no output file")
                   .not_recorded()),
        json(app.setting("json", false, "print a JSON summary as the last line").not_recorded()) {}

  // The schemes that solve (on the integrators' split by points; FTCS splits rows).
  [[nodiscard]] bool by_points() const { return scheme() != "explicit"; }

  tenax::app::Setting<std::int64_t>& n;
  tenax::app::Setting<double>& alpha;
  tenax::app::Setting<std::string>& scheme;
  tenax::app::Setting<double>& courant;  // dt as a fraction of the FTCS limit h^2 / (4 alpha)
  tenax::app::Setting<double>& dt;       // 0: courant * h^2 / (4 alpha)
  tenax::app::Setting<double>& solver_tol;
  tenax::app::Setting<std::string>& initial;
  tenax::app::Setting<std::uint64_t>& seed;
  tenax::app::Setting<std::string>& output;
  tenax::app::Setting<bool>& json;
};

// Bytes of one FTCS block buffer: two of them (4 MiB) stay in a server CPU's last-level cache.
constexpr std::int64_t kBlockBytes = std::int64_t{2} << 20;

class Heat2d final : public tenax::runtime::Workload {
 public:
  Heat2d(const Settings& options, Device device, tenax::runtime::Communicator& comm)
      : options_(options),
        device_(device),
        comm_(comm),
        h_(1.0 / static_cast<double>(options.n() + 1)),
        dt_(options.dt() > 0 ? options.dt()
                             : options.courant() * h_ * h_ / (4.0 * options.alpha())),
        by_points_(options.by_points()),
        range_(points_of(comm.rank())),
        rows_(by_points_ ? 0 : range_.count / options.n()),
        ghost_top_(!by_points_ && comm.rank() > 0 ? 1 : 0),
        ghost_bottom_(!by_points_ && comm.rank() + 1 < comm.size() ? 1 : 0) {
    if (by_points_) {
      tenax::solvers::IntegratorOptions integrator;
      integrator.scheme =
          tenax::solvers::time_scheme_from_string(options.scheme() == "implicit" ? "implicit_euler"
                                                  : options.scheme() == "cn"     ? "crank_nicolson"
                                                                             : options.scheme());
      integrator.solver_options.tolerance = options.solver_tol();
      tenax::solvers::OperatorPtr laplacian;
      if (comm.size() > 1) {
        laplacian = std::make_shared<const tenax::runtime::DistributedLaplacian2dOperator>(
            comm, range_, options.n(), options.n(), h_, h_);
      } else {
        laplacian = std::make_shared<const tenax::solvers::Laplacian2dOperator>(
            options.n(), options.n(), h_, h_, DType::f64, device);
      }
      integrator_.emplace(std::move(laplacian), options.alpha(), integrator);
    }
  }

  [[nodiscard]] double dt() const noexcept { return dt_; }
  // This rank's part of the field: its rows [rows, n] (FTCS) or its points [count].
  [[nodiscard]] const Tensor& field() const noexcept { return u_; }
  // The whole field on the CPU, gathered on rank 0 (undefined on the others). Collective.
  [[nodiscard]] Tensor gather_field() const {
    if (comm_.size() == 1) return u_.to(Device::cpu()).reshape({options_.n(), options_.n()});
    const std::int64_t n = options_.n();
    const Tensor mine = u_.to(Device::cpu()).reshape({range_.count}).clone();
    if (comm_.rank() != 0) {
      if (range_.count > 0) comm_.send(mine, 0, kGatherTag);
      return Tensor{};
    }
    Tensor whole = Tensor::empty({n, n}, DType::f64);
    const Tensor points = whole.reshape({n * n});
    tenax::ops::copy(points.slice(0, range_.count), mine);
    for (int r = 1; r < comm_.size(); ++r) {
      const tenax::kernels::ShardRange theirs = points_of(r);
      if (theirs.count == 0) continue;
      comm_.receive(points.slice(theirs.first, theirs.first + theirs.count), r, kGatherTag);
    }
    return whole;
  }
  // The largest value of the field over every rank. Collective.
  [[nodiscard]] double max_value() const {
    const Tensor value = Tensor::empty({1}, DType::f64);
    value.data_as<double>()[0] =
        u_.numel() > 0 ? tenax::ops::max(u_) : -std::numeric_limits<double>::infinity();
    comm_.all_reduce(value, tenax::runtime::ReduceOp::max);
    return value.data_as<double>()[0];
  }
  [[nodiscard]] double time() const noexcept { return time_; }

  void init() override {
    const std::int64_t n = options_.n();
    Tensor host = Tensor::empty({n, n}, DType::f64);
    double* u = host.data_as<double>();
    if (options_.initial() == "random") {
      tenax::Generator generator(options_.seed());
      generator.fill_uniform(u, static_cast<std::size_t>(n * n));
    } else {
      const bool gauss = options_.initial() == "gauss";
      for (std::int64_t j = 0; j < n; ++j) {
        const double y = h_ * static_cast<double>(j + 1);
        for (std::int64_t i = 0; i < n; ++i) {
          const double x = h_ * static_cast<double>(i + 1);
          u[j * n + i] = gauss ? std::exp(-50.0 * ((x - 0.5) * (x - 0.5) + (y - 0.5) * (y - 0.5)))
                               : std::sin(std::numbers::pi * x) * std::sin(std::numbers::pi * y);
        }
      }
    }
    adopt(host.reshape({n * n}).slice(range_.first, range_.first + range_.count).to(device_), 0.0);
  }

  // Rows per block for FTCS; the integrators take the whole grid at once.
  [[nodiscard]] std::int64_t work_units() const override { return integrator_ ? 1 : rows_; }

  // A step acquires everything that can fail for a retryable reason (memory); its collectives
  // (the halo rows, the solver's reductions across the ranks) and its arithmetic run in
  // commit_step(), once every rank agreed. So a rank that runs out of memory never leaves a
  // peer waiting inside a collective: every rank computes the step again, with the same bits.
  void step(std::int64_t step, std::int64_t micro_batch) override {
    if (integrator_) {
      if (!u_next_.defined()) u_next_ = Tensor::empty_like(u_);
      integrator_->reserve(u_next_, dt_);
      staged_ = Staged{u_next_, Tensor{}, 0};
    } else {
      ftcs(micro_batch);
    }
    staged_step_ = step;
  }

  // Median seconds of the steps this process took (0 when none).
  [[nodiscard]] double median_step_seconds() const {
    if (step_seconds_.empty()) return 0.0;
    std::vector<double> sorted = step_seconds_;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    return sorted[sorted.size() / 2];
  }
  [[nodiscard]] std::size_t timed_steps() const noexcept { return step_seconds_.size(); }

  [[nodiscard]] std::optional<std::string> check() const override { return problem_; }

  // FTCS. With a micro-batch smaller than the grid: in place, one block of rows at a time, in
  // one pass over the field. A block's new rows
  // go to a buffer and are copied into u one block later, after the next block (which reads
  // this block's last row as its halo) has been computed from the old values. Both block
  // buffers are taken from the pool before anything changes, so an out-of-memory error leaves
  // the state as it was; their size follows the micro-batch, so a backoff needs less memory and
  // gives the same field. Blocks are also capped at kBlockBytes so that they stay in the cache
  // between their computation and their copy, which keeps memory traffic at a read and a write
  // of the field per step.
  void ftcs(std::int64_t micro_batch) {
    const std::int64_t n = options_.n();
    if (micro_batch >= rows_) {
      // The whole grid in one pass into a second field from the pool (one parallel sweep, no
      // per-block dispatch): the fast path while memory allows. Under memory pressure the
      // allocation fails first, before the state changes, and the backoff leads to the blocked
      // in-place path below, which needs only two blocks beside the field.
      staged_ = Staged{Tensor::empty_like(slab_), Tensor{}, 0};
      return;
    }
    // In place: only the two block buffers are taken now.
    const std::int64_t cache_rows = std::max<std::int64_t>(1, kBlockBytes / (8 * n));
    const std::int64_t rows = std::min({micro_batch, cache_rows, rows_});
    staged_ = Staged{Tensor{}, Tensor::empty({2, rows, n}, DType::f64, device_), rows};
  }

  // The blocked in-place FTCS sweep. A block's new rows go to a buffer and are copied into u one
  // block later, after the next block (which reads this block's last row as its halo) has been
  // computed from the old values.
  // It runs over this rank's rows of the slab (the field with its halo rows from the
  // neighbouring ranks, which are read, never written).
  void sweep_in_place(const Tensor& buffers, std::int64_t rows) {
    const std::int64_t n = options_.n();
    const std::int64_t m = slab_.shape()[0];
    const std::int64_t end = ghost_top_ + rows_;
    const double factor = options_.alpha() * dt_;
    Tensor pending;  // the previous block's new rows, not yet in u
    std::int64_t pending_row = 0;
    for (std::int64_t r0 = ghost_top_, block = 0; r0 < end; r0 += rows, ++block) {
      const std::int64_t r1 = std::min(end, r0 + rows);
      // The block with one halo row on each side inside the slab.
      const std::int64_t top = r0 > 0 ? r0 - 1 : 0;
      const std::int64_t bottom = r1 < m ? r1 + 1 : m;
      const Tensor next =
          buffers.slice(block % 2, block % 2 + 1).reshape({rows, n}).slice(0, r1 - r0);
      tenax::ops::laplacian_5pt_update(slab_.slice(top, bottom), next, r0 - top, factor, h_, h_);
      if (pending.defined()) {
        tenax::ops::copy(slab_.slice(pending_row, pending_row + pending.shape()[0]), pending);
      }
      pending = next;
      pending_row = r0;
    }
    tenax::ops::copy(slab_.slice(pending_row, pending_row + pending.shape()[0]), pending);
  }

  // The halo rows from the neighbouring ranks: each rank's first and last rows go to the ranks
  // above and below. Pairs (0,1), (2,3), ... exchange first, then (1,2), (3,4), ...; in each
  // pair the lower rank sends first, so no two ranks wait on each other's send.
  void exchange_halos() {
    if (comm_.size() == 1) return;
    const int rank = comm_.rank();
    const std::int64_t m = slab_.shape()[0];
    auto with = [&](int peer) {
      const bool below = peer > rank;  // the peer holds the rows after ours
      const Tensor mine = below ? slab_.slice(ghost_top_ + rows_ - 1, ghost_top_ + rows_)
                                : slab_.slice(ghost_top_, ghost_top_ + 1);
      const Tensor ghost = below ? slab_.slice(m - 1, m) : slab_.slice(0, 1);
      const int send_tag = below ? kDownTag : kUpTag;
      const int receive_tag = below ? kUpTag : kDownTag;
      if (rank < peer) {
        comm_.send(mine, peer, send_tag);
        comm_.receive(ghost, peer, receive_tag);
      } else {
        comm_.receive(ghost, peer, receive_tag);
        comm_.send(mine, peer, send_tag);
      }
    };
    for (int phase = 0; phase < 2; ++phase) {
      const bool leads = rank % 2 == phase;  // the lower rank of this phase's pair
      const int peer = leads ? rank + 1 : rank - 1;
      if (peer >= 0 && peer < comm_.size()) with(peer);
    }
  }

  // One step of the integrator into u_next_ (reserved by step()), which becomes u. A solve that
  // did not converge is reported by check(): the Runner rolls back to the last checkpoint.
  void integrate(std::int64_t step) {
    // On several ranks the solver's dot products and norms run over the whole grid.
    std::optional<tenax::runtime::ShardedReductions> whole_grid;
    if (comm_.size() > 1) whole_grid.emplace(comm_, range_);
    tenax::ops::copy(u_next_, u_);
    const tenax::solvers::SolveResult result = integrator_->step(u_next_, dt_);
    std::swap(u_, u_next_);
    last_solve_ = result;
    problem_.reset();
    if (!result.converged()) {
      problem_ = "the " + options_.scheme() + " step " + std::to_string(step + 1) + " ended with " +
                 std::string(tenax::solvers::to_string(result.status)) + " after " +
                 std::to_string(result.iterations) + " iterations (relative residual " +
                 std::to_string(result.relative_residual) + ")" +
                 (result.detail.empty() ? "" : ": " + result.detail);
    }
  }

  void commit_step() override {
    TENAX_EXPECTS(staged_.has_value(), tenax::UsageError, "heat2d: commit with no step staged",
                  "call step() before commit_step()");
    const auto start = std::chrono::steady_clock::now();
    if (integrator_) {
      integrate(staged_step_);
    } else if (staged_->field.defined()) {
      exchange_halos();
      const Tensor next = staged_->field;
      tenax::ops::laplacian_5pt_update(slab_, next.slice(ghost_top_, ghost_top_ + rows_),
                                       ghost_top_, options_.alpha() * dt_, h_, h_);
      slab_ = next;
      u_ = slab_.slice(ghost_top_, ghost_top_ + rows_);
    } else {
      exchange_halos();
      sweep_in_place(staged_->buffers, staged_->rows);
    }
    if (device_.is_cuda()) tenax::cuda::context(device_).synchronize();
    step_seconds_.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    time_ += dt_;
    staged_.reset();
  }

  void discard_step() override { staged_.reset(); }

  // The simulated time; for the implicit schemes also the linear solve of the step (its
  // iterations and relative residual).
  [[nodiscard]] std::vector<tenax::runtime::StepMetric> step_metrics() const override {
    std::vector<tenax::runtime::StepMetric> metrics{{"simulated_time", time_}};
    if (integrator_) {
      metrics.push_back({"solver_iterations", static_cast<double>(last_solve_.iterations)});
      metrics.push_back({"solver_relative_residual", last_solve_.relative_residual});
    }
    return metrics;
  }

  [[nodiscard]] StateDict save_state() const override {
    StateDict state;
    state.set("u", u_);  // this rank's part (state_layout)
    state.set("t", time_);
    if (integrator_) integrator_->save_state(state, "integrator");
    return state;
  }

  void load_state(const StateDict& state) override {
    const Tensor& u = state.tensor("u");
    TENAX_EXPECTS(u.shape() == local_shape() && u.dtype() == DType::f64, tenax::UsageError,
                  "the checkpoint holds u as " + u.describe() +
                      " but this rank of a run with --n " + std::to_string(options_.n()) +
                      " and --scheme " + options_.scheme() + " holds it as f64" +
                      tenax::to_string(local_shape()),
                  "resume with the same --n and --scheme, or use a new --run-dir");
    adopt(u.to(device_).clone(), state.real("t"));
    staged_.reset();
    if (integrator_) integrator_->load_state(state, "integrator");
  }

  [[nodiscard]] Device device() const override { return device_; }

  // u is split across the ranks: FTCS by rows of the [n, n] grid, the integrators by points of
  // its n * n flattening.
  [[nodiscard]] tenax::runtime::StateLayout state_layout() const override {
    const std::int64_t n = options_.n();
    if (by_points_) {
      return {.shards = {{"u", 0, range_.first, range_.first + range_.count, n * n}},
              .rank_local = {}};
    }
    const std::int64_t row = range_.first / n;
    return {.shards = {{"u", 0, row, row + rows_, n}}, .rank_local = {}};
  }

 private:
  // The points of `rank`: whole rows split as evenly as they go (FTCS), or block-aligned ranges
  // of points (the integrators, whose reductions across the ranks need whole reduction blocks).
  [[nodiscard]] tenax::kernels::ShardRange points_of(int rank) const {
    const std::int64_t n = options_.n();
    if (by_points_) return tenax::kernels::block_aligned_range(n * n, comm_.size(), rank);
    const auto first_row = [&](int r) { return n * static_cast<std::int64_t>(r) / comm_.size(); };
    return {first_row(rank) * n, (first_row(rank + 1) - first_row(rank)) * n, n * n};
  }
  [[nodiscard]] tenax::Shape local_shape() const {
    return by_points_ ? tenax::Shape{range_.count} : tenax::Shape{rows_, options_.n()};
  }

  // This rank's part becomes the field; FTCS keeps it inside a slab with a halo row for each
  // neighbour.
  void adopt(const Tensor& part, double time) {
    const Tensor mine = part.reshape(local_shape());
    if (ghost_top_ + ghost_bottom_ == 0) {
      slab_ = mine;
      u_ = slab_;
    } else {
      slab_ =
          Tensor::empty({rows_ + ghost_top_ + ghost_bottom_, options_.n()}, DType::f64, device_);
      tenax::ops::copy(slab_.slice(ghost_top_, ghost_top_ + rows_), mine);
      u_ = slab_.slice(ghost_top_, ghost_top_ + rows_);
    }
    time_ = time;
  }

  static constexpr int kDownTag = 1;    // a rank's last row, to the rank below
  static constexpr int kUpTag = 2;      // a rank's first row, to the rank above
  static constexpr int kGatherTag = 3;  // rows to rank 0 for the output

  const Settings& options_;
  Device device_;
  tenax::runtime::Communicator& comm_;
  double h_;
  double dt_;
  bool by_points_;                    // the integrators' split (else FTCS's rows)
  tenax::kernels::ShardRange range_;  // this rank's points of the grid's n * n
  std::int64_t rows_;                 // FTCS: this rank's rows (range_ / n)
  std::int64_t ghost_top_;            // 1 when a rank above sends its last row into slab_'s first
  std::int64_t ghost_bottom_;         // 1 when a rank below sends its first row into slab_'s last
  Tensor slab_;                       // FTCS: [ghost_top_ + rows_ + ghost_bottom_, n]; else u_
  Tensor u_;                          // this rank's part of the field: a view of slab_
  Tensor u_next_;                     // the integrators' working copy (FTCS updates u in place)
  double time_ = 0.0;
  std::optional<tenax::solvers::DiffusionIntegrator> integrator_;
  std::optional<std::string> problem_;      // why the last step is not acceptable
  tenax::solvers::SolveResult last_solve_;  // the linear solve of the last implicit step
  // The step computed but not yet applied: a new field (FTCS into a second field, or the
  // integrator's u_next_), or the buffers of the in-place sweep.
  struct Staged {
    Tensor field;
    Tensor buffers;
    std::int64_t rows = 0;
  };
  std::optional<Staged> staged_;
  std::int64_t staged_step_ = 0;
  std::vector<double> step_seconds_;  // of every step taken by this process
};

// The stability limit of an explicit scheme, set by the largest eigenvalue of -Δh, 8/h^2: FTCS
// for alpha dt <= h^2/4, classical RK4 for alpha dt <= 2.78 h^2/8; 0 for the implicit ones.
double stability_limit(const Settings& s) {
  const double h = 1.0 / static_cast<double>(s.n() + 1);
  return s.scheme() == "explicit" ? h * h / (4.0 * s.alpha())
         : s.scheme() == "rk4"    ? 2.78 * h * h / (8.0 * s.alpha())
                                  : 0.0;
}

int run(const Settings& options, tenax::app::Job& job) {
  const double limit = stability_limit(options);
  TENAX_EXPECTS(limit == 0.0 || options.dt() <= limit, tenax::UsageError,
                options.dt.given() + " is above the stability limit " + std::to_string(limit) +
                    " of --scheme " + options.scheme(),
                "lower --dt, or use --scheme implicit or cn (unconditionally stable)");
  tenax::runtime::Communicator& comm = job.comm();
  TENAX_EXPECTS(options.n() >= comm.size(), tenax::UsageError,
                options.n.given() + " on " + std::to_string(comm.size()) + " ranks",
                "give every rank at least one row: use --n >= the number of ranks");
  const Device device = job.device();
  // The field itself and what FTCS needs beside it at the least (the in-place sweep's two
  // blocks of one row at the smallest micro-batch, and a halo row on each side), before anything
  // is allocated; the fast path's second field and the integrators' vectors come on top and meet
  // the pool's own limit (FTCS then backs off to the in-place sweep).
  (void)tenax::app::expect_grid_fits(device, "--n " + std::to_string(options.n()), options.n(), 2,
                                     sizeof(double), 4 * options.n() * std::int64_t{8});
  TENAX_EXPECTS(comm.size() == 1 || options.scheme() == "explicit" || device.is_cpu(),
                tenax::UsageError,
                "--scheme " + options.scheme() + " on " + std::to_string(comm.size()) +
                    " ranks with --device " + tenax::to_string(device),
                "run the integrators of several ranks with --device cpu (their distributed "
                "operator is CPU-only for now), or use --scheme explicit (FTCS), which runs on "
                "GPUs across ranks");
  Heat2d heat(options, device, comm);
  // A step too small for a double to carry (h^2/(4 alpha) underflows for a huge --alpha) would
  // leave t where it is and the field unchanged: refused, not run.
  char step_text[32];
  std::snprintf(step_text, sizeof step_text, "%.3g", heat.dt());
  TENAX_EXPECTS(
      heat.dt() >= std::numeric_limits<double>::min(), tenax::UsageError,
      "the time step is " + std::string(step_text) + " (" +
          (options.dt() > 0 ? options.dt.given()
                            : "--courant times h^2/(4 alpha) with " + options.alpha.given()) +
          "): below the smallest normal double, so t would not advance",
      "lower --alpha or give a larger --dt");
  const tenax::runtime::RunResult result = job.run(heat);
  if (result.status != tenax::runtime::RunStatus::completed) return result.exit_code;

  const double max_u = heat.max_value();
  const Tensor whole = options.output().empty() ? Tensor{} : heat.gather_field();
  if (!job.leader()) return 0;
  const std::string where =
      tenax::to_string(device) +
      (comm.size() > 1 ? " x " + std::to_string(comm.size()) + " ranks" : std::string());
  // The step the state reached: --steps, or more when a resume asked for fewer than the run had.
  const std::int64_t steps = result.step;
  std::printf("heat2d: %lld steps of %lldx%lld on %s done, t = %.9g, max u = %.17g\n",
              static_cast<long long>(steps), static_cast<long long>(options.n()),
              static_cast<long long>(options.n()), where.c_str(), heat.time(), max_u);
  if (!options.output().empty()) {
    tenax::io::FileMetadata metadata;
    metadata.step = steps;
    metadata.config = job.config();
    tenax::io::write_tensor_file(
        options.output(), "u", whole,
        {{"t", heat.time()}, {"alpha", options.alpha()}, {"steps", static_cast<double>(steps)}},
        metadata);
    std::printf("heat2d: final field written to %s (dataset /u)\n", options.output().c_str());
  }
  // An FTCS step reads and writes the field once: 16 bytes per point (f64) at the least.
  // Per rank: its own rows (the ranks run side by side).
  const double points = static_cast<double>(heat.field().numel());
  const double step_seconds = heat.median_step_seconds();
  const double gbps =
      options.scheme() == "explicit" && step_seconds > 0 ? 16.0 * points / step_seconds / 1e9 : 0.0;
  if (heat.timed_steps() > 0) {
    std::printf("heat2d: %.3f ms per step (median of %zu)", 1e3 * step_seconds, heat.timed_steps());
    if (gbps > 0) std::printf(", %.1f GB/s at 16 bytes per point", gbps);
    std::printf("\n");
  }
  if (options.json()) {
    std::printf(
        "{\"scheme\":\"%s\",\"n\":%lld,\"steps\":%lld,\"timed_steps\":%zu,"
        "\"ms_per_step\":%.9g,\"bytes_per_step\":%.17g,\"gbps\":%.9g,\"t\":%.17g}\n",
        options.scheme().c_str(), static_cast<long long>(options.n()),
        static_cast<long long>(steps), heat.timed_steps(), 1e3 * step_seconds, 16.0 * points, gbps,
        heat.time());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tenax::app::App app("heat2d",
                      "2-D heat equation (FTCS, RK4, implicit Euler or Crank-Nicolson), run with "
                      "checkpoints and fault recovery",
                      {.steps = 1000, .checkpoint_every = 100, .divides_work_across_ranks = true});
  const Settings settings(app);
  app.output_file(settings.output);
  return app.main(argc, argv, [&](tenax::app::Job& job) { return run(settings, job); });
}
