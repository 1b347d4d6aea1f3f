#include "tenax/core/half.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace tenax {
namespace {

// The conversions are constexpr.
static_assert(float_to_half_bits(1.0f) == 0x3c00);
static_assert(half_bits_to_float(0x7bff) == 65504.0f);
static_assert(float_to_bf16_bits(-2.0f) == 0xc000);
static_assert(bf16_bits_to_float(0x3f80) == 1.0f);
static_assert(to_half(0.5f).bits == 0x3800 && to_bfloat16(0.5f).bits == 0x3f00);

constexpr float kInf = std::numeric_limits<float>::infinity();

bool is_half_nan(std::uint16_t bits) { return (bits & 0x7c00) == 0x7c00 && (bits & 0x03ff) != 0; }
bool is_bf16_nan(std::uint16_t bits) { return (bits & 0x7f80) == 0x7f80 && (bits & 0x007f) != 0; }

TEST(Half, LargestFiniteAndOverflowBoundary) {
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(-65504.0f), 0xfbff);
  // 65520 is the midpoint between 65504 and 2^16: the tie goes to the even neighbour, 2^16,
  // which is not finite.
  EXPECT_EQ(float_to_half_bits(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_half_bits(1e30f), 0x7c00);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(float_to_half_bits(kInf), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-kInf), 0xfc00);
  EXPECT_EQ(half_bits_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x7c00), kInf);
  EXPECT_EQ(half_bits_to_float(0xfc00), -kInf);
}

TEST(Half, SubnormalsRoundToNearestEven) {
  EXPECT_EQ(float_to_half_bits(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(-0x1p-24f), 0x8001);
  EXPECT_EQ(float_to_half_bits(0x1p-25f), 0x0000);  // tie between 0 and 2^-24: even is 0
  EXPECT_EQ(float_to_half_bits(-0x1p-25f), 0x8000);
  EXPECT_EQ(float_to_half_bits(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half_bits(0x1.8p-24f), 0x0002);          // 1.5 units: tie, to even 2
  EXPECT_EQ(float_to_half_bits(0x1.4p-23f), 0x0002);          // 2.5 units: tie, to even 2
  EXPECT_EQ(float_to_half_bits(0x1.cp-23f), 0x0004);          // 3.5 units: tie, to even 4
  EXPECT_EQ(float_to_half_bits(1023.0f * 0x1p-24f), 0x03ff);  // largest subnormal
  EXPECT_EQ(float_to_half_bits(1023.5f * 0x1p-24f), 0x0400);  // rounds up to the smallest normal
  EXPECT_EQ(float_to_half_bits(0x1p-14f), 0x0400);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::min()), 0x8000);
  EXPECT_EQ(half_bits_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(half_bits_to_float(0x03ff), 1023.0f * 0x1p-24f);
  EXPECT_EQ(half_bits_to_float(0x0200), 0x1p-15f);
  EXPECT_EQ(half_bits_to_float(0x8001), -0x1p-24f);
}

TEST(Half, NormalTiesGoToEven) {
  EXPECT_EQ(float_to_half_bits(1.0f + 0x1p-11f), 0x3c00);    // halfway, 0x3c00 even
  EXPECT_EQ(float_to_half_bits(1.0f + 0x1.8p-10f), 0x3c02);  // halfway, 0x3c02 even
  EXPECT_EQ(float_to_half_bits(std::nextafter(1.0f + 0x1p-11f, 2.0f)), 0x3c01);
  EXPECT_EQ(float_to_half_bits(2047.0f), 0x67ff);
  EXPECT_EQ(float_to_half_bits(2049.0f), 0x6800);  // 2048 and 2050: even 2048
  EXPECT_EQ(float_to_half_bits(2051.0f), 0x6802);  // 2050 and 2052: even 2052
  EXPECT_EQ(float_to_half_bits(0.1f), 0x2e66);
  EXPECT_EQ(float_to_half_bits(-3.140625f), 0xc248);
}

TEST(Half, ZerosKeepTheirSign) {
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_TRUE(std::signbit(half_bits_to_float(0x8000)));
  EXPECT_TRUE(std::signbit(bf16_bits_to_float(0x8000)));
  EXPECT_EQ(half_bits_to_float(0x8000), 0.0f);
}

TEST(Half, NanStaysQuietNanWithSignAndPayload) {
  const float quiet = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(float_to_half_bits(quiet), 0x7e00);
  EXPECT_EQ(float_to_half_bits(-quiet), 0xfe00);
  // A signalling NaN whose payload lies only in bits that f16 drops must not become infinity.
  EXPECT_EQ(float_to_half_bits(float_of(0x7f800001u)), 0x7e00);
  EXPECT_EQ(float_to_half_bits(float_of(0xffa02000u)), 0xfe00 | 0x0101);
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7c01)));
  EXPECT_EQ(bits_of(half_bits_to_float(0x7c01)), 0x7fc02000u);  // quieted, payload kept
  EXPECT_EQ(bits_of(half_bits_to_float(0xfe00)), 0xffc00000u);

  EXPECT_EQ(float_to_bf16_bits(quiet), 0x7fc0);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x7f800001u)), 0x7fc0);
  EXPECT_EQ(float_to_bf16_bits(float_of(0xffa12345u)), 0xffe1);
  EXPECT_EQ(bits_of(bf16_bits_to_float(0x7f81)), 0x7fc10000u);
}

