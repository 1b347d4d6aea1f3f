// Exhaustive checks of the float -> f16 and float -> bf16 conversions in half.hpp: every one of
// the 2^32 float bit patterns is converted and compared with a reference that shares no code or
// technique with the implementation (double arithmetic and frexp/ldexp instead of bit
// manipulation).
//
// Under AddressSanitizer the loops run about three times slower and the sanitized suite runs
// everything in this label, so sanitized builds check every 7th pattern (7 is odd, so every
// low-bit combination still occurs) plus every pattern within 64 of each binade start and each
// rounding or range boundary. The sanitizers look for memory and undefined-behaviour errors,
// which sampling finds as well; release builds check all 2^32 patterns.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tenax/core/half.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define TENAX_HALF_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TENAX_HALF_TEST_SANITIZED 1
#endif
#endif

namespace tenax {
namespace {

#if defined(TENAX_HALF_TEST_SANITIZED)
constexpr std::uint64_t kStride = 7;
#else
constexpr std::uint64_t kStride = 1;
#endif

// A binary floating-point format with `precision` significant bits (implicit bit included),
// smallest normal exponent `min_exponent`, stored in 16 bits as sign | exponent | mantissa.
struct Format {
  const char* name;
  int precision;
  int min_exponent;
  double max_finite;
};
constexpr Format kF16{"f16", 11, -14, 65504.0};
constexpr Format kBF16{"bf16", 8, -126, 0x1.fep127};

// 2^k for |k| <= 200, built once with ldexp so that the reference scales by multiplication.
const std::vector<double> kPowersOfTwo = [] {
  std::vector<double> values;
  for (int k = -200; k <= 200; ++k) values.push_back(std::ldexp(1.0, k));
  return values;
}();
double pow2(int k) { return kPowersOfTwo[static_cast<std::size_t>(k + 200)]; }

// The 16-bit pattern that `value` rounds to, from the definition of the format: take the exact
// value in double, find the spacing of representable numbers at its magnitude, let the double
// FPU round the value to a multiple of that spacing (adding and subtracting 1.5 * 2^52 rounds to
// an integer with ties to even), then encode. NaN is handled by the caller.
std::uint16_t reference_narrow(float value, const Format& format) {
  const int mantissa_bits = format.precision - 1;
  const int bias = 1 - format.min_exponent;
  const auto inf_bits = static_cast<std::uint16_t>(((2 * bias + 1) << mantissa_bits));
  const std::uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double magnitude = std::fabs(static_cast<double>(value));
  // Far outside the finite range, or far below half the smallest subnormal: no rounding question.
  if (magnitude >= 2.0 * format.max_finite) return sign | inf_bits;
  if (magnitude < pow2(format.min_exponent - mantissa_bits - 2)) return sign;

  int exponent = 0;  // magnitude = m * 2^exponent, m in [0.5, 1)
  (void)std::frexp(magnitude, &exponent);
  const int binade = std::max(exponent - 1, format.min_exponent);
  const int spacing_exponent = binade - mantissa_bits;
  const double scaled = magnitude * pow2(-spacing_exponent);  // exact, below 2^precision
  constexpr double kRoundToInteger = 0x1.8p52;
  const double multiple = (scaled + kRoundToInteger) - kRoundToInteger;
  if (multiple * pow2(spacing_exponent) > format.max_finite) return sign | inf_bits;
  // multiple is in [2^mantissa_bits, 2^precision] for normal results: the implicit bit plus the
  // mantissa field, where 2^precision carries into the next exponent. For subnormal results the
  // exponent field is 0 and multiple is the mantissa field (or 2^mantissa_bits: smallest normal).
  const int exponent_field = exponent - 1 < format.min_exponent ? 0 : binade + bias - 1;
  const auto encoded = static_cast<std::uint32_t>(exponent_field * pow2(mantissa_bits) + multiple);
  return sign | static_cast<std::uint16_t>(encoded);
}

// For NaN inputs the contract is a NaN with the same sign, the quiet bit set and the top
// mantissa bits of the input kept.
std::uint16_t reference_nan(std::uint32_t bits, const Format& format) {
  const int mantissa_bits = format.precision - 1;
  const std::uint32_t top = (bits & 0x007fffffu) >> (23 - mantissa_bits);
  const std::uint32_t quiet = 1u << (mantissa_bits - 1);
  const std::uint32_t exponent_ones = ((1u << (16 - format.precision)) - 1u) << mantissa_bits;
  return static_cast<std::uint16_t>(((bits >> 16) & 0x8000u) | exponent_ones | top | quiet);
}

std::uint16_t reference(std::uint32_t bits, const Format& format) {
  const float value = float_of(bits);
  return std::isnan(value) ? reference_nan(bits, format) : reference_narrow(value, format);
}

struct Mismatches {
  std::mutex mutex;
  std::uint64_t count = 0;
  std::vector<std::string> first;

