// CsrMatrix::compacted(): which encodings a matrix gets, and that every CPU product over the
// compact index has the bits of the product over col_idx and values.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "kernels/linalg_test_helpers.hpp"
#include "kernels/nan_aware_comparison.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/detail/csr_compact_index.hpp"
#include "tenax/kernels/detail/krylov_kernels.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"
#include "tenax/kernels/ops_krylov.hpp"
#include "tenax/kernels/ops_linalg.hpp"

namespace tenax {
namespace {

using testing::make_tensor;
using testing::random_reals;

struct Entries {
  std::vector<std::int64_t> row_ptr{0};
  std::vector<std::int64_t> col_idx;
  std::vector<double> values;
};

template <class I>
Tensor index_tensor(const std::vector<std::int64_t>& values) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(values.size())}, dtype_of<I>);
  for (std::size_t i = 0; i < values.size(); ++i) t.data_as<I>()[i] = static_cast<I>(values[i]);
  return t;
}

CsrMatrix matrix_of(std::int64_t rows, std::int64_t cols, const Entries& e, DType dtype,
                    DType index) {
  const auto nnz = static_cast<std::int64_t>(e.values.size());
  const bool i64 = index == DType::i64;
  return CsrMatrix(
      rows, cols,
      i64 ? index_tensor<std::int64_t>(e.row_ptr) : index_tensor<std::int32_t>(e.row_ptr),
      i64 ? index_tensor<std::int64_t>(e.col_idx) : index_tensor<std::int32_t>(e.col_idx),
      make_tensor({nnz}, dtype, e.values));
}

