#include "tenax/core/sparse_triplets.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "tenax/core/checked_size.hpp"
#include "tenax/core/error.hpp"

namespace tenax {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

// The shortest form that reads back exactly ("nan", "inf", "-0", "0.1").
std::string number(double v) {
  char buffer[64];
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, v).ptr);
}

// IEEE total order on finite values: -0.0 before +0.0; equal values with equal signs are the
// same bits, so any sort that uses this order yields one sequence of bits.
bool value_before(double a, double b) {
  return a < b || (a == b && std::signbit(a) && !std::signbit(b));
}

// The machine's RAM in bytes, or INT64_MAX when the system cannot tell.
std::int64_t physical_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return INT64_MAX;
  return saturating_multiply(pages, page);
}

void check_sizes(const std::string& who, std::int64_t first_row, std::int64_t rows,
                 std::int64_t cols) {
  for (const auto& [extent, what] : {std::pair{rows, "rows"}, std::pair{cols, "cols"}}) {
    TENAX_EXPECTS(extent >= 0 && extent <= kMaxTripletDimension, UsageError,
                  who + ": " + what + " = " + str(extent) +
                      " is outside [0, 2^53 = " + str(kMaxTripletDimension) + "]",
                  std::string("pass the matrix's ") + what + " count (a non-negative size)");
  }
  TENAX_EXPECTS(first_row >= 0 && first_row <= kMaxTripletDimension, UsageError,
                who + ": the first row " + str(first_row) + " is outside [0, 2^53]",
                "pass the global index of this rank's first row");
  // Checked before allocating: a garbage size must not reach the allocator.
  const std::int64_t bytes = saturating_multiply(rows + 1, 8);
  const std::int64_t ram = physical_bytes();
  TENAX_EXPECTS(bytes <= ram, UsageError,
                who + ": rows = " + str(rows) + " needs a row pointer array of " + str(bytes) +
                    " bytes, more than this machine's " + str(ram) + " bytes of memory",
                "check the row count (an entry count or an uninitialised value passed as rows?); "
                "split a matrix that large across ranks");
}

void check_triplets(const std::string& who, std::int64_t first_row, std::int64_t rows,
                    std::int64_t cols, const TripletSpans& t) {
  TENAX_EXPECTS(t.row.size() == t.value.size() && t.col.size() == t.value.size(), UsageError,
                who + ": the triplet arrays differ in length (row " +
                    str(static_cast<std::int64_t>(t.row.size())) + ", col " +
                    str(static_cast<std::int64_t>(t.col.size())) + ", value " +
                    str(static_cast<std::int64_t>(t.value.size())) + ")",
                "give row, col and value one element per entry");
  const std::int64_t end_row = first_row + rows;
  for (std::size_t k = 0; k < t.value.size(); ++k) {
    const auto entry = "entry " + str(static_cast<std::int64_t>(k));
    TENAX_EXPECTS(t.row[k] >= first_row && t.row[k] < end_row, UsageError,
                  who + ": " + entry + " has row index " + str(t.row[k]) + ", outside [" +
                      str(first_row) + ", " + str(end_row) + ")",
                  first_row == 0 ? "use 0-based row indices below rows, or enlarge rows"
                                 : "give each rank the triplets of its own rows only (global, "
                                   "0-based indices)");
    TENAX_EXPECTS(t.col[k] >= 0 && t.col[k] < cols, UsageError,
                  who + ": " + entry + " has column index " + str(t.col[k]) + ", outside [0, " +
                      str(cols) + ")",
                  "use 0-based column indices below cols, or enlarge cols");
    TENAX_EXPECTS(std::isfinite(t.value[k]), UsageError,
                  who + ": " + entry + " at (" + str(t.row[k]) + ", " + str(t.col[k]) +
                      ") has value " + number(t.value[k]) + "; matrix entries must be finite",
                  "fix the computation of that entry (a NaN or Inf would poison every product)");
  }
}

}  // namespace

