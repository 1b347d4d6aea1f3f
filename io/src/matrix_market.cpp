// Matrix Market writer and the COO -> CSR conversion.
#include "tenax/io/matrix_market.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "durable_file.hpp"
#include "matrix_market_text.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/core/sparse_triplets.hpp"

namespace tenax::io {
namespace {

using detail::str;

// CSR arrays in pool tensors (so TENAX_MEMORY_LIMIT holds for them), with spans to index them.
struct Compressed {
  Tensor row_ptr_tensor;  // rows + 1, i64
  Tensor col_tensor;      // entries, i64
  Tensor value_tensor;    // entries, f64
  std::span<std::int64_t> row_ptr;
  std::span<std::int64_t> col;
  std::span<double> value;
};

void check_coo(const CooMatrix& coo, const char* function) {
  const std::string fn(function);
  for (const auto& [extent, what] : {std::pair{coo.rows, "rows"}, std::pair{coo.cols, "cols"}}) {
    TENAX_EXPECTS(extent >= 0 && extent <= kMaxMatrixMarketDimension, UsageError,
                  fn + ": " + what + " is " + str(extent) + ", outside [0, " +
                      str(kMaxMatrixMarketDimension) + "]",
                  std::string("set CooMatrix::") + what + " to the matrix size");
  }
  TENAX_EXPECTS(coo.row.size() == coo.value.size() && coo.col.size() == coo.value.size(),
                UsageError,
                fn + ": the triplet vectors differ in length (row " + str(coo.row.size()) +
                    ", col " + str(coo.col.size()) + ", value " + str(coo.value.size()) + ")",
                "give row, col and value one element per entry");
  for (std::size_t k = 0; k < coo.value.size(); ++k) {
    TENAX_EXPECTS(coo.row[k] >= 0 && coo.row[k] < coo.rows, UsageError,
                  fn + ": entry " + str(static_cast<std::int64_t>(k)) + " has row index " +
                      str(coo.row[k]) + ", outside [0, " + str(coo.rows) + ")",
                  "use 0-based indices below rows, or enlarge rows");
    TENAX_EXPECTS(coo.col[k] >= 0 && coo.col[k] < coo.cols, UsageError,
                  fn + ": entry " + str(static_cast<std::int64_t>(k)) + " has column index " +
                      str(coo.col[k]) + ", outside [0, " + str(coo.cols) + ")",
                  "use 0-based indices below cols, or enlarge cols");
  }
}

// The one triplet rule (tenax/core/sparse_triplets.hpp), with spans to index the result.
Compressed compress(const CooMatrix& coo, DuplicatePolicy duplicates, const char* function) {
  CompressedTriplets m = compress_triplets(
      function, 0, coo.rows, coo.cols, TripletSpans{coo.row, coo.col, coo.value},
      duplicates == DuplicatePolicy::error ? DuplicateEntries::refuse : DuplicateEntries::sum);
  Compressed out;
  out.row_ptr_tensor = m.row_ptr;
  out.col_tensor = m.col_idx;
  out.value_tensor = m.values;
  out.row_ptr = {m.row_ptr.data_as<std::int64_t>(), static_cast<std::size_t>(coo.rows) + 1};
  out.col = {m.col_idx.data_as<std::int64_t>(), static_cast<std::size_t>(m.col_idx.numel())};
  out.value = {m.values.data_as<double>(), static_cast<std::size_t>(m.values.numel())};
  return out;
}

// Position of column c in row r of a compressed matrix, or -1.
std::int64_t find(const Compressed& m, std::int64_t r, std::int64_t c) {
  const auto begin = m.col.begin() + m.row_ptr[static_cast<std::size_t>(r)];
  const auto end = m.col.begin() + m.row_ptr[static_cast<std::size_t>(r) + 1];
  const auto it = std::lower_bound(begin, end, c);
  return it != end && *it == c ? it - m.col.begin() : -1;
}

void append_number(std::string& out, std::int64_t v) {
  char buffer[24];  // 19 digits and a sign
  out.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, v).ptr);
}

// precision 0: the shortest form that reads back exactly.
void append_value(std::string& out, double v, int precision) {
  char buffer[64];  // at most 24 characters in either form
  char* const end = buffer + sizeof buffer;
  out.append(buffer,
             precision == 0
                 ? std::to_chars(buffer, end, v).ptr
                 : std::to_chars(buffer, end, v, std::chars_format::general, precision).ptr);
}

std::string format_value(double v) {
  std::string out;
  append_value(out, v, 0);
  return out;
}

// Writes `text` whole through replace_file (a path that is a device, FIFO, directory or symbolic
// link is refused, never replaced): a temporary beside it, synced, renamed over it, and the
// directory synced, so a reader never sees a half-written matrix.
void write_file_atomically(const std::filesystem::path& path, std::string_view text) {
  replace_file(
      path, "write_matrix_market: the output",
      [&](const std::filesystem::path& temporary) { detail::write_file_synced(temporary, text); });
  detail::fsync_path(path.has_parent_path() ? path.parent_path() : ".", true);
}

}  // namespace

