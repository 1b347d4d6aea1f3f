// Eigen 3.4 Krylov solvers on the problems of bench/peers/PROBLEMS.md, in the setup that makes
// Eigen fastest on a multicore CPU, for bench/peers/run.py to set beside tenax, PETSc and SciPy:
//
// - the matrix is SparseMatrix<double, RowMajor, int>: Eigen parallelises (OpenMP) only the
//   row-major sparse * dense-vector product;
// - ConjugateGradient is given Lower|Upper, so it multiplies with the full stored matrix (that
//   parallel product) instead of a selfadjointView, whose product is serial;
// - Eigen::setNbThreads(--threads), with the program built with -fopenmp -O3 -march=native.
// Eigen's vector updates and dot products stay on one thread whatever is set; that is Eigen.
//
// Usage: peer_eigen_krylov --dim 2|3 --n N --problem poisson|convdiff [--beta-h 0.5]
//          --solver cg|bicgstab --precond none|jacobi --max-iters K [--warmup-iters W]
//          [--threads T]
// Prints one JSON object on the last line of stdout. The stopping tolerance is 0, so every
// solve runs exactly K iterations (unless the residual becomes exactly zero).
#include <omp.h>

#include <Eigen/IterativeLinearSolvers>
#include <Eigen/SparseCore>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using SpMat = Eigen::SparseMatrix<double, Eigen::RowMajor, int>;
using Clock = std::chrono::steady_clock;

struct Options {
  int dim = 2;
  long long n = 0;
  std::string problem = "poisson";
  double beta_h = 0.5;
  std::string solver = "cg";
  std::string precond = "none";
  long long max_iters = 0;
  long long warmup_iters = 2;
  int threads = 2;
};

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr,
               "peer_eigen_krylov: %s\nusage: peer_eigen_krylov --dim 2|3 --n N --problem "
               "poisson|convdiff [--beta-h B] --solver cg|bicgstab --precond none|jacobi "
               "--max-iters K [--warmup-iters W] [--threads T]\n",
               why.c_str());
  std::exit(2);
}

long long parse_int(const std::string& flag, const char* text, long long min) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < min) {
    fail(flag + " needs an integer >= " + std::to_string(min) + ", got '" + text + "'");
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) fail("missing value after " + arg);
    const char* value = argv[++i];
    if (arg == "--dim") {
      o.dim = static_cast<int>(parse_int(arg, value, 2));
    } else if (arg == "--n") {
      o.n = parse_int(arg, value, 2);
    } else if (arg == "--problem") {
      o.problem = value;
    } else if (arg == "--beta-h") {
      o.beta_h = std::strtod(value, nullptr);
    } else if (arg == "--solver") {
      o.solver = value;
    } else if (arg == "--precond") {
      o.precond = value;
    } else if (arg == "--max-iters") {
      o.max_iters = parse_int(arg, value, 1);
    } else if (arg == "--warmup-iters") {
      o.warmup_iters = parse_int(arg, value, 0);
    } else if (arg == "--threads") {
      o.threads = static_cast<int>(parse_int(arg, value, 1));
    } else {
      fail("unknown argument " + arg);
    }
  }
  if (o.dim != 2 && o.dim != 3) fail("--dim must be 2 or 3");
  if (o.n == 0) fail("--n is required");
  if (o.max_iters == 0) fail("--max-iters is required");
  if (o.problem != "poisson" && o.problem != "convdiff") fail("--problem: poisson or convdiff");
  if (o.solver != "cg" && o.solver != "bicgstab") {
    fail("--solver: cg or bicgstab (Eigen's core module has no GMRES)");
  }
  if (o.precond != "none" && o.precond != "jacobi") fail("--precond: none or jacobi");
  if (o.solver == "bicgstab" && o.precond == "none") {
    fail("bicgstab runs with --precond jacobi here (Eigen's BiCGSTAB default preconditioner)");
  }
  return o;
}