CompressedTriplets compress_triplets(std::string_view who_view, std::int64_t first_row,
                                     std::int64_t rows, std::int64_t cols, const TripletSpans& t,
                                     DuplicateEntries duplicates, ZeroEntries zeros) {
  const std::string who(who_view);
  check_sizes(who, first_row, rows, cols);
  check_triplets(who, first_row, rows, cols, t);

  const auto nnz = static_cast<std::int64_t>(t.value.size());
  CompressedTriplets out;
  out.rows = rows;
  out.cols = cols;
  Tensor order_tensor;  // the entries bucketed by row
  try {
    out.row_ptr = Tensor::empty({rows + 1}, DType::i64);
    order_tensor = Tensor::empty({nnz}, DType::i64);
    out.col_idx = Tensor::empty({nnz}, DType::i64);
    out.values = Tensor::empty({nnz}, DType::f64);
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(who + ": no memory for a " + str(rows) + "-row matrix with " + str(nnz) +
                               " entries: " + e.cause(),
                           "use a smaller matrix or more ranks, or raise TENAX_MEMORY_LIMIT "
                           "where the machine has the memory");
  }
  std::int64_t* const row_ptr = out.row_ptr.data_as<std::int64_t>();
  std::int64_t* const order = order_tensor.data_as<std::int64_t>();
  std::int64_t* const col = out.col_idx.data_as<std::int64_t>();
  double* const value = out.values.data_as<double>();
  std::fill(row_ptr, row_ptr + rows + 1, std::int64_t{0});
  for (const std::int64_t r : t.row) ++row_ptr[r - first_row + 1];
  for (std::int64_t r = 0; r < rows; ++r) row_ptr[r + 1] += row_ptr[r];
  // Bucketing by row, with row_ptr[r] as row r's cursor: afterwards row_ptr[r] holds the end of
  // row r, and the start of row r is the end of row r - 1.
  for (std::int64_t k = 0; k < nnz; ++k) order[row_ptr[t.row[k] - first_row]++] = k;

  std::int64_t written = 0;
  std::int64_t row_begin = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t row_end = row_ptr[r];
    // By (column, value): the values at one position in ascending total order, so their sum does
    // not depend on the input order (ties are identical bits, so the sort's stability is moot).
    std::sort(order + row_begin, order + row_end, [&](std::int64_t a, std::int64_t b) {
      const std::int64_t ca = t.col[static_cast<std::size_t>(a)];
      const std::int64_t cb = t.col[static_cast<std::size_t>(b)];
      return ca < cb || (ca == cb && value_before(t.value[static_cast<std::size_t>(a)],
                                                  t.value[static_cast<std::size_t>(b)]));
    });
    const std::int64_t row_start = written;
    for (std::int64_t p = row_begin; p < row_end;) {
      const auto first = static_cast<std::size_t>(order[p]);
      const std::int64_t c = t.col[first];
      double sum = t.value[first];
      std::int64_t q = p + 1;
      for (; q < row_end && t.col[static_cast<std::size_t>(order[q])] == c; ++q) {
        if (duplicates == DuplicateEntries::refuse) {
          throw UsageError(who + ": entries " + str(std::min(order[p], order[q])) + " and " +
                               str(std::max(order[p], order[q])) + " are both at (" +
                               str(first_row + r) + ", " + str(c) + ") (0-based)",
                           "remove or sum the duplicates, or let them be summed");
        }
        sum += t.value[static_cast<std::size_t>(order[q])];
      }
      TENAX_EXPECTS(std::isfinite(sum), UsageError,
                    who + ": the " + str(q - p) + " entries at (" + str(first_row + r) + ", " +
                        str(c) + ") sum to " + number(sum) + " (overflow)",
                    "scale the matrix, or fix the entries at that position");
      if (zeros == ZeroEntries::keep || sum != 0.0) {
        col[written] = c;
        value[written] = sum;
        ++written;
      }
      p = q;
    }
    row_ptr[r] = row_start;
    row_begin = row_end;
  }
  row_ptr[rows] = written;
  if (written < nnz) {  // duplicates summed or zeros dropped: keep only the entries written
    out.col_idx = out.col_idx.slice(0, written).clone();
    out.values = out.values.slice(0, written).clone();
  }
  return out;
}

}  // namespace tenax
