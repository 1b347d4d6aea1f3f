// DistributedCsrOperator (distributed_csr.hpp): ghost discovery at construction, the halo
// exchange and one product per apply.
#include "tenax/runtime/distributed_csr.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/host_csr.hpp"

namespace tenax::runtime {
namespace {

Tensor index_tensor(const std::vector<std::int64_t>& values, DType dtype) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(values.size())}, dtype);
  if (dtype == DType::i64) {
    std::copy(values.begin(), values.end(), t.data_as<std::int64_t>());
  } else {
    std::int32_t* out = t.data_as<std::int32_t>();
    for (std::size_t k = 0; k < values.size(); ++k) out[k] = static_cast<std::int32_t>(values[k]);
  }
  return t;
}

template <class T>
Tensor value_tensor(const std::vector<T>& values, DType dtype) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(values.size())}, dtype);
  std::copy(values.begin(), values.end(), t.data_as<T>());
  return t;
}

}  // namespace

DistributedCsrOperator::DistributedCsrOperator(Communicator& comm, const kernels::ShardRange& rows,
                                               const CsrMatrix& local_rows)
    : LinearOperator(rows.count, rows.count, local_rows.dtype(), Device::cpu()),
      comm_(&comm),
      range_(rows) {
  TENAX_EXPECTS(local_rows.device().is_cpu(), UsageError,
                "distributed csr: the matrix is on " + to_string(local_rows.device()),
                "pass the rank's rows on the CPU (distributed solves run on the CPU for now)");
  TENAX_EXPECTS(
      local_rows.rows() == rows.count && local_rows.cols() == rows.total, UsageError,
      "distributed csr: rank " + std::to_string(comm.rank()) + " was given a " +
          local_rows.describe() + " for rows [" + std::to_string(rows.first) + ", +" +
          std::to_string(rows.count) + ") of a " + std::to_string(rows.total) + "-row matrix",
      "pass the rank's rows with every column of the matrix: " + std::to_string(rows.count) +
          " x " + std::to_string(rows.total));
  // The ghost columns, sorted, hence grouped by owner in rank order.
  const auto read = [&](auto zero) {
    using T = decltype(zero);
    const solvers::HostCsr<T> host = solvers::read_host_csr<T>(local_rows);
    std::vector<std::int64_t> ghosts;
    for (const std::int64_t c : host.col_idx) {
      if (c < rows.first || c >= rows.first + rows.count) ghosts.push_back(c);
    }
    std::sort(ghosts.begin(), ghosts.end());
    ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
    const auto ghost_count = static_cast<std::int64_t>(ghosts.size());

    // Local columns first, then the ghosts; every row keeps its stored order.
    std::vector<std::int64_t> columns(host.col_idx.size());
    for (std::size_t k = 0; k < columns.size(); ++k) {
      const std::int64_t c = host.col_idx[k];
      columns[k] =
          (c >= rows.first && c < rows.first + rows.count)
              ? c - rows.first
              : rows.count + (std::lower_bound(ghosts.begin(), ghosts.end(), c) - ghosts.begin());
    }
    const DType index =
        local_rows.index_dtype() == DType::i32 && rows.count + ghost_count < (std::int64_t{1} << 31)
            ? DType::i32
            : DType::i64;
    extended_ = CsrMatrix(rows.count, rows.count + ghost_count, index_tensor(host.row_ptr, index),
                          index_tensor(columns, index), value_tensor(host.values, dtype()));
    return ghosts;
  };
  const std::vector<std::int64_t> ghosts = dtype() == DType::f64 ? read(double{}) : read(float{});

  halo_.emplace(comm, rows, ghosts, dtype(), "distributed csr");
  extended_x_ = Tensor::empty({rows.count + halo_->ghost_count()}, dtype());
}

std::string DistributedCsrOperator::describe() const {
  return "distributed csr " + std::string(to_string(dtype())) + " rows [" +
         std::to_string(range_.first) + ", " + std::to_string(range_.first + range_.count) +
         ") of " + std::to_string(range_.total) + " (nnz " + std::to_string(extended_.nnz()) +
         ", " + std::to_string(halo_->ghost_count()) + " ghosts from " +
         std::to_string(halo_->source_count()) +
         " ranks) on rank " + std::to_string(comm_->rank()) + " of " +
         std::to_string(comm_->size());
}

void DistributedCsrOperator::apply_impl(const Tensor& x, const Tensor& y) const {
  // LinearOperator::apply checked x and y (this operator's dtype and device, range.count long).
  exchange(x);
  if (range_.count > 0) ops::spmv(extended_, extended_x_, y);
}

double DistributedCsrOperator::apply_dot_impl(const Tensor& x, const Tensor& y) const {
  exchange(x);
  // An empty shard still takes part in the dot's reduction across the ranks.
  if (range_.count == 0) return ops::dot(x, y);
  return ops::spmv_dot(extended_, extended_x_, y);
}

void DistributedCsrOperator::exchange(const Tensor& x) const {
  if (range_.count > 0) ops::copy(extended_x_.slice(0, range_.count), x);
  halo_->exchange(x, extended_x_.slice(range_.count, range_.count + halo_->ghost_count()));
}

Tensor DistributedCsrOperator::diagonal_impl() const { return solvers::csr_diagonal(extended_); }

CsrMatrix csr_rows(const CsrMatrix& matrix, const kernels::ShardRange& range) {
  TENAX_EXPECTS(range.first >= 0 && range.count >= 0 && range.first + range.count <= matrix.rows(),
                UsageError,
                "csr_rows: rows [" + std::to_string(range.first) + ", +" +
                    std::to_string(range.count) + ") of a " + matrix.describe(),
                "pass a range of the matrix's rows");
  const auto cut = [&](auto zero) {
    using T = decltype(zero);
    const solvers::HostCsr<T> host = solvers::read_host_csr<T>(matrix);
    const std::int64_t begin = host.row_ptr[static_cast<std::size_t>(range.first)];
    const std::int64_t end = host.row_ptr[static_cast<std::size_t>(range.first + range.count)];
    std::vector<std::int64_t> row_ptr;
    for (std::int64_t r = range.first; r <= range.first + range.count; ++r) {
      row_ptr.push_back(host.row_ptr[static_cast<std::size_t>(r)] - begin);
    }
    const std::vector<std::int64_t> columns(host.col_idx.begin() + begin,
                                            host.col_idx.begin() + end);
    const std::vector<T> values(host.values.begin() + begin, host.values.begin() + end);
    return CsrMatrix(range.count, matrix.cols(), index_tensor(row_ptr, matrix.index_dtype()),
                     index_tensor(columns, matrix.index_dtype()),
                     value_tensor(values, matrix.dtype()));
  };
  return matrix.dtype() == DType::f64 ? cut(double{}) : cut(float{});
}

}  // namespace tenax::runtime
