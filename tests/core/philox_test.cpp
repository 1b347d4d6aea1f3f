#include "tenax/core/philox.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <set>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/random.hpp"

namespace tenax {
namespace {

constexpr std::uint64_t kSeed = 0x0123456789abcdefull;

// Random123's published known-answer vectors for philox4x32_10 (kat_vectors).
TEST(Philox, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32_10(Uint32x4{{0, 0, 0, 0}}, Uint32x2{{0, 0}}),
            (Uint32x4{{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}));
  EXPECT_EQ(philox4x32_10(Uint32x4{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
                          Uint32x2{{0xffffffffu, 0xffffffffu}}),
            (Uint32x4{{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}));
  EXPECT_EQ(philox4x32_10(Uint32x4{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
                          Uint32x2{{0xa4093822u, 0x299f31d0u}}),
            (Uint32x4{{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}));
}

static_assert(philox4x32_10(Uint32x4{{0, 0, 0, 0}}, Uint32x2{{0, 0}}) ==
                  Uint32x4{{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
              "philox4x32_10 is usable in constant expressions");

TEST(Philox, StreamLayoutIsAsDocumented) {
  const std::uint64_t block = 0x00000007fffffffeull;
  EXPECT_EQ(philox_block(kSeed, block, 1), philox4x32_10(Uint32x4{{0xfffffffeu, 0x7u, 1u, 0u}},
                                                         Uint32x2{{0x89abcdefu, 0x01234567u}}));
  for (std::uint64_t i = 0; i < 12; ++i) {
    EXPECT_EQ(random_bits32(kSeed, block, i), philox_block(kSeed, block + i / 4).v[i % 4]);
  }
  // Block indices are taken modulo 2^64.
  EXPECT_EQ(random_bits32(kSeed, ~std::uint64_t{0}, 4), philox_block(kSeed, 0).v[0]);
  // The upper half of the seed is part of the key.
  EXPECT_FALSE(philox_block(1, 0) == philox_block(1 + (std::uint64_t{1} << 32), 0));
}

// Fixed values of the stream. Checkpoints and the GPU kernels depend on these never changing:
// a change here breaks bitwise resumption of every saved run.
TEST(Philox, StreamValuesAreFrozen) {
  EXPECT_EQ(bits_of(uniform_f32(kSeed, 5, 0)), 0x3eaecbb6u);
  EXPECT_EQ(bits_of(uniform_f32(kSeed, 5, 7)), 0x3f1d3ab5u);
  EXPECT_EQ(bits_of(uniform_f64(kSeed, 5, 7)), 0x3fe3a756bd34924cull);
  EXPECT_EQ(bits_of(normal_f32(kSeed, 5, 6)), 0xbf121589u);
  EXPECT_EQ(bits_of(normal_f32(kSeed, 5, 7)), 0xbefee87fu);
  EXPECT_EQ(bits_of(normal_f64(kSeed, 5, 2)), 0x3ff79424915727a0ull);
  EXPECT_EQ(bits_of(normal_f64(kSeed, 5, 3)), 0xbfeccbb358b7b0d7ull);
}

TEST(Philox, UniformTransformsAreExactAndCoverTheHalfOpenInterval) {
  EXPECT_EQ(uniform_f32_from_bits(0), 0.0f);
  EXPECT_EQ(uniform_f32_from_bits(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_EQ(uniform_f32_from_bits(0x80000000u), 0.5f);
  EXPECT_EQ(uniform_f64_from_bits(0, 0), 0.0);
  EXPECT_EQ(uniform_f64_from_bits(0xffffffffu, 0xffffffffu), 1.0 - 0x1p-53);
  EXPECT_EQ(uniform_f64_from_bits(0, 0x800u), 0x1p-53);
  EXPECT_EQ(uniform_f64_from_bits(0, 0x7ffu), 0.0);
  // An f64 value is its f32 counterpart plus 29 more bits.
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const double wide = uniform_f64(kSeed, 3, i);
    const double narrow = uniform_f32(kSeed, 3, i);
    EXPECT_GE(wide, narrow);
    EXPECT_LT(wide - narrow, 0x1p-24);
  }
}

// Mean, variance, a 64-bin chi-square and lag-1 correlation over a million values: each
// tolerance is about five standard errors, tight enough to catch a lost bit or a wrong scale.
template <class T>
void expect_uniform_statistics(const std::vector<T>& values) {
  const auto n = static_cast<double>(values.size());
  double sum = 0;
  double sum_sq = 0;
  double lag = 0;
  std::vector<double> bins(64, 0.0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double x = values[i];
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 1.0);
    sum += x;
    sum_sq += x * x;
    if (i > 0) lag += (x - 0.5) * (static_cast<double>(values[i - 1]) - 0.5);
    bins[static_cast<std::size_t>(x * 64)] += 1;
  }
  const double mean = sum / n;
  const double variance = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(variance, 1.0 / 12, 5 * std::sqrt(1.0 / 180 / n));
  EXPECT_NEAR(lag / n * 12, 0.0, 5 / std::sqrt(n));
  double chi_square = 0;
  for (const double count : bins) chi_square += (count - n / 64) * (count - n / 64) / (n / 64);
  EXPECT_LT(chi_square, 63 + 5 * std::sqrt(2.0 * 63));
}

TEST(Generator, UniformValuesAreUniform) {
  Generator generator(kSeed);
  std::vector<float> floats(1'000'000);
  generator.fill_uniform(floats.data(), floats.size());
  expect_uniform_statistics(floats);
  std::vector<double> doubles(1'000'000);
  generator.fill_uniform(doubles.data(), doubles.size());
  expect_uniform_statistics(doubles);
  // The low bits of the f64 values are random too (word 1 of the counter): the part below
  // 2^-24 scaled up to [0, 1) is itself uniform.
  std::vector<double> low_parts(doubles.size());
  for (std::size_t i = 0; i < doubles.size(); ++i) {
    low_parts[i] = std::ldexp(doubles[i], 24) - std::floor(std::ldexp(doubles[i], 24));
  }
  expect_uniform_statistics(low_parts);
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

template <class T>
void expect_normal_statistics(std::vector<T> values, double mean, double stddev) {
  const auto n = static_cast<double>(values.size());
  double sum = 0;
  double sum_sq = 0;
  double sum_4 = 0;
  double pair_product = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_TRUE(std::isfinite(values[i]));
    const double z = (values[i] - mean) / stddev;
    sum += z;
    sum_sq += z * z;
    sum_4 += z * z * z * z;
    if (i % 2 == 1) pair_product += z * ((values[i - 1] - mean) / stddev);
  }
  EXPECT_NEAR(sum / n, 0.0, 5 / std::sqrt(n));
  EXPECT_NEAR(sum_sq / n, 1.0, 5 * std::sqrt(2 / n));
  EXPECT_NEAR(sum_4 / n, 3.0, 5 * std::sqrt(96 / n));
  EXPECT_NEAR(pair_product / (n / 2), 0.0, 5 / std::sqrt(n / 2));  // cos and sin halves
  // Kolmogorov-Smirnov distance to the normal CDF; 1.95 / sqrt(n) is the 0.1% critical value.
  std::sort(values.begin(), values.end());
  double distance = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double cdf = normal_cdf((values[i] - mean) / stddev);
    distance = std::max(
        {distance, cdf - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - cdf});
  }
  EXPECT_LT(distance, 1.95 / std::sqrt(n));
}

TEST(Generator, NormalValuesAreNormal) {
  Generator generator(kSeed, 1000);
  std::vector<float> floats(1'000'000);
  generator.fill_normal(floats.data(), floats.size());
  expect_normal_statistics(floats, 0.0, 1.0);
  std::vector<double> doubles(1'000'000);
  generator.fill_normal(doubles.data(), doubles.size(), -2.0, 0.5);
  expect_normal_statistics(doubles, -2.0, 0.5);
}

TEST(Philox, BoxMullerUsesTheDocumentedPairs) {
  for (std::uint64_t i = 0; i < 64; i += 2) {
    const double u_radius = uniform_f64(kSeed, 9, i);
    const double z0 = normal_f64(kSeed, 9, i);
    const double z1 = normal_f64(kSeed, 9, i + 1);
    EXPECT_NEAR(z0 * z0 + z1 * z1, -2 * std::log1p(-u_radius), 1e-12);
    const double angle = std::atan2(z1, z0);
    const double u_angle = uniform_f64(kSeed, 9, i + 1);
    EXPECT_NEAR(std::remainder(angle - 2 * std::numbers::pi * u_angle, 2 * std::numbers::pi), 0.0,
                1e-9);
  }
  float z_cos = -1;
  float z_sin = -1;
  box_muller(0.0f, 0.3f, &z_cos, &z_sin);  // radius sqrt(-2 log 1) = 0
  EXPECT_EQ(z_cos, 0.0f);
  EXPECT_EQ(z_sin, 0.0f);
  box_muller(1.0f - 0x1p-24f, 0.0f, &z_cos, &z_sin);  // the largest radius the f32 stream has
  EXPECT_NEAR(z_cos, std::sqrt(-2 * std::log(0x1p-24)), 1e-5);
  EXPECT_EQ(z_sin, 0.0f);
}

// Error in units of the last place of the correctly rounded result's binade (precision p).
double ulp_error(long double got, long double want, int precision) {
  if (want == 0) return got == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  int exponent = 0;
  (void)std::frexp(want, &exponent);
  return static_cast<double>(std::fabs(got - want) / std::ldexp(1.0L, exponent - precision));
}

TEST(PortableMath, LogIsAccurateToOneUlp) {
  double worst = 0;
  for (std::uint32_t bits = 1; bits < 0x7f800000u; bits += 61) {  // every 61st positive float
    const float x = float_of(bits);
    worst = std::max(worst, ulp_error(portable_log(x), std::log(static_cast<long double>(x)), 24));
  }
  for (std::uint32_t k = 1; k <= (1u << 24); k += 3) {  // the arguments Box-Muller uses
    const float x = static_cast<float>(k) * 0x1p-24f;
    worst = std::max(worst, ulp_error(portable_log(x), std::log(static_cast<long double>(x)), 24));
  }
  EXPECT_LE(worst, 1.0);

  std::mt19937_64 random(7);
  double worst_double = 0;
  for (int t = 0; t < 1'000'000; ++t) {
    const std::uint64_t bits = random() % 0x7ff0000000000000ull + 1;
    const double x = t % 2 == 0 ? double_of(bits) : 1.0 - static_cast<double>(t) * 0x1p-53;
    worst_double = std::max(worst_double,
                            ulp_error(portable_log(x), std::log(static_cast<long double>(x)), 53));
  }
  EXPECT_LE(worst_double, 1.0);

  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(portable_log(1.0f), 0.0f);
  EXPECT_EQ(portable_log(1.0), 0.0);
  EXPECT_EQ(portable_log(0.0f), -inf);
  EXPECT_EQ(portable_log(-0.0), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(portable_log(inf), inf);
  EXPECT_TRUE(std::isnan(portable_log(-1.0f)));
  EXPECT_TRUE(std::isnan(portable_log(-inf)));
  EXPECT_TRUE(std::isnan(portable_log(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(portable_log(-2.0)));
  EXPECT_NEAR(portable_log(std::numeric_limits<float>::denorm_min()), -149 * std::log(2.0), 1e-4);
  EXPECT_NEAR(portable_log(std::numeric_limits<double>::denorm_min()), -1074 * std::log(2.0),
              1e-12);
}

// Reference sin and cos of 2 pi u in long double, reduced exactly to |angle| <= pi/4 first so
// that the reference keeps full relative accuracy near the zeros.
void reference_sincos_2pi(long double u, long double* s, long double* c) {
  const long double turns = 4 * u;
  const long double quadrant = std::floor(turns);
  long double r = turns - quadrant;
  const bool folded = r > 0.5L;
  if (folded) r = 1 - r;
  const long double angle = r * 1.570796326794896619231321691639751442L;
  long double sa = std::sin(angle);
  long double ca = std::cos(angle);
  if (folded) std::swap(sa, ca);
  switch (static_cast<int>(quadrant)) {
    case 0:
      *s = sa;
      *c = ca;
      break;
    case 1:
      *s = ca;
      *c = -sa;
      break;
    case 2:
      *s = -sa;
      *c = -ca;
      break;
    default:
      *s = -ca;
      *c = sa;
      break;
  }
}

TEST(PortableMath, SinCosOfTurnsAreAccurateToTwoUlp) {
  double worst = 0;
  for (std::uint32_t k = 0; k < (1u << 24); ++k) {  // every angle the f32 stream produces
    const float u = static_cast<float>(k) * 0x1p-24f;
    float s;
    float c;
    portable_sincos_2pi(u, &s, &c);
    long double want_s;
    long double want_c;
    reference_sincos_2pi(u, &want_s, &want_c);
    worst = std::max({worst, ulp_error(s, want_s, 24), ulp_error(c, want_c, 24)});
  }
  EXPECT_LE(worst, 2.0);

  std::mt19937_64 random(11);
  double worst_double = 0;
  for (int t = 0; t < 1'000'000; ++t) {
    double u = static_cast<double>(random() >> 11) * 0x1p-53;
    if (t % 4 == 1) u = std::nearbyint(u * 8) / 8 + (u - 0.5) * 0x1p-30;  // near multiples of 1/8
    if (u < 0 || u >= 1) continue;
    double s;
    double c;
    portable_sincos_2pi(u, &s, &c);
    long double want_s;
    long double want_c;
    reference_sincos_2pi(u, &want_s, &want_c);
    worst_double = std::max({worst_double, ulp_error(s, want_s, 53), ulp_error(c, want_c, 53)});
  }
  EXPECT_LE(worst_double, 2.0);

  // Quarter turns are exact.
  const float quarter_sin[] = {0.0f, 1.0f, 0.0f, -1.0f};
  const float quarter_cos[] = {1.0f, 0.0f, -1.0f, 0.0f};
  for (int q = 0; q < 4; ++q) {
    float s;
    float c;
    portable_sincos_2pi(0.25f * static_cast<float>(q), &s, &c);
    EXPECT_EQ(s, quarter_sin[q]);
    EXPECT_EQ(c, quarter_cos[q]);
  }
}

TEST(Generator, ValueIEqualsTheElementFunction) {
  for (const std::size_t n : {0, 1, 3, 4, 5, 1001}) {
    const std::uint64_t offset = 77;
    Generator generator(kSeed, offset);
    std::vector<float> f32(n);
    std::vector<double> f64(n);
    generator.fill_uniform(f32.data(), n);
    EXPECT_EQ(generator.offset(), offset + (n + 3) / 4);
    const std::uint64_t f64_offset = generator.offset();
    generator.fill_uniform(f64.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(bits_of(f32[i]), bits_of(uniform_f32(kSeed, offset, i))) << i;
      ASSERT_EQ(bits_of(f64[i]), bits_of(uniform_f64(kSeed, f64_offset, i))) << i;
    }
    const std::uint64_t normal_offset = generator.offset();
    generator.fill_normal(f32.data(), n, 2.0f, 3.0f);
    generator.fill_normal(f64.data(), n, -1.0, 0.25);
    EXPECT_EQ(generator.offset(), normal_offset + 2 * Generator::blocks_for(n));
    for (std::size_t i = 0; i < n; ++i) {
      const float want32 = scale_normal(normal_f32(kSeed, normal_offset, i), 2.0f, 3.0f);
      const double want64 =
          scale_normal(normal_f64(kSeed, normal_offset + Generator::blocks_for(n), i), -1.0, 0.25);
      ASSERT_EQ(bits_of(f32[i]), bits_of(want32)) << i;
      ASSERT_EQ(bits_of(f64[i]), bits_of(want64)) << i;
    }
  }
}

TEST(Philox, BlockFunctionsMatchTheElementFunctions) {
  for (std::uint64_t block = 40; block < 48; ++block) {
    float u32[4];
    double u64[4];
    float n32[4];
    double n64[4];
    uniform_f32_block(kSeed, block, u32);
    uniform_f64_block(kSeed, block, u64);
    normal_f32_block(kSeed, block, n32);
    normal_f64_block(kSeed, block, n64);
    for (std::uint64_t lane = 0; lane < 4; ++lane) {
      const std::uint64_t i = 4 * (block - 40) + lane;
      EXPECT_EQ(bits_of(u32[lane]), bits_of(uniform_f32(kSeed, 40, i)));
      EXPECT_EQ(bits_of(u64[lane]), bits_of(uniform_f64(kSeed, 40, i)));
      EXPECT_EQ(bits_of(n32[lane]), bits_of(normal_f32(kSeed, 40, i)));
      EXPECT_EQ(bits_of(n64[lane]), bits_of(normal_f64(kSeed, 40, i)));
    }
  }
}

TEST(Generator, DrawsUseWholeBlocksAndNeverOverlap) {
  std::vector<double> whole(16);
  Generator(kSeed).fill_uniform(whole.data(), 16);
  Generator split(kSeed);
  std::vector<double> first(8);
  std::vector<double> second(8);
  split.fill_uniform(first.data(), 8);
  split.fill_uniform(second.data(), 8);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(first[i], whole[i]);
    EXPECT_EQ(second[i], whole[8 + i]);
  }
  // A draw of 5 uses two blocks: the next draw starts at value 8, not 5.
  Generator partial(kSeed);
  partial.fill_uniform(first.data(), 5);
  partial.fill_uniform(second.data(), 3);
  EXPECT_EQ(second[0], whole[8]);

  // Many draws of mixed sizes from one generator: block ranges are contiguous and disjoint, and
  // no 53-bit value repeats.
  Generator generator(kSeed, 123);
  std::set<double> seen;
  std::vector<double> values;
  std::uint64_t expected_offset = 123;
  for (std::size_t n = 1; n < 400; n += 7) {
    EXPECT_EQ(generator.offset(), expected_offset);
    values.resize(n);
    generator.fill_uniform(values.data(), n);
    expected_offset += (n + 3) / 4;
    for (const double value : values) EXPECT_TRUE(seen.insert(value).second) << value;
  }
  // The stream seen from a different offset is the same stream shifted by whole blocks.
  EXPECT_EQ(uniform_f64(kSeed, 200, 4), uniform_f64(kSeed, 201, 0));
  EXPECT_NE(uniform_f64(kSeed, 200, 0), uniform_f64(kSeed + 1, 200, 0));
}

TEST(Generator, StateIsSeedAndOffset) {
  Generator generator(42, 10);
  EXPECT_EQ(generator.seed(), 42u);
  EXPECT_EQ(generator.offset(), 10u);
  std::vector<float> scratch(12);
  generator.fill_normal(scratch.data(), 10);
  EXPECT_EQ(generator.offset(), 13u);

  const Generator saved(generator.seed(), generator.offset());
  Generator resumed = saved;
  std::vector<float> continued(6);
  std::vector<float> replayed(6);
  generator.fill_uniform(continued.data(), 6);
  resumed.fill_uniform(replayed.data(), 6);
  EXPECT_EQ(continued, replayed);
  EXPECT_EQ(generator, resumed);

  Generator skipped = saved;
  skipped.advance(3);
  Generator drawn = saved;
  drawn.fill_uniform(scratch.data(), 12);
  EXPECT_EQ(skipped, drawn);
}

TEST(Generator, RejectsBadArgumentsWithoutMovingTheStream) {
  Generator generator(1, 5);
  EXPECT_THROW(generator.fill_uniform(static_cast<float*>(nullptr), 3), UsageError);
  generator.fill_uniform(static_cast<double*>(nullptr), 0);
  float value = 0;
  EXPECT_THROW(generator.fill_normal(&value, 1, 0.0f, -1.0f), UsageError);
  EXPECT_THROW(generator.fill_normal(&value, 1, std::nanf(""), 1.0f), UsageError);
  EXPECT_THROW(generator.fill_normal(static_cast<double*>(nullptr), 1), UsageError);
  EXPECT_EQ(generator.offset(), 5u);

  const std::uint64_t last = std::numeric_limits<std::uint64_t>::max();
  Generator near_end(1, last - 2);
  double values[8];
  near_end.fill_uniform(values, 8);  // blocks last-2 and last-1
  EXPECT_EQ(near_end.offset(), last);
  try {
    near_end.fill_uniform(values, 5);
    FAIL() << "a draw past 2^64 blocks must throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("2^64"), std::string::npos) << e.what();
  }
  EXPECT_EQ(near_end.offset(), last);
  EXPECT_THROW(near_end.advance(1), UsageError);
}

}  // namespace
}  // namespace tenax
