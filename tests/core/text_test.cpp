#include "tenax/core/text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/key_values.hpp"

namespace tenax {
namespace {

TEST(Text, TrimAndLowerAreAsciiOnly) {
  EXPECT_EQ(trim("  \t8 \r\n"), "8");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim("a b"), "a b");
  EXPECT_EQ(lower("GiB MiXed 1e3"), "gib mixed 1e3");
  EXPECT_EQ(lower("\xC3\x89"), "\xC3\x89");  // bytes beyond ASCII are left alone
}

TEST(Text, NumbersAreWholeTokensInRange) {
  EXPECT_EQ(parse_whole<int>("42"), 42);
  EXPECT_EQ(parse_whole<std::int64_t>("-9223372036854775808"), INT64_MIN);
  EXPECT_FALSE(parse_whole<std::int64_t>("9223372036854775808"));  // overflows, not saturated
  EXPECT_FALSE(parse_whole<int>("99999999999"));
  EXPECT_FALSE(parse_whole<std::uint64_t>("-1"));
  for (const char* bad : {"", " 8", "8 ", "+8", "8x", "0x10", "1e3", "1.5"}) {
    EXPECT_FALSE(parse_whole<int>(bad)) << "'" << bad << "'";
  }
  EXPECT_EQ(parse_whole<double>("1e-8"), 1e-8);
  EXPECT_EQ(parse_whole<double>("0.5"), 0.5);
  EXPECT_TRUE(std::isinf(*parse_whole<double>("inf")));
  EXPECT_TRUE(std::isnan(*parse_whole<double>("nan")));
  EXPECT_FALSE(parse_whole<double>("1e999"));  // out of range, not infinity
  EXPECT_FALSE(parse_whole<double>("1,5"));
}

TEST(KeyValues, CommentsAndTheRepeatedKeyPolicy) {
  constexpr std::string_view keys[] = {"tol", "pc"};
  const std::vector<KeyValue> entries = split_key_values(
      "test", "tol=1e-3 # the default\npc=jacobi,tol=1e-5#last", keys, RepeatedKey::last_wins);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].value, "1e-3");
  EXPECT_EQ(entries[1].key, "pc");
  EXPECT_EQ(entries[2].value, "1e-5");
  EXPECT_THROW((void)split_key_values("test", "tol=1,tol=2", keys), UsageError);
}

}  // namespace
}  // namespace tenax
