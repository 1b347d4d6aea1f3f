// nan_aware_comparison.hpp, the comparison behind the GPU-vs-CPU tests' expect_identical, on the
// CPU: NaNs of any sign and payload are equal in every floating dtype, everything else must have
// the same bits (+0 vs -0, NaN vs a number or infinity, one ulp), and the first differing index is
// the one reported.
#include "kernels/nan_aware_comparison.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "kernels/tensor_values.hpp"

namespace tenax::testing {
namespace {

// Writes the low size_of(dtype) bytes of `bits` into element i.
void set_bits(const Tensor& t, std::int64_t i, std::uint64_t bits) {
  const std::size_t size = size_of(t.dtype());
  std::memcpy(static_cast<unsigned char*>(t.data()) + static_cast<std::size_t>(i) * size, &bits,
              size);
}

// NaN patterns of one dtype: quiet and signalling, both signs, different payloads; the first is
// what x86 produces for 0/0 (the "default NaN", sign set), the second CUDA's canonical NaN.
struct NanPatterns {
  DType dtype;
  std::vector<std::uint64_t> nans;
  std::uint64_t infinity;
  std::uint64_t one;  // the bits of 1.0
};

const std::vector<NanPatterns>& nan_patterns() {
  static const std::vector<NanPatterns> patterns = {
      {DType::f64,
       {0xfff8000000000000ull, 0x7fffffffffffffffull, 0x7ff8000000000000ull, 0x7ff0000000000001ull,
        0xfff0000000abcdefull, 0x7ff4000000000123ull},
       0x7ff0000000000000ull,
       0x3ff0000000000000ull},
      {DType::f32,
       {0xffc00000ull, 0x7fffffffull, 0x7fc00000ull, 0x7f800001ull, 0xff800abcull, 0x7fa00123ull},
       0x7f800000ull,
       0x3f800000ull},
      {DType::f16,
       {0xfe00ull, 0x7fffull, 0x7e00ull, 0x7c01ull, 0xfc2aull, 0x7d23ull},
       0x7c00ull,
       0x3c00ull},
      {DType::bf16,
       {0xffc0ull, 0x7fffull, 0x7fc0ull, 0x7f81ull, 0xff8aull, 0x7fa3ull},
       0x7f80ull,
       0x3f80ull},
  };
  return patterns;
}

// A CPU tensor of n elements of `dtype`, element i holding i + 1.
Tensor counting(DType dtype, std::int64_t n) {
  std::vector<double> values;
  for (std::int64_t i = 0; i < n; ++i) {
    values.push_back(static_cast<double>(i + 1));
  }
  return make_tensor(values, dtype);
}

TEST(NanAwareComparison, EveryPlantedNanPatternIsANan) {
  for (const NanPatterns& p : nan_patterns()) {
    for (const std::uint64_t nan : p.nans) {
      EXPECT_TRUE(is_nan_bits(p.dtype, nan)) << to_string(p.dtype) << " " << std::hex << nan;
    }
    EXPECT_FALSE(is_nan_bits(p.dtype, p.infinity)) << to_string(p.dtype);
    EXPECT_FALSE(is_nan_bits(p.dtype, p.one)) << to_string(p.dtype);
  }
  // An integer with a float NaN's bit pattern is a number.
  EXPECT_FALSE(is_nan_bits(DType::i32, 0x7fc00000ull));
  EXPECT_FALSE(is_nan_bits(DType::i64, 0x7ff8000000000000ull));
}

TEST(NanAwareComparison, NansOfAnySignAndPayloadAreEqual) {
  for (const NanPatterns& p : nan_patterns()) {
    const std::int64_t n = static_cast<std::int64_t>(p.nans.size());
    for (std::int64_t shift = 1; shift < n; ++shift) {
      // a holds the patterns in order, b the same patterns rotated: every element pairs two
      // different NaNs, at every position (first, middle, last).
      Tensor a = counting(p.dtype, n + 2);
      Tensor b = counting(p.dtype, n + 2);
      for (std::int64_t i = 0; i < n; ++i) {
        set_bits(a, i, p.nans[static_cast<std::size_t>(i)]);
        set_bits(b, i, p.nans[static_cast<std::size_t>((i + shift) % n)]);
        ASSERT_NE(element_bits(a, i), element_bits(b, i));
      }
      EXPECT_EQ(first_difference(a, b), std::nullopt) << to_string(p.dtype) << " shift " << shift;
      EXPECT_EQ(count_differences(a, b), 0) << to_string(p.dtype);
    }
  }
}

TEST(NanAwareComparison, NanAgainstANumberOrInfinityDiffers) {
  for (const NanPatterns& p : nan_patterns()) {
    const std::uint64_t sign = std::uint64_t{1} << (8 * size_of(p.dtype) - 1);
    for (const std::uint64_t other : {p.one, p.infinity, p.infinity | sign}) {
      Tensor a = counting(p.dtype, 5);
      Tensor b = counting(p.dtype, 5);
      set_bits(a, 3, p.nans[1]);
      set_bits(b, 3, other);
      EXPECT_EQ(first_difference(a, b), 3) << to_string(p.dtype) << " " << std::hex << other;
      EXPECT_EQ(first_difference(b, a), 3) << to_string(p.dtype) << " " << std::hex << other;
    }
  }
}

TEST(NanAwareComparison, SignedZerosDiffer) {
  for (const DType dtype : kFloatDTypes) {
    const Tensor a = make_tensor({1.0, 0.0, 2.0}, dtype);
    const Tensor b = make_tensor({1.0, -0.0, 2.0}, dtype);
    EXPECT_EQ(first_difference(a, b), 1) << to_string(dtype);
    EXPECT_EQ(first_difference(a, a.clone()), std::nullopt) << to_string(dtype);
  }
}

TEST(NanAwareComparison, OneUlpIsFoundAtItsIndex) {
  for (const DType dtype : kAllDTypes) {
    for (const std::int64_t at : {std::int64_t{0}, std::int64_t{17}, std::int64_t{63}}) {
      const Tensor a = uniform_tensor({8, 8}, dtype, 7, 1.0, 100.0);
      const Tensor b = a.clone();
      set_bits(b, at, element_bits(b, at) + 1);
      EXPECT_EQ(first_difference(a, b), at) << to_string(dtype);
      EXPECT_EQ(count_differences(a, b), 1) << to_string(dtype);
      // A second difference further on does not move the first.
      set_bits(b, 63, element_bits(b, 63) ^ 1);
      if (at != 63) {
        EXPECT_EQ(first_difference(a, b), at) << to_string(dtype);
      }
    }
  }
}

TEST(NanAwareComparison, IntegersCompareBitsEvenWithNanPatterns) {
  const Tensor a = make_tensor({1.0, 2.0, 3.0}, DType::i32);
  const Tensor b = a.clone();
  set_bits(a, 1, 0x7fc00000ull);
  set_bits(b, 1, 0x7fc00001ull);
  EXPECT_EQ(first_difference(a, b), 1);
}

TEST(NanAwareComparison, SlicesCompareTheirOwnElements) {
  const Tensor a = counting(DType::f32, 6).reshape({3, 2});
  const Tensor b = a.clone();
  set_bits(b, 1, bits_of(-1.0f));  // row 0 only
  EXPECT_EQ(first_difference(a, b), 1);
  EXPECT_EQ(first_difference(a.slice(1, 3), b.slice(1, 3)), std::nullopt);
  set_bits(b, 5, 0x7fc00000ull);  // row 2, element 1 of the slice's 4
  EXPECT_EQ(first_difference(a.slice(1, 3), b.slice(1, 3)), 3);
}

TEST(NanAwareComparison, MismatchedTensorsAreRefused) {
  EXPECT_THROW((void)first_difference(counting(DType::f32, 3), counting(DType::f64, 3)),
               std::invalid_argument);
  EXPECT_THROW((void)first_difference(counting(DType::f32, 3), counting(DType::f32, 4)),
               std::invalid_argument);
  EXPECT_THROW((void)first_difference(counting(DType::f32, 3), fake_cuda_tensor({3}, DType::f32)),
               std::invalid_argument);
}

TEST(NanAwareComparison, ElementsAreDescribedWithValueAndBits) {
  Tensor t = make_tensor({1.0, -0.0, 3.0}, DType::f32);
  set_bits(t, 2, 0xffc00000ull);
  EXPECT_EQ(describe_element(t, 0), "1 (0x3f800000)");
  EXPECT_EQ(describe_element(t, 1), "-0 (0x80000000)");
  EXPECT_EQ(describe_element(t, 2), "-nan (0xffc00000)");
  EXPECT_EQ(describe_element(make_tensor({1.5}, DType::bf16), 0), "1.5 (0x3fc0)");
  EXPECT_EQ(describe_element(make_tensor({-2.0}, DType::i64), 0), "-2 (0xfffffffffffffffe)");
}

// expect_identical runs on two CPU tensors too (gpu.to(cpu) is the tensor itself): it accepts
// different NaNs and reports a real difference with the index and both values.
TEST(NanAwareComparison, ExpectIdenticalAcceptsNansAndReportsTheFirstDifference) {
  for (const NanPatterns& p : nan_patterns()) {
    Tensor a = counting(p.dtype, 4);
    Tensor b = counting(p.dtype, 4);
    set_bits(a, 1, p.nans[0]);
    set_bits(b, 1, p.nans[1]);
    expect_identical(a, b, "planted NaNs " + std::string(to_string(p.dtype)));
  }
  const Tensor a = make_tensor({1.0, 2.0, 3.0, 4.0}, DType::f32);
  const Tensor b = a.clone();
  set_bits(b, 2, bits_of(3.0f) + 1);
  set_bits(b, 3, bits_of(-4.0f));
  EXPECT_NONFATAL_FAILURE(
      expect_identical(a, b, "planted ulp"),
      "planted ulp differs at element 2 (row-major) of f32[4] on cpu: cpu 3 (0x40400000), cpu "
      "3.00000024 (0x40400001); 2 of 4 elements differ");
}

}  // namespace
}  // namespace tenax::testing
