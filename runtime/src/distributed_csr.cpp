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
      gather_(comm),
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

    // Columns in the order of [ghosts below | local | ghosts above], the layout of a vector with
    // room for its ghosts around it; every row keeps its stored order.
    const std::int64_t below =
        std::lower_bound(ghosts.begin(), ghosts.end(), rows.first) - ghosts.begin();
    std::vector<std::int64_t> columns(host.col_idx.size());
    for (std::size_t k = 0; k < columns.size(); ++k) {
      const std::int64_t c = host.col_idx[k];
      const std::int64_t ghost = std::lower_bound(ghosts.begin(), ghosts.end(), c) - ghosts.begin();
      columns[k] = (c >= rows.first && c < rows.first + rows.count) ? below + (c - rows.first)
                   : c < rows.first                                 ? ghost
                                                                    : rows.count + ghost;
    }
    const DType index =
        local_rows.index_dtype() == DType::i32 && rows.count + ghost_count < (std::int64_t{1} << 31)
            ? DType::i32
            : DType::i64;
    // Compact for the CPU products (the ghost columns sit next to the rows that use them, so a
    // banded matrix keeps 16-bit offsets); on a GPU this is the matrix itself.
    extended_ = CsrMatrix(rows.count, rows.count + ghost_count, index_tensor(host.row_ptr, index),
                          index_tensor(columns, index), value_tensor(host.values, dtype()))
                    .compacted();
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
         std::to_string(halo_->source_count()) + " ranks) on rank " +
         std::to_string(comm_->rank()) + " of " + std::to_string(comm_->size());
}

void DistributedCsrOperator::apply_impl(const Tensor& x, const Tensor& y) const {
  // LinearOperator::apply checked x and y (this operator's dtype and device, range.count long).
  const Tensor extended = exchange(x);
  if (range_.count > 0) ops::spmv(extended_, extended, y);
}

double DistributedCsrOperator::apply_dot_impl(const Tensor& x, const Tensor& y) const {
  const Tensor extended = exchange(x);
  // An empty shard still takes part in the dot's reduction across the ranks.
  if (range_.count == 0) return ops::dot(x, y);
  return ops::spmv_dot(extended_, extended, y, halo_->ghosts_below());
}

solvers::LinearOperator::Dots DistributedCsrOperator::apply_dots_impl(const Tensor& x,
                                                                      const Tensor& y,
                                                                      const Tensor& w,
                                                                      bool /*with_yy*/) const {
  const Tensor extended = exchange(x);
  // Rows pair with the local w, so no offset; an empty shard's call takes part in the reduction.
  const ops::SpmvDots dots = ops::spmv_dots(extended_, extended, y, w);
  return {dots.wq, dots.qq};
}

Tensor DistributedCsrOperator::make_vector_impl() const {
  std::erase_if(made_, [](const Tensor& e) { return e.buffer().use_count() == 1; });
  const std::int64_t below = halo_->ghosts_below();
  Tensor extended = Tensor::empty({range_.count + halo_->ghost_count()}, dtype());
  made_.push_back(extended);
  return extended.slice(below, below + range_.count);
}

Tensor DistributedCsrOperator::exchange(const Tensor& x) const {
  const std::int64_t below = halo_->ghosts_below();
  const std::int64_t end = below + range_.count;
  const std::int64_t total = range_.count + halo_->ghost_count();
  // x inside a vector of make_vector(): the ghosts go around it, nothing is copied.
  for (const Tensor& e : made_) {
    if (e.buffer() == x.buffer() && x.offset() == e.offset() + below) {
      halo_->exchange(x, e.slice(0, below), e.slice(end, total));
      return e;
    }
  }
  if (range_.count > 0) ops::copy(extended_x_.slice(below, end), x);
  halo_->exchange(x, extended_x_.slice(0, below), extended_x_.slice(end, total));
  return extended_x_;
}

Tensor DistributedCsrOperator::diagonal_impl() const {
  return solvers::csr_diagonal(extended_, halo_->ghosts_below());
}

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
