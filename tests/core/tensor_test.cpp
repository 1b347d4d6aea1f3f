#include "tenax/core/tensor.hpp"

#include "tenax/core/memory/device_memory.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>

namespace tenax {
namespace {

TEST(Tensor, EmptyHasShapeDtypeDeviceAndStorage) {
  Tensor t = Tensor::empty({2, 3}, DType::f32);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_NE(t.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data()) % MemoryResource::kAlignment, 0u);
}

TEST(Tensor, SliceIsAViewAlongTheFirstDimension) {
  Tensor t = Tensor::empty({4, 3}, DType::f64);
  double* values = t.data_as<double>();
  std::iota(values, values + 12, 0.0);
  Tensor rows = t.slice(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 3}));
  EXPECT_EQ(rows.buffer(), t.buffer());
  EXPECT_EQ(rows.data_as<double>()[0], 3.0);
  rows.data_as<double>()[0] = -1.0;
  EXPECT_EQ(values[3], -1.0);
  EXPECT_EQ(rows.slice(1, 2).data_as<double>()[2], 8.0);
}

TEST(Tensor, BadSliceAndReshapeAndTypeNameTheProblem) {
  Tensor t = Tensor::empty({4, 3}, DType::f32);
  EXPECT_THROW((void)t.slice(3, 5), UsageError);
  EXPECT_THROW((void)t.slice(2, 1), UsageError);
  EXPECT_THROW((void)t.reshape({5}), UsageError);
  try {
    (void)t.data_as<double>();
    FAIL() << "data_as<double> on an f32 tensor must throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("f32[4, 3] on cpu"), std::string::npos) << e.what();
    EXPECT_EQ(e.fault_class(), FaultClass::usage);
  }
}

TEST(Tensor, CloneCopiesAndReshapeShares) {
  Tensor t = Tensor::empty({6}, DType::i32);
  std::iota(t.data_as<std::int32_t>(), t.data_as<std::int32_t>() + 6, 10);
  Tensor c = t.clone();
  EXPECT_NE(c.data(), t.data());
  EXPECT_EQ(c.data_as<std::int32_t>()[5], 15);
  Tensor r = t.reshape({2, 3});
  EXPECT_EQ(r.data(), t.data());
  EXPECT_EQ(r.shape()[1], 3);
  EXPECT_EQ(t.to(Device::cpu()).data(), t.data());
}

TEST(Tensor, CloneAndToOfAnUndefinedTensorAreUndefined) {
  // An undefined tensor has no storage: copying it used to read bytes from a null pointer.
  const Tensor undefined;
  EXPECT_FALSE(undefined.clone().defined());
  EXPECT_FALSE(undefined.to(Device::cpu()).defined());
  EXPECT_FALSE(undefined.to(Device::cuda(0)).defined());  // no device needed: nothing to copy
}

TEST(Shape, RejectsNegativeExtentsAndTooManyAxes) {
  EXPECT_THROW((Shape{2, -1}), UsageError);
  EXPECT_THROW((Shape{1, 1, 1, 1, 1, 1, 1, 1, 1}), UsageError);
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ(to_string(Shape{2, 3}), "[2, 3]");
  EXPECT_THROW((void)Shape({2})[1], UsageError);
}

TEST(Shape, ElementCountsBeyondInt64AreRefusedAtConstruction) {
  const std::int64_t big = std::int64_t{1} << 32;
  EXPECT_EQ((Shape{big, big / 2 - 1}).numel(), big * (big / 2 - 1));
  try {
    (void)Shape{big, big};  // 2^64: would wrap to 0
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("[4294967296, 4294967296]"), std::string::npos) << e.cause();
    EXPECT_NE(e.cause().find("2^63 - 1"), std::string::npos) << e.cause();
  }
  EXPECT_THROW((Shape{3037000500, 3037000500}), UsageError);  // just over 2^63
  EXPECT_EQ((Shape{0, big, big, big}).numel(), 0);            // a zero extent counts nothing
  const Shape rows{4, big};
  EXPECT_THROW((void)rows.with_leading(big), UsageError);  // 2^64 elements
  EXPECT_THROW((void)rows.with_leading(-1), UsageError);
  EXPECT_EQ(rows.with_leading(2).numel(), 2 * big);
}

TEST(Tensor, EmptyRefusesByteCountsBeyondInt64BeforeAllocating) {
  // 2^61 f64 elements count, but need 2^64 bytes: refused by name, not wrapped to 0 and allocated.
  try {
    (void)Tensor::empty({std::int64_t{1} << 61}, DType::f64);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("[2305843009213693952] f64"), std::string::npos) << e.cause();
  }
}

TEST(AlignUp, RequestsWithoutAnAlignedSizeSaturateInsteadOfWrapping) {
  EXPECT_EQ(align_up(1, 64), 64u);
  EXPECT_EQ(align_up(64, 64), 64u);
  EXPECT_EQ(align_up(SIZE_MAX - 63, 64), SIZE_MAX - 63);
  EXPECT_EQ(align_up(SIZE_MAX - 62, 64), SIZE_MAX);
  EXPECT_EQ(align_up(SIZE_MAX, 65536), SIZE_MAX);
  // Every resource refuses such a request as out of memory (the host one through the C library).
  EXPECT_THROW((void)current_resource(Device::cpu())->allocate(SIZE_MAX - 10), OutOfMemoryError);
}

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  EXPECT_EQ(parse_device("cuda"), Device::cuda(0));
  EXPECT_EQ(parse_device("cuda:3"), Device::cuda(3));
  EXPECT_EQ(to_string(Device::cuda(2)), "cuda:2");
  EXPECT_THROW((void)parse_device("gpu"), UsageError);
  EXPECT_THROW((void)parse_device("cuda:-1"), UsageError);
  EXPECT_THROW((void)parse_device("cuda:1x"), UsageError);
}

TEST(DType, SizesNamesAndParsing) {
  EXPECT_EQ(size_of(DType::bf16), 2u);
  EXPECT_EQ(size_of(DType::i64), 8u);
  for (DType d : kAllDTypes) EXPECT_EQ(parse_dtype(to_string(d)), d);
  EXPECT_THROW((void)parse_dtype("float"), UsageError);
  EXPECT_TRUE(is_floating(DType::bf16));
  EXPECT_FALSE(is_floating(DType::u8));
}

}  // namespace
}  // namespace tenax
