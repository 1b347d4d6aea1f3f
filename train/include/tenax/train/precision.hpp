/// Precision policy of training: the dtype the forward and backward passes compute in, the dtype
/// of the master weights the optimizer updates, and whether dynamic loss scaling is needed.
/// - f32: compute f32, master f32, no loss scaling.
/// - f16: compute f16 (IEEE binary16: 5 exponent bits, so small gradients underflow), master f32,
///   dynamic loss scaling (loss_scaler.hpp). @file
/// - bf16: compute bf16 (f32's 8 exponent bits: no underflow to guard against), master f32, no
///   loss scaling; a non-finite gradient is an anomaly, not an overflow.
#pragma once

#include <string_view>

#include "tenax/core/dtype.hpp"

namespace tenax::train {

/// The precision a model trains in (`--precision`): `f32`, `f16` or `bf16`, as the file
/// describes them.
enum class Precision { f32, f16, bf16 };

/// The dtypes and the loss scaling that follow from a Precision.
struct PrecisionPolicy {
  Precision precision = Precision::f32;  ///< the precision chosen (`--precision`)

  /// f32, f16 or bf16, after the precision.
  [[nodiscard]] DType compute_dtype() const noexcept;
  /// Always f32: weights are kept and updated in f32 whatever the compute dtype.
  [[nodiscard]] DType master_dtype() const noexcept { return DType::f32; }
  /// True for f16 only (give LossScalerOptions::enabled this value).
  [[nodiscard]] bool uses_loss_scaling() const noexcept { return precision == Precision::f16; }
};

/// "f32", "f16" or "bf16" (a `--precision` flag; also "fp32", "float32", "fp16", "float16",
/// "bfloat16"). Throws UsageError naming the text and listing f32|f16|bf16.
[[nodiscard]] Precision parse_precision(std::string_view text);

/// "f32", "f16" or "bf16".
[[nodiscard]] std::string_view to_string(Precision precision) noexcept;

}  // namespace tenax::train
