// poisson: solves a sparse linear system with a tenax Krylov solver, run by the tenax Runner so
// that a long solve checkpoints, resumes mid-solve (bitwise as if never stopped) and survives the
// faults of `--inject`.
//
// Systems:
//  - --problem poisson (default): -Δu = f on the unit square (--dim 2) or cube (--dim 3) with n
//    interior points per side, h = 1/(n+1), Dirichlet zero, and the manufactured solution
//    u = g(x) g(y) [g(z)], g(t) = t (1 - t) e^t (see manufactured()). The operator is -Δh:
//    assembled
//    (--operator csr) or matrix-free (--operator stencil). The error against u is reported.
//  - --problem convdiff: -Δu + beta (u_x + u_y) on the unit square with first-order upwind
//    differences, scaled by h^2 (no 1/h^2 factor): each row is
//      centre 4 + 2 beta h, west and south -1 - beta h, east and north -1,
//    non-symmetric for beta > 0 (--beta-h sets beta h). b = A 1, so the solution is all ones.
//  - --matrix A.mtx [--rhs b.mtx]: a user's system from Matrix Market files (coordinate or
//    array); without --rhs, b = A 1 and the error against all ones is reported.
//
// Each Runner step runs --iterations-per-step iterations; the solver's whole iteration state is
// the checkpoint. --precision f32 solves in f32 throughout; --precision mixed runs mixed-precision
// iterative refinement (f32 inner solves, f64 residuals), as one step.
//
// Prints iterations, residual, time per iteration and the bandwidth achieved under the bytes
// model of the method (see bytes_per_iteration); --json adds one JSON object as the last line.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tenax/app/app.hpp"
#include "tenax/app/problem_size.hpp"
#include "tenax/app/solver_settings.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/matrix_market.hpp"
#include "tenax/io/run_config.hpp"
#include "tenax/io/state_file.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/distributed_csr.hpp"
#include "tenax/runtime/distributed_vector.hpp"
#include "tenax/runtime/krylov_solve.hpp"
#include "tenax/runtime/runner.hpp"
#include "tenax/solvers/solvers.hpp"

