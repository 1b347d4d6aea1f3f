#include "tenax/runtime/linear_system.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/distributed_csr.hpp"
#include "tenax/runtime/distributed_vector.hpp"
#include "tenax/solvers/csr_operator.hpp"

namespace tenax::runtime {

LinearSystem whole_system(solvers::OperatorPtr a, Tensor b,
                          std::optional<std::vector<double>> solution) {
  TENAX_EXPECTS(a != nullptr, UsageError, "whole_system: the operator is null",
                "pass the operator A of the system");
  TENAX_EXPECTS(a->rows() == a->cols(), UsageError,
                "whole_system: A is " + std::to_string(a->rows()) + " x " +
                    std::to_string(a->cols()) + " (" + a->describe() + ")",
                "a linear system for a Krylov solver needs a square A");
  TENAX_EXPECTS(b.defined() && b.shape().rank() == 1 && b.numel() == a->rows() &&
                    b.dtype() == a->dtype() && b.device() == a->device(),
                UsageError,
                "whole_system: b is " + b.describe() + ", A (" + a->describe() + ") needs " +
                    std::to_string(a->rows()) + " " + std::string(to_string(a->dtype())) +
                    " elements on " + to_string(a->device()),
                "cast b to A's dtype and move it to A's device (ops::cast, Tensor::to)");
  TENAX_EXPECTS(!solution || static_cast<std::int64_t>(solution->size()) == a->rows(), UsageError,
                "whole_system: the solution has " +
                    std::to_string(solution ? solution->size() : 0) + " values, A has " +
                    std::to_string(a->rows()) + " rows",
                "pass the exact solution with one value per row of A, or none");
  LinearSystem system;
  system.rows = a->rows();
  if (const auto* csr = dynamic_cast<const solvers::CsrOperator*>(a.get())) {
    system.nnz = csr->matrix().nnz();
    system.local_nnz = system.nnz;
    system.product_bytes = csr->matrix().product_bytes();
  }
  system.range = kernels::block_aligned_range(system.rows, 1, 0);
  system.a = std::move(a);
  system.b = std::move(b);
  system.solution = std::move(solution);
  return system;
}

LinearSystem split_rows(LinearSystem whole, Communicator& comm) {
  TENAX_EXPECTS(whole.comm == nullptr, UsageError,
                "split_rows: the system is already split over " +
                    std::to_string(whole.comm->size()) + " ranks",
                "split a system from whole_system, once");
  if (comm.size() == 1) return whole;
  const auto* csr = dynamic_cast<const solvers::CsrOperator*>(whole.a.get());
  TENAX_EXPECTS(csr != nullptr && csr->device().is_cpu(), UsageError,
                "split_rows: A (" + (whole.a ? whole.a->describe() : std::string("null")) +
                    ") on " + std::to_string(comm.size()) +
                    " ranks: only an assembled CSR matrix on the CPU is split by rows",
                "assemble A (solvers::CsrOperator) on the CPU to solve on several ranks");
  LinearSystem split;
  split.rows = whole.rows;
  split.nnz = whole.nnz;
  split.range = kernels::block_aligned_range(whole.rows, comm.size(), comm.rank());
  split.comm = &comm;
  const CsrMatrix rows = csr_rows(csr->matrix(), split.range);
  split.local_nnz = rows.nnz();
  const auto distributed = std::make_shared<const DistributedCsrOperator>(comm, split.range, rows);
  const Tensor bytes = Tensor::empty({1}, DType::i64);
  bytes.data_as<std::int64_t>()[0] = distributed->local_matrix().product_bytes();
  comm.all_reduce(bytes, ReduceOp::sum);
  split.product_bytes = bytes.data_as<std::int64_t>()[0];
  split.a = distributed;
  const std::int64_t first = split.range.first;
  const std::int64_t last = first + split.range.count;
  split.b = whole.b.slice(first, last).clone();
  if (whole.solution) {
    split.solution =
        std::vector<double>(whole.solution->begin() + first, whole.solution->begin() + last);
  }
  return split;
}

SolutionError solution_error(const LinearSystem& system, const Tensor& x) {
  TENAX_EXPECTS(system.solution.has_value(), UsageError,
                "solution_error: the system's exact solution is not known",
                "build the system with its solution (whole_system's third argument)");
  TENAX_EXPECTS(x.defined() && x.shape().rank() == 1 &&
                    x.numel() == static_cast<std::int64_t>(system.solution->size()),
                UsageError,
                "solution_error: x is " + x.describe() + ", the system has " +
                    std::to_string(system.solution->size()) + " rows here",
                "pass this rank's rows of the solution, as the solver returned them");
  const Tensor error = ops::cast(x, DType::f64).to(Device::cpu());
  const Tensor known = Tensor::empty({error.numel()}, DType::f64);
  std::copy(system.solution->begin(), system.solution->end(), known.data_as<double>());
  ops::binary_into(ops::BinaryOp::sub, error, known, error);
  ops::unary_into(ops::UnaryOp::abs, error, error);
  double largest = 0.0;
  double squares = 0.0;
  if (system.comm != nullptr) {  // the error is split like the system: its reductions are global
    const DistributedVector split(*system.comm, system.range, error);
    largest = system.rows > 0 ? split.max() : 0.0;
    squares = split.dot(split);
  } else {
    largest = system.rows > 0 ? ops::max(error) : 0.0;
    squares = ops::dot(error, error);
  }
  if (system.rows == 0) return {};
  return {largest, std::sqrt(squares / static_cast<double>(system.rows))};
}

Tensor gather_solution(const LinearSystem& system, const Tensor& x, int root) {
  if (system.comm == nullptr) return x;
  return DistributedVector(*system.comm, system.range, x).gather(root);
}

double bytes_per_iteration(const LinearSystem& system, const solvers::KrylovSolver& solver,
                           std::int64_t iterations) {
  const auto traffic = solver.iteration_traffic(iterations);
  if (!traffic || system.a == nullptr) return 0.0;
  const double pass =
      static_cast<double>(system.rows) * static_cast<double>(size_of(system.a->dtype()));
  return traffic->applies * (static_cast<double>(system.product_bytes) + 2 * pass) +
         traffic->passes * pass;
}

}  // namespace tenax::runtime
