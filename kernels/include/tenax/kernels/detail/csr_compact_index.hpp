/// The compact index of a CPU CSR matrix (CsrMatrix::compacted): the same entries in fewer bytes,
/// read by the CPU backend's sparse products in place of col_idx and values. @file
///
/// A CSR product is bound by the bytes it streams: with i32 indices and f64 values a stencil
/// matrix costs 12 bytes an entry, against 8 for the vector it multiplies. Two encodings from the
/// literature on compressed CSR (index and value compression) take most of that away, each used
/// where the matrix allows it:
///  - column offsets: col_idx[j] - row as a 16-bit integer, when every entry lies within 32767
///    columns of its row's index (banded matrices: stencils, most PDE discretisations);
///  - value codes: an 8-bit index into a table of the matrix's distinct values, when it has at
///    most 256 distinct bit patterns (constant-coefficient operators);
/// and one description the products use to need fewer instructions, not fewer bytes:
///  - row quads: for each group of four rows 4g … 4g+3, whether they have the same shape (as
///    interior rows of a stencil matrix do): the same number of entries, entry k of row 4g+i in
///    column c_k + i (so the four read x[c_k … c_k+3], one vector load) and, besides, whether
///    entry k has the same value bits in all four (one broadcast value).
/// All are exact: the column is row + offset, the value table[code] has the stored bits, and the
/// products sum each row in storage order as before, so the results are bitwise those of the
/// uncompressed matrix. One exception, which IEEE 754 leaves open: where two NaNs meet in an
/// add, which payload the result carries depends on the operands' order in the instruction (x86
/// keeps the first), which the compiler chooses; the result is a NaN either way.
#pragma once

#include <cstdint>

#include "tenax/core/tensor.hpp"

namespace tenax::kernels::detail {

struct CsrCompactIndex {
  /// nnz int16 column offsets (col_idx[j] - row), stored as 2 * nnz bytes of u8; undefined when
  /// some entry lies too far from its row.
  Tensor column_offsets;
  /// nnz u8 codes into value_table; undefined when the matrix has more than 256 distinct values.
  Tensor value_codes;
  /// The distinct values (the matrix's dtype), in order of first appearance.
  Tensor value_table;

  /// One byte per group of four rows (rows 4g … 4g+3, for g < rows / 4): 0, kQuadSameColumns,
  /// or kQuadSameColumns | kQuadSameValues; undefined when no group has the same columns.
  Tensor row_quads;

  /// The four rows have equally many entries, and entry k of row 4g+i is in column c_k + i, where
  /// c_k is the column of row 4g's entry k.
  static constexpr std::uint8_t kQuadSameColumns = 1;
  /// Besides kQuadSameColumns: entry k has the same value bits in all four rows.
  static constexpr std::uint8_t kQuadSameValues = 2;

  [[nodiscard]] bool has_offsets() const noexcept { return column_offsets.defined(); }
  [[nodiscard]] bool has_codes() const noexcept { return value_codes.defined(); }
  [[nodiscard]] bool has_quads() const noexcept { return row_quads.defined(); }
  [[nodiscard]] const std::int16_t* offsets() const noexcept {
    return reinterpret_cast<const std::int16_t*>(column_offsets.data_as<const std::uint8_t>());
  }
};

}  // namespace tenax::kernels::detail
