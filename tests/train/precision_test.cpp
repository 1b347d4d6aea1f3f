#include "tenax/train/precision.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tenax/core/error.hpp"

namespace tenax::train {
namespace {

TEST(Precision, PolicyDtypesAndLossScaling) {
  const PrecisionPolicy f32{Precision::f32};
  const PrecisionPolicy f16{Precision::f16};
  const PrecisionPolicy bf16{Precision::bf16};
  EXPECT_EQ(f32.compute_dtype(), DType::f32);
  EXPECT_EQ(f16.compute_dtype(), DType::f16);
  EXPECT_EQ(bf16.compute_dtype(), DType::bf16);
  for (const PrecisionPolicy& p : {f32, f16, bf16}) EXPECT_EQ(p.master_dtype(), DType::f32);
  EXPECT_FALSE(f32.uses_loss_scaling());
  EXPECT_TRUE(f16.uses_loss_scaling());
  EXPECT_FALSE(bf16.uses_loss_scaling());
  EXPECT_EQ(PrecisionPolicy{}.precision, Precision::f32);
}

TEST(Precision, ParsesAndPrintsItsNames) {
  for (const Precision p : {Precision::f32, Precision::f16, Precision::bf16}) {
    EXPECT_EQ(parse_precision(to_string(p)), p);
  }
  EXPECT_EQ(to_string(Precision::bf16), "bf16");
  EXPECT_EQ(parse_precision("fp16"), Precision::f16);
  EXPECT_EQ(parse_precision("bfloat16"), Precision::bf16);
  EXPECT_EQ(parse_precision("float32"), Precision::f32);
  try {
    (void)parse_precision("fp8");
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("fp8"), std::string::npos) << message;
    EXPECT_NE(message.find("f32|f16|bf16"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tenax::train
