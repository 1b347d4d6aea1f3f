// Systems read from Matrix Market files: the matrix and b = A 1 with its known solution, a
// right-hand side file (duplicates summed), the value and index dtypes, the refusals (naming the
// file and, with MatrixMarketNames, a program's flags), and the rows read by each of 1 to 4 ranks
// of the threads communicator: the whole matrix's rows, bit for bit, with no rank holding more.
#include "tenax/runtime/matrix_market_system.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "runtime/thread_ranks.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/distributed_csr.hpp"
#include "tenax/solvers/csr_operator.hpp"

namespace tenax::runtime {
namespace {

using tenax::testing::expect_usage_error;

namespace fs = std::filesystem;
using testing::bits;
using testing::make_tensor;
using testing::uniform_values;
using testing::values_of;

class MatrixMarketSystem : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tenax-mm-system-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }

  // The n x n 1-D Laplacian (2.5 on the diagonal, -1 beside it), stored as a symmetric file.
  fs::path laplacian(std::int64_t n) {
    std::string text = "%%MatrixMarket matrix coordinate real symmetric\n" + std::to_string(n) +
                       " " + std::to_string(n) + " " + std::to_string(2 * n - 1) + "\n";
    for (std::int64_t i = 1; i <= n; ++i) {
      text += std::to_string(i) + " " + std::to_string(i) + " 2.5\n";
      if (i < n) text += std::to_string(i + 1) + " " + std::to_string(i) + " -1\n";
    }
    return write("laplacian" + std::to_string(n) + ".mtx", text);
  }

  fs::path dir_;
};

TEST_F(MatrixMarketSystem, TheMatrixWithBEqualToAOnesAndItsKnownSolution) {
  MatrixMarketSystemOptions options;
  options.matrix = laplacian(5);
  const LinearSystem system = read_matrix_market_system(options);
  const auto& csr = dynamic_cast<const solvers::CsrOperator&>(*system.a);
  EXPECT_EQ(system.rows, 5);
  EXPECT_EQ(system.nnz, 13);
  EXPECT_EQ(system.comm, nullptr);
  EXPECT_EQ(values_of(csr.matrix().to_dense()),
            (std::vector<double>{2.5, -1, 0, 0, 0,  -1,  2.5, -1, 0, 0, 0,  -1, 2.5,
                                 -1,  0,  0, 0, -1, 2.5, -1,  0,  0, 0, -1, 2.5}));
  EXPECT_EQ(values_of(system.b), (std::vector<double>{1.5, 0.5, 0.5, 0.5, 1.5}));
  EXPECT_EQ(system.solution, std::vector<double>(5, 1.0));
}

TEST_F(MatrixMarketSystem, ARightHandSideFileInTheDtypesAsked) {
  MatrixMarketSystemOptions options;
  options.matrix = laplacian(4);
  // Coordinate form, with a duplicate that adds up and a row left at zero.
  options.rhs = write("b.mtx",
                      "%%MatrixMarket matrix coordinate real general\n4 1 4\n1 1 0.5\n3 1 2\n"
                      "1 1 0.25\n4 1 -1\n");
  options.dtype = DType::f32;
  options.index_dtype = DType::i32;
  const LinearSystem system = read_matrix_market_system(options);
  const auto& csr = dynamic_cast<const solvers::CsrOperator&>(*system.a);
  EXPECT_EQ(csr.matrix().dtype(), DType::f32);
  EXPECT_EQ(csr.matrix().index_dtype(), DType::i32);
  EXPECT_EQ(system.b.dtype(), DType::f32);
  EXPECT_EQ(values_of(system.b), (std::vector<double>{0.75, 0.0, 2.0, -1.0}));
  EXPECT_FALSE(system.solution.has_value()) << "a given b has no known solution";
}