namespace {

using tenax::CsrMatrix;
using tenax::Device;
using tenax::DType;
using tenax::StateDict;
using tenax::Tensor;
using tenax::UsageError;
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

// The system to solve and what is known about its solution.
struct System {
  solvers::OperatorPtr a;  // on several ranks: this rank's rows (DistributedCsrOperator)
  Tensor b;
  std::optional<std::vector<double>> exact;  // on the host, f64; this rank's rows
  std::int64_t nnz = 0;                      // stored entries (0 for a matrix-free operator)
  std::int64_t matrix_bytes = 0;  // bytes a product reads from the matrix, all ranks together
  std::int64_t rows = 0;          // rows of the whole system
  std::string description;
  // This rank's rows (block-aligned, so the reductions keep the single-process bits; all of them
  // on one rank) and, on several ranks, the communicator.
  tenax::kernels::ShardRange range;
  tenax::runtime::Communicator* comm = nullptr;
};

// The assembled operator of one rank holding the whole matrix.
void use_csr_operator(System& system, CsrMatrix matrix) {
  system.nnz = matrix.nnz();
  const auto csr = std::make_shared<const solvers::CsrOperator>(std::move(matrix));
  system.matrix_bytes = csr->matrix().product_bytes();
  system.a = csr;
}

// This rank's rows of the distributed operator (collective).
void use_distributed_operator(System& system, tenax::runtime::Communicator& comm,
                              const CsrMatrix& rows) {
  const auto distributed =
      std::make_shared<const tenax::runtime::DistributedCsrOperator>(comm, system.range, rows);
  const Tensor bytes = Tensor::empty({1}, DType::i64);
  bytes.data_as<std::int64_t>()[0] = distributed->local_matrix().product_bytes();
  comm.all_reduce(bytes, tenax::runtime::ReduceOp::sum);
  system.matrix_bytes = bytes.data_as<std::int64_t>()[0];
  system.a = distributed;
}

// Waits for the device's queued work, so that timings cover it (the CPU backend is synchronous).
void wait_for(Device device) {
  if (device.is_cuda()) tenax::cuda::context(device).synchronize();
}

// The manufactured solution u = g(x) g(y) [g(z)] with g(t) = t (1 - t) e^t, zero on the
// boundary, and f = -Δu = sum over the axes of a(t_axis) times g of the other coordinates, with
// a(t) = -g''(t) = t (t + 3) e^t. Not an eigenvector of -Δh (a sine product would be, and CG
// would finish in one iteration), and not a low-degree polynomial (the stencil would be exact).
struct Manufactured {
  double u = 1.0;
  double f = 0.0;
};

Manufactured manufactured(int dim, std::int64_t index, std::int64_t n, double h) {
  double g[3];
  double a[3];
  for (int axis = 0; axis < dim; ++axis) {
    const double t = h * static_cast<double>(index % n + 1);
    index /= n;
    g[axis] = t * (1.0 - t) * std::exp(t);
    a[axis] = t * (t + 3.0) * std::exp(t);
  }
  Manufactured m;
  for (int axis = 0; axis < dim; ++axis) {
    m.u *= g[axis];
    double term = a[axis];
    for (int other = 0; other < dim; ++other) {
      if (other != axis) term *= g[other];
    }
    m.f += term;
  }
  return m;
}

Tensor host_vector(const std::vector<double>& values, DType dtype, Device device) {
  Tensor host = Tensor::empty({static_cast<std::int64_t>(values.size())}, DType::f64);
  std::copy(values.begin(), values.end(), host.data_as<double>());
  return tenax::ops::cast(host, dtype).to(device);
}

// The i64 index arrays of a host CSR matrix as `index_dtype`, then the matrix on `device`.
CsrMatrix with_index_dtype(const CsrMatrix& matrix, DType index_dtype, Device device) {
  if (matrix.index_dtype() == index_dtype) return matrix.to(device);
  TENAX_EXPECTS(matrix.nnz() < (std::int64_t{1} << 31), UsageError,
                "--index i32 cannot hold " + std::to_string(matrix.nnz()) + " entries",
                "use --index i64");
  auto narrowed = [](const Tensor& wide) {
    Tensor narrow = Tensor::empty(wide.shape(), DType::i32);
    const std::int64_t* from = wide.data_as<std::int64_t>();
    std::int32_t* to = narrow.data_as<std::int32_t>();
    for (std::int64_t k = 0; k < wide.numel(); ++k) to[k] = static_cast<std::int32_t>(from[k]);
    return narrow;
  };
  return CsrMatrix(matrix.rows(), matrix.cols(), narrowed(matrix.row_ptr()),
                   narrowed(matrix.col_idx()), matrix.values())
      .to(device);
}

// Assembled into pool tensors (TENAX_MEMORY_LIMIT holds for them); the sizes were checked by
// expect_generated_problem_fits.
CsrMatrix convection_diffusion(std::int64_t n, double beta_h) {
  const std::int64_t rows = n * n;
  const std::int64_t entries = 5 * rows - 4 * n;  // no south row, west column, ... at the edges
  Tensor row_ptr = Tensor::empty({rows + 1}, DType::i64);
  Tensor columns = Tensor::empty({entries}, DType::i64);
  Tensor values = Tensor::empty({entries}, DType::f64);
  std::int64_t* const ptr = row_ptr.data_as<std::int64_t>();
  std::int64_t* const col = columns.data_as<std::int64_t>();
  double* const val = values.data_as<double>();
  std::int64_t written = 0;
  const auto add = [&](std::int64_t c, double v) {
    col[written] = c;
    val[written] = v;
    ++written;
  };
  ptr[0] = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t row = j * n + i;
      // Increasing column order: south, west, centre, east, north.
      if (j > 0) add(row - n, -1.0 - beta_h);
      if (i > 0) add(row - 1, -1.0 - beta_h);
      add(row, 4.0 + 2.0 * beta_h);
      if (i + 1 < n) add(row + 1, -1.0);
      if (j + 1 < n) add(row + n, -1.0);
      ptr[row + 1] = written;
    }
  }
  return CsrMatrix(rows, rows, std::move(row_ptr), std::move(columns), std::move(values));
}

// b = A 1, in A's dtype on its device.
Tensor times_ones(const solvers::LinearOperator& a) {
  Tensor ones = Tensor::empty({a.cols()}, a.dtype(), a.device());
  tenax::ops::fill(ones, 1.0);
  Tensor b = Tensor::empty({a.rows()}, a.dtype(), a.device());
  a.apply(ones, b);
  return b;
}

