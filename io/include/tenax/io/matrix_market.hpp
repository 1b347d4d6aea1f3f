/// Matrix Market files: read and write sparse matrices in the NIST Matrix Market text format.
/// @file
/// Reading accepts the coordinate format with field real, integer (read as real) or pattern
/// (every value 1) and symmetry general, symmetric or skew-symmetric, plus the dense array format
/// with field real or integer as a convenience. The banner is case-insensitive; comment and blank
/// lines are skipped; CRLF line ends and trailing whitespace are tolerated.
///
/// Files are treated as hostile: the banner, the size line and every entry are validated, and a
/// malformed file throws IoError whose cause names the file and line ("m.mtx:12: column index 7
/// is out of range [1, 5]") and whose fix says what to change. Nothing is allocated ahead of the
/// data in proportion to the declared size: reservations are bounded by the file's byte count.
/// NaN and infinite values are rejected, as is any entry count other than the declared one.
///
/// This header depends on core only; the solvers layer turns CsrArrays into a CsrMatrix.
/// All functions are thread-safe on distinct arguments.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "tenax/core/tensor.hpp"

namespace tenax::io {

/// Largest row or column count a file may declare (2^53). Larger sizes are taken as corruption:
/// no machine holds a row pointer array that long, and sizes stay exact in a double.
inline constexpr std::int64_t kMaxMatrixMarketDimension = std::int64_t{1} << 53;

/// A sparse matrix as a list of (row, col, value) triplets with 0-based indices, in file order.
/// Duplicates are allowed (they add up in to_csr, in an order that does not depend on theirs).
struct CooMatrix {
  std::int64_t rows = 0;          ///< row count, in [0, kMaxMatrixMarketDimension]
  std::int64_t cols = 0;          ///< column count, in [0, kMaxMatrixMarketDimension]
  std::vector<std::int64_t> row;  ///< row index of entry k, in [0, rows)
  std::vector<std::int64_t> col;  ///< column index of entry k, in [0, cols)
  std::vector<double> value;      ///< value of entry k
  /// Stored entries, duplicates counted (value.size(); the three vectors have one length).
  [[nodiscard]] std::int64_t nnz() const noexcept {
    return static_cast<std::int64_t>(value.size());
  }
};

/// Which entries a file stores. symmetric: A(i, j) == A(j, i), the lower triangle with the
/// diagonal is stored. skew_symmetric: A(i, j) == -A(j, i), the strictly lower triangle is stored.
enum class Symmetry {
  general,        ///< every entry is stored
  symmetric,      ///< the lower triangle with the diagonal, A(j, i) == A(i, j)
  skew_symmetric  ///< the strictly lower triangle, A(j, i) == -A(i, j), zero diagonal
};

/// What to_csr does with several entries at the same position.
enum class DuplicatePolicy {
  sum,   ///< add them up, in ascending order of value (tenax/core/sparse_triplets.hpp)
  error  ///< throw UsageError naming the first pair
};

/// Compressed sparse row arrays on the CPU: row_ptr (rows + 1, i64), col_idx (nnz, i64) and
/// values (nnz, f64). Columns are sorted within each row and no position repeats.
struct CsrArrays {
  std::int64_t rows = 0;  ///< row count
  std::int64_t cols = 0;  ///< column count
  Tensor row_ptr;         ///< i64 [rows + 1]: row r's entries are [row_ptr[r], row_ptr[r + 1])
  Tensor col_idx;         ///< i64 [nnz]: 0-based column of each entry, ascending within a row
  Tensor values;          ///< f64 [nnz]: value of each entry
};

/// Reads a Matrix Market file. Symmetric and skew-symmetric files are expanded to both triangles
/// (the diagonal once); for them, entries above the diagonal (or on it, for skew-symmetric) are
/// an error. Dense array files yield every stored entry, zeros included. Indices become 0-based.
/// Throws IoError when the file cannot be read or is malformed, naming the file and line;
/// UsageError, before anything is read and without blocking, when `path` is not a regular file
/// (a FIFO, a pipe such as `<(cat A.mtx)`, a directory, a device; a symbolic link is followed);
/// OutOfMemoryError when the entries do not fit in memory.
[[nodiscard]] CooMatrix read_matrix_market(const std::filesystem::path& path);

/// Rows [first, first + count) of a matrix.
struct RowRange {
  std::int64_t first = 0;  ///< first row, 0-based
  std::int64_t count = 0;  ///< number of rows (0 selects none)
};

/// Reads the rows of a Matrix Market file that `rows_of` selects, given the declared size: each
/// rank of a job reads its own rows, and no process holds the whole matrix. The file is read and
/// validated whole exactly as read_matrix_market does (the same errors), the symmetric expansion
/// is applied before selecting, and only the selected entries are kept (indices stay global,
/// 0-based; rows and cols are the declared size), so memory follows this rank's share of the
/// entries, not the file. `rows_of` is called once, with the declared size, after the size line
/// has been read. UsageError when the range returned is not within [0, rows]; otherwise throws
/// as read_matrix_market.
[[nodiscard]] CooMatrix read_matrix_market_rows(
    const std::filesystem::path& path,
    const std::function<RowRange(std::int64_t rows, std::int64_t cols)>& rows_of);

/// Sorts and compresses a COO matrix by the rule every triplet conversion in tenax follows
/// (compress_triplets, tenax/core/sparse_triplets.hpp; solvers::assemble_csr builds a CsrMatrix
/// by it): entries at the same position are summed in ascending order of value, so the bits do
/// not depend on the entries' order (DuplicatePolicy::sum), or rejected (DuplicatePolicy::error);
/// explicit zeros are kept. Throws UsageError for inconsistent input (vector lengths differ, an
/// index out of range, a NaN or infinite value) and for a duplicate under DuplicatePolicy::error,
/// naming the entry; OutOfMemoryError when the arrays do not fit (they are allocated from the
/// CPU's current resource, so TENAX_MEMORY_LIMIT applies).
[[nodiscard]] CsrArrays to_csr(const CooMatrix& coo,
                               DuplicatePolicy duplicates = DuplicatePolicy::sum);

/// Writes `coo` as a coordinate real file with 1-based indices. precision 0 (the default) writes
/// each value in its shortest form that reads back bit for bit; 1..17 writes that many significant
/// digits (17 also reads back exactly). For Symmetry::general the entries are written as given,
/// in order. For symmetric and skew-symmetric, duplicates are first summed, the matrix is checked
/// and only the lower triangle (strictly lower for skew-symmetric) is written.
/// Throws UsageError for inconsistent input, non-finite values, a precision outside 0..17, a
/// non-square matrix with a symmetry, more entries than rows * cols under Symmetry::general
/// (duplicates that readers reject), or an entry that breaks the symmetry (naming the first
/// one); UsageError when `path` is empty or names something other than a regular file (a
/// directory, device, FIFO or symbolic link is refused, never replaced: replace_file's rule);
/// IoError when the file cannot be written. The file is written to a temporary name next to
/// `path` and renamed into place, so a crash never leaves a half-written file at `path`.
void write_matrix_market(const std::filesystem::path& path, const CooMatrix& coo,
                         Symmetry symmetry = Symmetry::general, int precision = 0);

}  // namespace tenax::io