TEST(BFloat16, RoundsToNearestEvenAndOverflowsToInfinity) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f), 0x3f80);    // halfway: even
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1.8p-7f), 0x3f82);  // halfway: even
  EXPECT_EQ(float_to_bf16_bits(std::nextafter(1.0f + 0x1p-8f, 2.0f)), 0x3f81);
  EXPECT_EQ(float_to_bf16_bits(0x1.fep127f), 0x7f7f);  // largest finite bf16
  EXPECT_EQ(float_to_bf16_bits(std::nextafter(0x1.ffp127f, 0.0f)), 0x7f7f);
  EXPECT_EQ(float_to_bf16_bits(0x1.ffp127f), 0x7f80);  // tie with 2^128: to infinity
  EXPECT_EQ(float_to_bf16_bits(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(float_to_bf16_bits(kInf), 0x7f80);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x00008000u)), 0x0000);  // subnormal tie: even
  EXPECT_EQ(float_to_bf16_bits(float_of(0x00018000u)), 0x0002);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x80008001u)), 0x8001);
  EXPECT_EQ(bf16_bits_to_float(0x7f7f), 0x1.fep127f);
  EXPECT_EQ(bf16_bits_to_float(0x0001), 0x1p-133f);
}

TEST(Half, ConvenienceWrappersUseTheStorageTypes) {
  EXPECT_EQ(to_half(65504.0f).bits, 0x7bff);
  EXPECT_EQ(to_float(Half{0x3c00}), 1.0f);
  EXPECT_EQ(to_bfloat16(3.0f).bits, 0x4040);
  EXPECT_EQ(to_float(BFloat16{0x4040}), 3.0f);
}

// Every 16-bit pattern widens to the value its fields define (sign * 2^e * significand, built
// here with ldexp) and narrows back to itself; NaNs stay NaNs.
TEST(Half, EveryF16PatternWidensExactlyAndRoundTrips) {
  for (std::uint32_t pattern = 0; pattern <= 0xffff; ++pattern) {
    const auto bits = static_cast<std::uint16_t>(pattern);
    const int exponent = (bits >> 10) & 0x1f;
    const int mantissa = bits & 0x3ff;
    const float widened = half_bits_to_float(bits);
    const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
    if (exponent == 0x1f) {
      if (mantissa == 0) {
        EXPECT_EQ(widened, static_cast<float>(sign) * kInf);
      } else {
        ASSERT_TRUE(std::isnan(widened)) << pattern;
        EXPECT_EQ(std::signbit(widened), sign < 0) << pattern;
        EXPECT_TRUE(is_half_nan(float_to_half_bits(widened))) << pattern;
        continue;
      }
    } else {
      const double want = exponent == 0 ? sign * std::ldexp(mantissa, -24)
                                        : sign * std::ldexp(1024 + mantissa, exponent - 25);
      ASSERT_EQ(static_cast<double>(widened), want) << pattern;
      ASSERT_EQ(std::signbit(widened), sign < 0) << pattern;
    }
    ASSERT_EQ(float_to_half_bits(widened), bits) << pattern;
  }
}

TEST(BFloat16, EveryPatternWidensExactlyAndRoundTrips) {
  for (std::uint32_t pattern = 0; pattern <= 0xffff; ++pattern) {
    const auto bits = static_cast<std::uint16_t>(pattern);
    const int exponent = (bits >> 7) & 0xff;
    const int mantissa = bits & 0x7f;
    const float widened = bf16_bits_to_float(bits);
    const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
    if (exponent == 0xff) {
      if (mantissa == 0) {
        EXPECT_EQ(widened, static_cast<float>(sign) * kInf);
      } else {
        ASSERT_TRUE(std::isnan(widened)) << pattern;
        EXPECT_EQ(std::signbit(widened), sign < 0) << pattern;
        EXPECT_TRUE(is_bf16_nan(float_to_bf16_bits(widened))) << pattern;
        continue;
      }
    } else {
      const double want = exponent == 0 ? sign * std::ldexp(mantissa, -133)
                                        : sign * std::ldexp(128 + mantissa, exponent - 134);
      ASSERT_EQ(static_cast<double>(widened), want) << pattern;
      ASSERT_EQ(std::signbit(widened), sign < 0) << pattern;
    }
    ASSERT_EQ(float_to_bf16_bits(widened), bits) << pattern;
  }
}

}  // namespace
}  // namespace tenax
