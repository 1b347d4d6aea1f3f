// poisson: solves a sparse linear system with a tenax Krylov solver, run by the tenax Runner so
// that a long solve checkpoints, resumes mid-solve (bitwise as if never stopped) and survives the
// faults of `--inject`.
//
// Systems, built by the library (tenax/solvers/{poisson,convection_diffusion,manufactured}.hpp,
// tenax/runtime/{linear_system,matrix_market_system}.hpp): --problem poisson (default), -Δu = f
// on the unit square (--dim 2) or cube (--dim 3), n points per side, with a manufactured solution
// and -Δh assembled (--operator csr) or matrix-free (--operator stencil); --problem convdiff, 2-D
// upwind convection-diffusion (--beta-h sets beta h); --matrix A.mtx [--rhs b.mtx], a user's
// system from Matrix Market files. convdiff, and --matrix without --rhs, solve A x = A 1; the
// error against the known solution (u, or all ones) is reported.
//
// Each Runner step runs --iterations-per-step iterations; the solver's whole iteration state is
// the checkpoint. --precision f32 solves in f32 throughout; --precision mixed runs mixed-precision
// iterative refinement (f32 inner solves, f64 residuals), as one step.
//
// Prints iterations, residual, time per iteration and the bandwidth achieved under the bytes
// model of the method (runtime::bytes_per_iteration); --json adds one JSON object as the last line.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tenax/app/app.hpp"
#include "tenax/app/problem_size.hpp"
#include "tenax/app/solver_settings.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/io/state_file.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/krylov_solve.hpp"
#include "tenax/runtime/linear_system.hpp"
#include "tenax/runtime/matrix_market_system.hpp"
#include "tenax/runtime/runner.hpp"
#include "tenax/solvers/solvers.hpp"

namespace {

using tenax::Device;
using tenax::DType;
using tenax::Tensor;
using tenax::UsageError;
namespace runtime = tenax::runtime;
namespace solvers = tenax::solvers;

// poisson's settings, each declared once: the flag, its check, its help and what a resume may
// change. The iteration limit and the input files' paths change freely (the iterates do not
// depend on the limit; the files' contents are recorded as digests); with --allow-config-change
// the stopping tolerances (the iterates are the same, the solve stops elsewhere) and how the same
// operator is applied (assembled or matrix-free, the CSR index type: the same matrix, possibly
// other rounding). The system, the method, its preconditioner and restart length, the precision,
// the iterations per Runner step (which fix what a step count in the checkpoint means) and GMRES's
// Gram-Schmidt never change. The solver's settings are its component's (SolverSettings) under
// poisson's flag names.
struct Settings {
  explicit Settings(tenax::app::App& app)
      : dim(app.setting("dim", 2, "2 or 3 (the manufactured problem)")
                .at_least(2)
                .at_most(3)
                .recorded_when([this] { return generated(); })),
        n(app.setting("n", std::int64_t{256}, "interior grid points per side")
              .at_least(1)
              .recorded_when([this] { return generated(); })),
        problem(app.setting("problem", "poisson", "poisson or convdiff")
                    .one_of({"poisson", "convdiff"})
                    .recorded_when([this] { return generated(); })),
        beta_h(app.setting("beta-h", 0.5, "convection strength beta*h of --problem convdiff")
                   .recorded_when([this] { return generated() && problem() == "convdiff"; })),
        matrix(app.setting("matrix", "", "solve the system of this Matrix Market file instead")
                   .empty_means("the generated problem (--problem)")
                   .free_to_change()
                   .recorded_when([this] { return !generated(); })),
        rhs(app.setting("rhs", "", "right-hand side of --matrix (Matrix Market); default b = A*1")
                .empty_means("b = A*1")
                .free_to_change()
                .recorded_when([this] { return !rhs().empty(); })),
        op(app.setting("operator", "csr", "csr (assembled) or stencil (matrix-free)")
               .one_of({"csr", "stencil"})
               .safe_to_change()),
        index(app.setting("index", "i32", "CSR index type: i32 or i64")
                  .one_of({"i32", "i64"})
                  .safe_to_change()),
        precision(
            app.setting("precision", "f64", "f64, f32, or mixed (f32 inner solves refined in f64)")
                .one_of({"f64", "f32", "mixed"})),
        solve(app, {.method = "cg", .options = {.tolerance = 1e-8, .max_iterations = 10000}},
              {.method = "solver",
               .preconditioner = "precond",
               .prefix = "",
               .options = "solver-options"}),
        iterations_per_step(app.setting("iterations-per-step", std::int64_t{50},
                                        "solver iterations in one Runner step")
                                .at_least(1)),
        output(app.setting("output", "",
                           "write the solution to this HDF5 file (dataset /x; the residual per "
                           "iteration in /residual_history)")
                   .empty_means("no output file")
                   .not_recorded()),
        json(app.setting("json", false, "print a JSON summary as the last line").not_recorded()) {}