TEST_F(MatrixMarketSystem, BadFilesAreRefusedNamingTheFileOrTheFlag) {
  const fs::path rect = write("rect.mtx",
                              "%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1\n"
                              "2 2 1\n3 3 1\n");
  MatrixMarketSystemOptions options;
  options.matrix = rect;
  expect_usage_error([&] { (void)read_matrix_market_system(options); },
                     "matrix file " + rect.string() + " is 3 x 4",
                     "Krylov solvers need a square, non-empty matrix");
  options.names = {.matrix = "--matrix", .rhs = "--rhs", .index = "--index"};
  expect_usage_error([&] { (void)read_matrix_market_system(options); },
                     "--matrix " + rect.string() + " is 3 x 4", "square, non-empty");
  // A size line that promises more rows than the file has entries: an empty row, so singular.
  options.matrix = write("promise.mtx",
                         "%%MatrixMarket matrix coordinate real general\n50000000 50000000 3\n"
                         "1 1 1.0\n2 2 1.0\n3 3 1.0\n");
  expect_usage_error([&] { (void)read_matrix_market_system(options); },
                     "stores 3 entries for 50000000 rows: at least 49999997 rows have no entry, "
                     "so the matrix is singular",
                     "size line");
  options.matrix = laplacian(6);
  options.rhs = write("b5.mtx", "%%MatrixMarket matrix array real general\n5 1\n1\n2\n3\n4\n5\n");
  expect_usage_error([&] { (void)read_matrix_market_system(options); },
                     "--rhs " + options.rhs.string() + " is 5 x 1, the matrix has 6 rows",
                     "give a 6 x 1 vector");
  options.rhs.clear();
  options.dtype = DType::i64;
  expect_usage_error([&] { (void)read_matrix_market_system(options); },
                     "dtype i64 is not supported", "DType::f64 or DType::f32");
  options.dtype = DType::f64;
  options.index_dtype = DType::f32;
  expect_usage_error([&] { (void)read_matrix_market_system(options); },
                     "index dtype f32 is not supported", "DType::i64 or DType::i32");
  options.index_dtype = DType::i64;
  options.matrix = dir_ / "missing.mtx";
  EXPECT_THROW((void)read_matrix_market_system(options), Error);
}

class MatrixMarketRanks : public MatrixMarketSystem, public ::testing::WithParamInterface<int> {};

TEST_P(MatrixMarketRanks, EachRankReadsItsRowsWithTheSingleProcessBits) {
  const int ranks = GetParam();
  const std::int64_t n = 4 * kernels::kReduceBlock + 100;
  MatrixMarketSystemOptions options;
  options.matrix = laplacian(n);
  const LinearSystem whole = read_matrix_market_system(options);
  std::string rhs_text = "%%MatrixMarket matrix array real general\n" + std::to_string(n) + " 1\n";
  for (std::int64_t i = 0; i < n; ++i) rhs_text += std::to_string(i % 7 - 3) + "\n";
  MatrixMarketSystemOptions with_rhs = options;
  with_rhs.rhs = write("b.mtx", rhs_text);
  const LinearSystem whole_rhs = read_matrix_market_system(with_rhs);
  const Tensor x = make_tensor(uniform_values(n, 3, -1.0, 1.0), DType::f64);
  const Tensor ax = Tensor::empty({n}, DType::f64);
  whole.a->apply(x, ax);
  std::vector<std::int64_t> reported(static_cast<std::size_t>(ranks), -1);
  const auto errors = testing::on_thread_ranks(ranks, 60, [&](int r, Communicator& comm) {
    MatrixMarketSystemOptions mine = options;
    mine.on_rows_read = [&](const kernels::ShardRange& rows, std::int64_t local,
                            std::int64_t entries) {
      EXPECT_EQ(rows.first, kernels::block_aligned_range(n, ranks, r).first);
      EXPECT_EQ(entries, 2 * n - 1 + (n - 1));
      reported[static_cast<std::size_t>(r)] = local;
    };
    const LinearSystem split = read_matrix_market_system(comm, mine);
    const kernels::ShardRange range = kernels::block_aligned_range(n, ranks, r);
    EXPECT_EQ(split.range.first, range.first);
    EXPECT_EQ(split.range.count, range.count);
    EXPECT_EQ(split.rows, n);
    EXPECT_EQ(split.nnz, whole.nnz);
    EXPECT_EQ(split.comm, ranks > 1 ? &comm : nullptr);
    if (ranks > 1) {
      EXPECT_LT(split.local_nnz, whole.nnz) << "no rank holds the whole matrix";
      EXPECT_EQ(reported[static_cast<std::size_t>(r)], split.local_nnz);
    }
    const Tensor xs = x.slice(range.first, range.first + range.count).clone();
    const Tensor ys = Tensor::empty({range.count}, DType::f64);
    split.a->apply(xs, ys);
    const MatrixMarketSystemOptions mine_rhs = with_rhs;
    const LinearSystem split_rhs = read_matrix_market_system(comm, mine_rhs);
    for (std::int64_t i = 0; i < range.count; ++i) {
      const std::int64_t g = range.first + i;
      ASSERT_EQ(bits(ys.data_as<double>()[i]), bits(ax.data_as<double>()[g])) << g;
      ASSERT_EQ(bits(split.b.data_as<double>()[i]), bits(whole.b.data_as<double>()[g])) << g;
      ASSERT_EQ((*split.solution)[static_cast<std::size_t>(i)], 1.0) << g;
      ASSERT_EQ(bits(split_rhs.b.data_as<double>()[i]), bits(whole_rhs.b.data_as<double>()[g]))
          << g;
    }
    EXPECT_FALSE(split_rhs.solution.has_value());
  });
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << r;
}

