// The array conversions of half_arrays.hpp (F16C where the CPU has it) and the f16 element-wise
// ops that run through them (for_each.hpp's staging) give the bits of half.hpp's scalar
// conversions: every f16 and bf16 pattern, every float rounding case class, every tail length.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

#include "tenax/core/half.hpp"
#include "tenax/kernels/detail/half_arrays.hpp"
#include "tenax/kernels/float_math.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax {
namespace {

using kernels::cpu::narrow_from_float;
using kernels::cpu::widen_to_float;

std::vector<std::uint16_t> every_16_bit_pattern() {
  std::vector<std::uint16_t> bits(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<std::uint16_t>(i);
  return bits;
}

// Floats whose low 13 bits sit on every rounding case of f16 (exact, just above, below and on the
// tie, the largest dropped value) and of bf16 (the same for its low 16 bits), for every sign,
// exponent and kept mantissa, plus a stride through all 2^32 patterns.
std::vector<float> rounding_cases() {
  std::vector<float> values;
  const std::uint32_t low_f16[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff};
  for (std::uint32_t high = 0; high < (1u << 19); ++high) {
    for (const std::uint32_t low : low_f16) values.push_back(float_of((high << 13) | low));
  }
  const std::uint32_t low_bf16[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff};
  for (std::uint32_t high = 0; high < (1u << 16); ++high) {
    for (const std::uint32_t low : low_bf16) values.push_back(float_of((high << 16) | low));
  }
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32); bits += 4099) {
    values.push_back(float_of(static_cast<std::uint32_t>(bits)));
  }
  return values;
}

template <class S>
S narrow_scalar(float value) {
  if constexpr (std::is_same_v<S, Half>) {
    return to_half(value);
  } else {
    return to_bfloat16(value);
  }
}

template <class S>
void expect_every_pattern_widens_as_scalar() {
  const std::vector<std::uint16_t> bits = every_16_bit_pattern();
  std::vector<S> in(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) in[i].bits = bits[i];
  std::vector<float> out(in.size());
  widen_to_float(in.data(), out.data(), static_cast<std::int64_t>(in.size()));
  int mismatches = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (bits_of(out[i]) != bits_of(to_float(in[i])) && ++mismatches <= 5) {
      ADD_FAILURE() << "pattern 0x" << std::hex << bits[i] << ": array 0x" << bits_of(out[i])
                    << ", scalar 0x" << bits_of(to_float(in[i]));
    }
  }
  EXPECT_EQ(mismatches, 0);
}

