#include "tenax/io/matrix_market.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "host_memory_limit.hpp"
#include "tenax/io/checksum.hpp"

namespace tenax::io {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class MatrixMarket : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        fs::temp_directory_path() / ("tenax_mm_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path write(const std::string& name, const std::string& text) const {
    const fs::path path = dir_ / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    return path;
  }

  static std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  fs::path dir_;
};

std::vector<std::int64_t> i64s(const Tensor& t) {
  const auto* p = t.data_as<const std::int64_t>();
  return std::vector<std::int64_t>(p, p + t.numel());
}

std::vector<double> f64s(const Tensor& t) {
  const auto* p = t.data_as<const double>();
  return std::vector<double>(p, p + t.numel());
}

std::vector<std::uint64_t> bits(const std::vector<double>& values) {
  std::vector<std::uint64_t> out;
  for (double v : values) out.push_back(std::bit_cast<std::uint64_t>(v));
  return out;
}

// Dense row-major copy of a COO matrix, duplicates summed in order.
std::vector<double> dense_of(const CooMatrix& coo) {
  std::vector<double> d(static_cast<std::size_t>(coo.rows * coo.cols), 0.0);
  for (std::size_t k = 0; k < coo.value.size(); ++k) {
    d[static_cast<std::size_t>(coo.row[k] * coo.cols + coo.col[k])] += coo.value[k];
  }
  return d;
}

std::vector<double> dense_of(const CsrArrays& csr) {
  std::vector<double> d(static_cast<std::size_t>(csr.rows * csr.cols), 0.0);
  const auto rp = i64s(csr.row_ptr);
  const auto ci = i64s(csr.col_idx);
  const auto v = f64s(csr.values);
  for (std::int64_t r = 0; r < csr.rows; ++r) {
    for (std::int64_t p = rp[r]; p < rp[r + 1]; ++p) d[r * csr.cols + ci[p]] += v[p];
  }
  return d;
}

// row_ptr starts at 0, ends at nnz and never decreases; columns are in range and strictly
// increasing within a row.
void expect_canonical(const CsrArrays& csr) {
  const auto rp = i64s(csr.row_ptr);
  const auto ci = i64s(csr.col_idx);
  ASSERT_EQ(static_cast<std::int64_t>(rp.size()), csr.rows + 1);
  EXPECT_EQ(rp.front(), 0);
  EXPECT_EQ(rp.back(), static_cast<std::int64_t>(ci.size()));
  EXPECT_EQ(csr.values.numel(), csr.col_idx.numel());
  for (std::int64_t r = 0; r < csr.rows; ++r) {
    ASSERT_LE(rp[r], rp[r + 1]);
    for (std::int64_t p = rp[r]; p < rp[r + 1]; ++p) {
      ASSERT_GE(ci[p], 0);
      ASSERT_LT(ci[p], csr.cols);
      if (p > rp[r]) {
        ASSERT_LT(ci[p - 1], ci[p]) << "row " << r;
      }
    }
  }
}

const std::vector<double> kAwkwardValues = {0.1,
                                            1e-300,
                                            -0.0,
                                            1.7976931348623157e308,
                                            4.9406564584124654e-324,
                                            1.0 / 3,
                                            -2.5,
                                            123456789.123456789,
                                            2.2250738585072014e-308,
                                            9007199254740993.0,
                                            -1e300,
                                            0.0,
                                            6.02214076e23,
                                            -7.0,
                                            1e-310};

TEST_F(MatrixMarket, GeneralRoundTripIsBitwiseExactInOrderWithDuplicates) {
  CooMatrix a;
  a.rows = 9;
  a.cols = 8;
  std::mt19937_64 rng(1234);
  for (std::size_t k = 0; k < 60; ++k) {
    a.row.push_back(static_cast<std::int64_t>(rng() % 9));
    a.col.push_back(static_cast<std::int64_t>(rng() % 8));
    a.value.push_back(k < kAwkwardValues.size() ? kAwkwardValues[k]
                                                : std::ldexp(double(rng() >> 11), -40) - 1e3);
  }
  a.row.push_back(a.row[0]);  // a repeated position stays a separate entry
  a.col.push_back(a.col[0]);
  a.value.push_back(5.0);
  for (int precision : {0, 17}) {
    const fs::path path = dir_ / ("a" + std::to_string(precision) + ".mtx");
    write_matrix_market(path, a, Symmetry::general, precision);
    const CooMatrix b = read_matrix_market(path);
    EXPECT_EQ(b.rows, a.rows);
    EXPECT_EQ(b.cols, a.cols);
    EXPECT_EQ(b.row, a.row);
    EXPECT_EQ(b.col, a.col);
    EXPECT_EQ(bits(b.value), bits(a.value)) << "precision " << precision;
  }
  EXPECT_EQ(
      slurp(dir_ / "a0.mtx").rfind("%%MatrixMarket matrix coordinate real general\n9 8 61\n", 0),
      0u);
}

