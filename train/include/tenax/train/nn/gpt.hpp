/// GPT: a decoder-only transformer language model in GPT-2's pre-LayerNorm form, with the
/// parameter names and layouts of its PyTorch rendering. @file
/// Tokens [batch, T] (i64 ids in [0, vocab), T <= context) -> logits [batch, T, vocab]:
/// ```
/// x = tok_emb(tokens) + pos_emb(positions)        positions 0 .. T-1 of every sample
/// per block:  x = x + attn(ln1(x));  x = x + mlp(ln2(x))     mlp: fc Linear(d, 4d), GELU,
///                                                             proj Linear(4d, d)
/// logits = head(ln_f(x))                          head: Linear(d, vocab) without bias
/// ```
/// attn is CausalSelfAttention (attention.hpp); with GptConfig::dropout, nn::Dropout after the
/// embeddings' sum and on the output of attn and of mlp (no dropout of the attention weights).
/// Names: `tok_emb.weight`, `pos_emb.weight`, `blocks.{i}.ln1.weight|bias`,
/// `blocks.{i}.attn.qkv.weight|bias`, `blocks.{i}.attn.proj.weight|bias`, `blocks.{i}.ln2.*`,
/// `blocks.{i}.mlp.fc.*`, `blocks.{i}.mlp.proj.*`, `ln_f.*`, `head.weight`; weights [out, in] as
/// PyTorch stores them.
///
/// Precision: the parameters are master weights (f32 or f64); with an f16/bf16 compute dtype the
/// embeddings' sum is cast to it and every layer runs in it against the master weights (the
/// logits come out in the compute dtype; the cross-entropy computes in f32). Initialisation,
/// from (seed): Linear layers as PyTorch's nn.Linear, embeddings N(0, 0.02^2) (GPT-2's),
/// LayerNorms 1 and 0.
#pragma once

#include <cstdint>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/train/autodiff/layer_ops.hpp"
#include "tenax/train/autodiff/variable.hpp"
#include "tenax/train/nn/attention.hpp"
#include "tenax/train/nn/dropout.hpp"
#include "tenax/train/nn/embedding.hpp"
#include "tenax/train/nn/layer_norm.hpp"
#include "tenax/train/nn/linear.hpp"
#include "tenax/train/nn/module.hpp"

namespace tenax::train::nn {

/// The sizes of a GPT; GptModel's constructor checks them (UsageError naming the value).
struct GptConfig {
  std::int64_t vocab = 256;    ///< token ids in [0, vocab) (256: bytes)
  std::int64_t context = 128;  ///< the longest sequence (positions of pos_emb)
  std::int64_t layers = 4;     ///< transformer blocks (>= 1)
  std::int64_t d_model = 256;  ///< the width of the residual stream (a multiple of heads)
  std::int64_t heads = 4;      ///< attention heads per block
  /// The MLP's nonlinearity: the exact GELU (default) or GPT-2's tanh form.
  autodiff::GeluApproximation gelu = autodiff::GeluApproximation::none;
  double layer_norm_eps = 1e-5;  ///< every LayerNorm's eps
  /// Dropout probability (0: none, the default) after the embeddings and on each block's two
  /// residual branches, as GPT-2; its masks are keyed by the model's seed (nn::Dropout).
  double dropout = 0;
};

/// A block's MLP: fc Linear(d, 4d), GELU, proj Linear(4d, d) (registered as `fc` and `proj`).
class GptMlp : public Module {
 public:
  /// The two layers of width d and 4d, drawn from (seed, offset) one after the other.
  GptMlp(std::int64_t d, autodiff::GeluApproximation gelu, DType dtype, Device device,
         std::uint64_t seed, std::uint64_t offset);
  /// x [batch, T, d] -> [batch, T, d].
  [[nodiscard]] autodiff::Variable forward(const autodiff::Variable& x) const;
  /// The Philox offset after the layers' draws.
  [[nodiscard]] std::uint64_t end_offset() const noexcept { return proj_.end_offset(); }

 private:
  autodiff::GeluApproximation gelu_;
  Linear fc_;
  Linear proj_;
};

/// One pre-LayerNorm block: x + attn(ln1(x)), then + mlp(ln2(x)) (`ln1`, `attn`, `ln2`, `mlp`).
class GptBlock : public Module {
 public:
  /// Block `index` of `config`'s sizes, drawn from (seed, offset).
  GptBlock(const GptConfig& config, std::int64_t index, DType dtype, Device device,
           std::uint64_t seed, std::uint64_t offset);
  /// x [batch, T, d] -> [batch, T, d].
  [[nodiscard]] autodiff::Variable forward(const autodiff::Variable& x) const;
  /// The Philox offset after the block's draws.
  [[nodiscard]] std::uint64_t end_offset() const noexcept { return mlp_.end_offset(); }

 private:
  LayerNorm ln1_;
  CausalSelfAttention attn_;
  LayerNorm ln2_;
  GptMlp mlp_;
  Dropout attn_drop_;
  Dropout mlp_drop_;
};

/// The whole model (see the file description).
class GptModel : public Module {
 public:
  /// A model of `config`'s sizes with `dtype` (f32 or f64) master weights on `device`, drawn
  /// from `seed`. UsageError naming a size that is not >= 1, heads that do not divide d_model.
  GptModel(const GptConfig& config, DType dtype, Device device, std::uint64_t seed);

  /// tokens [batch, T] (i64 on the model's device, 1 <= T <= context) -> logits [batch, T, vocab]
  /// in `compute` (the master dtype, or f16/bf16 against f32 master weights).
  [[nodiscard]] autodiff::Variable forward(const Tensor& tokens, DType compute) const;

  /// The sizes given to the constructor.
  [[nodiscard]] const GptConfig& config() const noexcept { return config_; }

 private:
  GptConfig config_;
  Device device_;
  Embedding tok_emb_;
  Embedding pos_emb_;
  Dropout drop_;
  ModuleList<GptBlock> blocks_;
  LayerNorm ln_f_;
  Linear head_;
};

}  // namespace tenax::train::nn
