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

// Message tags of the setup (the indices a rank needs) and of every apply (the entries).
constexpr int kGhostIndexTag = 7101;
constexpr int kGhostValueTag = 7102;

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

// Every rank's row range, checked to tile [0, total) in rank order.
std::vector<kernels::ShardRange> all_ranges(Communicator& comm, const kernels::ShardRange& mine) {
  std::vector<kernels::ShardRange> ranges(static_cast<std::size_t>(comm.size()));
  comm.all_gather_bytes(std::as_bytes(std::span(&mine, 1)),
                        std::as_writable_bytes(std::span(ranges)));
  std::int64_t next = 0;
  for (int r = 0; r < comm.size(); ++r) {
    const kernels::ShardRange& range = ranges[static_cast<std::size_t>(r)];
    TENAX_EXPECTS(range.total == mine.total && range.first == next && range.count >= 0, UsageError,
                  "distributed csr: rank " + std::to_string(r) + " holds rows [" +
                      std::to_string(range.first) + ", +" + std::to_string(range.count) + ") of " +
                      std::to_string(range.total) + " where rows from " + std::to_string(next) +
                      " of " + std::to_string(mine.total) + " were expected",
                  "give the ranks consecutive ranges of the same matrix, in rank order "
                  "(kernels::block_aligned_range)");
    next = range.first + range.count;
  }
  TENAX_EXPECTS(next == mine.total, UsageError,
                "distributed csr: the ranks hold " + std::to_string(next) + " of " +
                    std::to_string(mine.total) + " rows",
                "give the ranks ranges that cover every row (kernels::block_aligned_range)");
  return ranges;
}

int owner_of(const std::vector<kernels::ShardRange>& ranges, std::int64_t column) {
  // The last rank whose range starts at or before the column (empty ranges never own one).
  int owner = 0;
  for (int r = 0; r < static_cast<int>(ranges.size()); ++r) {
    const kernels::ShardRange& range = ranges[static_cast<std::size_t>(r)];
    if (range.count > 0 && range.first <= column) owner = r;
  }
  return owner;
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
  const std::vector<kernels::ShardRange> ranges = all_ranges(comm, rows);
  const int size = comm.size();
  const int me = comm.rank();

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
    ghosts_ = static_cast<std::int64_t>(ghosts.size());

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
        local_rows.index_dtype() == DType::i32 && rows.count + ghosts_ < (std::int64_t{1} << 31)
            ? DType::i32
            : DType::i64;
    extended_ = CsrMatrix(rows.count, rows.count + ghosts_, index_tensor(host.row_ptr, index),
                          index_tensor(columns, index), value_tensor(host.values, dtype()));
    return ghosts;
  };
  const std::vector<std::int64_t> ghosts = dtype() == DType::f64 ? read(double{}) : read(float{});

  // Who needs how many of whose entries: counts[q * size + p] = ghosts rank q takes from p.
  std::vector<std::int64_t> needs(static_cast<std::size_t>(size), 0);
  for (const std::int64_t c : ghosts) ++needs[static_cast<std::size_t>(owner_of(ranges, c))];
  std::vector<std::int64_t> counts(static_cast<std::size_t>(size * size));
  comm.all_gather_bytes(std::as_bytes(std::span(needs)), std::as_writable_bytes(std::span(counts)));

  std::int64_t offset = 0;
  for (int p = 0; p < size; ++p) {
    const std::int64_t count = needs[static_cast<std::size_t>(p)];
    if (count == 0) continue;
    Neighbour n;
    n.rank = p;
    n.offset = offset;
    n.count = count;
    const std::vector<std::int64_t> wanted(ghosts.begin() + offset,
                                           ghosts.begin() + offset + count);
    comm.send(index_tensor(wanted, DType::i64), p, kGhostIndexTag);
    receives_.push_back(std::move(n));
    offset += count;
  }
  for (int q = 0; q < size; ++q) {
    const std::int64_t count = counts[static_cast<std::size_t>(q * size + me)];
    if (q == me || count == 0) continue;
    Tensor wanted = Tensor::empty({count}, DType::i64);
    comm.receive(wanted, q, kGhostIndexTag);
    Neighbour n;
    n.rank = q;
    n.count = count;
    n.indices.resize(static_cast<std::size_t>(count));
    for (std::int64_t k = 0; k < count; ++k) {
      const std::int64_t c = wanted.data_as<std::int64_t>()[k];
      TENAX_EXPECTS(c >= rows.first && c < rows.first + rows.count, UsageError,
                    "distributed csr: rank " + std::to_string(q) + " asks rank " +
                        std::to_string(me) + " for row " + std::to_string(c) +
                        ", which it does not hold",
                    "every rank must be given its rows of the same matrix");
      n.indices[static_cast<std::size_t>(k)] = c - rows.first;
    }
    n.buffer = Tensor::empty({count}, dtype());
    sends_.push_back(std::move(n));
  }
  extended_x_ = Tensor::empty({rows.count + ghosts_}, dtype());
}

std::string DistributedCsrOperator::describe() const {
  return "distributed csr " + std::string(to_string(dtype())) + " rows [" +
         std::to_string(range_.first) + ", " + std::to_string(range_.first + range_.count) +
         ") of " + std::to_string(range_.total) + " (nnz " + std::to_string(extended_.nnz()) +
         ", " + std::to_string(ghosts_) + " ghosts from " + std::to_string(receives_.size()) +
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
  const auto gather = [&](auto zero) {
    using T = decltype(zero);
    const T* from = x.data_as<const T>();
    for (const Neighbour& n : sends_) {
      T* to = n.buffer.data_as<T>();
      for (std::size_t k = 0; k < n.indices.size(); ++k) to[k] = from[n.indices[k]];
      comm_->send(n.buffer, n.rank, kGhostValueTag);
    }
  };
  if (dtype() == DType::f64) {
    gather(double{});
  } else {
    gather(float{});
  }
  if (range_.count > 0) ops::copy(extended_x_.slice(0, range_.count), x);
  for (const Neighbour& n : receives_) {
    comm_->receive(extended_x_.slice(range_.count + n.offset, range_.count + n.offset + n.count),
                   n.rank, kGhostValueTag);
  }
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
