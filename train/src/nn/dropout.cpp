#include "tenax/train/nn/dropout.hpp"

#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"
#include "tenax/train/autodiff/layer_ops.hpp"

namespace tenax::train::nn {

Dropout::Dropout(double p, std::uint64_t seed, std::uint32_t stream)
    : Module("Dropout"), p_(p), seed_(seed), stream_(stream) {
  TENAX_EXPECTS(p >= 0 && p < 1, UsageError,
                "nn::Dropout: p = " + format_number(p) + " is outside [0, 1)",
                "pass the probability of zeroing an element, e.g. 0.1 (0: no dropout)");
}

autodiff::Variable Dropout::forward(const autodiff::Variable& x) const {
  if (!is_training() || p_ == 0) return x;
  return autodiff::dropout(x, p_, seed_, stream_);
}

}  // namespace tenax::train::nn