// A square matrix with an empty row is singular. A file that stores fewer entries than rows
// (say 50 000 000 rows and 3 entries) has one for certain: refuse it after reading the entries
// and before the rows' arrays are built, so memory follows the entries present, not the size
// line. `empty_rows`: how many rows are empty at least (rows minus entries, summed over the
// ranks' shares).
void expect_no_empty_rows(const std::string& path, std::int64_t entries, std::int64_t rows,
                          std::int64_t empty_rows) {
  TENAX_EXPECTS(empty_rows <= 0, UsageError,
                "--matrix " + path + " stores " + std::to_string(entries) + " entries for " +
                    std::to_string(rows) + " rows: at least " + std::to_string(empty_rows) +
                    " rows have no entry, so the matrix is singular",
                "check the size line of the file (rows columns entries) against its entries");
}

Tensor read_rhs(const std::string& path, std::int64_t rows, DType dtype, Device device) {
  const tenax::io::CooMatrix coo = tenax::io::read_matrix_market(path);
  TENAX_EXPECTS(coo.rows == rows && coo.cols == 1, UsageError,
                "--rhs " + path + " is " + std::to_string(coo.rows) + " x " +
                    std::to_string(coo.cols) + ", the matrix has " + std::to_string(rows) + " rows",
                "give a " + std::to_string(rows) +
                    " x 1 vector (Matrix Market array or "
                    "coordinate)");
  std::vector<double> b(static_cast<std::size_t>(rows), 0.0);
  for (std::size_t k = 0; k < coo.value.size(); ++k) {
    b[static_cast<std::size_t>(coo.row[k])] += coo.value[k];
  }
  return host_vector(b, dtype, device);
}

System build_whole_system(const Settings& o, DType dtype, Device device) {
  const DType index_dtype = o.index() == "i64" ? DType::i64 : DType::i32;
  System system;
  if (!o.matrix().empty()) {
    const tenax::io::CooMatrix coo = tenax::io::read_matrix_market(o.matrix());
    TENAX_EXPECTS(coo.rows == coo.cols && coo.rows > 0, UsageError,
                  "--matrix " + o.matrix() + " is " + std::to_string(coo.rows) + " x " +
                      std::to_string(coo.cols),
                  "Krylov solvers need a square, non-empty matrix");
    expect_no_empty_rows(o.matrix(), coo.nnz(), coo.rows, coo.rows - coo.nnz());
    const tenax::io::CsrArrays arrays = tenax::io::to_csr(coo);
    CsrMatrix matrix(coo.rows, coo.cols, arrays.row_ptr, arrays.col_idx,
                     tenax::ops::cast(arrays.values, dtype));
    matrix = with_index_dtype(matrix, index_dtype, device);
    use_csr_operator(system, std::move(matrix));
    if (o.rhs().empty()) {
      system.b = times_ones(*system.a);
      system.exact = std::vector<double>(static_cast<std::size_t>(coo.rows), 1.0);
    } else {
      system.b = read_rhs(o.rhs(), coo.rows, dtype, device);
    }
    system.description = o.matrix();
    return system;
  }
  if (o.problem() == "convdiff") {
    TENAX_EXPECTS(o.dim() == 2 && o.op() == "csr", UsageError,
                  "--problem convdiff is assembled in 2-D only",
                  "use --dim 2 --operator csr with --problem convdiff");
    CsrMatrix matrix = convection_diffusion(o.n(), o.beta_h());
    matrix = CsrMatrix(matrix.rows(), matrix.cols(), matrix.row_ptr(), matrix.col_idx(),
                       tenax::ops::cast(matrix.values(), dtype));
    matrix = with_index_dtype(matrix, index_dtype, device);
    use_csr_operator(system, std::move(matrix));
    system.b = times_ones(*system.a);
    system.exact = std::vector<double>(static_cast<std::size_t>(o.n() * o.n()), 1.0);
    system.description = "convection-diffusion " + std::to_string(o.n()) + "^2, beta h " +
                         std::to_string(o.beta_h());
    return system;
  }
  const double h = 1.0 / static_cast<double>(o.n() + 1);
  const std::int64_t rows = o.dim() == 2 ? o.n() * o.n() : o.n() * o.n() * o.n();
  if (o.op() == "stencil") {
    if (o.dim() == 2) {
      system.a = std::make_shared<solvers::Laplacian2dOperator>(o.n(), o.n(), h, h, dtype, device);
    } else {
      system.a = std::make_shared<solvers::Laplacian3dOperator>(o.n(), o.n(), o.n(), h, h, h, dtype,
                                                                device);
    }
  } else {
    CsrMatrix matrix =
        o.dim() == 2
            ? solvers::poisson_2d_csr(o.n(), o.n(), h, h, dtype, index_dtype, device)
            : solvers::poisson_3d_csr(o.n(), o.n(), o.n(), h, h, h, dtype, index_dtype, device);
    use_csr_operator(system, std::move(matrix));
  }
  std::vector<double> f(static_cast<std::size_t>(rows));
  std::vector<double> u(static_cast<std::size_t>(rows));
  for (std::int64_t k = 0; k < rows; ++k) {
    const Manufactured m = manufactured(o.dim(), k, o.n(), h);
    u[static_cast<std::size_t>(k)] = m.u;
    f[static_cast<std::size_t>(k)] = m.f;
  }
  system.b = host_vector(f, dtype, device);
  system.exact = std::move(u);
  system.description = "Poisson " + std::to_string(o.dim()) + "-D " + std::to_string(o.n()) + "^" +
                       std::to_string(o.dim());
  return system;
}