TEST_F(MatrixMarket, FewerDigitsAreAllowedButLossy) {
  CooMatrix a{1, 1, {0}, {0}, {0.1}};
  write_matrix_market(dir_ / "p3.mtx", a, Symmetry::general, 3);
  EXPECT_NE(slurp(dir_ / "p3.mtx").find("1 1 0.1\n"), std::string::npos);
  EXPECT_THROW(write_matrix_market(dir_ / "bad.mtx", a, Symmetry::general, 18), UsageError);
  EXPECT_THROW(write_matrix_market(dir_ / "bad.mtx", a, Symmetry::general, -1), UsageError);
  EXPECT_FALSE(fs::exists(dir_ / "bad.mtx"));
}

// The output path is replaced only when it is a regular file or missing: a FIFO, a character
// device, a symbolic link and a directory are refused and left as they were (the link's target
// untouched), and nothing is left beside them.
TEST_F(MatrixMarket, WritingRefusesAnythingButARegularFile) {
  const CooMatrix a{1, 1, {0}, {0}, {1.0}};
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0644), 0);
  std::ofstream(dir_ / "target.txt") << "keep";
  fs::create_symlink(dir_ / "target.txt", dir_ / "link.mtx");
  fs::create_directory(dir_ / "folder");
  for (const fs::path& path :
       {dir_ / "fifo", dir_ / "link.mtx", dir_ / "folder", fs::path("/dev/null")}) {
    const auto kind_before = fs::symlink_status(path).type();
    try {
      write_matrix_market(path, a);
      ADD_FAILURE() << path << " was written";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
    EXPECT_EQ(fs::symlink_status(path).type(), kind_before) << path;
  }
  EXPECT_EQ(slurp(dir_ / "target.txt"), "keep");
  EXPECT_THROW(write_matrix_market("", a), UsageError);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 4u) << "a temporary was left behind";
}

CooMatrix random_symmetric(std::int64_t n, bool skew, std::uint64_t seed) {
  CooMatrix a;
  a.rows = a.cols = n;
  std::mt19937_64 rng(seed);
  std::size_t next_awkward = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) {
      if (rng() % 3 != 0 || (skew && i == j)) continue;
      const double v = kAwkwardValues[next_awkward++ % kAwkwardValues.size()];
      a.row.push_back(i);
      a.col.push_back(j);
      a.value.push_back(v);
      if (i != j) {
        a.row.push_back(j);
        a.col.push_back(i);
        a.value.push_back(skew ? -v : v);
      }
    }
  }
  return a;
}

TEST_F(MatrixMarket, SymmetricRoundTripWritesTheLowerTriangleAndIsBitwiseExact) {
  const CooMatrix a = random_symmetric(9, false, 7);
  const fs::path path = dir_ / "s.mtx";
  write_matrix_market(path, a, Symmetry::symmetric);
  // Only the lower triangle is stored.
  const CooMatrix lower = [&] {
    CooMatrix l;
    std::ifstream in(path);
    std::string banner;
    std::getline(in, banner);
    EXPECT_EQ(banner, "%%MatrixMarket matrix coordinate real symmetric");
    std::int64_t nnz = 0;
    in >> l.rows >> l.cols >> nnz;
    for (std::int64_t k = 0; k < nnz; ++k) {
      std::int64_t i = 0, j = 0;
      std::string value;
      in >> i >> j >> value;
      EXPECT_GE(i, j);
      l.row.push_back(i);
      l.col.push_back(j);
      l.value.push_back(0.0);
    }
    return l;
  }();
  std::int64_t diagonal = 0;
  for (std::size_t k = 0; k < a.value.size(); ++k) diagonal += a.row[k] == a.col[k] ? 1 : 0;
  EXPECT_EQ(lower.nnz(), (a.nnz() + diagonal) / 2);

  const CooMatrix b = read_matrix_market(path);
  EXPECT_EQ(b.nnz(), a.nnz());
  const CsrArrays ca = to_csr(a, DuplicatePolicy::error);
  const CsrArrays cb = to_csr(b, DuplicatePolicy::error);
  EXPECT_EQ(i64s(cb.row_ptr), i64s(ca.row_ptr));
  EXPECT_EQ(i64s(cb.col_idx), i64s(ca.col_idx));
  EXPECT_EQ(bits(f64s(cb.values)), bits(f64s(ca.values)));
}

