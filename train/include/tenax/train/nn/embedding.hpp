/// Embedding: a table of learned vectors looked up by token id, as PyTorch's
/// nn.Embedding(vocab, d). @file
#pragma once

#include <cstdint>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/train/autodiff/variable.hpp"
#include "tenax/train/nn/module.hpp"

namespace tenax::train::nn {

/// out = weight[indices] (autodiff::embedding); registers `weight` [vocab, d].
class Embedding : public Module {
 public:
  /// vocab, d >= 1; dtype f32 or f64. The table is drawn N(0, std^2) at (seed, offset) -- PyTorch's
  /// nn.Embedding draws N(0, 1); GPT-2 initialises with std 0.02. UsageError naming the value
  /// otherwise.
  Embedding(std::int64_t vocab, std::int64_t d, DType dtype, Device device, std::uint64_t seed,
            std::uint64_t offset = 0, double std = 1.0);

  /// The rows of the table at `indices` (i64 [batch, ...] on the table's device) ->
  /// indices.shape + [d].
  [[nodiscard]] autodiff::Variable forward(const Tensor& indices) const;

  /// The table [vocab, d] (a parameter).
  [[nodiscard]] const autodiff::Variable& weight() const noexcept { return weight_; }
  /// The Philox offset after the table's draw: the `offset` of the next initialisation.
  [[nodiscard]] std::uint64_t end_offset() const noexcept { return end_offset_; }

 private:
  autodiff::Variable weight_;
  std::uint64_t end_offset_;
};

}  // namespace tenax::train::nn