// Rows of 0..7 entries (so four-row groups have rows of unequal length and empty rows) at column
// offsets within `band` of the row (clamped to the matrix), values drawn from `distinct` values.
Entries random_entries(std::int64_t rows, std::int64_t cols, std::int64_t band, int distinct,
                       std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> length(0, 7);
  std::uniform_int_distribution<std::int64_t> offset(-band, band);
  std::uniform_int_distribution<int> pick(0, distinct - 1);
  const std::vector<double> palette = random_reals(distinct, DType::f64, seed + 1);
  Entries e;
  for (std::int64_t r = 0; r < rows; ++r) {
    const int n = r == 0 ? 1 + length(gen) % 7 : length(gen);  // never an empty matrix
    for (int k = 0; k < n; ++k) {
      e.col_idx.push_back(std::clamp<std::int64_t>(r + offset(gen), 0, cols - 1));
      e.values.push_back(palette[pick(gen)]);
    }
    e.row_ptr.push_back(static_cast<std::int64_t>(e.col_idx.size()));
  }
  return e;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// A dot product's bits, or both NaN: where rows with NaNs of different payloads meet in the sum,
// IEEE 754 leaves the payload open (TwoNanPayloadsInOneRowGiveANan).
bool same_dot(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0 || (std::isnan(a) && std::isnan(b));
}

TEST(CsrCompact, EachEncodingIsChosenOnlyWhereTheMatrixAllowsIt) {
  const std::int64_t n = 300;
  // Banded, three values: both encodings.
  const CsrMatrix both =
      matrix_of(n, n, random_entries(n, n, 40, 3, 1), DType::f64, DType::i32).compacted();
  ASSERT_NE(both.compact_index(), nullptr);
  EXPECT_TRUE(both.compact_index()->has_offsets());
  EXPECT_TRUE(both.compact_index()->has_codes());
  EXPECT_EQ(both.compact_index()->value_table.numel(), 3);
  // Banded, about 1000 distinct values: offsets only.
  const CsrMatrix offsets =
      matrix_of(n, n, random_entries(n, n, 40, 1000, 2), DType::f64, DType::i64).compacted();
  ASSERT_NE(offsets.compact_index(), nullptr);
  EXPECT_TRUE(offsets.compact_index()->has_offsets());
  EXPECT_FALSE(offsets.compact_index()->has_codes());
  // Entries 40000 columns from their row, two values: codes only.
  const std::int64_t wide = 40000;
  const CsrMatrix codes =
      matrix_of(n, wide, random_entries(n, wide, wide, 2, 3), DType::f32, DType::i64).compacted();
  ASSERT_NE(codes.compact_index(), nullptr);
  EXPECT_FALSE(codes.compact_index()->has_offsets());
  EXPECT_TRUE(codes.compact_index()->has_codes());
  // Neither: the matrix itself, no index.
  const CsrMatrix plain =
      matrix_of(n, wide, random_entries(n, wide, wide, 5000, 4), DType::f64, DType::i64);
  const CsrMatrix neither = plain.compacted();
  EXPECT_EQ(neither.compact_index(), nullptr);
  EXPECT_EQ(neither.values().data(), plain.values().data());
  // Shares the storage; compacting again keeps the same index.
  EXPECT_EQ(both.compacted().compact_index(), both.compact_index());
  // No entries: nothing to compact.
  EXPECT_EQ(matrix_of(3, 3, Entries{{0, 0, 0, 0}, {}, {}}, DType::f64, DType::i32)
                .compacted()
                .compact_index(),
            nullptr);
}

TEST(CsrCompact, OffsetsAndValueCountAreCheckedAtTheirLimits) {
  // One row whose entries sit exactly 32767 columns right and (in row 32768) 32768 left: fits.
  const std::int64_t cols = 32768 + 1;
  Entries at_limit;
  at_limit.row_ptr.assign(32770, 0);
  at_limit.row_ptr[1] = 1;
  at_limit.col_idx = {32767};
  at_limit.values = {1.0};
  for (std::int64_t r = 2; r <= 32768; ++r) at_limit.row_ptr[r] = 1;
  at_limit.row_ptr[32769] = 2;
  at_limit.col_idx.push_back(0);  // row 32768, offset -32768
  at_limit.values.push_back(2.0);
  const CsrMatrix fits = matrix_of(32769, cols, at_limit, DType::f64, DType::i32).compacted();
  ASSERT_NE(fits.compact_index(), nullptr);
  EXPECT_TRUE(fits.compact_index()->has_offsets());
  // One column further: no offsets.
  Entries beyond = at_limit;
  beyond.col_idx[0] = 32768;
  EXPECT_FALSE(matrix_of(32769, cols, beyond, DType::f64, DType::i32)
                   .compacted()
                   .compact_index()
                   ->has_offsets());
  // 256 distinct values get codes, 257 do not.
  for (const int distinct : {256, 257}) {
    Entries e;
    for (int k = 0; k < distinct; ++k) {
      e.col_idx.push_back(k % 10);
      e.values.push_back(k + 0.5);
      e.row_ptr.push_back(k + 1);
    }
    const CsrMatrix a = matrix_of(distinct, 10, e, DType::f64, DType::i64).compacted();
    ASSERT_NE(a.compact_index(), nullptr) << distinct;
    EXPECT_EQ(a.compact_index()->has_codes(), distinct == 256) << distinct;
  }
}

// Every product over the compacted matrix against the same product over the stored index.
void expect_products_match(const CsrMatrix& plain, std::uint32_t seed, CpuContext& context) {
  const CsrMatrix compact = plain.compacted();
  ASSERT_NE(compact.compact_index(), nullptr) << plain.describe();
  const DType dtype = plain.dtype();
  const std::int64_t rows = plain.rows();
  const Tensor x = make_tensor({plain.cols()}, dtype, random_reals(plain.cols(), dtype, seed));
  const Tensor w = make_tensor({rows}, dtype, random_reals(rows, dtype, seed + 1));
  for (const auto& [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{-0.5, 2.0}}) {
    const Tensor y_plain = make_tensor({rows}, dtype, random_reals(rows, dtype, seed + 2));
    const Tensor y_compact = y_plain.clone();
    kernels::cpu::spmv(context, {plain, x, y_plain, alpha, beta});
    kernels::cpu::spmv(context, {compact, x, y_compact, alpha, beta});
    EXPECT_TRUE(same_bits(y_plain, y_compact)) << plain.describe() << " alpha " << alpha;
  }
  const Tensor q_plain = Tensor::empty({rows}, dtype);
  const Tensor q_compact = Tensor::empty({rows}, dtype);
  const std::int64_t pair = plain.cols() - rows;  // the rows pair with x's last entries
  const double d_plain = kernels::cpu::spmv_dot(context, {plain, x, q_plain, pair});
  const double d_compact = kernels::cpu::spmv_dot(context, {compact, x, q_compact, pair});
  EXPECT_TRUE(same_bits(q_plain, q_compact)) << plain.describe();
  EXPECT_TRUE(same_dot(d_plain, d_compact)) << plain.describe();
  const ops::SpmvDots s_plain = kernels::cpu::spmv_dots(context, {plain, x, q_plain, w});
  const ops::SpmvDots s_compact = kernels::cpu::spmv_dots(context, {compact, x, q_compact, w});
  EXPECT_TRUE(same_bits(q_plain, q_compact)) << plain.describe();
  EXPECT_TRUE(same_dot(s_plain.wq, s_compact.wq)) << plain.describe();
  EXPECT_TRUE(same_dot(s_plain.qq, s_compact.qq)) << plain.describe();
}

TEST(CsrCompact, ProductsHaveTheBitsOfTheStoredIndexForEveryEncodingAndThreadCount) {
  CpuContext one(1);
  CpuContext three(3);
  std::uint32_t seed = 10;
  // Row counts around the four-row groups and the reduction blocks' lanes.
  for (const std::int64_t rows : {1, 3, 4, 5, 31, 33, 257, 5000}) {
    for (const DType dtype : {DType::f64, DType::f32}) {
      for (const DType index : {DType::i32, DType::i64}) {
        for (const int distinct : {2, 200, 3000}) {
          for (const std::int64_t extra_cols : {0, 50000}) {
            const std::int64_t cols = rows + extra_cols;
            const std::int64_t band = extra_cols > 0 ? cols : 40;
            if (distinct == 3000 && extra_cols > 0) continue;  // neither encoding applies
            const CsrMatrix a = matrix_of(
                rows, cols, random_entries(rows, cols, band, distinct, ++seed), dtype, index);
            expect_products_match(a, seed, one);
            expect_products_match(a, seed, three);
          }
        }
      }
    }
  }
}

// A five-point stencil on an ny x nx grid (rows in grid order, entries in column order), the
// value of each entry from `value(row, k)`, k its position in the row.
template <class Value>
Entries stencil_entries(std::int64_t ny, std::int64_t nx, Value value) {
  Entries e;
  for (std::int64_t y = 0; y < ny; ++y) {
    for (std::int64_t x = 0; x < nx; ++x) {
      const std::int64_t row = y * nx + x;
      std::int64_t k = 0;
      const auto add = [&](std::int64_t col) {
        e.col_idx.push_back(col);
        e.values.push_back(value(row, k++));
      };
      if (y > 0) add(row - nx);
      if (x > 0) add(row - 1);
      add(row);
      if (x + 1 < nx) add(row + 1);
      if (y + 1 < ny) add(row + nx);
      e.row_ptr.push_back(static_cast<std::int64_t>(e.col_idx.size()));
    }
  }
  return e;
}

std::vector<std::uint8_t> quads_of(const CsrMatrix& compact) {
  const kernels::detail::CsrCompactIndex* index = compact.compact_index();
  if (index == nullptr || !index->has_quads()) return {};
  const Tensor& quads = index->row_quads;
  const std::uint8_t* q = quads.data_as<const std::uint8_t>();
  return {q, q + quads.numel()};
}

TEST(CsrCompact, RowQuadsMarkGroupsOfFourRowsWithOneShape) {
  using Index = kernels::detail::CsrCompactIndex;
  constexpr std::uint8_t kColumns = Index::kQuadSameColumns;
  constexpr std::uint8_t kBoth = Index::kQuadSameColumns | Index::kQuadSameValues;
  // 5 x 8 grid: each grid row is two groups, one touching the left edge (row 8y has no left
  // neighbour), one the right edge: no group has one shape, so there are no quads at all.
  const auto constant = [](std::int64_t, std::int64_t k) { return k == 2 ? 4.0 : -1.0; };
  const CsrMatrix a =
      matrix_of(40, 40, stencil_entries(5, 8, constant), DType::f64, DType::i32).compacted();
  ASSERT_NE(a.compact_index(), nullptr);
  EXPECT_FALSE(a.compact_index()->has_quads());
  // 4 x 12 grid: per grid row groups {0-3: left edge}, {4-7: interior}, {8-11: right edge}; grid
  // rows 0 and 3 lack the neighbour above (below) in all four rows, which keeps one shape.
  const CsrMatrix b =
      matrix_of(48, 48, stencil_entries(4, 12, constant), DType::f64, DType::i64).compacted();
  EXPECT_EQ(quads_of(b),
            (std::vector<std::uint8_t>{0, kBoth, 0, 0, kBoth, 0, 0, kBoth, 0, 0, kBoth, 0}));
  // Values that differ between rows: the same columns, not the same values.
  const auto varying = [](std::int64_t row, std::int64_t k) { return 1.0 + row + 0.25 * k; };
  const CsrMatrix c =
      matrix_of(48, 48, stencil_entries(4, 12, varying), DType::f32, DType::i32).compacted();
  EXPECT_EQ(quads_of(c), (std::vector<std::uint8_t>{0, kColumns, 0, 0, kColumns, 0, 0, kColumns, 0,
                                                    0, kColumns, 0}));
  // -0.0 and 0.0 are different values; so are two NaN payloads.
  const double nan_a = std::bit_cast<double>(std::uint64_t{0x7FF8000000000001});
  const double nan_b = std::bit_cast<double>(std::uint64_t{0x7FF8000000000002});
  for (const auto& [first, other] : {std::pair{0.0, -0.0}, std::pair{nan_a, nan_b}}) {
    const auto split = [&](std::int64_t row, std::int64_t k) {
      return k == 2 ? (row == 5 ? other : first) : -1.0;
    };
    const CsrMatrix d =
        matrix_of(48, 48, stencil_entries(4, 12, split), DType::f64, DType::i32).compacted();
    EXPECT_EQ(quads_of(d)[1], kColumns);
    EXPECT_EQ(quads_of(d)[4], kBoth);
  }
  // A last partial group is not described; fewer than four rows: no quads.
  EXPECT_EQ(
      quads_of(
          matrix_of(50, 50, stencil_entries(5, 10, constant), DType::f64, DType::i32).compacted())
          .size(),
      12u);
  EXPECT_TRUE(
      quads_of(matrix_of(3, 3, stencil_entries(1, 3, constant), DType::f64, DType::i32).compacted())
          .empty());
  // Four rows of equal length whose offsets differ in one entry: not the same columns.
  Entries skew = stencil_entries(1, 16, constant);
  skew.col_idx[skew.row_ptr[5] + 1] = 7;  // row 5's second entry: column 7, not 5
  EXPECT_EQ(quads_of(matrix_of(16, 16, skew, DType::f64, DType::i32).compacted()),
            (std::vector<std::uint8_t>{0, 0, kBoth, 0}));
}

TEST(CsrCompact, RowQuadsAloneMakeAnIndex) {
  // Entries 40000 columns apart (no 16-bit offsets) with a value per row (no codes): the four
  // rows of each group still share a shape, and the index holds only that.
  const std::int64_t rows = 4000;
  const std::int64_t far = 40000;
  Entries e;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (const std::int64_t col : {r, r + far}) {
      e.col_idx.push_back(col);
      e.values.push_back(1.0 + static_cast<double>(r) / 7.0);
    }
    e.row_ptr.push_back(static_cast<std::int64_t>(e.col_idx.size()));
  }
  const CsrMatrix plain = matrix_of(rows, rows + far, e, DType::f64, DType::i64);
  const CsrMatrix compact = plain.compacted();
  ASSERT_NE(compact.compact_index(), nullptr);
  EXPECT_FALSE(compact.compact_index()->has_offsets());
  EXPECT_FALSE(compact.compact_index()->has_codes());
  EXPECT_EQ(quads_of(compact), std::vector<std::uint8_t>(
                                   rows / 4, kernels::detail::CsrCompactIndex::kQuadSameColumns));
  EXPECT_EQ(compact.product_bytes(), plain.product_bytes() + rows / 4);
  CpuContext one(1);
  expect_products_match(plain, 3, one);
}