TEST_F(MatrixMarket, SkewSymmetricRoundTripAndExpansion) {
  const fs::path path = write("k.mtx",
                              "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                              "3 3 2\n"
                              "2 1 1.5\n"
                              "3 2 -4\n");
  const CsrArrays csr = to_csr(read_matrix_market(path));
  EXPECT_EQ(dense_of(csr), (std::vector<double>{0, -1.5, 0, 1.5, 0, 4, 0, -4, 0}));

  const CooMatrix a = random_symmetric(8, true, 99);
  write_matrix_market(dir_ / "k2.mtx", a, Symmetry::skew_symmetric);
  const CooMatrix b = read_matrix_market(dir_ / "k2.mtx");
  EXPECT_EQ(bits(f64s(to_csr(b).values)), bits(f64s(to_csr(a).values)));
}

TEST_F(MatrixMarket, SymmetricFileExpandsWithTheDiagonalOnce) {
  const fs::path path = write("s.mtx",
                              "%%MatrixMarket matrix coordinate real symmetric\n"
                              "3 3 3\n"
                              "1 1 2\n"
                              "3 1 -1\n"
                              "3 3 5\n");
  const CooMatrix a = read_matrix_market(path);
  EXPECT_EQ(a.nnz(), 4);
  EXPECT_EQ(dense_of(a), (std::vector<double>{2, 0, -1, 0, 0, 0, -1, 0, 5}));
}

// Each rank of a job reads only its rows: the row ranges of any split, read one by one, hold
// together exactly the entries of the whole read, in its order (symmetric and skew-symmetric
// files are expanded before the rows are selected), and a range outside the matrix is refused.
TEST_F(MatrixMarket, ReadingByRowsKeepsOnlyTheSelectedRowsOfTheExpandedMatrix) {
  for (const char* symmetry : {"general", "symmetric", "skew-symmetric"}) {
    SCOPED_TRACE(symmetry);
    std::string text = std::string("%%MatrixMarket matrix coordinate real ") + symmetry + "\n";
    std::vector<std::string> lines;
    const std::int64_t n = 9;
    for (std::int64_t i = 1; i <= n; ++i) {
      for (std::int64_t j = 1; j <= i; ++j) {
        if ((i * 7 + j * 3) % 4 != 0) continue;
        if (std::string(symmetry) == "skew-symmetric" && i == j) continue;
        lines.push_back(std::to_string(i) + " " + std::to_string(j) + " " +
                        std::to_string(0.5 * static_cast<double>(i) - static_cast<double>(j)));
      }
    }
    text += std::to_string(n) + " " + std::to_string(n) + " " + std::to_string(lines.size()) + "\n";
    for (const std::string& line : lines) text += line + "\n";
    const fs::path path = write("rows.mtx", text);
    const CooMatrix whole = read_matrix_market(path);
    for (const std::int64_t parts : {1, 2, 4}) {
      std::vector<std::int64_t> rows, cols;
      std::vector<double> values;
      std::vector<std::tuple<std::int64_t, std::int64_t, double>> kept;
      for (std::int64_t p = 0; p < parts; ++p) {
        const std::int64_t first = n * p / parts;
        const std::int64_t count = n * (p + 1) / parts - first;
        const CooMatrix mine = read_matrix_market_rows(path, [&](std::int64_t r, std::int64_t c) {
          EXPECT_EQ(r, n);
          EXPECT_EQ(c, n);
          return RowRange{first, count};
        });
        EXPECT_EQ(mine.rows, n);
        for (std::int64_t k = 0; k < mine.nnz(); ++k) {
          const std::int64_t i = mine.row[static_cast<std::size_t>(k)];
          EXPECT_TRUE(i >= first && i < first + count) << i;
          kept.emplace_back(i, mine.col[static_cast<std::size_t>(k)],
                            mine.value[static_cast<std::size_t>(k)]);
        }
        if (parts > 1) EXPECT_LT(mine.nnz(), whole.nnz());
      }
      // Row by row, the entries appear in the whole read's order.
      std::vector<std::tuple<std::int64_t, std::int64_t, double>> expected;
      for (std::int64_t k = 0; k < whole.nnz(); ++k) {
        expected.emplace_back(whole.row[static_cast<std::size_t>(k)],
                              whole.col[static_cast<std::size_t>(k)],
                              whole.value[static_cast<std::size_t>(k)]);
      }
      const auto by_row = [](const auto& a, const auto& b) {
        return std::get<0>(a) < std::get<0>(b);
      };
      std::stable_sort(expected.begin(), expected.end(), by_row);
      std::stable_sort(kept.begin(), kept.end(), by_row);
      EXPECT_EQ(kept, expected) << parts << " parts";
    }
    for (const RowRange bad : {RowRange{-1, 2}, RowRange{5, 5}, RowRange{0, -1}, RowRange{10, 0}}) {
      EXPECT_THROW(
          (void)read_matrix_market_rows(path, [&](std::int64_t, std::int64_t) { return bad; }),
          UsageError);
    }
  }
}

