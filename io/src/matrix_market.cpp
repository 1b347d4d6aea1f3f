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

Compressed compress(const CooMatrix& coo, DuplicatePolicy duplicates, const char* function) {
  const auto nnz = static_cast<std::int64_t>(coo.value.size());
  Compressed out;
  Tensor order_tensor;  // the entries bucketed by row
  try {
    out.row_ptr_tensor = Tensor::empty({coo.rows + 1}, DType::i64);
    order_tensor = Tensor::empty({nnz}, DType::i64);
    out.col_tensor = Tensor::empty({nnz}, DType::i64);
    out.value_tensor = Tensor::empty({nnz}, DType::f64);
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(std::string(function) + ": no memory for a " + str(coo.rows) +
                               "-row matrix with " + str(nnz) + " entries: " + e.cause(),
                           "use a smaller matrix, or raise TENAX_MEMORY_LIMIT where the machine "
                           "has the memory");
  }
  const std::span<std::int64_t> row_ptr(out.row_ptr_tensor.data_as<std::int64_t>(),
                                        static_cast<std::size_t>(coo.rows) + 1);
  const std::span<std::int64_t> order(order_tensor.data_as<std::int64_t>(),
                                      static_cast<std::size_t>(nnz));
  const std::span<std::int64_t> col(out.col_tensor.data_as<std::int64_t>(),
                                    static_cast<std::size_t>(nnz));
  const std::span<double> value(out.value_tensor.data_as<double>(), static_cast<std::size_t>(nnz));
  const auto rows = static_cast<std::size_t>(coo.rows);
  std::fill(row_ptr.begin(), row_ptr.end(), std::int64_t{0});
  for (std::size_t k = 0; k < coo.value.size(); ++k) {
    ++row_ptr[static_cast<std::size_t>(coo.row[k]) + 1];
  }
  for (std::size_t r = 0; r < rows; ++r) row_ptr[r + 1] += row_ptr[r];
  // Stable bucketing by row, with row_ptr[r] as row r's cursor: afterwards row_ptr[r] holds the
  // end of row r (the start of row r + 1), and the start of row r is the end of row r - 1.
  for (std::size_t k = 0; k < coo.value.size(); ++k) {
    order[static_cast<std::size_t>(row_ptr[static_cast<std::size_t>(coo.row[k])]++)] =
        static_cast<std::int64_t>(k);
  }
  // Then a stable sort by column within each row, so duplicates are summed in input order and
  // the result does not depend on the sort's internals.
  std::int64_t written = 0;
  std::int64_t row_begin = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::int64_t row_end = row_ptr[r];
    const auto begin = order.begin() + row_begin;
    const auto end = order.begin() + row_end;
    std::stable_sort(begin, end, [&](std::int64_t a, std::int64_t b) {
      return coo.col[static_cast<std::size_t>(a)] < coo.col[static_cast<std::size_t>(b)];
    });
    const std::int64_t row_start = written;
    std::int64_t previous = -1;
    for (auto it = begin; it != end; ++it) {
      const auto k = static_cast<std::size_t>(*it);
      const std::int64_t c = coo.col[k];
      if (written > row_start && col[static_cast<std::size_t>(written) - 1] == c) {
        if (duplicates == DuplicatePolicy::error) {
          throw UsageError(std::string(function) + ": entries " + str(previous) + " and " +
                               str(static_cast<std::int64_t>(k)) + " are both at (" +
                               str(static_cast<std::int64_t>(r)) + ", " + str(c) + ") (0-based)",
                           "remove or sum the duplicates, or pass DuplicatePolicy::sum");
        }
        value[static_cast<std::size_t>(written) - 1] += coo.value[k];
      } else {
        col[static_cast<std::size_t>(written)] = c;
        value[static_cast<std::size_t>(written)] = coo.value[k];
        ++written;
      }
      previous = static_cast<std::int64_t>(k);
    }
    row_ptr[r] = row_start;
    row_begin = row_end;
  }
  row_ptr[rows] = written;
  if (written < nnz) {  // duplicates were summed: keep only the entries written
    out.col_tensor = out.col_tensor.slice(0, written).clone();
    out.value_tensor = out.value_tensor.slice(0, written).clone();
  }
  out.row_ptr = row_ptr;
  out.col = {out.col_tensor.data_as<std::int64_t>(), static_cast<std::size_t>(written)};
  out.value = {out.value_tensor.data_as<double>(), static_cast<std::size_t>(written)};
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

// Writes `text` to `path` through a temporary file that is synced and renamed into place.
// Writes `text` to a temporary file, fsyncs it and renames it over `path` (then fsyncs the
// directory), so a reader never sees a half-written matrix.
void write_file_atomically(const std::filesystem::path& path, std::string_view text) {
  const std::filesystem::path temp = path.string() + ".tmp." + std::to_string(::getpid());
  try {
    detail::write_file_synced(temp, text);
    detail::rename_path(temp, path);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw;
  }
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