  void record(std::uint64_t n, const std::vector<std::string>& examples) {
    std::lock_guard<std::mutex> lock(mutex);
    count += n;
    for (const std::string& example : examples) {
      if (first.size() < 8) first.push_back(example);
    }
  }
};

template <class Convert>
void check_patterns(std::uint64_t begin, std::uint64_t end, std::uint64_t stride,
                    const Format& format, Convert convert, Mismatches* mismatches) {
  std::uint64_t count = 0;
  std::vector<std::string> examples;
  for (std::uint64_t pattern = begin; pattern < end; pattern += stride) {
    const auto bits = static_cast<std::uint32_t>(pattern);
    const std::uint16_t got = convert(float_of(bits));
    const std::uint16_t want = reference(bits, format);
    if (got != want) [[unlikely]] {
      ++count;
      if (examples.size() < 8) {
        char line[128];
        std::snprintf(line, sizeof line, "%s(%a = 0x%08x) = 0x%04x, want 0x%04x", format.name,
                      static_cast<double>(float_of(bits)), bits, got, want);
        examples.emplace_back(line);
      }
    }
  }
  mismatches->record(count, examples);
}

// Patterns near the boundaries of the conversion: every float within 64 patterns of each
// binade start and of each value whose rounding or range changes class.
std::vector<std::uint32_t> boundary_patterns() {
  std::vector<std::uint32_t> centers;
  for (std::uint32_t exponent = 0; exponent <= 255; ++exponent) centers.push_back(exponent << 23);
  const float special[] = {65504.0f, 65520.0f,     0x1p-14f,    0x1p-24f,
                           0x1p-25f, 0x1.ffcp-15f, 0x1.fep127f, 0x1.ffp127f};
  for (const float value : special) centers.push_back(bits_of(value));
  std::vector<std::uint32_t> patterns;
  for (const std::uint32_t center : centers) {
    for (std::uint32_t sign : {0u, 0x80000000u}) {
      for (std::int64_t delta = -64; delta <= 64; ++delta) {
        const std::int64_t pattern = static_cast<std::int64_t>(center) + delta;
        if (pattern >= 0 && pattern <= 0x7fffffff) {
          patterns.push_back(static_cast<std::uint32_t>(pattern) | sign);
        }
      }
    }
  }
  return patterns;
}

template <class Convert>
void check_all_floats(const Format& format, Convert convert) {
  const auto start = std::chrono::steady_clock::now();
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  constexpr std::uint64_t kPatterns = std::uint64_t{1} << 32;
  Mismatches mismatches;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    // Chunk starts are multiples of the stride, so the union is exactly every stride-th pattern.
    const std::uint64_t chunk = (kPatterns / threads + kStride - 1) / kStride * kStride;
    const std::uint64_t begin = std::min(kPatterns, chunk * t);
    const std::uint64_t end = t + 1 == threads ? kPatterns : std::min(kPatterns, chunk * (t + 1));
    workers.emplace_back(check_patterns<Convert>, begin, end, kStride, std::cref(format), convert,
                         &mismatches);
  }
  for (std::thread& worker : workers) worker.join();
  if (kStride != 1) {
    for (const std::uint32_t bits : boundary_patterns()) {
      check_patterns(bits, std::uint64_t{bits} + 1, 1, format, convert, &mismatches);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: checked 2^32 / %llu float patterns on %u threads in %.1f s\n", format.name,
              static_cast<unsigned long long>(kStride), threads, seconds);
  std::string report;
  for (const std::string& line : mismatches.first) report += "\n  " + line;
  EXPECT_EQ(mismatches.count, 0u) << "first mismatches:" << report;
}

TEST(HalfExhaustive, ReferenceAgreesWithHandPickedValues) {
  // Guards the reference itself before it judges 2^32 conversions.
  EXPECT_EQ(reference(bits_of(65504.0f), kF16), 0x7bff);
  EXPECT_EQ(reference(bits_of(65520.0f), kF16), 0x7c00);
  EXPECT_EQ(reference(bits_of(0x1p-24f), kF16), 0x0001);
  EXPECT_EQ(reference(bits_of(0x1p-25f), kF16), 0x0000);
  EXPECT_EQ(reference(bits_of(-1.0f), kF16), 0xbc00);
  EXPECT_EQ(reference(bits_of(1.0f), kBF16), 0x3f80);
  EXPECT_EQ(reference(bits_of(0x1.fep127f), kBF16), 0x7f7f);
  EXPECT_EQ(reference(bits_of(0x1.ffp127f), kBF16), 0x7f80);
  EXPECT_EQ(reference(0x7f800001u, kBF16), 0x7fc0);
  EXPECT_EQ(reference(0xffa00000u, kF16), 0xfe00 | (0x200000u >> 13));
}

TEST(HalfExhaustive, EveryFloatToF16MatchesTheReference) {
  check_all_floats(kF16, [](float value) { return float_to_half_bits(value); });
}

TEST(HalfExhaustive, EveryFloatToBF16MatchesTheReference) {
  check_all_floats(kBF16, [](float value) { return float_to_bf16_bits(value); });
}

}  // namespace
}  // namespace tenax
