// CSR row sums for the CPU backend, four rows at a time, over the stored index or the compact one.
//
// A row's sum is a chain of dependent additions (each entry added to the running sum in storage
// order, the order every backend uses), so one row at a time leaves the CPU waiting on the adder's
// latency: with the 5-entry rows of a stencil matrix that, not memory, bounds SpMV. Four rows
// advance side by side over the entries they all have, each still in its own storage order, then
// each finishes its remaining entries; the results are bitwise those of csr_range_dot row by row.
//
// Where the compact index says four rows share a shape (CsrCompactIndex::row_quads: the same
// column offsets, perhaps the same values), entry k of the four is one product of a 4-lane vector
// (x[c_k … c_k+3], contiguous) by one value or four: each lane is still its row's chain of
// multiply-then-add in storage order, so the bits are the same, for a third of the instructions.
//
// The entries are read through a column and a value accessor: the stored col_idx and values, or
// the compact index of CsrMatrix::compacted() (16-bit offsets from the row, 8-bit codes into a
// table of values). Each gives exactly the stored column and value, so every combination sums
// the same products in the same order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

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

#if defined(__GNUC__)
// Four values as one GCC vector (the attribute cannot be given to a dependent type).
template <class T>
struct FourLanes;
template <>
struct FourLanes<double> {
  typedef double type __attribute__((vector_size(32)));
};
template <>
struct FourLanes<float> {
  typedef float type __attribute__((vector_size(16)));
};
#endif

template <class T, class I, class Columns, class Values>
struct CsrRows {
  using Index = kernels::detail::CsrCompactIndex;

  const I* __restrict row_ptr;
  Columns column;
  Values value;
  /// CsrCompactIndex::row_quads, or nullptr.
  const std::uint8_t* __restrict quads = nullptr;

  // The sum over row `row`'s entries of value * x[column], in storage order (csr_range_dot).
  [[gnu::always_inline]] T row_sum(const T* __restrict x, std::int64_t row) const {
    T sum = T(0);
    for (I j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += value(j) * x[column(j, row)];
    return sum;
  }

  // sums[k] = row_sum(x, first + k) for k < 4.
  [[gnu::always_inline]] void four_row_sums(const T* __restrict x, std::int64_t first,
                                            T (&sums)[4]) const {
    if (quads != nullptr && first % 4 == 0) {
      const std::uint8_t shape = quads[first / 4];
      if (shape & Index::kQuadSameValues) return quad_sums<true>(x, first, sums);
      if (shape & Index::kQuadSameColumns) return quad_sums<false>(x, first, sums);
    }
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

  // four_row_sums of a group of four rows with the same shape: entry k of row first+i is at
  // s0 + i * length + k, in column column(s0 + k) + i.
  template <bool kSameValues>
  [[gnu::always_inline]] void quad_sums(const T* __restrict x, std::int64_t first,
                                        T (&sums)[4]) const {
    const I s0 = row_ptr[first];
    const I length = row_ptr[first + 1] - s0;
#if defined(__GNUC__)
    // One 4-lane vector (two SSE2 registers on the baseline target, one AVX register where the
    // caller is compiled for AVX2); a + v * x is a multiply, then an add, lane by lane, rounded as
    // the scalar chain is (no contraction in this library).
    using Lanes = typename FourLanes<T>::type;
    Lanes a = {};
    for (I k = 0; k < length; ++k) {
      Lanes xk;
      std::memcpy(&xk, x + column(s0 + k, first), sizeof(Lanes));
      if constexpr (kSameValues) {
        const T v = value(s0 + k);
        a = a + Lanes{v, v, v, v} * xk;
      } else {
        a = a + Lanes{value(s0 + k), value(s0 + length + k), value(s0 + 2 * length + k),
                      value(s0 + 3 * length + k)} *
                    xk;
      }
    }
    std::memcpy(sums, &a, sizeof(Lanes));
#else
    T a[4] = {T(0), T(0), T(0), T(0)};
    for (I k = 0; k < length; ++k) {
      const T* __restrict xk = x + column(s0 + k, first);
      if constexpr (kSameValues) {
        const T v = value(s0 + k);
        for (int i = 0; i < 4; ++i) a[i] += v * xk[i];
      } else {
        for (int i = 0; i < 4; ++i) a[i] += value(s0 + i * length + k) * xk[i];
      }
    }
    for (int i = 0; i < 4; ++i) sums[i] = a[i];
#endif
  }
};

// Calls f(rows) with the CsrRows of `a` (values T, indices I) over its compact index where it
// has one (each encoding where the index has it, the stored arrays for the rest), else over
// col_idx and values; returns what f returns.
template <class T, class I, class F>
decltype(auto) with_csr_rows(const CsrMatrix& a, F&& f) {
  const I* row_ptr = a.row_ptr().data_as<const I>();
  const StoredColumns<I> stored_columns{a.col_idx().data_as<const I>()};
  const StoredValues<T> stored_values{a.values().data_as<const T>()};
  const kernels::detail::CsrCompactIndex* compact = a.compact_index();
  if (compact == nullptr) {
    return f(
        CsrRows<T, I, StoredColumns<I>, StoredValues<T>>{row_ptr, stored_columns, stored_values});
  }
  const std::uint8_t* quads =
      compact->has_quads() ? compact->row_quads.data_as<const std::uint8_t>() : nullptr;
  const auto with_values = [&](const auto& columns) -> decltype(auto) {
    using Columns = std::decay_t<decltype(columns)>;
    if (compact->has_codes()) {
      const TableValues<T> table{compact->value_codes.data_as<const std::uint8_t>(),
                                 compact->value_table.data_as<const T>()};
      return f(CsrRows<T, I, Columns, TableValues<T>>{row_ptr, columns, table, quads});
    }
    return f(CsrRows<T, I, Columns, StoredValues<T>>{row_ptr, columns, stored_values, quads});
  };
  if (compact->has_offsets()) return with_values(OffsetColumns{compact->offsets()});
  return with_values(stored_columns);
}

}  // namespace tenax::kernels::cpu