TEST(CsrCompact, ProductsOverRowQuadsHaveTheBitsOfTheStoredIndex) {
  // Stencil matrices, constant and varying coefficients, grid widths that put the groups at every
  // phase of the grid rows, with thread counts that split the rows at non-multiples of four.
  CpuContext one(1);
  CpuContext three(3);
  std::uint32_t seed = 500;
  const auto constant = [](std::int64_t, std::int64_t k) { return k == 2 ? 4.0 : -1.0; };
  const auto varying = [](std::int64_t row, std::int64_t k) {
    return 1.0 / (3.0 + static_cast<double>(row % 97) + 0.5 * static_cast<double>(k));
  };
  for (const auto& [ny, nx] : {std::pair<std::int64_t, std::int64_t>{1, 4},
                               {3, 5},
                               {9, 12},
                               {31, 33},
                               {64, 64},
                               {150, 257}}) {
    for (const DType dtype : {DType::f64, DType::f32}) {
      for (const DType index : {DType::i32, DType::i64}) {
        const std::int64_t n = ny * nx;
        for (const bool vary : {false, true}) {
          const CsrMatrix a =
              vary ? matrix_of(n, n, stencil_entries(ny, nx, varying), dtype, index)
                   : matrix_of(n, n, stencil_entries(ny, nx, constant), dtype, index);
          if (nx >= 12) {  // a group away from both edges
            EXPECT_FALSE(quads_of(a.compacted()).empty()) << ny << "x" << nx;
          }
          expect_products_match(a, ++seed, one);
          expect_products_match(a, seed, three);
        }
      }
    }
  }
}

