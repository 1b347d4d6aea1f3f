#include "tenax/solvers/assemble_csr.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::solvers {
namespace {

constexpr std::int64_t kI32Max = std::numeric_limits<std::int32_t>::max();

void check_options(const std::string& who, const AssembleOptions& options) {
  TENAX_EXPECTS(
      options.dtype == DType::f64 || options.dtype == DType::f32, UsageError,
      who + ": value dtype " + std::string(to_string(options.dtype)) + " is not supported",
      "assemble with AssembleOptions::dtype f64 or f32");
  TENAX_EXPECTS(
      options.index_dtype == DType::i64 || options.index_dtype == DType::i32, UsageError,
      who + ": index dtype " + std::string(to_string(options.index_dtype)) + " is not supported",
      "assemble with AssembleOptions::index_dtype i64 or i32");
}

Tensor narrowed(const Tensor& wide) {
  Tensor narrow = Tensor::empty(wide.shape(), DType::i32);
  const std::int64_t* from = wide.data_as<const std::int64_t>();
  std::int32_t* to = narrow.data_as<std::int32_t>();
  for (std::int64_t k = 0; k < wide.numel(); ++k) to[k] = static_cast<std::int32_t>(from[k]);
  return narrow;
}

CsrMatrix to_matrix(const std::string& who, CompressedTriplets m, const AssembleOptions& options) {
  const std::int64_t nnz = m.col_idx.numel();
  Tensor row_ptr = m.row_ptr;
  Tensor col_idx = m.col_idx;
  if (options.index_dtype == DType::i32) {
    TENAX_EXPECTS(m.cols <= kI32Max && nnz <= kI32Max, UsageError,
                  who + ": i32 indices cannot hold " + std::to_string(m.cols) + " columns and " +
                      std::to_string(nnz) + " entries (at most " + std::to_string(kI32Max) +
                      " each)",
                  "assemble with AssembleOptions::index_dtype = DType::i64");
    row_ptr = narrowed(row_ptr);
    col_idx = narrowed(col_idx);
  }
  Tensor values = options.dtype == DType::f64 ? m.values : ops::cast(m.values, options.dtype);
  return CsrMatrix(m.rows, m.cols, row_ptr, col_idx, values).to(options.device);
}

}  // namespace

CsrMatrix assemble_csr(std::int64_t rows, std::int64_t cols, std::span<const std::int64_t> row,
                       std::span<const std::int64_t> col, std::span<const double> value,
                       const AssembleOptions& options) {
  const std::string who = "assemble_csr";
  check_options(who, options);
  return to_matrix(who,
                   compress_triplets(who, 0, rows, cols, TripletSpans{row, col, value},
                                     DuplicateEntries::sum, options.zeros),
                   options);
}

CsrMatrix assemble_csr_rows(const kernels::ShardRange& range, std::int64_t cols,
                            std::span<const std::int64_t> row, std::span<const std::int64_t> col,
                            std::span<const double> value, const AssembleOptions& options) {
  const std::string who = "assemble_csr_rows";
  check_options(who, options);
  TENAX_EXPECTS(range.first >= 0 && range.count >= 0 && range.first <= range.total &&
                    range.count <= range.total - range.first,
                UsageError,
                who + ": rows [" + std::to_string(range.first) + ", " +
                    std::to_string(range.first + range.count) + ") are not within the matrix's " +
                    std::to_string(range.total) + " rows",
                "pass this rank's range of the rows (kernels::block_aligned_range)");
  return to_matrix(
      who,
      compress_triplets(who, range.first, range.count, cols, TripletSpans{row, col, value},
                        DuplicateEntries::sum, options.zeros),
      options);
}

}  // namespace tenax::solvers
