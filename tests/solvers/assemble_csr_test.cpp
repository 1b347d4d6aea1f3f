// Assembling a CsrMatrix from triplets: the sorted, summed result, its independence of the input
// order and of the split across ranks, stored zeros, the value and index dtypes, the one rule
// shared with io::to_csr, and the refusals (each naming the value and the fix).
#include "tenax/solvers/assemble_csr.hpp"
#include "kernels/usage_error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/io/matrix_market.hpp"

namespace tenax::solvers {
namespace {

using tenax::testing::expect_usage_error;

struct Triplets {
  std::vector<std::int64_t> row, col;
  std::vector<double> value;
  void add(std::int64_t r, std::int64_t c, double v) {
    row.push_back(r);
    col.push_back(c);
    value.push_back(v);
  }
  // The same entries in another order.
  [[nodiscard]] Triplets shuffled(std::uint64_t seed) const {
    std::vector<std::size_t> p(value.size());
    std::iota(p.begin(), p.end(), std::size_t{0});
    std::shuffle(p.begin(), p.end(), std::mt19937_64(seed));
    Triplets out;
    for (const std::size_t k : p) out.add(row[k], col[k], value[k]);
    return out;
  }
};

std::vector<std::int64_t> i64s(const Tensor& t) {
  const Tensor c = t.to(Device::cpu());
  if (c.dtype() == DType::i32) {
    const auto* p = c.data_as<const std::int32_t>();
    return {p, p + c.numel()};
  }
  const auto* p = c.data_as<const std::int64_t>();
  return {p, p + c.numel()};
}

std::vector<std::uint64_t> bits(const Tensor& t) {
  const Tensor c = t.to(Device::cpu());
  std::vector<std::uint64_t> out;
  for (std::int64_t k = 0; k < c.numel(); ++k) {
    out.push_back(c.dtype() == DType::f64 ? std::bit_cast<std::uint64_t>(c.data_as<double>()[k])
                                          : std::bit_cast<std::uint32_t>(c.data_as<float>()[k]));
  }
  return out;
}

void expect_same(const CsrMatrix& a, const CsrMatrix& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.cols(), b.cols());
  EXPECT_EQ(i64s(a.row_ptr()), i64s(b.row_ptr()));
  EXPECT_EQ(i64s(a.col_idx()), i64s(b.col_idx()));
  EXPECT_EQ(bits(a.values()), bits(b.values()));
}

// A random n x n matrix given as many small contributions (duplicates at most positions) whose
// sums depend on the order of addition.
Triplets contributions(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::int64_t> near(-3, 3);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  Triplets t;
  for (std::int64_t r = 0; r < n; ++r) {
    for (int k = 0; k < 12; ++k) {
      const std::int64_t c = std::clamp<std::int64_t>(r + near(random), 0, n - 1);
      t.add(r, c, value(random) * std::pow(10.0, static_cast<int>(random() % 9) - 4));
    }
  }
  return t;
}

TEST(AssembleCsr, SortsColumnsAndSumsDuplicates) {
  Triplets t;
  t.add(1, 2, 5.0);
  t.add(0, 1, 2.0);
  t.add(1, 0, 4.0);
  t.add(0, 0, 1.0);
  t.add(1, 2, 0.5);  // duplicate of (1, 2)
  const CsrMatrix a = assemble_csr(3, 3, t.row, t.col, t.value);
  EXPECT_EQ(a.dtype(), DType::f64);
  EXPECT_EQ(a.index_dtype(), DType::i64);
  EXPECT_EQ(i64s(a.row_ptr()), (std::vector<std::int64_t>{0, 2, 4, 4}));
  EXPECT_EQ(i64s(a.col_idx()), (std::vector<std::int64_t>{0, 1, 0, 2}));
  const double* v = a.values().data_as<const double>();
  EXPECT_EQ((std::vector<double>(v, v + 4)), (std::vector<double>{1.0, 2.0, 4.0, 5.5}));
}

TEST(AssembleCsr, DuplicatesAreSummedInAscendingOrderOfValue) {
  // Ascending: -1e16 + 1 rounds to -1e16, then + 1e16 gives 0 (input order would give 1).
  Triplets t;
  t.add(0, 0, 1e16);
  t.add(0, 0, -1e16);
  t.add(0, 0, 1.0);
  const CsrMatrix a = assemble_csr(1, 1, t.row, t.col, t.value);
  EXPECT_EQ(a.values().data_as<const double>()[0], 0.0);
}

TEST(AssembleCsr, BitsDoNotDependOnTheOrderOfTheTriplets) {
  const Triplets t = contributions(200, 1);
  const CsrMatrix a = assemble_csr(200, 200, t.row, t.col, t.value);
  EXPECT_LT(a.nnz(), static_cast<std::int64_t>(t.value.size()));  // duplicates were summed
  for (std::uint64_t seed = 2; seed < 6; ++seed) {
    const Triplets s = t.shuffled(seed);
    expect_same(assemble_csr(200, 200, s.row, s.col, s.value), a);
  }
}

TEST(AssembleCsr, RowsAssembledPerRankAreTheRowsOfTheWholeMatrix) {
  const std::int64_t n = 300;
  const Triplets t = contributions(n, 7).shuffled(8);
  const CsrMatrix whole = assemble_csr(n, n, t.row, t.col, t.value);
  const std::vector<std::int64_t> row_ptr = i64s(whole.row_ptr());
  const std::vector<std::int64_t> col_idx = i64s(whole.col_idx());
  const std::vector<std::uint64_t> value_bits = bits(whole.values());
  for (const int ranks : {1, 2, 3}) {
    for (int rank = 0; rank < ranks; ++rank) {
      const kernels::ShardRange range = kernels::block_aligned_range(n, ranks, rank);
      Triplets mine;  // this rank's triplets, in a rank-dependent order
      const Triplets s = t.shuffled(static_cast<std::uint64_t>(100 + rank));
      for (std::size_t k = 0; k < s.value.size(); ++k) {
        if (s.row[k] >= range.first && s.row[k] < range.first + range.count) {
          mine.add(s.row[k], s.col[k], s.value[k]);
        }
      }
      const CsrMatrix local = assemble_csr_rows(range, n, mine.row, mine.col, mine.value);
      ASSERT_EQ(local.rows(), range.count);
      ASSERT_EQ(local.cols(), n);
      const std::int64_t begin = row_ptr[static_cast<std::size_t>(range.first)];
      const std::int64_t end = row_ptr[static_cast<std::size_t>(range.first + range.count)];
      std::vector<std::int64_t> expected_ptr;
      for (std::int64_t r = range.first; r <= range.first + range.count; ++r) {
        expected_ptr.push_back(row_ptr[static_cast<std::size_t>(r)] - begin);
      }
      EXPECT_EQ(i64s(local.row_ptr()), expected_ptr);
      EXPECT_EQ(i64s(local.col_idx()),
                std::vector<std::int64_t>(col_idx.begin() + begin, col_idx.begin() + end));
      EXPECT_EQ(bits(local.values()),
                std::vector<std::uint64_t>(value_bits.begin() + begin, value_bits.begin() + end));
    }
  }
}

TEST(AssembleCsr, StoredZerosAreKeptUnlessDropped) {
  Triplets t;
  t.add(0, 0, 2.0);
  t.add(0, 1, 0.0);  // explicit zero
  t.add(1, 0, 3.0);
  t.add(1, 0, -3.0);  // sums to zero
  t.add(1, 1, 2.0);
  EXPECT_EQ(assemble_csr(2, 2, t.row, t.col, t.value).nnz(), 4);
  AssembleOptions drop;
  drop.zeros = ZeroEntries::drop;
  const CsrMatrix a = assemble_csr(2, 2, t.row, t.col, t.value, drop);
  EXPECT_EQ(i64s(a.row_ptr()), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(i64s(a.col_idx()), (std::vector<std::int64_t>{0, 1}));
}

TEST(AssembleCsr, ValueAndIndexDtypes) {
  const Triplets t = contributions(50, 3);
  const CsrMatrix wide = assemble_csr(50, 50, t.row, t.col, t.value);
  AssembleOptions narrow;
  narrow.dtype = DType::f32;
  narrow.index_dtype = DType::i32;
  const CsrMatrix a = assemble_csr(50, 50, t.row, t.col, t.value, narrow);
  EXPECT_EQ(a.dtype(), DType::f32);
  EXPECT_EQ(a.index_dtype(), DType::i32);
  EXPECT_EQ(i64s(a.row_ptr()), i64s(wide.row_ptr()));
  EXPECT_EQ(i64s(a.col_idx()), i64s(wide.col_idx()));
  // Summed in f64, rounded once.
  for (std::int64_t k = 0; k < a.nnz(); ++k) {
    EXPECT_EQ(a.values().data_as<const float>()[k],
              static_cast<float>(wide.values().data_as<const double>()[k]));
  }
}

TEST(AssembleCsr, MatrixMarketConversionFollowsTheSameRule) {
  const Triplets t = contributions(80, 11).shuffled(12);
  io::CooMatrix coo;
  coo.rows = coo.cols = 80;
  coo.row = t.row;
  coo.col = t.col;
  coo.value = t.value;
  const io::CsrArrays arrays = io::to_csr(coo);
  const CsrMatrix a = assemble_csr(80, 80, t.row, t.col, t.value);
  EXPECT_EQ(i64s(arrays.row_ptr), i64s(a.row_ptr()));
  EXPECT_EQ(i64s(arrays.col_idx), i64s(a.col_idx()));
  EXPECT_EQ(bits(arrays.values), bits(a.values()));
}

TEST(AssembleCsr, RefusesBadInputNamingTheValue) {
  const std::vector<std::int64_t> r{0, 1}, c{0, 1};
  const std::vector<double> v{1.0, 2.0};
  expect_usage_error([&] { (void)assemble_csr(2, 2, r, c, std::vector<double>{1.0}); },
                     "differ in length (row 2, col 2, value 1)", "one element per entry");
  expect_usage_error(
      [&] {
        (void)assemble_csr(2, 2, std::vector<std::int64_t>{0, -1}, c, v);
      },
      "entry 1 has row index -1, outside [0, 2)", "0-based");
  expect_usage_error(
      [&] {
        (void)assemble_csr(2, 2, r, std::vector<std::int64_t>{0, 2}, v);
      },
      "entry 1 has column index 2, outside [0, 2)", "enlarge cols");
  expect_usage_error(
      [&] {
        (void)assemble_csr(2, 2, r, c, std::vector<double>{1.0, std::nan("")});
      },
      "entry 1 at (1, 1) has value nan", "fix the computation");
  expect_usage_error(
      [&] {
        (void)assemble_csr(2, 2, r, c,
                           std::vector<double>{-std::numeric_limits<double>::infinity(), 1.0});
      },
      "has value -inf", "fix the computation");
  expect_usage_error([&] { (void)assemble_csr(-3, 2, r, c, v); }, "rows = -3", "rows count");
  expect_usage_error([&] { (void)assemble_csr(2, std::int64_t{1} << 60, r, c, v); },
                     "cols = 1152921504606846976 is outside", "cols count");
  // A size that passes the 2^53 bound but whose row pointers no machine holds: refused before
  // anything is allocated.
  expect_usage_error([&] { (void)assemble_csr(std::int64_t{1} << 52, 2, r, c, v); },
                     "rows = 4503599627370496 needs a row pointer array of", "row count");
  AssembleOptions narrow;
  narrow.index_dtype = DType::i32;
  expect_usage_error([&] { (void)assemble_csr(2, std::int64_t{1} << 32, r, c, v, narrow); },
                     "i32 indices cannot hold 4294967296 columns", "DType::i64");
  AssembleOptions half;
  half.dtype = DType::f16;
  expect_usage_error([&] { (void)assemble_csr(2, 2, r, c, v, half); }, "value dtype f16",
                     "f64 or f32");
  expect_usage_error(
      [&] {
        (void)assemble_csr(1, 1, std::vector<std::int64_t>{0, 0}, std::vector<std::int64_t>{0, 0},
                           std::vector<double>{1e308, 1e308});
      },
      "sum to inf", "scale the matrix");
}

TEST(AssembleCsr, RowsOfAnotherRankAreRefused) {
  const kernels::ShardRange range{4, 4, 12};
  const std::vector<std::int64_t> r{4, 9}, c{0, 1};
  const std::vector<double> v{1.0, 2.0};
  expect_usage_error([&] { (void)assemble_csr_rows(range, 12, r, c, v); },
                     "entry 1 has row index 9, outside [4, 8)", "its own rows");
  expect_usage_error(
      [&] {
        (void)assemble_csr_rows(kernels::ShardRange{10, 4, 12}, 12, r, c, v);
      },
      "rows [10, 14) are not within the matrix's 12 rows", "block_aligned_range");
}

}  // namespace
}  // namespace tenax::solvers