INSTANTIATE_TEST_SUITE_P(Ranks, MatrixMarketRanks, ::testing::Values(1, 2, 3, 4));

TEST_F(MatrixMarketSystem, AnEmptyRowIsRefusedOnEveryRank) {
  // 10 000 rows, all with a diagonal entry but row 9000 (on the last of three ranks' rows).
  const std::int64_t n = 10000;
  std::string text = "%%MatrixMarket matrix coordinate real general\n" + std::to_string(n) + " " +
                     std::to_string(n) + " " + std::to_string(n - 1) + "\n";
  for (std::int64_t i = 1; i <= n; ++i) {
    if (i != 9001) text += std::to_string(i) + " " + std::to_string(i) + " 1\n";
  }
  MatrixMarketSystemOptions options;
  options.matrix = write("gap.mtx", text);
  const auto errors = testing::on_thread_ranks(
      3, 60, [&](int, Communicator& comm) { (void)read_matrix_market_system(comm, options); });
  for (const std::string& error : errors) {
    EXPECT_NE(error.find("stores 9999 entries for 10000 rows: at least 1 rows have no entry"),
              std::string::npos)
        << error;
  }
}

// A file with as many entries as rows (a duplicate, or an off-diagonal entry, in place of a
// row's own) still has an empty row: found from the rows themselves, and refused alike on 1 to 3
// ranks, naming the first empty row as the file counts it.
TEST_F(MatrixMarketSystem, AnEmptyRowHiddenByTheEntryCountIsRefusedOnAnyRankCount) {
  MatrixMarketSystemOptions options;
  options.matrix = write("hidden.mtx",
                         "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 2.0\n"
                         "1 2 -1.0\n3 3 2.0\n");
  expect_usage_error(
      [&] { (void)read_matrix_market_system(options); },
      "has 1 row(s) without an entry (the first is row 2), so the matrix is singular",
      "give every row an entry");
  for (const int ranks : {2, 3}) {
    const auto errors = testing::on_thread_ranks(ranks, 60, [&](int, Communicator& comm) {
      (void)read_matrix_market_system(comm, options);
    });
    for (const std::string& error : errors) {
      EXPECT_NE(error.find("(the first is row 2)"), std::string::npos) << ranks << ": " << error;
    }
  }
}

// Values f32 cannot hold -- beyond its range (inf) or non-zero but below its smallest subnormal
// (0, a singular matrix) -- are refused for an f32 system, in the matrix on any rank count and in
// the right-hand side, naming the row; f64 takes them.
TEST_F(MatrixMarketSystem, ValuesBeyondF32AreRefusedForAnF32System) {
  MatrixMarketSystemOptions options;
  options.dtype = DType::f32;
  for (const char* value : {"1e39", "-1e39", "1e-50"}) {
    options.matrix = write("big.mtx", std::string("%%MatrixMarket matrix coordinate real general\n"
                                                  "2 2 2\n1 1 1.0\n2 2 ") +
                                          value + "\n");
    expect_usage_error([&] { (void)read_matrix_market_system(options); },
                       "holds 1 value(s) that f32 cannot hold (the first in row 2)",
                       "solve in f64");
    const auto errors = testing::on_thread_ranks(
        2, 60, [&](int, Communicator& comm) { (void)read_matrix_market_system(comm, options); });
    for (const std::string& error : errors) {
      EXPECT_NE(error.find("f32 cannot hold (the first in row 2)"), std::string::npos) << error;
    }
    options.dtype = DType::f64;
    EXPECT_NO_THROW((void)read_matrix_market_system(options)) << value;
    options.dtype = DType::f32;
  }
  options.matrix = laplacian(3);
  options.rhs = write("b.mtx", "%%MatrixMarket matrix array real general\n3 1\n1\n1e39\n1\n");
  expect_usage_error([&] { (void)read_matrix_market_system(options); },
                     "the value 1e+39 of row 2 is inf in f32", "solve in f64");
}

}  // namespace
}  // namespace tenax::runtime
