// float_math.hpp: exp, tanh, sigmoid and erfc for f32 compute against the double library functions
// rounded to float, over a sweep of a million float bit patterns (every sign and exponent) and
// the special values: at most one float ulp apart, and equal in all but a handful of cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "kernels/float_bits.hpp"
#include "tenax/kernels/float_math.hpp"

namespace tenax::kernels {
namespace {

using testing::float_of;
using testing::ordered;

struct Sweep {
  std::int64_t checked = 0;
  std::int64_t inexact = 0;  // one ulp off the correctly rounded value
};

template <class Ours, class Reference>
Sweep sweep(const char* name, Ours ours, Reference reference) {
  Sweep s;
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4093) {
    const float x = float_of(static_cast<std::uint32_t>(bits));
    if (std::isnan(x)) continue;
    const float want = static_cast<float>(reference(static_cast<double>(x)));
    const float got = ours(x);
    ++s.checked;
    if (std::memcmp(&want, &got, sizeof want) == 0) continue;
    const std::int64_t ulps = ordered(want) - ordered(got);
    EXPECT_LE(std::abs(ulps), 1) << name << "(" << x << "): " << got << " vs " << want;
    ++s.inexact;
  }
  return s;
}

TEST(FloatMath, WithinOneUlpOfTheCorrectlyRoundedValueAndUsuallyEqual) {
  const Sweep e = sweep("exp", exp_f32, [](double x) { return std::exp(x); });
  const Sweep t = sweep("tanh", tanh_f32, [](double x) { return std::tanh(x); });
  const Sweep s =
      sweep("sigmoid", sigmoid_f32, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
  const Sweep c = sweep("erfc", erfc_f32, [](double x) { return std::erfc(x); });
  for (const Sweep& sw : {e, t, s, c}) {
    EXPECT_GT(sw.checked, 1000000);
    EXPECT_LT(sw.inexact, sw.checked / 100000) << "more than 1e-5 of the values are inexact";
  }
}

TEST(FloatMath, SpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float nan = std::nanf("");
  EXPECT_TRUE(std::isnan(exp_f32(nan)));
  EXPECT_TRUE(std::isnan(tanh_f32(nan)));
  EXPECT_TRUE(std::isnan(sigmoid_f32(nan)));
  EXPECT_EQ(exp_f32(kInf), kInf);
  EXPECT_EQ(exp_f32(-kInf), 0.0f);
  EXPECT_EQ(exp_f32(89.0f), kInf) << "overflow";
  EXPECT_EQ(exp_f32(-104.0f), 0.0f) << "underflow";
  EXPECT_GT(exp_f32(-100.0f), 0.0f) << "a subnormal result";
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(tanh_f32(kInf), 1.0f);
  EXPECT_EQ(tanh_f32(-kInf), -1.0f);
  EXPECT_TRUE(std::signbit(tanh_f32(-0.0f)));
  EXPECT_EQ(tanh_f32(1e-30f), 1e-30f);
  EXPECT_EQ(sigmoid_f32(kInf), 1.0f);
  EXPECT_EQ(sigmoid_f32(-kInf), 0.0f);
  EXPECT_EQ(sigmoid_f32(0.0f), 0.5f);
  EXPECT_TRUE(std::isnan(erfc_f32(nan)));
  EXPECT_EQ(erfc_f32(kInf), 0.0f);
  EXPECT_EQ(erfc_f32(-kInf), 2.0f);
  EXPECT_EQ(erfc_f32(0.0f), 1.0f);
  EXPECT_EQ(erfc_f32(-0.0f), 1.0f);
  EXPECT_EQ(erfc_f32(10.1f), 0.0f) << "underflow";
  EXPECT_GT(erfc_f32(10.0f), 0.0f) << "a subnormal result";
  EXPECT_EQ(erfc_f32(-10.1f), 2.0f);
}

// Floats of [-11, 11] (where erfc is neither 0 nor 2 in float), every 61st bit pattern, against
// the double library function rounded to float: at most one ulp apart, and equal in all but a
// handful of cases. float_math_slow_test checks every one of them.
TEST(FloatMath, ErfcWhereItIsNotALimit) {
  std::int64_t checked = 0, inexact = 0;
  const auto last = static_cast<std::uint32_t>(ordered(11.0f));
  for (const float sign : {1.0f, -1.0f}) {
    for (std::uint32_t bits = 0; bits <= last; bits += 61) {
      const float x = sign * float_of(bits);
      const float want = static_cast<float>(std::erfc(static_cast<double>(x)));
      const float got = erfc_f32(x);
      ++checked;
      if (std::memcmp(&want, &got, sizeof want) == 0) continue;
      ++inexact;
      ASSERT_LE(std::abs(ordered(want) - ordered(got)), 1)
          << "erfc(" << x << "): " << got << " vs " << want;
    }
  }
  EXPECT_LT(inexact, checked / 100000) << inexact << " of " << checked << " are inexact";
}

}  // namespace
}  // namespace tenax::kernels