TEST_F(MatrixMarket, PatternAndIntegerFieldsReadAsReal) {
  const CooMatrix p =
      read_matrix_market(write("p.mtx",
                               "%%MatrixMarket matrix coordinate pattern symmetric\n"
                               "2 2 2\n"
                               "1 1\n"
                               "2 1\n"));
  EXPECT_EQ(dense_of(p), (std::vector<double>{1, 1, 1, 0}));
  const CooMatrix i = read_matrix_market(write("i.mtx",
                                               "%%MatrixMarket matrix coordinate integer general\n"
                                               "1 2 2\n"
                                               "1 1 -7\n"
                                               "1 2 9007199254740992\n"));
  EXPECT_EQ(dense_of(i), (std::vector<double>{-7, 9007199254740992.0}));
}

TEST_F(MatrixMarket, ToleratesCaseCommentsBlankLinesCrlfAndWhitespace) {
  const CooMatrix a = read_matrix_market(write("t.mtx",
                                               "%%matrixmarket MATRIX Coordinate Real General  \r\n"
                                               "% a comment\r\n"
                                               "\r\n"
                                               "%another\r\n"
                                               "  2 3 2 \t\r\n"
                                               "1 3 +2.5e0\r\n"
                                               "\r\n"
                                               "\t2  1   -1E-1   \r\n"
                                               "% trailing comment\r\n"));
  EXPECT_EQ(a.rows, 2);
  EXPECT_EQ(a.cols, 3);
  EXPECT_EQ(a.row, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(a.col, (std::vector<std::int64_t>{2, 0}));
  EXPECT_EQ(a.value, (std::vector<double>{2.5, -0.1}));
  // No newline at the end of the last line.
  const CooMatrix b = read_matrix_market(
      write("n.mtx", "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 4"));
  EXPECT_EQ(b.value, (std::vector<double>{4}));
  // An empty matrix.
  const CooMatrix c =
      read_matrix_market(write("e.mtx", "%%MatrixMarket matrix coordinate real general\n0 0 0\n"));
  EXPECT_EQ(c.nnz(), 0);
  EXPECT_EQ(i64s(to_csr(c).row_ptr), (std::vector<std::int64_t>{0}));
}

TEST_F(MatrixMarket, ReadsDenseArrays) {
  const CooMatrix g = read_matrix_market(write("g.mtx",
                                               "%%MatrixMarket matrix array real general\n"
                                               "2 3\n1\n2\n3\n4\n5\n6\n"));
  EXPECT_EQ(g.nnz(), 6);
  EXPECT_EQ(dense_of(g), (std::vector<double>{1, 3, 5, 2, 4, 6}));  // column-major in the file
  const CooMatrix s = read_matrix_market(write("s.mtx",
                                               "%%MatrixMarket matrix array real symmetric\n"
                                               "3 3\n1\n2\n3\n4\n5\n6\n"));
  EXPECT_EQ(dense_of(s), (std::vector<double>{1, 2, 3, 2, 4, 5, 3, 5, 6}));
  const CooMatrix k =
      read_matrix_market(write("k.mtx",
                               "%%MatrixMarket matrix array integer skew-symmetric\n"
                               "3 3\n1\n2\n3\n"));
  EXPECT_EQ(dense_of(k), (std::vector<double>{0, -1, -2, 1, 0, -3, 2, 3, 0}));
}

TEST_F(MatrixMarket, ToCsrSumsDuplicatesOrRejectsThem) {
  CooMatrix a{2, 3, {1, 0, 1, 1, 0}, {2, 1, 2, 0, 1}, {1.0, 2.0, 1e-17, 4.0, -2.0}};
  const CsrArrays csr = to_csr(a);
  expect_canonical(csr);
  EXPECT_EQ(i64s(csr.row_ptr), (std::vector<std::int64_t>{0, 1, 3}));
  EXPECT_EQ(i64s(csr.col_idx), (std::vector<std::int64_t>{1, 0, 2}));
  // 2.0 + -2.0 leaves an explicit zero in the structure.
  EXPECT_EQ(f64s(csr.values), (std::vector<double>{0.0, 4.0, 1.0}));
  try {
    (void)to_csr(a, DuplicatePolicy::error);
    FAIL() << "duplicates must be rejected";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("entries 1 and 4 are both at (0, 1)"), std::string::npos) << e.cause();
  }
}