// A user's matrix on several ranks: each rank reads the file and keeps only the entries of its
// block-aligned rows (read_matrix_market_rows), so no rank holds the whole matrix. The rows are
// those csr_rows would cut from the whole matrix, so every product has the same bits.
System read_distributed_system(const Settings& o, DType dtype, tenax::runtime::Communicator& comm) {
  System system;
  tenax::io::CooMatrix coo =
      tenax::io::read_matrix_market_rows(o.matrix(), [&](std::int64_t rows, std::int64_t /*cols*/) {
        system.range = tenax::kernels::block_aligned_range(rows, comm.size(), comm.rank());
        return tenax::io::RowRange{system.range.first, system.range.count};
      });
  TENAX_EXPECTS(coo.rows == coo.cols && coo.rows > 0, UsageError,
                "--matrix " + o.matrix() + " is " + std::to_string(coo.rows) + " x " +
                    std::to_string(coo.cols),
                "Krylov solvers need a square, non-empty matrix");
  system.rows = coo.rows;
  system.comm = &comm;
  const std::int64_t first = system.range.first;
  const std::int64_t count = system.range.count;
  {
    // The empty-row check of the whole matrix, agreed on by all ranks (one rank's rows may pass
    // where another's fail): the entries read and the rows short of one entry each.
    const Tensor read = Tensor::empty({2}, DType::i64);
    read.data_as<std::int64_t>()[0] = coo.nnz();
    read.data_as<std::int64_t>()[1] = std::max<std::int64_t>(0, count - coo.nnz());
    comm.all_reduce(read, tenax::runtime::ReduceOp::sum);
    const std::int64_t entries = read.data_as<std::int64_t>()[0];
    const std::int64_t short_rows = read.data_as<std::int64_t>()[1];
    expect_no_empty_rows(o.matrix(), entries, coo.rows, short_rows);
  }
  for (std::int64_t& row : coo.row) row -= first;
  coo.rows = count;
  const tenax::io::CsrArrays arrays = tenax::io::to_csr(coo);
  const CsrMatrix rows(count, coo.cols, arrays.row_ptr, arrays.col_idx,
                       tenax::ops::cast(arrays.values, dtype));
  const Tensor entries = Tensor::empty({1}, DType::i64);
  entries.data_as<std::int64_t>()[0] = rows.nnz();
  comm.all_reduce(entries, tenax::runtime::ReduceOp::sum);
  system.nnz = entries.data_as<std::int64_t>()[0];
  std::printf("poisson [rank %d/%d]: read rows [%lld, %lld) of %s: %lld of its %lld entries\n",
              comm.rank(), comm.size(), static_cast<long long>(first),
              static_cast<long long>(first + count), o.matrix().c_str(),
              static_cast<long long>(rows.nnz()), static_cast<long long>(system.nnz));
  use_distributed_operator(
      system, comm,
      with_index_dtype(rows, o.index() == "i64" ? DType::i64 : DType::i32, Device::cpu()));
  if (o.rhs().empty()) {
    system.b = times_ones(*system.a);
    system.exact = std::vector<double>(static_cast<std::size_t>(count), 1.0);
  } else {
    // The right-hand side is one value per row: read whole, this rank's part kept.
    system.b =
        read_rhs(o.rhs(), coo.cols, dtype, Device::cpu()).slice(first, first + count).clone();
  }
  system.description = o.matrix();
  return system;
}