// The matrix of PROBLEMS.md in CSR form: grid points numbered with x fastest, one row per
// interior point, Dirichlet-zero neighbours dropped, columns ascending within each row.
// Rows are filled by the OpenMP threads that will later multiply with them (first touch).
SpMat assemble(const Options& o) {
  const std::int64_t n = o.n;
  const std::int64_t rows = o.dim == 2 ? n * n : n * n * n;
  if (rows > std::int64_t{1} << 31 || rows * (2 * o.dim + 1) > (std::int64_t{1} << 31) - 1) {
    fail("the matrix does not fit 32-bit indices");
  }
  // Coefficients in column order: -z, -y, -x, centre, +x, +y, +z (2-D drops the z pair).
  // Convection-diffusion upwinds beta (u_x + u_y [+ u_z]) for beta > 0: the upstream (minus)
  // neighbours get -1 - beta*h, the centre 2*dim + dim*beta*h.
  const double bh = o.problem == "convdiff" ? o.beta_h : 0.0;
  const double centre = 2.0 * o.dim + o.dim * bh;
  const double up = -1.0 - bh;
  const double down = -1.0;

  auto coords = [&](std::int64_t r, std::int64_t& i, std::int64_t& j, std::int64_t& k) {
    i = r % n;
    j = (r / n) % n;
    k = r / (n * n);
  };
  auto row_length = [&](std::int64_t r) {
    std::int64_t i, j, k;
    coords(r, i, j, k);
    int len = 1 + (i > 0) + (i < n - 1) + (j > 0) + (j < n - 1);
    if (o.dim == 3) len += (k > 0) + (k < n - 1);
    return len;
  };

  SpMat a(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(rows));
  int* ptr = a.outerIndexPtr();
  ptr[0] = 0;
  for (std::int64_t r = 0; r < rows; ++r) ptr[r + 1] = ptr[r] + row_length(r);
  a.resizeNonZeros(ptr[rows]);
  int* col = a.innerIndexPtr();
  double* val = a.valuePtr();
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t i, j, k;
    coords(r, i, j, k);
    std::int64_t e = ptr[r];
    auto put = [&](std::int64_t c, double v) {
      col[e] = static_cast<int>(c);
      val[e] = v;
      ++e;
    };
    if (o.dim == 3 && k > 0) put(r - n * n, up);
    if (j > 0) put(r - n, up);
    if (i > 0) put(r - 1, up);
    put(r, centre);
    if (i < n - 1) put(r + 1, down);
    if (j < n - 1) put(r + n, down);
    if (o.dim == 3 && k < n - 1) put(r + n * n, down);
  }
  return a;
}

// The right-hand side of tenax's poisson example. convdiff: b = A 1 (the solution is all ones).
// poisson: h^2 f for the manufactured solution u = g(x) g(y) [g(z)], g(t) = t (1 - t) e^t,
// f = -Laplacian(u) = sum over the axes of a(t_axis) * g(other coordinates),
// a(t) = t (t + 3) e^t, at t = h (i + 1). tenax assembles (1/h^2) A and b = f: the same
// system times 1/h^2, so the iterates are the same.
Eigen::VectorXd right_hand_side(const Options& o, const SpMat& a) {
  if (o.problem == "convdiff") return a * Eigen::VectorXd::Ones(a.cols());
  const std::int64_t n = o.n;
  const double h = 1.0 / static_cast<double>(n + 1);
  Eigen::VectorXd b(a.rows());
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < a.rows(); ++r) {
    double g[3];
    double d[3];
    std::int64_t index = r;
    for (int axis = 0; axis < o.dim; ++axis) {
      const double t = h * static_cast<double>(index % n + 1);
      index /= n;
      g[axis] = t * (1.0 - t) * std::exp(t);
      d[axis] = t * (t + 3.0) * std::exp(t);
    }
    double f = 0.0;
    for (int axis = 0; axis < o.dim; ++axis) {
      double term = d[axis];
      for (int other = 0; other < o.dim; ++other) {
        if (other != axis) term *= g[other];
      }
      f += term;
    }
    b[r] = h * h * f;
  }
  return b;
}