CsrArrays to_csr(const CooMatrix& coo, DuplicatePolicy duplicates) {
  check_coo(coo, "to_csr");
  const Compressed m = compress(coo, duplicates, "to_csr");
  CsrArrays csr;
  csr.rows = coo.rows;
  csr.cols = coo.cols;
  csr.row_ptr = m.row_ptr_tensor;
  csr.col_idx = m.col_tensor;
  csr.values = m.value_tensor;
  return csr;
}

void write_matrix_market(const std::filesystem::path& path, const CooMatrix& coo, Symmetry symmetry,
                         int precision) {
  check_coo(coo, "write_matrix_market");
  TENAX_EXPECTS(precision >= 0 && precision <= 17, UsageError,
                "write_matrix_market: precision " + std::to_string(precision) + " is outside 0..17",
                "pass 0 for the shortest exact form or 1..17 significant digits");
  for (std::size_t k = 0; k < coo.value.size(); ++k) {
    TENAX_EXPECTS(std::isfinite(coo.value[k]), UsageError,
                  "write_matrix_market: entry " + str(static_cast<std::int64_t>(k)) + " at (" +
                      str(coo.row[k]) + ", " + str(coo.col[k]) + ") is " +
                      format_value(coo.value[k]) +
                      "; Matrix Market readers reject non-finite "
                      "values",
                  "replace non-finite values before writing");
  }
  const char* symmetry_name = symmetry == Symmetry::general     ? "general"
                              : symmetry == Symmetry::symmetric ? "symmetric"
                                                                : "skew-symmetric";
  TENAX_EXPECTS(symmetry == Symmetry::general || coo.rows == coo.cols, UsageError,
                "write_matrix_market: a " + str(coo.rows) + " x " + str(coo.cols) +
                    " matrix cannot be written as " + symmetry_name,
                "write it with Symmetry::general");

  TENAX_EXPECTS(
      symmetry != Symmetry::general || coo.nnz() <= saturating_multiply(coo.rows, coo.cols),
      UsageError,
      "write_matrix_market: " + str(coo.nnz()) + " entries do not fit in a " + str(coo.rows) +
          " x " + str(coo.cols) + " matrix without duplicates, and readers reject such files",
      "sum the duplicates first (to_csr does)");
  std::vector<std::int64_t> rows;
  std::vector<std::int64_t> cols;
  std::vector<double> values;
  const std::vector<std::int64_t>* out_rows = &coo.row;
  const std::vector<std::int64_t>* out_cols = &coo.col;
  const std::vector<double>* out_values = &coo.value;
  if (symmetry != Symmetry::general) {
    const Compressed m = compress(coo, DuplicatePolicy::sum, "write_matrix_market");
    const bool skew = symmetry == Symmetry::skew_symmetric;
    for (std::int64_t r = 0; r < coo.rows; ++r) {
      for (std::int64_t p = m.row_ptr[static_cast<std::size_t>(r)];
           p < m.row_ptr[static_cast<std::size_t>(r) + 1]; ++p) {
        const std::int64_t c = m.col[static_cast<std::size_t>(p)];
        const double v = m.value[static_cast<std::size_t>(p)];
        const std::int64_t q = find(m, c, r);
        const double mirror = q < 0 ? 0.0 : m.value[static_cast<std::size_t>(q)];
        const bool matches = skew ? v == -mirror : v == mirror;
        if (!matches) {
          throw UsageError("write_matrix_market: the matrix is not " + std::string(symmetry_name) +
                               ": entry (" + str(r) + ", " + str(c) + ") is " + format_value(v) +
                               " but entry (" + str(c) + ", " + str(r) + ") is " +
                               format_value(mirror) + (q < 0 ? " (absent)" : "") +
                               " (0-based indices)",
                           std::string("write it with Symmetry::general, or make A(j, i) ") +
                               (skew ? "equal -A(i, j)" : "equal A(i, j)"));
        }
        if (r > c || (r == c && !skew)) {
          rows.push_back(r);
          cols.push_back(c);
          values.push_back(v);
        }
      }
    }
    out_rows = &rows;
    out_cols = &cols;
    out_values = &values;
  }

  std::string text = "%%MatrixMarket matrix coordinate real " + std::string(symmetry_name) + "\n" +
                     str(coo.rows) + " " + str(coo.cols) + " " +
                     str(static_cast<std::int64_t>(out_values->size())) + "\n";
  text.reserve(text.size() + out_values->size() * 32);
  for (std::size_t k = 0; k < out_values->size(); ++k) {
    append_number(text, (*out_rows)[k] + 1);
    text += ' ';
    append_number(text, (*out_cols)[k] + 1);
    text += ' ';
    append_value(text, (*out_values)[k], precision);
    text += '\n';
  }
  write_file_atomically(path, text);
}

}  // namespace tenax::io
