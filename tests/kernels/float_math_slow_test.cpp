// float_math.hpp's erfc_f32 on every float of [-11, 11] (outside, erfc is 0 or 2 in float)
// against the double library function rounded to float: at most one ulp apart, and equal in all
// but a handful of cases (float_math_test samples the same range).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/float_bits.hpp"
#include "tenax/kernels/float_math.hpp"

namespace tenax::kernels {
namespace {

using testing::float_of;

std::uint32_t bits_of(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

TEST(FloatMathSlow, ErfcOnEveryFloatWhereItIsNotALimit) {
  const std::uint32_t last = bits_of(11.0f);
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::int64_t> inexact{0}, far{0};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      std::int64_t off = 0, off_more = 0;
      for (std::uint32_t bits = w; bits <= last; bits += workers) {
        for (const std::uint32_t sign : {0u, 0x80000000u}) {
          const float x = float_of(bits | sign);
          const float want = static_cast<float>(std::erfc(static_cast<double>(x)));
          const float got = erfc_f32(x);
          if (bits_of(want) == bits_of(got)) continue;
          ++off;
          // Same sign (erfc > 0): one ulp is a difference of one in the bits.
          const std::int64_t ulps = static_cast<std::int64_t>(bits_of(want)) - bits_of(got);
          if (ulps > 1 || ulps < -1) ++off_more;
        }
      }
      inexact += off;
      far += off_more;
    });
  }
  for (std::thread& t : threads) t.join();
  const std::int64_t checked = 2 * (static_cast<std::int64_t>(last) + 1);
  EXPECT_EQ(far.load(), 0) << "values more than one ulp from the correctly rounded erfc";
  EXPECT_LT(inexact.load(), checked / 100000) << inexact.load() << " of " << checked;
}

}  // namespace
}  // namespace tenax::kernels
