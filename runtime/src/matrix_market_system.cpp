#include "tenax/runtime/matrix_market_system.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"
#include "tenax/io/matrix_market.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/distributed_csr.hpp"
#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/manufactured.hpp"

namespace tenax::runtime {
namespace {

void expect_types(const MatrixMarketSystemOptions& options) {
  TENAX_EXPECTS(options.dtype == DType::f64 || options.dtype == DType::f32, UsageError,
                "read_matrix_market_system: dtype " + std::string(to_string(options.dtype)) +
                    " is not supported",
                "use DType::f64 or DType::f32");
  TENAX_EXPECTS(options.index_dtype == DType::i64 || options.index_dtype == DType::i32, UsageError,
                "read_matrix_market_system: index dtype " +
                    std::string(to_string(options.index_dtype)) + " is not supported",
                "use DType::i64 or DType::i32");
}

void expect_square(const MatrixMarketSystemOptions& options, const io::CooMatrix& coo) {
  TENAX_EXPECTS(coo.rows == coo.cols && coo.rows > 0, UsageError,
                options.names.matrix + " " + options.matrix.string() + " is " +
                    std::to_string(coo.rows) + " x " + std::to_string(coo.cols),
                "Krylov solvers need a square, non-empty matrix");
}

// A square matrix with an empty row is singular. A file that stores fewer entries than rows
// (say 50 000 000 rows and 3 entries) has one for certain: refused after reading the entries and
// before the rows' arrays are built, so memory follows the entries present, not the size line.
// `empty_rows`: how many rows are empty at least (rows minus entries, summed over the ranks'
// shares).
void expect_no_empty_rows(const MatrixMarketSystemOptions& options, std::int64_t entries,
                          std::int64_t rows, std::int64_t empty_rows) {
  TENAX_EXPECTS(empty_rows <= 0, UsageError,
                options.names.matrix + " " + options.matrix.string() + " stores " +
                    std::to_string(entries) + " entries for " + std::to_string(rows) +
                    " rows: at least " + std::to_string(empty_rows) +
                    " rows have no entry, so the matrix is singular",
                "check the size line of the file (rows columns entries) against its entries");
}

// A value that the options' dtype holds: f64 holds every value read (the reader refuses
// non-finite ones); f32 neither one beyond its range (it would become inf) nor a non-zero one so
// small it would become 0.
bool representable(const MatrixMarketSystemOptions& options, double value) {
  if (options.dtype != DType::f32) return true;
  const auto rounded = static_cast<float>(value);
  return std::isfinite(rounded) && (rounded != 0.0F || value == 0.0);
}

// What the rows of a matrix (or of a rank's share) hold that makes the system unusable: rows
// without an entry (a singular matrix) and values the dtype cannot hold, each counted, with the
// first such row (0-based, global; kNone when there is none).
constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
struct RowFaults {
  std::int64_t empty_rows = 0;
  std::int64_t first_empty = kNone;
  std::int64_t unrepresentable = 0;
  std::int64_t first_unrepresentable = kNone;
};

RowFaults find_row_faults(const MatrixMarketSystemOptions& options, const io::CsrArrays& arrays,
                          std::int64_t first_row) {
  RowFaults faults;
  const std::int64_t* row_ptr = arrays.row_ptr.data_as<const std::int64_t>();
  const double* values = arrays.values.data_as<const double>();
  const std::int64_t rows = arrays.row_ptr.numel() - 1;
  for (std::int64_t i = 0; i < rows; ++i) {
    if (row_ptr[i + 1] == row_ptr[i]) {
      ++faults.empty_rows;
      faults.first_empty = std::min(faults.first_empty, first_row + i);
    }
    for (std::int64_t k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
      if (!representable(options, values[k])) {
        ++faults.unrepresentable;
        faults.first_unrepresentable = std::min(faults.first_unrepresentable, first_row + i);
      }
    }
  }
  return faults;
}

// Refuses a matrix with the faults found (over every rank's rows), naming its first such row as
// the file counts them (from 1).
void expect_no_row_faults(const MatrixMarketSystemOptions& options, const RowFaults& faults) {
  const std::string file = options.names.matrix + " " + options.matrix.string();
  TENAX_EXPECTS(faults.empty_rows == 0, UsageError,
                file + " has " + std::to_string(faults.empty_rows) +
                    " row(s) without an entry (the first is row " +
                    std::to_string(faults.first_empty + 1) + "), so the matrix is singular",
                "give every row an entry (a diagonal one, for a Krylov solver)");
  TENAX_EXPECTS(faults.unrepresentable == 0, UsageError,
                file + " holds " + std::to_string(faults.unrepresentable) +
                    " value(s) that f32 cannot hold (the first in row " +
                    std::to_string(faults.first_unrepresentable + 1) +
                    "): beyond about 3.4e38 they would become inf, below about 1.4e-45 zero",
                "solve in f64, or rescale the matrix into f32's range");
}

// The COO entries (rows already local, the first being global row `first_row`) as a CsrMatrix on
// the CPU with io::to_csr's i64 indices and the options' value dtype, and the faults of its rows.
std::pair<CsrMatrix, RowFaults> to_matrix(const MatrixMarketSystemOptions& options,
                                          const io::CooMatrix& coo, std::int64_t first_row) {
  const io::CsrArrays arrays = io::to_csr(coo);
  return {CsrMatrix(coo.rows, coo.cols, arrays.row_ptr, arrays.col_idx,
                    ops::cast(arrays.values, options.dtype)),
          find_row_faults(options, arrays, first_row)};
}

// `matrix` (i64 indices, on the CPU) with the options' index dtype, on `device`.
CsrMatrix with_index_dtype(const MatrixMarketSystemOptions& options, const CsrMatrix& matrix,
                           Device device) {
  if (options.index_dtype == DType::i64) return matrix.to(device);
  TENAX_EXPECTS(
      matrix.nnz() < (std::int64_t{1} << 31), UsageError,
      options.names.index + " i32 cannot hold " + std::to_string(matrix.nnz()) + " entries",
      "use " + options.names.index + " i64");
  const auto narrowed = [](const Tensor& wide) {
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

// b from the options' right-hand side file: a rows x 1 vector, duplicates summed, in the
// options' dtype on `device`.
Tensor read_rhs(const MatrixMarketSystemOptions& options, std::int64_t rows, Device device) {
  const io::CooMatrix coo = io::read_matrix_market(options.rhs);
  TENAX_EXPECTS(
      coo.rows == rows && coo.cols == 1, UsageError,
      options.names.rhs + " " + options.rhs.string() + " is " + std::to_string(coo.rows) + " x " +
          std::to_string(coo.cols) + ", the matrix has " + std::to_string(rows) + " rows",
      "give a " + std::to_string(rows) + " x 1 vector (Matrix Market array or coordinate)");
  Tensor b = Tensor::empty({rows}, DType::f64);
  double* const values = b.data_as<double>();
  std::fill(values, values + rows, 0.0);
  for (std::size_t k = 0; k < coo.value.size(); ++k) values[coo.row[k]] += coo.value[k];
  const auto beyond =
      std::find_if(values, values + rows, [&](double v) { return !representable(options, v); });
  TENAX_EXPECTS(beyond == values + rows, UsageError,
                options.names.rhs + " " + options.rhs.string() + ": the value " +
                    format_number(*beyond) + " of row " + std::to_string(beyond - values + 1) +
                    " is " + format_number(static_cast<double>(static_cast<float>(*beyond))) +
                    " in f32",
                "solve in f64, or rescale the right-hand side into f32's range");
  return ops::cast(b, options.dtype).to(device);
}

}  // namespace

LinearSystem read_matrix_market_system(const MatrixMarketSystemOptions& options) {
  expect_types(options);
  const io::CooMatrix coo = io::read_matrix_market(options.matrix);
  expect_square(options, coo);
  expect_no_empty_rows(options, coo.nnz(), coo.rows, coo.rows - coo.nnz());
  const auto [matrix, faults] = to_matrix(options, coo, 0);
  expect_no_row_faults(options, faults);
  const solvers::OperatorPtr a =
      solvers::make_csr_operator(with_index_dtype(options, matrix, options.device));
  if (!options.rhs.empty()) return whole_system(a, read_rhs(options, coo.rows, options.device));
  solvers::ManufacturedSolution ones = solvers::manufactured_ones(*a);
  return whole_system(a, ones.rhs, std::move(ones.solution));
}

LinearSystem read_matrix_market_system(Communicator& comm,
                                       const MatrixMarketSystemOptions& options) {
  if (comm.size() == 1) return read_matrix_market_system(options);
  expect_types(options);
  TENAX_EXPECTS(options.device.is_cpu(), UsageError,
                "read_matrix_market_system: the device is " + to_string(options.device) + " on " +
                    std::to_string(comm.size()) + " ranks",
                "read the system onto the CPU on several ranks (distributed solves run on the "
                "CPU for now)");
  LinearSystem system;
  io::CooMatrix coo =
      io::read_matrix_market_rows(options.matrix, [&](std::int64_t rows, std::int64_t /*cols*/) {
        system.range = kernels::block_aligned_range(rows, comm.size(), comm.rank());
        return io::RowRange{system.range.first, system.range.count};
      });
  expect_square(options, coo);
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
    comm.all_reduce(read, ReduceOp::sum);
    expect_no_empty_rows(options, read.data_as<std::int64_t>()[0], coo.rows,
                         read.data_as<std::int64_t>()[1]);
  }
  for (std::int64_t& row : coo.row) row -= first;
  coo.rows = count;
  const auto [rows, local_faults] = to_matrix(options, coo, first);
  {
    // Every rank refuses alike: the counts summed, the first rows the smallest.
    const Tensor counts = Tensor::empty({2}, DType::i64), firsts = Tensor::empty({2}, DType::i64);
    counts.data_as<std::int64_t>()[0] = local_faults.empty_rows;
    counts.data_as<std::int64_t>()[1] = local_faults.unrepresentable;
    firsts.data_as<std::int64_t>()[0] = local_faults.first_empty;
    firsts.data_as<std::int64_t>()[1] = local_faults.first_unrepresentable;
    comm.all_reduce(counts, ReduceOp::sum);
    comm.all_reduce(firsts, ReduceOp::min);
    expect_no_row_faults(options,
                         {counts.data_as<std::int64_t>()[0], firsts.data_as<std::int64_t>()[0],
                          counts.data_as<std::int64_t>()[1], firsts.data_as<std::int64_t>()[1]});
  }
  system.local_nnz = rows.nnz();
  const Tensor counts = Tensor::empty({1}, DType::i64);
  counts.data_as<std::int64_t>()[0] = rows.nnz();
  comm.all_reduce(counts, ReduceOp::sum);
  system.nnz = counts.data_as<std::int64_t>()[0];
  if (options.on_rows_read) options.on_rows_read(system.range, system.local_nnz, system.nnz);
  const auto distributed = std::make_shared<const DistributedCsrOperator>(
      comm, system.range, with_index_dtype(options, rows, Device::cpu()));
  const Tensor bytes = Tensor::empty({1}, DType::i64);
  bytes.data_as<std::int64_t>()[0] = distributed->local_matrix().product_bytes();
  comm.all_reduce(bytes, ReduceOp::sum);
  system.product_bytes = bytes.data_as<std::int64_t>()[0];
  system.a = distributed;
  if (options.rhs.empty()) {
    solvers::ManufacturedSolution ones = solvers::manufactured_ones(*system.a);
    system.b = std::move(ones.rhs);
    system.solution = std::move(ones.solution);
  } else {
    // The right-hand side is one value per row: read whole, this rank's part kept.
    system.b = read_rhs(options, coo.cols, Device::cpu()).slice(first, first + count).clone();
  }
  return system;
}

}  // namespace tenax::runtime