TEST_F(MatrixMarket, ToCsrMatchesDenseOnRandomMatrices) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    CooMatrix a;
    a.rows = static_cast<std::int64_t>(rng() % 12);
    a.cols = static_cast<std::int64_t>(rng() % 12);
    const std::size_t nnz = a.rows * a.cols == 0 ? 0 : rng() % 80;
    for (std::size_t k = 0; k < nnz; ++k) {
      a.row.push_back(static_cast<std::int64_t>(rng() % a.rows));
      a.col.push_back(static_cast<std::int64_t>(rng() % a.cols));
      a.value.push_back(static_cast<double>(static_cast<int>(rng() % 21) - 10));  // exact sums
    }
    const CsrArrays csr = to_csr(a);
    expect_canonical(csr);
    EXPECT_EQ(dense_of(csr), dense_of(a)) << "trial " << trial;
  }
}

TEST_F(MatrixMarket, ToCsrRejectsInconsistentInput) {
  EXPECT_THROW((void)to_csr(CooMatrix{2, 2, {0, 1}, {0}, {1.0, 2.0}}), UsageError);
  EXPECT_THROW((void)to_csr(CooMatrix{2, 2, {2}, {0}, {1.0}}), UsageError);
  EXPECT_THROW((void)to_csr(CooMatrix{2, 2, {0}, {-1}, {1.0}}), UsageError);
  EXPECT_THROW((void)to_csr(CooMatrix{-1, 2, {}, {}, {}}), UsageError);
}