struct Outcome {
  long long iterations = 0;
  double solver_error = 0.0;
  double setup_s = 0.0;
  double solve_s = 0.0;
  Eigen::VectorXd x;
};

template <class Solver>
Outcome run(Solver& solver, const SpMat& a, const Eigen::VectorXd& b, const Options& o) {
  Outcome out;
  const auto t0 = Clock::now();
  solver.compute(a);  // the preconditioner's setup (the inverse diagonal for Jacobi)
  out.setup_s = std::chrono::duration<double>(Clock::now() - t0).count();
  solver.setTolerance(0.0);
  if (o.warmup_iters > 0) {
    // Untimed: brings the matrix and vectors through the caches once and starts the OpenMP
    // thread pool, which every code in the comparison gets the same way.
    solver.setMaxIterations(o.warmup_iters);
    out.x = solver.solve(b);
  }
  solver.setMaxIterations(o.max_iters);
  const auto t1 = Clock::now();
  out.x = solver.solve(b);
  out.solve_s = std::chrono::duration<double>(Clock::now() - t1).count();
  out.iterations = solver.iterations();
  out.solver_error = solver.error();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  omp_set_num_threads(o.threads);
  Eigen::setNbThreads(o.threads);

  const auto t0 = Clock::now();
  const SpMat a = assemble(o);
  const Eigen::VectorXd b = right_hand_side(o, a);
  const double assembly_s = std::chrono::duration<double>(Clock::now() - t0).count();

  Outcome out;
  if (o.solver == "cg" && o.precond == "none") {
    Eigen::ConjugateGradient<SpMat, Eigen::Lower | Eigen::Upper, Eigen::IdentityPreconditioner> cg;
    out = run(cg, a, b, o);
  } else if (o.solver == "cg") {
    Eigen::ConjugateGradient<SpMat, Eigen::Lower | Eigen::Upper,
                             Eigen::DiagonalPreconditioner<double>>
        cg;
    out = run(cg, a, b, o);
  } else {
    Eigen::BiCGSTAB<SpMat, Eigen::DiagonalPreconditioner<double>> bicgstab;
    out = run(bicgstab, a, b, o);
  }

  // The true residual, recomputed outside the timing so that all codes report the same number.
  const Eigen::VectorXd r = b - a * out.x;
  const double residual = r.norm();
  const double b_norm = b.norm();
  const double ms = out.iterations > 0 ? 1e3 * out.solve_s / out.iterations : 0.0;

  std::printf(
      "{\"code\": \"eigen\", \"solver\": \"%s\", \"precond\": \"%s\", \"operator\": \"csr\", "
      "\"dim\": %d, \"n\": %lld, \"problem\": \"%s\", \"beta_h\": %g, \"rows\": %lld, "
      "\"nnz\": %lld, \"requested_iterations\": %lld, \"iterations\": %lld, "
      "\"residual\": %.10e, \"relative_residual\": %.10e, \"solver_error\": %.10e, "
      "\"setup_s\": %.6f, \"assembly_s\": %.6f, \"solve_s\": %.6f, \"ms_per_iteration\": %.6f, "
      "\"threads\": %d, \"eigen_nb_threads\": %d, \"eigen_version\": \"%d.%d.%d\"}\n",
      o.solver.c_str(), o.precond.c_str(), o.dim, o.n, o.problem.c_str(),
      o.problem == "convdiff" ? o.beta_h : 0.0, static_cast<long long>(a.rows()),
      static_cast<long long>(a.nonZeros()), o.max_iters, out.iterations, residual,
      residual / b_norm, out.solver_error, assembly_s + out.setup_s, assembly_s, out.solve_s, ms,
      o.threads, Eigen::nbThreads(), EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION);
  return 0;
}