// The system, and on several ranks this rank's rows of it: every rank builds the whole generated
// matrix and keeps its block-aligned range of rows, right-hand side and known solution; a user's
// matrix is read by rows (read_distributed_system).
System build_system(const Settings& o, DType dtype, Device device,
                    tenax::runtime::Communicator& comm) {
  if (!o.matrix().empty() && comm.size() > 1) return read_distributed_system(o, dtype, comm);
  System system = build_whole_system(o, dtype, device);
  system.rows = system.a->rows();
  system.range = tenax::kernels::block_aligned_range(system.rows, comm.size(), comm.rank());
  if (comm.size() == 1) return system;
  const auto* csr = dynamic_cast<const solvers::CsrOperator*>(system.a.get());
  TENAX_EXPECTS(csr != nullptr, UsageError, "poisson: a matrix-free operator on several ranks",
                "use --operator csr on several ranks");
  system.comm = &comm;
  const std::int64_t first = system.range.first;
  const std::int64_t count = system.range.count;
  use_distributed_operator(system, comm, tenax::runtime::csr_rows(csr->matrix(), system.range));
  system.b = system.b.slice(first, first + count).clone();
  if (system.exact) {
    system.exact =
        std::vector<double>(system.exact->begin() + first, system.exact->begin() + first + count);
  }
  return system;
}

// Bytes one iteration moves at least, for the achieved-bandwidth figure: the operator's arrays
// (CsrMatrix::product_bytes: the compact index where the matrix has one) and vectors read and
// written once per product, plus the method's passes over vectors of N elements, as the solver
// counts them (KrylovSolver::iteration_traffic; 0: not modelled, no bandwidth figure).
double bytes_per_iteration(const solvers::KrylovSolver& solver, const System& system, DType dtype,
                           std::int64_t iterations) {
  const auto traffic = solver.iteration_traffic(iterations);
  if (!traffic) return 0.0;
  const double pass = static_cast<double>(system.rows) * static_cast<double>(tenax::size_of(dtype));
  return traffic->applies * (static_cast<double>(system.matrix_bytes) + 2 * pass) +
         traffic->passes * pass;
}

// The checks between settings (each setting checks its own value).
void validate(const Settings& o) {
  TENAX_EXPECTS(o.matrix().empty() || o.op() == "csr", UsageError,
                "--matrix with --operator " + o.op(),
                "a matrix from a file is assembled: drop --operator or use csr");
  TENAX_EXPECTS(o.rhs().empty() || !o.matrix().empty(), UsageError, "--rhs without --matrix",
                "give the matrix with --matrix A.mtx");
}

// Largest and root-mean-square difference between x and the known solution, over the whole
// system (on several ranks, a reduction across them with the single-process bits).
std::pair<double, double> error_against(const System& system, const Tensor& x,
                                        const std::vector<double>& exact) {
  const Tensor error = tenax::ops::cast(x, DType::f64).to(Device::cpu());
  const Tensor known = host_vector(exact, DType::f64, Device::cpu());
  tenax::ops::binary_into(tenax::ops::BinaryOp::sub, error, known, error);
  tenax::ops::unary_into(tenax::ops::UnaryOp::abs, error, error);
  double largest = 0.0;
  double squares = 0.0;
  if (system.comm != nullptr) {  // the error is split like the system: its reductions are global
    const tenax::runtime::DistributedVector split(*system.comm, system.range, error);
    largest = system.rows > 0 ? split.max() : 0.0;
    squares = split.dot(split);
  } else {
    largest = system.rows > 0 ? tenax::ops::max(error) : 0.0;
    squares = tenax::ops::dot(error, error);
  }
  return {largest, std::sqrt(squares / static_cast<double>(system.rows))};
}

// The whole solution on rank 0; on other ranks an undefined tensor.
Tensor gather_solution(const System& system, const Tensor& x) {
  if (system.comm == nullptr) return x;
  return tenax::runtime::DistributedVector(*system.comm, system.range, x).gather();
}

