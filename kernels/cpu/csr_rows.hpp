// CSR row sums for the CPU backend, four rows at a time, over the stored index or the compact one.
//
// A row's sum is a chain of dependent additions (each entry added to the running sum in storage
// order, the order every backend uses), so one row at a time leaves the CPU waiting on the adder's
// latency: with the 5-entry rows of a stencil matrix that, not memory, bounds SpMV. Four rows
// advance side by side over the entries they all have, each still in its own storage order, then
// each finishes its remaining entries; the results are bitwise those of csr_range_dot row by row.
//
// The entries are read through a column and a value accessor: the stored col_idx and values, or
// the compact index of CsrMatrix::compacted() (16-bit offsets from the row, 8-bit codes into a
// table of values). Each gives exactly the stored column and value, so every combination sums
// the same products in the same order.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/detail/csr_compact_index.hpp"

namespace tenax::kernels::cpu {

template <class I>
struct StoredColumns {
  const I* __restrict col_idx;
  std::int64_t operator()(std::int64_t j, std::int64_t /*row*/) const { return col_idx[j]; }
};

struct OffsetColumns {
  const std::int16_t* __restrict offsets;
  std::int64_t operator()(std::int64_t j, std::int64_t row) const { return row + offsets[j]; }
};

template <class T>
struct StoredValues {
  const T* __restrict values;
  T operator()(std::int64_t j) const { return values[j]; }
};

template <class T>
struct TableValues {
  const std::uint8_t* __restrict codes;
  const T* __restrict table;
  T operator()(std::int64_t j) const { return table[codes[j]]; }
};

template <class T, class I, class Columns, class Values>
struct CsrRows {
  const I* __restrict row_ptr;
  Columns column;
  Values value;

  // The sum over row `row`'s entries of value * x[column], in storage order (csr_range_dot).
  T row_sum(const T* __restrict x, std::int64_t row) const {
    T sum = T(0);
    for (I j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += value(j) * x[column(j, row)];
    return sum;
  }

  // sums[k] = row_sum(x, first + k) for k < 4.
  void four_row_sums(const T* __restrict x, std::int64_t first, T (&sums)[4]) const {
    const I s0 = row_ptr[first];
    const I s1 = row_ptr[first + 1];
    const I s2 = row_ptr[first + 2];
    const I s3 = row_ptr[first + 3];
    const I s4 = row_ptr[first + 4];
    const I common = std::min(std::min(s1 - s0, s2 - s1), std::min(s3 - s2, s4 - s3));
    const std::int64_t r0 = first;
    T a0 = T(0);
    T a1 = T(0);
    T a2 = T(0);
    T a3 = T(0);
    for (I k = 0; k < common; ++k) {
      a0 += value(s0 + k) * x[column(s0 + k, r0)];
      a1 += value(s1 + k) * x[column(s1 + k, r0 + 1)];
      a2 += value(s2 + k) * x[column(s2 + k, r0 + 2)];
      a3 += value(s3 + k) * x[column(s3 + k, r0 + 3)];
    }
    for (I j = s0 + common; j < s1; ++j) a0 += value(j) * x[column(j, r0)];
    for (I j = s1 + common; j < s2; ++j) a1 += value(j) * x[column(j, r0 + 1)];
    for (I j = s2 + common; j < s3; ++j) a2 += value(j) * x[column(j, r0 + 2)];
    for (I j = s3 + common; j < s4; ++j) a3 += value(j) * x[column(j, r0 + 3)];
    sums[0] = a0;
    sums[1] = a1;
    sums[2] = a2;
    sums[3] = a3;
  }
};

// Calls f(rows) with the CsrRows of `a` (values T, indices I) over its compact index where it
// has one, else over col_idx and values; returns what f returns.
template <class T, class I, class F>
decltype(auto) with_csr_rows(const CsrMatrix& a, F&& f) {
  const I* row_ptr = a.row_ptr().data_as<const I>();
  const StoredColumns<I> stored_columns{a.col_idx().data_as<const I>()};
  const StoredValues<T> stored_values{a.values().data_as<const T>()};
  const kernels::detail::CsrCompactIndex* compact = a.compact_index();
  if (compact != nullptr) {
    const OffsetColumns offsets{compact->has_offsets() ? compact->offsets() : nullptr};
    const TableValues<T> table{
        compact->value_codes.defined() ? compact->value_codes.data_as<const std::uint8_t>()
                                       : nullptr,
        compact->value_table.defined() ? compact->value_table.data_as<const T>() : nullptr};
    if (compact->has_offsets() && compact->has_codes()) {
      return f(CsrRows<T, I, OffsetColumns, TableValues<T>>{row_ptr, offsets, table});
    }
    if (compact->has_offsets()) {
      return f(CsrRows<T, I, OffsetColumns, StoredValues<T>>{row_ptr, offsets, stored_values});
    }
    return f(CsrRows<T, I, StoredColumns<I>, TableValues<T>>{row_ptr, stored_columns, table});
  }
  return f(
      CsrRows<T, I, StoredColumns<I>, StoredValues<T>>{row_ptr, stored_columns, stored_values});
}

}  // namespace tenax::kernels::cpu
