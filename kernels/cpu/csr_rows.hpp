// CSR row sums for the CPU backend, four rows at a time.
//
// A row's sum is a chain of dependent additions (each entry added to the running sum in storage
// order, the order every backend uses), so one row at a time leaves the CPU waiting on the adder's
// latency: with the 5-entry rows of a stencil matrix that, not memory, bounds SpMV. Four rows
// advance side by side over the entries they all have, each still in its own storage order, then
// each finishes its remaining entries; the results are bitwise those of csr_range_dot row by row.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tenax::kernels::cpu {

// sums[k] = sum over the entries of row `first + k` (k < 4) of values[j] * x[col_idx[j]].
template <class T, class I>
inline void csr_four_row_sums(const I* __restrict row_ptr, const I* __restrict col_idx,
                              const T* __restrict values, const T* __restrict x, std::int64_t first,
                              T (&sums)[4]) {
  const I s0 = row_ptr[first];
  const I s1 = row_ptr[first + 1];
  const I s2 = row_ptr[first + 2];
  const I s3 = row_ptr[first + 3];
  const I s4 = row_ptr[first + 4];
  const I common = std::min(std::min(s1 - s0, s2 - s1), std::min(s3 - s2, s4 - s3));
  T a0 = T(0);
  T a1 = T(0);
  T a2 = T(0);
  T a3 = T(0);
  for (I k = 0; k < common; ++k) {
    a0 += values[s0 + k] * x[col_idx[s0 + k]];
    a1 += values[s1 + k] * x[col_idx[s1 + k]];
    a2 += values[s2 + k] * x[col_idx[s2 + k]];
    a3 += values[s3 + k] * x[col_idx[s3 + k]];
  }
  for (I j = s0 + common; j < s1; ++j) a0 += values[j] * x[col_idx[j]];
  for (I j = s1 + common; j < s2; ++j) a1 += values[j] * x[col_idx[j]];
  for (I j = s2 + common; j < s3; ++j) a2 += values[j] * x[col_idx[j]];
  for (I j = s3 + common; j < s4; ++j) a3 += values[j] * x[col_idx[j]];
  sums[0] = a0;
  sums[1] = a1;
  sums[2] = a2;
  sums[3] = a3;
}

}  // namespace tenax::kernels::cpu