TEST_F(MatrixMarket, WriterRejectsAsymmetryNamingTheEntry) {
  CooMatrix a{3, 3, {0, 1, 2, 0}, {1, 0, 1, 0}, {2.0, 2.0, 3.0, 1.0}};
  try {
    write_matrix_market(dir_ / "a.mtx", a, Symmetry::symmetric);
    FAIL() << "an asymmetric matrix must be rejected";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("entry (2, 1) is 3 but entry (1, 2) is 0 (absent)"), std::string::npos)
        << e.cause();
    EXPECT_NE(e.fix().find("Symmetry::general"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(dir_ / "a.mtx"));
  // Symmetric, but not skew-symmetric.
  CooMatrix s{2, 2, {0, 1}, {1, 0}, {2.0, 2.0}};
  EXPECT_NO_THROW(write_matrix_market(dir_ / "s.mtx", s, Symmetry::symmetric));
  EXPECT_THROW(write_matrix_market(dir_ / "k.mtx", s, Symmetry::skew_symmetric), UsageError);
  // More entries than positions would make a file that readers reject.
  EXPECT_THROW(write_matrix_market(dir_ / "d.mtx", CooMatrix{1, 1, {0, 0}, {0, 0}, {1.0, 2.0}}),
               UsageError);
  // Non-square, non-finite.
  EXPECT_THROW(
      write_matrix_market(dir_ / "r.mtx", CooMatrix{2, 3, {}, {}, {}}, Symmetry::symmetric),
      UsageError);
  EXPECT_THROW(write_matrix_market(dir_ / "n.mtx", CooMatrix{1, 1, {0}, {0}, {std::nan("")}}),
               UsageError);
  EXPECT_THROW(write_matrix_market(dir_ / "no_such_dir" / "x.mtx", s), IoError);
}

// A missing file is an I/O error; a directory is not a file at all, a usage error (as a FIFO or
// a device is: AFifoIsRefusedWithoutBlockingByTheReaderAndTheDigest).
TEST_F(MatrixMarket, MissingFileIsAnIoErrorAndADirectoryAUsageError) {
  EXPECT_THROW((void)read_matrix_market(dir_ / "absent.mtx"), IoError);
  EXPECT_THROW((void)read_matrix_market(dir_), UsageError);
}

struct Malformed {
  const char* name;
  std::string text;
  int line;             // the line the error must name
  const char* problem;  // text the cause must contain
};

const std::string kGeneral = "%%MatrixMarket matrix coordinate real general\n";
const std::string kSymmetric = "%%MatrixMarket matrix coordinate real symmetric\n";

std::vector<Malformed> malformed_cases() {
  return {
      {"empty", "", 1, "the file is empty"},
      {"no_banner", "3 3 1\n1 1 1\n", 1, "not a %%MatrixMarket banner"},
      {"short_banner", "%%MatrixMarket matrix coordinate real\n1 1 0\n", 1, "3 of its 4 fields"},
      {"long_banner", "%%MatrixMarket matrix coordinate real general extra\n", 1,
       "unexpected 'extra'"},
      {"vector", "%%MatrixMarket vector coordinate real general\n", 1, "object 'vector'"},
      {"bad_format", "%%MatrixMarket matrix sparse real general\n", 1, "format 'sparse'"},
      {"complex", "%%MatrixMarket matrix coordinate complex general\n", 1, "complex"},
      {"hermitian", "%%MatrixMarket matrix coordinate real hermitian\n", 1, "hermitian"},
      {"array_pattern", "%%MatrixMarket matrix array pattern general\n", 1, "pattern"},
      {"no_size_line", kGeneral + "% only a comment\n", 2, "ends before the size line"},
      {"short_size_line", kGeneral + "% c\n3 3\n", 3, "2 of its 3 fields"},
      {"long_size_line", kGeneral + "3 3 1 4\n1 1 1\n", 2, "unexpected '4'"},
      {"negative_rows", kGeneral + "-3 3 0\n", 2, "row count -3 is negative"},
      {"text_size", kGeneral + "3 x 0\n", 2, "column count 'x' is not an integer"},
      {"huge_rows", kGeneral + "99999999999999999999 3 0\n", 2, "exceeds the limit"},
      {"too_many_declared", kGeneral + "2 2 5\n", 2, "stores at most 4"},
      {"not_square", kSymmetric + "2 3 1\n1 1 1\n", 2, "must be square"},
      {"symmetric_capacity", kSymmetric + "2 2 4\n", 2, "stores at most 3"},
      {"row_zero", kGeneral + "3 5 1\n0 1 1.0\n", 3, "row index 0 is out of range [1, 3]"},
      {"column_out_of_range", kGeneral + "3 5 2\n1 1 1\n2 7 1.0\n", 4,
       "column index 7 is out of range [1, 5]"},
      {"index_overflow", kGeneral + "3 5 1\n1 123456789012345678901 1\n", 3, "out of range [1, 5]"},
      {"index_not_integer", kGeneral + "3 5 1\n1.0 1 1\n", 3, "row index '1.0' is not an integer"},
      {"value_text", kGeneral + "3 5 1\n1 1 abc\n", 3, "value 'abc' is not a number"},
      {"value_nan", kGeneral + "3 5 1\n1 1 nan\n", 3, "value 'nan' is not finite"},
      {"value_inf", kGeneral + "3 5 1\n1 1 -inf\n", 3, "value '-inf' is not finite"},
      {"value_overflow", kGeneral + "3 5 1\n1 1 1e999\n", 3, "outside the range of a double"},
      {"value_trailing_text", kGeneral + "3 5 1\n1 1 1.5x\n", 3, "value '1.5x' is not a number"},
      {"missing_value", kGeneral + "3 5 1\n1 1\n", 3, "2 of its 3 fields"},
      {"extra_field", kGeneral + "3 5 1\n1 1 1 1\n", 3, "unexpected '1'"},
      {"too_few", kGeneral + "3 5 3\n1 1 1\n2 2 2\n", 4, "ends after 2 of the 3 entries"},
      {"too_many", kGeneral + "3 5 1\n1 1 1\n\n2 2 2\n", 5, "more entries than the 1 declared"},
      {"upper_triangle", kSymmetric + "3 3 1\n1 2 1\n", 3, "above the diagonal"},
      {"skew_diagonal", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1\n", 3,
       "not below the diagonal"},
      {"integer_fraction", "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 1.5\n", 3,
       "not an integer"},
      {"pattern_value", "%%MatrixMarket matrix coordinate pattern general\n1 1 1\n1 1 1\n", 3,
       "unexpected '1'"},
      {"nul_byte", kGeneral + "1 1 1\n1 1 2" + std::string(1, '\0') + "\n", 3,
       "value '2\\x00' is not a number"},
      {"array_two_values", "%%MatrixMarket matrix array real general\n1 2\n1 2\n", 3,
       "unexpected '2'"},
      {"array_too_few", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", 5,
       "ends after 3 of the 4 entries"},
      {"long_line", kGeneral + "1 1 1\n1 1 " + std::string(std::size_t{3} << 20, '1') + "\n", 3,
       "longer than"},
  };
}

TEST_F(MatrixMarket, MalformedFilesNameTheFileLineAndProblem) {
  const auto cases = malformed_cases();
  ASSERT_GE(cases.size(), 15u);
  for (const Malformed& c : cases) {
    const fs::path path = write(std::string(c.name) + ".mtx", c.text);
    try {
      (void)read_matrix_market(path);
      ADD_FAILURE() << c.name << ": read without an error";
    } catch (const IoError& e) {
      const std::string where = path.string() + ":" + std::to_string(c.line) + ": ";
      EXPECT_EQ(e.cause().rfind(where, 0), 0u) << c.name << ": " << e.cause();
      EXPECT_NE(e.cause().find(c.problem), std::string::npos) << c.name << ": " << e.cause();
      EXPECT_FALSE(e.fix().empty()) << c.name;
    }
  }
}

// Mutates a valid file at random: every outcome must be a parse or a tenax::Error, never a
// crash, a hang or another exception (this test is meant to run under AddressSanitizer).
TEST_F(MatrixMarket, RandomMutationsParseOrFailCleanly) {
  const std::vector<std::string> seeds = {
      kGeneral + "% comment\n4 5 6\n1 1 1.5\n2 3 -2e-3\n4 5 7\n3 3 0.1\n1 5 1e300\n4 1 -0\n",
      kSymmetric + "4 4 5\n1 1 2\n2 1 -1\n3 2 -1\n4 3 -1\n4 4 2\n",
      "%%MatrixMarket matrix coordinate pattern general\n3 3 4\n1 1\n2 2\n3 3\n1 3\n",
      "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 5\n3 1 -6\n",
      "%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n",
  };
  const std::vector<std::string> snippets = {"0",
                                             "-1",
                                             "1e999",
                                             "nan",
                                             "inf",
                                             "99999999999999999999",
                                             "9223372036854775807",
                                             "\n",
                                             "\r\n",
                                             " ",
                                             "%",
                                             "\t",
                                             "+",
                                             "-",
                                             "1e-400",
                                             ".",
                                             "e",
                                             "x",
                                             "%%MatrixMarket",
                                             std::string(1, '\0'),
                                             "4611686018427387904"};
  std::mt19937_64 rng(20240611);
  int parsed = 0;
  int rejected = 0;
  const fs::path path = dir_ / "fuzz.mtx";
  for (int iteration = 0; iteration < 600; ++iteration) {
    std::string text = seeds[rng() % seeds.size()];
    const int mutations = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < mutations && !text.empty(); ++m) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 6) {
        case 0:  // overwrite one byte
          text[at] = static_cast<char>(rng() % 256);
          break;
        case 1:  // delete a run
          text.erase(at, 1 + rng() % 8);
          break;
        case 2:  // insert a snippet
          text.insert(at, snippets[rng() % snippets.size()]);
          break;
        case 3:  // truncate
          text.resize(at);
          break;
        case 4: {  // duplicate a line
          const std::size_t begin =
              text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
          const std::size_t end = text.find('\n', at);
          if (end != std::string::npos) text.insert(begin, text.substr(begin, end + 1 - begin));
          break;
        }
        default:  // replace a digit with a snippet
          if (text[at] >= '0' && text[at] <= '9') {
            text.replace(at, 1, snippets[rng() % snippets.size()]);
          }
          break;
      }
    }
    write("fuzz.mtx", text);
    CooMatrix a;
    try {
      a = read_matrix_market(path);
    } catch (const Error&) {
      ++rejected;
      continue;
    } catch (const std::exception& e) {
      FAIL() << "iteration " << iteration << " threw a non-tenax exception: " << e.what()
             << "\ninput:\n"
             << text;
    }
    ++parsed;
    ASSERT_EQ(a.row.size(), a.value.size());
    ASSERT_EQ(a.col.size(), a.value.size());
    for (std::size_t k = 0; k < a.value.size(); ++k) {
      ASSERT_TRUE(a.row[k] >= 0 && a.row[k] < a.rows) << text;
      ASSERT_TRUE(a.col[k] >= 0 && a.col[k] < a.cols) << text;
      ASSERT_TRUE(std::isfinite(a.value[k])) << text;
    }
    if (a.rows > 1'000'000) continue;  // to_csr would allocate row pointers for every row
    // What was read converts, and its canonical form writes and reads back exactly.
    const CsrArrays csr = to_csr(a);
    expect_canonical(csr);
    CooMatrix canonical{a.rows, a.cols, {}, {}, f64s(csr.values)};
    const auto rp = i64s(csr.row_ptr);
    for (std::int64_t r = 0; r < a.rows; ++r) {
      canonical.row.insert(canonical.row.end(), rp[r + 1] - rp[r], r);
    }
    canonical.col = i64s(csr.col_idx);
    write_matrix_market(dir_ / "again.mtx", canonical);
    const CooMatrix b = read_matrix_market(dir_ / "again.mtx");
    ASSERT_EQ(b.row, canonical.row);
    ASSERT_EQ(b.col, canonical.col);
    ASSERT_EQ(bits(b.value), bits(canonical.value));
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace tenax::io

