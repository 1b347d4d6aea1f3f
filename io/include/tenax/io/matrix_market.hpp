// Matrix Market files: read and write sparse matrices in the NIST Matrix Market text format.
//
// Reading accepts the coordinate format with field real, integer (read as real) or pattern
// (every value 1) and symmetry general, symmetric or skew-symmetric, plus the dense array format
// with field real or integer as a convenience. The banner is case-insensitive; comment and blank
// lines are skipped; CRLF line ends and trailing whitespace are tolerated.
//
// Files are treated as hostile: the banner, the size line and every entry are validated, and a
// malformed file throws IoError whose cause names the file and line ("m.mtx:12: column index 7
// is out of range [1, 5]") and whose fix says what to change. Nothing is allocated ahead of the
// data in proportion to the declared size: reservations are bounded by the file's byte count.
// NaN and infinite values are rejected, as is any entry count other than the declared one.
//
// This header depends on core only; the solvers layer turns CsrArrays into a CsrMatrix.
// All functions are thread-safe on distinct arguments.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "tenax/core/tensor.hpp"

namespace tenax::io {

// Largest row or column count a file may declare (2^53). Larger sizes are taken as corruption:
// no machine holds a row pointer array that long, and sizes stay exact in a double.
inline constexpr std::int64_t kMaxMatrixMarketDimension = std::int64_t{1} << 53;

// A sparse matrix as a list of (row, col, value) triplets with 0-based indices, in file order.
// Duplicates are allowed (they add up in to_csr).
struct CooMatrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::int64_t> row;
  std::vector<std::int64_t> col;
  std::vector<double> value;

  [[nodiscard]] std::int64_t nnz() const noexcept {
    return static_cast<std::int64_t>(value.size());
  }
};

// Which entries a file stores. symmetric: A(i, j) == A(j, i), the lower triangle with the
// diagonal is stored. skew_symmetric: A(i, j) == -A(j, i), the strictly lower triangle is stored.
enum class Symmetry { general, symmetric, skew_symmetric };

// What to_csr does with several entries at the same position.
enum class DuplicatePolicy { sum, error };

// Compressed sparse row arrays on the CPU: row_ptr (rows + 1, i64), col_idx (nnz, i64) and
// values (nnz, f64). Columns are sorted within each row and no position repeats.
struct CsrArrays {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  Tensor row_ptr;
  Tensor col_idx;
  Tensor values;
};

// Reads a Matrix Market file. Symmetric and skew-symmetric files are expanded to both triangles
// (the diagonal once); for them, entries above the diagonal (or on it, for skew-symmetric) are
// an error. Dense array files yield every stored entry, zeros included. Indices become 0-based.
// Throws IoError when the file cannot be read or is malformed, naming the file and line.
[[nodiscard]] CooMatrix read_matrix_market(const std::filesystem::path& path);

// Rows [first, first + count) of a matrix.
struct RowRange {
  std::int64_t first = 0;
  std::int64_t count = 0;
};

// Reads the rows of a Matrix Market file that `rows_of` selects, given the declared size: each
// rank of a job reads its own rows, and no process holds the whole matrix. The file is read and
// validated whole exactly as read_matrix_market does (the same errors), the symmetric expansion
// is applied before selecting, and only the selected entries are kept (indices stay global,
// 0-based; rows and cols are the declared size), so memory follows this rank's share of the
// entries, not the file. UsageError when the range returned is not within [0, rows].
[[nodiscard]] CooMatrix read_matrix_market_rows(
    const std::filesystem::path& path,
    const std::function<RowRange(std::int64_t rows, std::int64_t cols)>& rows_of);

// Sorts and compresses a COO matrix. Entries at the same position are summed in input order
// (DuplicatePolicy::sum) or rejected (DuplicatePolicy::error). Throws UsageError for
// inconsistent input (vector lengths differ, an index out of range) and for a duplicate under
// DuplicatePolicy::error, naming the entry.
[[nodiscard]] CsrArrays to_csr(const CooMatrix& coo,
                               DuplicatePolicy duplicates = DuplicatePolicy::sum);

// Writes `coo` as a coordinate real file with 1-based indices. precision 0 (the default) writes
// each value in its shortest form that reads back bit for bit; 1..17 writes that many significant
// digits (17 also reads back exactly). For Symmetry::general the entries are written as given,
// in order. For symmetric and skew-symmetric, duplicates are first summed, the matrix is checked
// and only the lower triangle (strictly lower for skew-symmetric) is written.
// Throws UsageError for inconsistent input, non-finite values, a precision outside 0..17, a
// non-square matrix with a symmetry, or an entry that breaks the symmetry (naming the first
// one); IoError when the file cannot be written. The file is written to a temporary name next
// to `path` and renamed into place, so a crash never leaves a half-written file at `path`.
void write_matrix_market(const std::filesystem::path& path, const CooMatrix& coo,
                         Symmetry symmetry = Symmetry::general, int precision = 0);

}  // namespace tenax::io
