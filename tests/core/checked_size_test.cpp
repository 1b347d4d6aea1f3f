#include "tenax/core/checked_size.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "tenax/core/error.hpp"

namespace tenax {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

TEST(CheckedSize, ProductsAndSumsThatFitAreExact) {
  EXPECT_EQ(checked_multiply(3037000499, 3037000499), std::int64_t{3037000499} * 3037000499);
  EXPECT_EQ(checked_multiply(0, kMax), 0);
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
  EXPECT_EQ(checked_product({}), 1);
  EXPECT_EQ(checked_product({2, 3, 7}), 42);
  static_assert(checked_product({4, 5}) == 20);  // usable in constant expressions
}

TEST(CheckedSize, OverflowAndNegativeFactorsAreNotSizes) {
  EXPECT_FALSE(checked_multiply(3037000500, 3037000500));  // just above 2^63
  EXPECT_FALSE(checked_multiply(6074001000, 6074001000));  // wrapped to 4.3 GiB in heat2d
  EXPECT_FALSE(checked_multiply(-1, 5));
  EXPECT_FALSE(checked_add(kMax, 1));
  EXPECT_FALSE(checked_add(-3, 2));
  EXPECT_FALSE(checked_product({1 << 30, 1 << 30, 1 << 30}));
  EXPECT_EQ(saturating_multiply(kMax, 2), kMax);
  EXPECT_EQ(saturating_multiply(6, 7), 42);
}

TEST(CheckedSize, ThrowingFormsNameWhatOverflowedAndTheFix) {
  EXPECT_EQ(size_product("grid", {1000, 1000, 8}, "smaller"), 8'000'000);
  try {
    (void)size_product("--n 6074001000: the grid's points", {6074001000, 6074001000},
                       "use --n 1000");
    FAIL() << "no error for an overflowing product";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("--n 6074001000: the grid's points (6074001000 * 6074001000)"),
              std::string::npos)
        << e.cause();
    EXPECT_EQ(e.fix(), "use --n 1000");
  }
  EXPECT_THROW((void)size_sum("entries", kMax, 1, "fewer"), UsageError);
  EXPECT_EQ(size_sum("entries", 40, 2, "fewer"), 42);
}

TEST(CheckedSize, LargestRootIsExactAtTheEdges) {
  EXPECT_EQ(largest_root(kMax, 2), 3037000499);
  EXPECT_EQ(largest_root(kMax, 3), 2097151);
  EXPECT_EQ(largest_root(99, 2), 9);
  EXPECT_EQ(largest_root(100, 2), 10);
  EXPECT_EQ(largest_root(7, 3), 1);
  EXPECT_EQ(largest_root(8, 3), 2);
  EXPECT_EQ(largest_root(0, 2), 0);
  EXPECT_EQ(largest_root(-5, 2), 0);
  EXPECT_EQ(largest_root(12345, 1), 12345);
}

}  // namespace
}  // namespace tenax