TEST(CsrCompact, SignedZerosAndNanPayloadsKeepTheirBits) {
  // Each row holds at most one NaN, so its sum is that NaN (quieted) whatever the order of the
  // operands of each add: the products must keep the bits. Rows of one shape (quads, lane by
  // lane) and rows of others (the wrap-around at the end) both occur.
  const double nan_a = std::bit_cast<double>(std::uint64_t{0x7FF8000000000001});
  const double nan_b = std::bit_cast<double>(std::uint64_t{0xFFF8000000000002});
  const std::vector<double> middle = {nan_a, nan_b, -0.0, 0.0};
  Entries e;
  for (int r = 0; r < 40; ++r) {
    for (int k = 0; k < 3; ++k) {
      e.col_idx.push_back((r + k) % 40);
      e.values.push_back(k == 1 ? middle[r % 4] : (k == 0 ? -0.0 : 1.5));
    }
    e.row_ptr.push_back(static_cast<std::int64_t>(e.col_idx.size()));
  }
  const CsrMatrix a = matrix_of(40, 40, e, DType::f64, DType::i32);
  const CsrMatrix compact = a.compacted();
  ASSERT_NE(compact.compact_index(), nullptr);
  ASSERT_TRUE(compact.compact_index()->has_codes());
  EXPECT_EQ(compact.compact_index()->value_table.numel(), 4 + 1);
  EXPECT_FALSE(quads_of(compact).empty());
  CpuContext one(1);
  expect_products_match(a, 7, one);
}