template <class S>
void expect_rounding_cases_narrow_as_scalar(const std::vector<float>& values) {
  std::vector<S> out(values.size());
  narrow_from_float(values.data(), out.data(), static_cast<std::int64_t>(values.size()));
  int mismatches = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t expected = narrow_scalar<S>(values[i]).bits;
    if (out[i].bits != expected && ++mismatches <= 5) {
      ADD_FAILURE() << "float 0x" << std::hex << bits_of(values[i]) << ": array 0x" << out[i].bits
                    << ", scalar 0x" << expected;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(HalfArrays, SaysWhetherF16cIsUsed) {
  std::printf("f16 array conversions use F16C: %s\n",
              kernels::cpu::half_arrays_use_f16c() ? "yes" : "no (portable code)");
}

TEST(HalfArrays, EveryF16PatternWidensAsTheScalarConversion) {
  expect_every_pattern_widens_as_scalar<Half>();
}

TEST(HalfArrays, EveryBF16PatternWidensAsTheScalarConversion) {
  expect_every_pattern_widens_as_scalar<BFloat16>();
}

TEST(HalfArrays, EveryRoundingCaseNarrowsAsTheScalarConversion) {
  const std::vector<float> values = rounding_cases();
  expect_rounding_cases_narrow_as_scalar<Half>(values);
  expect_rounding_cases_narrow_as_scalar<BFloat16>(values);
}

// Lengths that are not multiples of the vector width, from unaligned starts: the tails and the
// elements beyond `count` (which must stay untouched).
TEST(HalfArrays, TailsAndUnalignedStartsConvertOnlyTheirElements) {
  for (std::int64_t offset = 0; offset < 3; ++offset) {
    for (std::int64_t count = 0; count <= 40; ++count) {
      std::vector<float> wide(64, -7.0f);
      std::vector<Half> narrow(64, Half{0xBEEF});
      for (std::int64_t i = 0; i < count; ++i) wide[offset + i] = 0.1f * static_cast<float>(i + 1);
      narrow_from_float(wide.data() + offset, narrow.data() + offset, count);
      std::vector<float> back(64, -9.0f);
      widen_to_float(narrow.data() + offset, back.data() + offset, count);
      for (std::int64_t i = 0; i < 64; ++i) {
        const bool inside = i >= offset && i < offset + count;
        EXPECT_EQ(narrow[i].bits, inside ? to_half(wide[i]).bits : 0xBEEF) << count << " " << i;
        EXPECT_EQ(bits_of(back[i]), bits_of(inside ? to_float(narrow[i]) : -9.0f)) << i;
      }
    }
  }
}

// The staged f16 ops (float twin over F16C-converted blocks) against element-by-element scalar
// arithmetic, on every f16 pattern as input (NaNs, infinities, subnormals), in place and not.
Tensor every_f16_pattern() {
  Tensor t = Tensor::empty({65536}, DType::f16);
  for (std::int64_t i = 0; i < 65536; ++i)
    t.data_as<Half>()[i].bits = static_cast<std::uint16_t>(i);
  return t;
}

template <class Expected>
void expect_f16_bits(const Tensor& actual, const Expected& expected, const char* what) {
  int mismatches = 0;
  for (std::int64_t i = 0; i < actual.numel(); ++i) {
    const std::uint16_t want = expected(i);
    if (actual.data_as<Half>()[i].bits != want && ++mismatches <= 5) {
      ADD_FAILURE() << what << " at " << i << ": 0x" << std::hex << actual.data_as<Half>()[i].bits
                    << ", expected 0x" << want;
    }
  }
  EXPECT_EQ(mismatches, 0) << what;
}

TEST(HalfArrays, StagedF16OpsMatchScalarArithmetic) {
  const Tensor x = every_f16_pattern();
  Tensor y = every_f16_pattern();
  std::reverse(y.data_as<Half>(), y.data_as<Half>() + y.numel());
  auto in = [](const Tensor& t, std::int64_t i) { return to_float(t.data_as<Half>()[i]); };

  expect_f16_bits(
      ops::tanh(x), [&](std::int64_t i) { return to_half(kernels::tanh_f32(in(x, i))).bits; },
      "tanh");
  expect_f16_bits(
      ops::mul(x, y), [&](std::int64_t i) { return to_half(in(x, i) * in(y, i)).bits; }, "mul");

  Tensor in_place = every_f16_pattern();
  ops::binary_into(ops::BinaryOp::add, in_place, y, in_place);
  expect_f16_bits(
      in_place, [&](std::int64_t i) { return to_half(in(x, i) + in(y, i)).bits; }, "add in place");

  Tensor axpby = every_f16_pattern();
  ops::axpby(0.75, y, -1.5, axpby);
  expect_f16_bits(
      axpby, [&](std::int64_t i) { return to_half(0.75f * in(y, i) + -1.5f * in(x, i)).bits; },
      "axpby");

  Tensor scaled = every_f16_pattern();
  ops::scale(3.0, scaled);
  expect_f16_bits(
      scaled, [&](std::int64_t i) { return to_half(3.0f * in(x, i)).bits; }, "scale");

  const Tensor wide = ops::cast(x, DType::f32);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(bits_of(wide.data_as<float>()[i]), bits_of(in(x, i))) << i;
  }
  const Tensor back = ops::cast(wide, DType::f16);
  expect_f16_bits(
      back, [&](std::int64_t i) { return to_half(wide.data_as<float>()[i]).bits; }, "cast");
}

}  // namespace
}  // namespace tenax
