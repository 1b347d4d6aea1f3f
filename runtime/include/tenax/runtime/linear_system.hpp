/// LinearSystem: A x = b with what is known about it, whole on one process or split by rows
/// across the ranks of a communicator, ready for a solver (runtime::KrylovSolve,
/// solvers::KrylovSolver) and for measuring the result. @file
/// ```
/// const double h = 1.0 / (n + 1);
/// const solvers::ManufacturedSolution u = solvers::manufactured_poisson(2, n);
/// runtime::LinearSystem system = runtime::whole_system(
///     solvers::make_csr_operator(solvers::poisson_2d_csr(n, n, h, h)), u.rhs, u.solution);
/// system = runtime::split_rows(std::move(system), comm);   // this rank's rows, on several ranks
/// ... solve A x = b for x (this rank's rows) ...
/// const runtime::SolutionError error = runtime::solution_error(system, x);
/// ```
/// A split system holds this rank's rows of everything: A as a DistributedCsrOperator, b and the
/// known solution as the same block-aligned range of rows (kernels::block_aligned_range), so the
/// solvers' reductions, and solution_error's, keep the single-process bits for any number of
/// ranks. read_matrix_market_system (matrix_market_system.hpp) reads a system from files.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/solvers/krylov_solver.hpp"
#include "tenax/solvers/linear_operator.hpp"

namespace tenax::runtime {

/// A linear system A x = b and its known solution, if any; on several ranks this rank's rows of
/// it (see this file). The operator, the communicator and the tensors are shared, not copied.
struct LinearSystem {
  /// A, square; on several ranks this rank's rows (a DistributedCsrOperator).
  solvers::OperatorPtr a;
  Tensor b;  ///< b: this rank's rows, in A's dtype on A's device
  /// The exact x (this rank's rows, f64 in host memory outside the pool:
  /// solvers::ManufacturedSolution), or nullopt: not known.
  std::optional<std::vector<double>> solution;
  std::int64_t rows = 0;       ///< rows of the whole system
  std::int64_t nnz = 0;        ///< stored entries of the whole matrix (0: A is matrix-free)
  std::int64_t local_nnz = 0;  ///< this rank's stored entries (nnz on one process)
  /// Bytes one product A x reads from the matrix, all ranks together (CsrMatrix::product_bytes:
  /// the compact index where the matrix has one; 0 for a matrix-free A): for bandwidth figures.
  std::int64_t product_bytes = 0;
  kernels::ShardRange range;     ///< this rank's rows; all of them when the system is whole
  Communicator* comm = nullptr;  ///< the ranks the system is split over; nullptr: whole here
};

/// The whole system A x = b on this process, with `solution` its exact x when known (nullopt
/// otherwise). nnz, local_nnz and product_bytes are the matrix's when A is a
/// solvers::CsrOperator, 0 for a matrix-free operator. Throws UsageError naming the fault for an
/// A that is null or not square, a b that is not a vector of A's rows in A's dtype on A's device,
/// and a solution that does not have A's rows.
[[nodiscard]] LinearSystem whole_system(solvers::OperatorPtr a, Tensor b,
                                        std::optional<std::vector<double>> solution = {});

/// This rank's rows of `whole` (a system from whole_system, built alike on every rank): the
/// block-aligned range of kernels::block_aligned_range as a DistributedCsrOperator, with the
/// same rows of b and of the solution. On one rank, `whole` itself (comm stays nullptr).
/// Collective (every rank, the same order); the communicator must outlive the system. Throws
/// UsageError when `whole` is already split, or (on several ranks) when its A is not an
/// assembled solvers::CsrOperator on the CPU: a matrix-free operator has no rows to hand out.
[[nodiscard]] LinearSystem split_rows(LinearSystem whole, Communicator& comm);

/// The difference between an approximate solution and the exact one, over the whole system.
struct SolutionError {
  double max = 0.0;  ///< the largest |x_i - solution_i|
  double rms = 0.0;  ///< sqrt(sum (x_i - solution_i)^2 / rows)
};

/// |x - system.solution| in f64 over the whole system: x is this rank's rows (a vector of A's
/// rows, any floating dtype and device; the solution is copied into the memory pool for the
/// reductions). Collective on a split system, where the reductions have the single-process bits.
/// Throws UsageError when the system's solution is not known or x has another length; {0, 0} for
/// a system of no rows.
[[nodiscard]] SolutionError solution_error(const LinearSystem& system, const Tensor& x);

/// The whole solution: x (this rank's rows) gathered on rank `root` as a CPU tensor of
/// system.rows elements, an undefined tensor on the other ranks; x itself for a whole system.
/// Collective on a split system. UsageError as DistributedVector's gather throws it (a root
/// outside the ranks, an x that is not this rank's rows).
[[nodiscard]] Tensor gather_solution(const LinearSystem& system, const Tensor& x, int root = 0);

/// The bytes one iteration of `solver` (a session on system.a) moves at least, for an
/// achieved-bandwidth figure: per operator product the matrix (product_bytes) and two vectors
/// (x read, y written), plus the method's other passes over vectors of the system's rows, in A's
/// dtype, as KrylovSolver::iteration_traffic counts them at `iterations` iterations (GMRES's
/// averaged along a cycle). 0 where the solver does not model its traffic (ILU(0)); for a
/// matrix-free A only the vectors are counted.
[[nodiscard]] double bytes_per_iteration(const LinearSystem& system,
                                         const solvers::KrylovSolver& solver,
                                         std::int64_t iterations);

}  // namespace tenax::runtime