TEST(CsrCompact, TwoNanPayloadsInOneRowGiveANan) {
  // Where two NaNs meet in an add, IEEE 754 does not say whose payload the result carries (x86
  // keeps the first operand's, and the compiler orders the operands): the contract is a NaN,
  // compared as a NaN (nan_aware_comparison.hpp); every other element keeps its bits.
  const double nan_a = std::bit_cast<double>(std::uint64_t{0x7FF8000000000001});
  const double nan_b = std::bit_cast<double>(std::uint64_t{0xFFF8000000000002});
  const auto two_nans = [&](std::int64_t row, std::int64_t k) {
    if (row % 3 == 0 && k == 1) return nan_a;
    if (row % 3 == 0 && k == 3) return nan_b;
    return k == 2 ? 4.0 : -1.0;
  };
  const CsrMatrix a = matrix_of(48, 48, stencil_entries(4, 12, two_nans), DType::f64, DType::i32);
  const CsrMatrix compact = a.compacted();
  ASSERT_FALSE(quads_of(compact).empty());
  const Tensor x = make_tensor({48}, DType::f64, random_reals(48, DType::f64, 3));
  const Tensor y_plain = Tensor::empty({48}, DType::f64);
  const Tensor y_compact = Tensor::empty({48}, DType::f64);
  ops::spmv(a, x, y_plain);
  ops::spmv(compact, x, y_compact);
  EXPECT_EQ(testing::count_differences(y_plain, y_compact), 0);
  EXPECT_TRUE(std::isnan(y_compact.data_as<double>()[3 * 5]));  // row 15: both NaNs
}

TEST(CsrCompact, TheOpsUseTheCompactIndexAndAStaleIndexWouldShow) {
  // ops::spmv reads the compact index, not the stored arrays: change a stored value after
  // compacting and the compact product keeps the snapshot (as documented), which the stored one
  // does not. This proves the product path goes through the index.
  const std::int64_t n = 64;
  CsrMatrix a = matrix_of(n, n, random_entries(n, n, 5, 2, 99), DType::f64, DType::i64);
  const CsrMatrix compact = a.compacted();
  ASSERT_TRUE(compact.compact_index() != nullptr && compact.compact_index()->has_codes());
  const Tensor x = make_tensor({n}, DType::f64, random_reals(n, DType::f64, 5));
  const Tensor before = Tensor::empty({n}, DType::f64);
  ops::spmv(compact, x, before);
  a.values().data_as<double>()[0] += 1.0;  // a and compact share values
  const Tensor from_index = Tensor::empty({n}, DType::f64);
  const Tensor from_stored = Tensor::empty({n}, DType::f64);
  ops::spmv(compact, x, from_index);
  ops::spmv(a, x, from_stored);
  EXPECT_TRUE(same_bits(before, from_index));
  EXPECT_FALSE(same_bits(before, from_stored));
}

}  // namespace
}  // namespace tenax