namespace tenax::io {
namespace {

// The CSR arrays come from the memory pool, so TENAX_MEMORY_LIMIT holds for them: a COO of
// 50 000 000 rows and 3 entries needed 800 MB of std::vector outside the pool before the pool
// refused its 400 MB row pointers.
TEST(MatrixMarketMemory, CsrOfManyRowsIsRefusedByThePoolLimit) {
  const tenax::testing::HostMemoryLimit limit(std::size_t{64} << 20);
  CooMatrix coo;
  coo.rows = 50'000'000;
  coo.cols = 50'000'000;
  coo.row = {0, 1, 2};
  coo.col = {0, 1, 2};
  coo.value = {1.0, 1.0, 1.0};
  try {
    (void)to_csr(coo);
    FAIL() << "a 400 MB row-pointer array fit a 64 MiB pool";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.cause()).find("50000000-row matrix with 3 entries"), std::string::npos)
        << e.cause();
    EXPECT_NE(std::string(e.fix()).find("TENAX_MEMORY_LIMIT"), std::string::npos) << e.fix();
  }
  // Under the limit the same conversion works, duplicates summed.
  coo.rows = coo.cols = 1000;
  coo.row.push_back(2);
  coo.col.push_back(2);
  coo.value.push_back(0.5);
  const CsrArrays csr = to_csr(coo);
  ASSERT_EQ(csr.values.numel(), 3);
  EXPECT_EQ(csr.values.data_as<double>()[2], 1.5);
  EXPECT_EQ(csr.row_ptr.data_as<std::int64_t>()[1000], 3);
}