  // The manufactured or convection-diffusion system (not a Matrix Market file).
  [[nodiscard]] bool generated() const { return matrix().empty(); }

  tenax::app::Setting<int>& dim;
  tenax::app::Setting<std::int64_t>& n;
  tenax::app::Setting<std::string>& problem;
  tenax::app::Setting<double>& beta_h;
  tenax::app::Setting<std::string>& matrix;
  tenax::app::Setting<std::string>& rhs;
  tenax::app::Setting<std::string>& op;
  tenax::app::Setting<std::string>& index;
  tenax::app::Setting<std::string>& precision;
  tenax::app::SolverSettings solve;
  tenax::app::Setting<std::int64_t>& iterations_per_step;
  tenax::app::Setting<std::string>& output;
  tenax::app::Setting<bool>& json;
};

// The system, for the first line of the results.
std::string describe_problem(const Settings& o) {
  const std::string n = std::to_string(o.n()), dim = std::to_string(o.dim());
  if (!o.generated()) return o.matrix();
  if (o.problem() == "poisson") return "Poisson " + dim + "-D " + n + "^" + dim;
  return "convection-diffusion " + n + "^2, beta h " + std::to_string(o.beta_h());
}

// The generated system, whole: the manufactured Poisson problem, with -Δh assembled or
// matrix-free, or the convection-diffusion matrix with b = A 1 (the solution is all ones).
runtime::LinearSystem generated_system(const Settings& o, DType dtype, DType index_dtype,
                                       Device device) {
  const std::int64_t n = o.n();
  if (o.problem() == "convdiff") {
    TENAX_EXPECTS(o.dim() == 2 && o.op() == "csr", UsageError,
                  "--problem convdiff is assembled in 2-D only",
                  "use --dim 2 --operator csr with --problem convdiff");
    const solvers::OperatorPtr a = solvers::make_csr_operator(
        solvers::convection_diffusion_2d_csr(n, n, o.beta_h(), dtype, index_dtype, device));
    solvers::ManufacturedSolution ones = solvers::manufactured_ones(*a);
    return runtime::whole_system(a, ones.rhs, std::move(ones.solution));
  }
  const double h = 1.0 / static_cast<double>(n + 1);
  solvers::OperatorPtr a;
  if (o.op() == "stencil" && o.dim() == 2) {
    a = std::make_shared<solvers::Laplacian2dOperator>(n, n, h, h, dtype, device);
  } else if (o.op() == "stencil") {
    a = std::make_shared<solvers::Laplacian3dOperator>(n, n, n, h, h, h, dtype, device);
  } else {
    a = solvers::make_csr_operator(
        o.dim() == 2 ? solvers::poisson_2d_csr(n, n, h, h, dtype, index_dtype, device)
                     : solvers::poisson_3d_csr(n, n, n, h, h, h, dtype, index_dtype, device));
  }
  solvers::ManufacturedSolution u = solvers::manufactured_poisson(o.dim(), n, dtype, device);
  return runtime::whole_system(a, u.rhs, std::move(u.solution));
}

// The system, and on several ranks this rank's rows of it: every rank builds the whole generated
// system and keeps its block-aligned rows; a user's matrix is read by rows, each rank its own.
runtime::LinearSystem build_system(const Settings& o, DType dtype, DType index_dtype, Device device,
                                   runtime::Communicator& comm) {
  if (!o.generated()) {
    runtime::MatrixMarketSystemOptions files{
        o.matrix(), o.rhs(), dtype, index_dtype, device, {"--matrix", "--rhs", "--index"}};
    files.on_rows_read = [&](const auto& rows, std::int64_t mine, std::int64_t all) {
      std::printf("poisson [rank %d/%d]: read rows [%lld, %lld) of %s: %lld of its %lld entries\n",
                  comm.rank(), comm.size(), static_cast<long long>(rows.first),
                  static_cast<long long>(rows.first + rows.count), o.matrix().c_str(),
                  static_cast<long long>(mine), static_cast<long long>(all));
    };
    return runtime::read_matrix_market_system(comm, files);
  }
  runtime::LinearSystem system = generated_system(o, dtype, index_dtype, device);
  TENAX_EXPECTS(comm.size() == 1 || o.op() == "csr", UsageError,
                "poisson: a matrix-free operator on several ranks",
                "use --operator csr on several ranks");
  return runtime::split_rows(std::move(system), comm);
}

// The checks between settings (each setting checks its own value).
void validate(const Settings& o) {
  TENAX_EXPECTS(o.matrix().empty() || o.op() == "csr", UsageError,
                "--matrix with --operator " + o.op(),
                "a matrix from a file is assembled: drop --operator or use csr");
  TENAX_EXPECTS(o.rhs().empty() || !o.matrix().empty(), UsageError, "--rhs without --matrix",
                "give the matrix with --matrix A.mtx");
}

// Convergence is a result: a solve that stopped short still ends the program normally, but a
// non-finite residual is an anomaly (3) and a breakdown or divergence an error of the setup (2).
int exit_code_of(const solvers::SolveResult& result) {
  using enum solvers::SolveStatus;
  if (result.status == converged || result.status == max_iterations) return 0;
  return result.status == non_finite ? 3 : 2;
}

// A generated problem's sizes, checked before anything is assembled: every rank builds the
// whole matrix on the host (and keeps its rows), with the right-hand side, the known solution
// and the solver's vectors, so a grid that cannot fit is refused with the largest --n that can,
// and an entry count beyond --index i32 names the flag that widens it.
void expect_generated_problem_fits(const Settings& o, DType dtype, DType index_dtype) {
  const std::int64_t value = static_cast<std::int64_t>(tenax::size_of(dtype));
  const std::int64_t index = static_cast<std::int64_t>(tenax::size_of(index_dtype));
  const std::int64_t per_row = 1 + 2 * o.dim();  // the stencil's entries in an interior row
  const bool assembled = o.op() == "csr";
  // Stored entries and row pointers, and the compact index the operator adds (2-byte column
  // offsets and 1-byte value codes, CsrMatrix::compacted).
  const std::int64_t matrix_bytes = assembled ? per_row * (value + index + 3) + index : 0;
  // b, x and the residual in the solver's dtype, and the Krylov method's own vectors (CG's
  // direction, product and residual: 3; BiCGSTAB and GMRES need more and are refused later if
  // they do not fit); the known solution in f64.
  const std::int64_t rows = tenax::app::expect_grid_fits(
      Device::cpu(), "--n " + std::to_string(o.n()) + " --dim " + std::to_string(o.dim()), o.n(),
      o.dim(), matrix_bytes + 7 * value + 8);
  if (!assembled || index_dtype != DType::i32) return;
  // The diagonal, and two entries for each pair of neighbours along each axis.
  const std::int64_t entries = rows + 2 * o.dim() * (rows / o.n()) * (o.n() - 1);
  TENAX_EXPECTS(entries <= std::numeric_limits<std::int32_t>::max(), UsageError,
                "--index i32 cannot hold the " + std::to_string(entries) + " entries of --n " +
                    std::to_string(o.n()) + " --dim " + std::to_string(o.dim()),
                "use --index i64");
}

int run(const Settings& o, tenax::app::Job& job) {
  validate(o);
  const Device device = job.device();
  const DType dtype = o.precision() == "f32" ? DType::f32 : DType::f64;
  const DType index_dtype = o.index() == "i64" ? DType::i64 : DType::i32;

  solvers::SolverOptions solver_options = o.solve.options();
  const std::string& method = o.solve.method();
  runtime::Communicator* comm = &job.comm();
  if (comm->size() > 1) {
    const std::string ranks = std::to_string(comm->size()) + " ranks";
    TENAX_EXPECTS(o.precision() != "mixed", UsageError,
                  "--precision mixed on " + ranks + ": refinement runs on one process",
                  "use --precision f64 or f32 on several ranks");
    TENAX_EXPECTS(
        solver_options.preconditioner == "none" || solver_options.preconditioner == "jacobi",
        UsageError,
        "--precond " + solver_options.preconditioner + " on " + ranks +
            ": ILU(0) factors the whole matrix on one process",
        "use --precond jacobi (or none) on several ranks");
    TENAX_EXPECTS(device.is_cpu(), UsageError,
                  "--device " + tenax::to_string(device) + " on " + ranks +
                      ": distributed solves run on the CPU for now",
                  "use --device cpu on several ranks");
  }
  const bool speaker = comm->rank() == 0;  // rank 0 prints the results
  if (o.matrix().empty()) expect_generated_problem_fits(o, dtype, index_dtype);

  const auto seconds_since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const auto setup_start = std::chrono::steady_clock::now();
  const runtime::LinearSystem system = build_system(o, dtype, index_dtype, device, *comm);
  // Timings cover the device's queued work (the CPU backend is synchronous).
  if (device.is_cuda()) tenax::cuda::context(device).synchronize();
  // A GMRES cycle longer than the system: the Krylov space is the whole space after n
  // iterations, so a cycle of n is the longest that does anything, and the basis and the
  // Hessenberg ((restart + 1) x restart: 3 GB for --restart 20000) need no more.
  if (method == "gmres" && solver_options.restart > system.rows) {
    if (speaker) {
      std::fprintf(stderr,
                   "poisson: --restart %lld is longer than the %lld unknowns: GMRES cycles of "
                   "%lld (the Krylov space is the whole space after that many iterations)\n",
                   static_cast<long long>(solver_options.restart),
                   static_cast<long long>(system.rows), static_cast<long long>(system.rows));
    }
    solver_options.restart = std::max<std::int64_t>(system.rows, 1);
  }

  solvers::SolveResult result;
  double solve_seconds = 0.0, setup_seconds = 0.0;
  std::int64_t inner_iterations = -1;
  Tensor x;
  Tensor residual_history;  // not for --precision mixed (its inner solves have their own)
  double bytes = 0.0;       // per iteration, at least (not modelled for --precision mixed)
  if (o.precision() == "mixed") {
    solvers::RefinementOptions refinement;
    refinement.outer.tolerance = solver_options.tolerance;
    refinement.outer.absolute_tolerance = solver_options.absolute_tolerance;
    refinement.inner_solver = method;
    refinement.inner.preconditioner = solver_options.preconditioner;
    refinement.inner.restart = solver_options.restart;
    solvers::MixedPrecisionRefinement solve(refinement);
    x = Tensor::empty({system.a->rows()}, dtype, device);
    tenax::ops::fill(x, 0.0);
    setup_seconds = seconds_since(setup_start);
    const auto start = std::chrono::steady_clock::now();
    const solvers::RefinementResult refined = solve.solve(system.a, system.b, x);
    if (device.is_cuda()) tenax::cuda::context(device).synchronize();
    solve_seconds = seconds_since(start);
    result = refined.outer;
    inner_iterations = refined.inner_iterations;
  } else {
    // A Runner step is --iterations-per-step iterations: the run ends when the iteration limit
    // is reached (or the solve converged: KrylovSolve::finished).
    runtime::KrylovSolve workload(system.a, system.b, method, solver_options,
                                  o.iterations_per_step());
    runtime::RunnerOptions runner_options = job.runner_options();
    runner_options.total_steps = workload.steps_to_iteration_limit();
    setup_seconds = seconds_since(setup_start);
    const runtime::RunResult run = job.run(workload, runner_options);
    if (run.status != runtime::RunStatus::completed) return run.exit_code;
    result = workload.result();
    solve_seconds = workload.solve_seconds();
    x = workload.solution();
    residual_history = workload.residual_history();
    bytes = runtime::bytes_per_iteration(system, workload.solver(), result.iterations);
  }

  const std::int64_t iterations = std::max<std::int64_t>(result.iterations, 1);
  const double ms_per_iteration = 1e3 * solve_seconds / static_cast<double>(iterations);
  const double gbps = bytes > 0 && solve_seconds > 0 ? bytes / (ms_per_iteration * 1e6) : 0.0;
  const runtime::SolutionError error = system.solution
                                           ? runtime::solution_error(system, x)
                                           : runtime::SolutionError{.max = -1.0, .rms = -1.0};
  const Tensor solution = o.output().empty() ? Tensor() : runtime::gather_solution(system, x);
  if (!speaker) return exit_code_of(result);
  std::printf("poisson: %s on %s (%s, %lld rows, %lld stored entries) on %s%s\n", method.c_str(),
              describe_problem(o).c_str(), system.a->describe().c_str(),
              static_cast<long long>(system.rows), static_cast<long long>(system.nnz),
              tenax::to_string(device).c_str(),
              comm->size() > 1 ? (", " + std::to_string(comm->size()) + " ranks").c_str() : "");
  std::printf(
      "poisson: %s after %lld iterations%s, residual %.6e (relative %.6e)\n",
      std::string(solvers::to_string(result.status)).c_str(),
      static_cast<long long>(result.iterations),
      inner_iterations >= 0 ? (" (" + std::to_string(inner_iterations) + " inner)").c_str() : "",
      result.residual, result.relative_residual);
  if (!result.detail.empty()) std::printf("poisson: %s\n", result.detail.c_str());
  std::printf("poisson: %.3f ms per iteration, %.3f s solve, %.3f s setup", ms_per_iteration,
              solve_seconds, setup_seconds);
  if (gbps > 0) std::printf(", %.1f GB/s (%.0f bytes per iteration)", gbps, bytes);
  std::printf("\n");
  if (system.solution) {
    std::printf("poisson: error against the known solution: max %.6e, rms %.6e\n", error.max,
                error.rms);
  }
  if (!o.output().empty()) {
    const tenax::io::FileMetadata metadata{.step = result.iterations, .config = job.config()};
    tenax::io::write_tensor_file(
        o.output(), "x", tenax::ops::cast(solution, DType::f64).to(Device::cpu()),
        {{"iterations", static_cast<double>(result.iterations)}, {"residual", result.residual}},
        metadata, {{"status", std::string(solvers::to_string(result.status))}},
        residual_history.defined()
            ? std::vector<std::pair<std::string, Tensor>>{{"residual_history", residual_history}}
            : std::vector<std::pair<std::string, Tensor>>{});
    std::printf("poisson: solution written to %s (dataset /x%s)\n", o.output().c_str(),
                residual_history.defined() ? ", residual per iteration in /residual_history" : "");
  }
  if (o.json()) {
    // dim and n describe the generated problem: null for a system read from a file.
    const std::string dim = o.matrix().empty() ? std::to_string(o.dim()) : "null";
    const std::string n = o.matrix().empty() ? std::to_string(o.n()) : "null";
    std::printf(
        "{\"solver\":\"%s\",\"precond\":\"%s\",\"operator\":\"%s\",\"precision\":\"%s\","
        "\"dim\":%s,\"n\":%s,\"rows\":%lld,\"nnz\":%lld,\"iterations\":%lld,"
        "\"residual\":%.17g,\"relative_residual\":%.17g,\"status\":\"%s\",\"setup_s\":%.9g,"
        "\"solve_s\":%.9g,\"ms_per_iteration\":%.9g,\"bytes_per_iteration\":%.17g,"
        "\"gbps\":%.9g,\"error_max\":%.17g,\"error_rms\":%.17g}\n",
        method.c_str(), solver_options.preconditioner.c_str(),
        o.matrix().empty() ? o.op().c_str() : "csr", o.precision().c_str(), dim.c_str(), n.c_str(),
        static_cast<long long>(system.rows), static_cast<long long>(system.nnz),
        static_cast<long long>(result.iterations), result.residual, result.relative_residual,
        std::string(solvers::to_string(result.status)).c_str(), setup_seconds, solve_seconds,
        ms_per_iteration, bytes, gbps, error.max, error.rms);
  }
  if (result.status == solvers::SolveStatus::non_finite) {
    std::fprintf(stderr,
                 "poisson: anomaly: a non-finite value appeared at iteration %lld. fix: check "
                 "the matrix and right-hand side for NaN/Inf, or use --precision f64\n",
                 static_cast<long long>(result.bad_iteration));
  } else if (exit_code_of(result) != 0) {
    std::fprintf(stderr,
                 "poisson: the solve stopped with %s. fix: try another --solver (gmres is the "
                 "most robust) or a preconditioner\n",
                 std::string(solvers::to_string(result.status)).c_str());
  }
  return exit_code_of(result);
}

}  // namespace

int main(int argc, char** argv) {
  tenax::app::App app(
      "poisson",
      "a sparse linear solve (manufactured Poisson problem, convection-diffusion or "
      "Matrix Market input) with tenax Krylov solvers, resumable mid-solve",
      {.steps = 0, .checkpoint_every = 20, .divides_work_across_ranks = true});
  const Settings settings(app);
  app.output_file(settings.output);
  app.record_file_digest(settings.matrix, "matrix_xxh64");
  app.record_file_digest(settings.rhs, "rhs_xxh64");
  return app.main(argc, argv, [&](tenax::app::Job& job) { return run(settings, job); });
}
