/// Compressing (row, col, value) triplets into sorted CSR arrays on the CPU: the one rule every
/// triplet-to-CSR conversion in tenax follows (solvers::assemble_csr, solvers::assemble_csr_rows,
/// io::to_csr and the Matrix Market reader's users). It lives in core so that io (which depends on
/// core only) and solvers share it.
/// @file
/// The rule:
/// - Each row's entries are sorted by column; a position appears at most once.
/// - Entries at one position (duplicates) are summed in f64 in ascending order of value (IEEE
///   total order: -0.0 before +0.0), starting from the smallest. The order depends only on the
///   multiset of values at the position, so the bits of the result do not depend on the order of
///   the triplets (nor on how they were split across ranks): shuffling the input gives the same
///   arrays.
/// - Explicit zeros (and duplicates that sum to zero) are kept as stored entries unless
///   `zeros` is ZeroEntries::drop (then any entry whose sum is +-0.0 is left out): a stored zero
///   keeps a position in the sparsity pattern (ILU(0) fill, a pattern reused across time steps).
/// - Refused with UsageError naming the entry, its value and the fix: index vectors whose lengths
///   differ; a row outside [first_row, first_row + rows) or a column outside [0, cols); a NaN or
///   infinite value (it would poison every product and surface far from its cause as a
///   non_finite solve); a duplicate under DuplicateEntries::refuse.
/// - Sizes are checked before anything is allocated: rows and cols in [0, 2^53], and the row
///   pointer array ((rows + 1) * 8 bytes) no larger than the machine's physical memory, so a
///   garbage size (an entry count passed as rows, an uninitialised variable) is a UsageError
///   naming it, not an allocation that takes the machine down. The arrays come from the CPU's
///   current memory resource (TENAX_MEMORY_LIMIT applies; OutOfMemoryError saying so).
///
/// Thread-safe on distinct arguments.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tenax/core/tensor.hpp"

namespace tenax {

/// Largest row or column count triplets may declare (2^53, where sizes stay exact in a double).
inline constexpr std::int64_t kMaxTripletDimension = std::int64_t{1} << 53;

/// What compress_triplets does with several entries at one position.
enum class DuplicateEntries {
  sum,    ///< add them up, in ascending order of value (see the file)
  refuse  ///< throw UsageError naming the first two
};

/// What compress_triplets does with entries whose (summed) value is zero.
enum class ZeroEntries {
  keep,  ///< store them: they stay in the sparsity pattern
  drop   ///< leave them out
};

/// The input: entry k is (row[k], col[k], value[k]) with 0-based global indices. Views; the
/// caller keeps the data alive for the call.
struct TripletSpans {
  std::span<const std::int64_t> row;  ///< row index of each entry
  std::span<const std::int64_t> col;  ///< column index of each entry
  std::span<const double> value;      ///< value of each entry
};

/// The output: CPU tensors row_ptr (i64 [rows + 1], starting at 0), col_idx (i64 [nnz],
/// ascending within each row) and values (f64 [nnz]). Local row r is global row first_row + r.
struct CompressedTriplets {
  std::int64_t rows = 0;  ///< rows held (local count)
  std::int64_t cols = 0;  ///< column count
  Tensor row_ptr;         ///< i64 [rows + 1]
  Tensor col_idx;         ///< i64 [nnz]
  Tensor values;          ///< f64 [nnz]
};

/// Rows [first_row, first_row + rows) of a matrix with `cols` columns, compressed from
/// `triplets` by the rule of this file. `who` starts every error message ("assemble_csr: ...").
/// first_row >= 0; every triplet's row must lie in the range (UsageError naming the entry and the
/// range otherwise: a rank gives the triplets of its own rows only).
[[nodiscard]] CompressedTriplets compress_triplets(
    std::string_view who, std::int64_t first_row, std::int64_t rows, std::int64_t cols,
    const TripletSpans& triplets, DuplicateEntries duplicates = DuplicateEntries::sum,
    ZeroEntries zeros = ZeroEntries::keep);

}  // namespace tenax