// `poisson --matrix FIFO` hung (the file was opened twice: its digest, then the reader) and
// `--matrix <(cat A.mtx)` failed with "Illegal seek". Both readers refuse anything but a regular
// file, without blocking; each runs under a deadline, and a regression is unblocked by opening
// the FIFO's other end.
TEST_F(MatrixMarket, AFifoIsRefusedWithoutBlockingByTheReaderAndTheDigest) {
  const fs::path fifo = dir_ / "A.mtx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::function<void()>> readers = {
      [&] { (void)read_matrix_market(fifo); },
      [&] {
        (void)read_matrix_market_rows(fifo, [](std::int64_t rows, std::int64_t) {
          return RowRange{0, rows};
        });
      },
      [&] { (void)xxh64_file(fifo); },
  };
  for (std::size_t k = 0; k < readers.size(); ++k) {
    SCOPED_TRACE("reader " + std::to_string(k));
    auto reading = std::async(std::launch::async, [&] {
      try {
        readers[k]();
        return std::string("read it");
      } catch (const UsageError& e) {
        return std::string(e.what());
      } catch (const std::exception& e) {
        return "not a UsageError: " + std::string(e.what());
      }
    });
    if (reading.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << "blocked on a FIFO";
      const int end = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets the reader see EOF
      if (end >= 0) ::close(end);
    }
    const std::string what = reading.get();
    EXPECT_NE(what.find(fifo.string() + "' is a FIFO, not a regular file"), std::string::npos)
        << what;
    if (k < 2) {
      EXPECT_NE(what.find("give the path of a regular Matrix Market file"), std::string::npos)
          << what;
    }
  }
}

TEST_F(MatrixMarket, ASymlinkToARegularFileIsFollowedAndADirectoryIsRefused) {
  write("A.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 2.0\n");
  fs::create_symlink(dir_ / "A.mtx", dir_ / "link.mtx");
  EXPECT_EQ(read_matrix_market(dir_ / "link.mtx").nnz(), 1);
  try {
    (void)read_matrix_market(dir_);
    ADD_FAILURE() << "read a directory";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("is a directory, not a regular file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tenax::io