// Convergence is a result: a solve that stopped short still ends the program normally, but a
// non-finite residual is an anomaly (3) and a breakdown or divergence an error of the setup (2).
int exit_code_of(const solvers::SolveResult& result) {
  switch (result.status) {
    case solvers::SolveStatus::converged:
    case solvers::SolveStatus::max_iterations:
      return 0;
    case solvers::SolveStatus::non_finite:
      return 3;
    default:
      return 2;
  }
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
  tenax::runtime::Communicator* comm = &job.comm();
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

  const auto setup_start = std::chrono::steady_clock::now();
  System system = build_system(o, dtype, device, *comm);
  wait_for(device);
  // A GMRES cycle longer than the system: the Krylov space is the whole space after n
  // iterations, so a cycle of n is the longest that does anything, and the basis and the
  // Hessenberg ((restart + 1) x restart: 3 GB for --restart 20000) need no more.
  if (method == "gmres" && solver_options.restart > system.rows) {
    if (comm->rank() == 0) {
      std::fprintf(stderr,
                   "poisson: --restart %lld is longer than the %lld unknowns: GMRES cycles of "
                   "%lld (the Krylov space is the whole space after that many iterations)\n",
                   static_cast<long long>(solver_options.restart),
                   static_cast<long long>(system.rows), static_cast<long long>(system.rows));
    }
    solver_options.restart = std::max<std::int64_t>(system.rows, 1);
  }

  solvers::SolveResult result;
  double solve_seconds = 0.0;
  double setup_seconds = 0.0;
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
    setup_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();
    const auto start = std::chrono::steady_clock::now();
    const solvers::RefinementResult refined = solve.solve(system.a, system.b, x);
    wait_for(device);
    solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result = refined.outer;
    inner_iterations = refined.inner_iterations;
  } else {
    // A Runner step is --iterations-per-step iterations: the run ends when the iteration limit
    // is reached (or the solve converged: KrylovSolve::finished).
    tenax::runtime::KrylovSolve workload(system.a, system.b, method, solver_options,
                                         o.iterations_per_step());
    tenax::runtime::RunnerOptions runner_options = job.runner_options();
    runner_options.total_steps = workload.steps_to_iteration_limit();
    setup_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();
    const tenax::runtime::RunResult run = job.run(workload, runner_options);
    if (run.status != tenax::runtime::RunStatus::completed) return run.exit_code;
    result = workload.result();
    solve_seconds = workload.solve_seconds();
    x = workload.solution();
    residual_history = workload.residual_history();
    bytes = bytes_per_iteration(workload.solver(), system, dtype, result.iterations);
  }

  const std::int64_t iterations = std::max<std::int64_t>(result.iterations, 1);
  const double ms_per_iteration = 1e3 * solve_seconds / static_cast<double>(iterations);
  const double gbps = bytes > 0 && solve_seconds > 0 ? bytes / (ms_per_iteration * 1e6) : 0.0;
  double error_max = -1.0;
  double error_rms = -1.0;
  if (system.exact) std::tie(error_max, error_rms) = error_against(system, x, *system.exact);
  const Tensor solution = o.output().empty() ? Tensor() : gather_solution(system, x);
  if (!speaker) return exit_code_of(result);
  std::printf("poisson: %s on %s (%s, %lld rows, %lld stored entries) on %s%s\n", method.c_str(),
              system.description.c_str(), system.a->describe().c_str(),
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
  if (system.exact) {
    std::printf("poisson: error against the known solution: max %.6e, rms %.6e\n", error_max,
                error_rms);
  }
  if (!o.output().empty()) {
    tenax::io::FileMetadata metadata;
    metadata.step = result.iterations;
    metadata.config = job.config();
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
    std::printf(
        "{\"solver\":\"%s\",\"precond\":\"%s\",\"operator\":\"%s\",\"precision\":\"%s\","
        "\"dim\":%d,\"n\":%lld,\"rows\":%lld,\"nnz\":%lld,\"iterations\":%lld,"
        "\"residual\":%.17g,\"relative_residual\":%.17g,\"status\":\"%s\",\"setup_s\":%.9g,"
        "\"solve_s\":%.9g,\"ms_per_iteration\":%.9g,\"bytes_per_iteration\":%.17g,"
        "\"gbps\":%.9g,\"error_max\":%.17g,\"error_rms\":%.17g}\n",
        method.c_str(), solver_options.preconditioner.c_str(),
        o.matrix().empty() ? o.op().c_str() : "csr", o.precision().c_str(), o.dim(),
        static_cast<long long>(o.n()), static_cast<long long>(system.rows),
        static_cast<long long>(system.nnz), static_cast<long long>(result.iterations),
        result.residual, result.relative_residual,
        std::string(solvers::to_string(result.status)).c_str(), setup_seconds, solve_seconds,
        ms_per_iteration, bytes, gbps, error_max, error_rms);
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
