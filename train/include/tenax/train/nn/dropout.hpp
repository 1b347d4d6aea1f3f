/// Dropout: elements zeroed at random in training mode, with a mask that survives micro-batches,
/// ranks and resumes (autodiff::dropout); the identity in evaluation mode. @file
#pragma once

#include <cstdint>

#include "tenax/train/autodiff/variable.hpp"
#include "tenax/train/nn/module.hpp"

namespace tenax::train::nn {

/// Dropout with probability p (PyTorch's nn.Dropout), its mask keyed by (seed, stream, step,
/// global sample, element): give each dropout of a model its own `stream`.
class Dropout : public Module {
 public:
  /// 0 <= p < 1 (UsageError otherwise).
  Dropout(double p, std::uint64_t seed, std::uint32_t stream);
  /// x with dropout in training mode and p > 0; x itself otherwise.
  [[nodiscard]] autodiff::Variable forward(const autodiff::Variable& x) const;
  /// The probability of zeroing an element.
  [[nodiscard]] double p() const noexcept { return p_; }

 private:
  double p_;
  std::uint64_t seed_;
  std::uint32_t stream_;
};

}  // namespace tenax::train::nn
