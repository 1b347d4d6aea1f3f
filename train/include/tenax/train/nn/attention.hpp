/// CausalSelfAttention: GPT-2's multi-head self-attention over a sequence, each position
/// attending to itself and the positions before it. @file
#pragma once

#include <cstdint>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/train/autodiff/variable.hpp"
#include "tenax/train/nn/linear.hpp"
#include "tenax/train/nn/module.hpp"

namespace tenax::train::nn {

/// For x [batch, T, d]: qkv = x Wqkvᵀ + b (one Linear(d, 3d), registered as `qkv`), split into q,
/// k and v of d each and into `heads` heads of d / heads; per head, the causal softmax of
/// q kᵀ / sqrt(d / heads) weights v; the heads joined back to d and projected by `proj`, a
/// Linear(d, d). The arithmetic of PyTorch's minGPT / nanoGPT CausalSelfAttention without dropout,
/// and its parameter names (`qkv.weight`, `qkv.bias`, `proj.weight`, `proj.bias`).
class CausalSelfAttention : public Module {
 public:
  /// d, heads >= 1 with heads dividing d; dtype f32 or f64 (master weights). The two layers draw
  /// their parameters one after the other from (seed, offset). UsageError naming the values.
  CausalSelfAttention(std::int64_t d, std::int64_t heads, DType dtype, Device device,
                      std::uint64_t seed, std::uint64_t offset = 0);

  /// x [batch, T, d] (the parameters' dtype, or f16/bf16 against f32 ones) -> [batch, T, d].
  [[nodiscard]] autodiff::Variable forward(const autodiff::Variable& x) const;

  /// The Linear(d, 3d) that makes q, k and v.
  [[nodiscard]] const Linear& qkv() const noexcept { return qkv_; }
  /// The Linear(d, d) after the heads are joined.
  [[nodiscard]] const Linear& proj() const noexcept { return proj_; }
  /// The number of heads.
  [[nodiscard]] std::int64_t heads() const noexcept { return heads_; }
  /// The Philox offset after the layers' draws.
  [[nodiscard]] std::uint64_t end_offset() const noexcept { return proj_.end_offset(); }

 private:
  std::int64_t d_;
  std::int64_t heads_;
  Linear qkv_;
  Linear proj_;
};

}  // namespace tenax::train::nn
