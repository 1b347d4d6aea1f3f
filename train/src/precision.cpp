#include "tenax/train/precision.hpp"

#include <string>

#include "tenax/core/error.hpp"

namespace tenax::train {

DType PrecisionPolicy::compute_dtype() const noexcept {
  switch (precision) {
    case Precision::f16:
      return DType::f16;
    case Precision::bf16:
      return DType::bf16;
    case Precision::f32:
      break;
  }
  return DType::f32;
}

Precision parse_precision(std::string_view text) {
  if (text == "f32" || text == "fp32" || text == "float32") return Precision::f32;
  if (text == "f16" || text == "fp16" || text == "float16") return Precision::f16;
  if (text == "bf16" || text == "bfloat16") return Precision::bf16;
  throw UsageError("--precision " + std::string(text) + " is not a precision",
                   "use f32|f16|bf16 (bf16 needs no loss scaling; f16 scales the loss)");
}

std::string_view to_string(Precision precision) noexcept {
  switch (precision) {
    case Precision::f32:
      return "f32";
    case Precision::f16:
      return "f16";
    case Precision::bf16:
      return "bf16";
  }
  return "unknown";
}

}  // namespace tenax::train
