/// Assembling a CsrMatrix from (row, col, value) triplets, on one rank or split across ranks by
/// rows: the finite-element / finite-volume way of building a matrix, one contribution at a time.
/// @file
/// ```
/// std::vector<std::int64_t> row, col;  std::vector<double> value;   // any order, duplicates ok
/// ... row.push_back(i); col.push_back(j); value.push_back(a_ij); ...
/// CsrMatrix a = solvers::assemble_csr(n, n, row, col, value);
/// auto op = std::make_shared<solvers::CsrOperator>(a);
/// ```
/// On several ranks each rank passes the triplets of its own rows (global indices; a triplet of
/// another rank's row is a UsageError naming it) and gets those rows, ready for a
/// runtime::DistributedCsrOperator:
/// ```
/// const kernels::ShardRange mine = kernels::block_aligned_range(n, comm.size(), comm.rank());
/// CsrMatrix rows = solvers::assemble_csr_rows(mine, n, row, col, value);
/// runtime::DistributedCsrOperator a(comm, mine, rows);
/// ```
/// The rule (tenax/core/sparse_triplets.hpp, shared with io::to_csr and so with Matrix Market
/// files): columns sorted within each row; duplicates summed in f64 in ascending order of value
/// (-0.0 before +0.0), so the bits depend neither on the order of the triplets nor on how they
/// are split across ranks (a row assembled on its rank equals that row of the single-rank
/// assembly); explicit zeros kept unless AssembleOptions::zeros says drop; the sums rounded once
/// to the value dtype at the end. Refused with UsageError naming the entry, its value and the fix:
/// triplet arrays of different lengths, negative or out-of-range indices, NaN or infinite values,
/// sizes outside [0, 2^53] or whose row pointer array would exceed the machine's memory (checked
/// before allocating), a value dtype other than f64/f32, an index dtype other than i64/i32, and
/// i32 indices that cannot hold the column count or the entry count.
///
/// Thread-safe on distinct arguments; not collective.
#pragma once

#include <cstdint>
#include <span>

#include "tenax/core/sparse_triplets.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/reduction_order.hpp"

namespace tenax::solvers {

/// What assemble_csr builds: the value dtype, the index dtype, the device and what happens to
/// entries whose value (after summing duplicates) is zero.
struct AssembleOptions {
  DType dtype = DType::f64;               ///< f64 or f32 (summed in f64, rounded once)
  DType index_dtype = DType::i64;         ///< i64 or i32
  Device device = Device::cpu();          ///< where the matrix lives (assembled on the CPU)
  ZeroEntries zeros = ZeroEntries::keep;  ///< keep stored zeros in the pattern, or drop them
};

/// The rows x cols matrix whose entries are the triplets (row[k], col[k], value[k]), 0-based, by
/// the rule of this file. Throws UsageError as listed there; OutOfMemoryError when the arrays do
/// not fit in the CPU's memory resource.
[[nodiscard]] CsrMatrix assemble_csr(std::int64_t rows, std::int64_t cols,
                                     std::span<const std::int64_t> row,
                                     std::span<const std::int64_t> col,
                                     std::span<const double> value,
                                     const AssembleOptions& options = {});

/// Rows [range.first, range.first + range.count) of a matrix with range.total rows and `cols`
/// columns: a range.count x cols CsrMatrix (local row r is global row range.first + r; columns
/// stay global), from triplets with global indices that all lie in those rows. What one rank of a
/// DistributedCsrOperator holds (its constructor wants cols == range.total). Throws as
/// assemble_csr, and UsageError for a triplet outside the range (naming it and the range) or a
/// range outside [0, range.total].
[[nodiscard]] CsrMatrix assemble_csr_rows(const kernels::ShardRange& range, std::int64_t cols,
                                          std::span<const std::int64_t> row,
                                          std::span<const std::int64_t> col,
                                          std::span<const double> value,
                                          const AssembleOptions& options = {});

}  // namespace tenax::solvers
