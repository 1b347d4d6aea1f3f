#include "tenax/train/nn/attention.hpp"

#include <cmath>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/train/autodiff/layer_ops.hpp"

namespace tenax::train::nn {
namespace {

using autodiff::Variable;

std::int64_t checked_heads(std::int64_t d, std::int64_t heads) {
  TENAX_EXPECTS(d >= 1 && heads >= 1 && d % heads == 0, UsageError,
                "nn::CausalSelfAttention: d = " + std::to_string(d) +
                    " and heads = " + std::to_string(heads) + ", but the heads must split d evenly",
                "pass heads >= 1 dividing d (e.g. d 64 with 4 heads of 16)");
  return heads;
}

}  // namespace

CausalSelfAttention::CausalSelfAttention(std::int64_t d, std::int64_t heads, DType dtype,
                                         Device device, std::uint64_t seed, std::uint64_t offset)
    : Module("CausalSelfAttention"),
      d_(d),
      heads_(checked_heads(d, heads)),
      qkv_(d, 3 * d, dtype, device, seed, offset),
      proj_(d, d, dtype, device, seed, qkv_.end_offset()) {
  register_module("qkv", qkv_);
  register_module("proj", proj_);
}

Variable CausalSelfAttention::forward(const Variable& x) const {
  const Shape& s = x.value().shape();
  TENAX_EXPECTS(s.rank() == 3 && s[2] == d_, UsageError,
                "nn::CausalSelfAttention: x has shape " + to_string(s) +
                    " but must be [batch, T, " + std::to_string(d_) + "]",
                "pass a batch of sequences of d-vectors");
  const std::int64_t batch = s[0];
  const std::int64_t t = s[1];
  const std::int64_t hd = d_ / heads_;
  const Variable qkv = qkv_.forward(x);  // [batch, T, 3d]
  // One third of qkv as [batch, heads, T, hd].
  const auto heads_of = [&](std::int64_t part) {
    const Variable third = autodiff::narrow(qkv, 2, part * d_, (part + 1) * d_);
    return autodiff::permute(autodiff::reshape(third, Shape{batch, t, heads_, hd}), {0, 2, 1, 3});
  };
  const Variable q = heads_of(0);
  const Variable k = heads_of(1);
  const Variable v = heads_of(2);
  const Variable scores =
      autodiff::batched_matmul(q, k, ops::Transpose::yes, 1.0 / std::sqrt(static_cast<double>(hd)));
  const Variable weights = autodiff::causal_softmax(scores);    // [batch, heads, T, T]
  const Variable mixed = autodiff::batched_matmul(weights, v);  // [batch, heads, T, hd]
  const Variable joined = autodiff::reshape(autodiff::permute(mixed, {0, 2, 1, 3}),
                                            Shape{batch, t, d_});  // heads side by side
  return proj_.forward(joined);
}

}  // namespace tenax::train::nn
