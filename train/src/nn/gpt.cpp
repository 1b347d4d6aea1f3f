#include "tenax/train/nn/gpt.hpp"

#include <string>

#include "tenax/core/error.hpp"
#include "tenax/train/autodiff/ops.hpp"

namespace tenax::train::nn {
namespace {

using autodiff::Variable;

// GPT-2's standard deviation of the embeddings.
constexpr double kEmbeddingStd = 0.02;

const GptConfig& checked(const GptConfig& c) {
  const auto positive = [](std::int64_t v, const char* name) {
    TENAX_EXPECTS(
        v >= 1, UsageError,
        std::string("nn::GptModel: ") + name + " = " + std::to_string(v) + " but it must be >= 1",
        std::string("pass a positive ") + name);
  };
  positive(c.vocab, "vocab");
  positive(c.context, "context");
  positive(c.layers, "layers");
  positive(c.d_model, "d_model");
  positive(c.heads, "heads");
  TENAX_EXPECTS(c.d_model % c.heads == 0, UsageError,
                "nn::GptModel: d_model = " + std::to_string(c.d_model) + " is not a multiple of " +
                    std::to_string(c.heads) + " heads",
                "pass a d_model that the heads divide (e.g. 256 with 4 heads of 64)");
  TENAX_EXPECTS(
      c.gelu == autodiff::GeluApproximation::none || c.gelu == autodiff::GeluApproximation::tanh,
      UsageError,
      "nn::GptModel: gelu = " + std::to_string(static_cast<int>(c.gelu)) +
          " is not a GeluApproximation",
      "pass GeluApproximation::none (exact) or GeluApproximation::tanh");
  return c;
}

}  // namespace

GptMlp::GptMlp(std::int64_t d, autodiff::GeluApproximation gelu, DType dtype, Device device,
               std::uint64_t seed, std::uint64_t offset)
    : Module("GptMlp"),
      gelu_(gelu),
      fc_(d, 4 * d, dtype, device, seed, offset),
      proj_(4 * d, d, dtype, device, seed, fc_.end_offset()) {
  register_module("fc", fc_);
  register_module("proj", proj_);
}

Variable GptMlp::forward(const Variable& x) const {
  return proj_.forward(autodiff::gelu(fc_.forward(x), gelu_));
}

// The dropout streams: 0 after the embeddings, 1 + 2 i and 2 + 2 i in block i.
GptBlock::GptBlock(const GptConfig& config, std::int64_t index, DType dtype, Device device,
                   std::uint64_t seed, std::uint64_t offset)
    : Module("GptBlock"),
      ln1_(config.d_model, dtype, device, config.layer_norm_eps),
      attn_(config.d_model, config.heads, dtype, device, seed, offset),
      ln2_(config.d_model, dtype, device, config.layer_norm_eps),
      mlp_(config.d_model, config.gelu, dtype, device, seed, attn_.end_offset()),
      attn_drop_(config.dropout, seed, static_cast<std::uint32_t>(1 + 2 * index)),
      mlp_drop_(config.dropout, seed, static_cast<std::uint32_t>(2 + 2 * index)) {
  register_module("ln1", ln1_);
  register_module("attn", attn_);
  register_module("ln2", ln2_);
  register_module("mlp", mlp_);
  register_module("attn_drop", attn_drop_);
  register_module("mlp_drop", mlp_drop_);
}

Variable GptBlock::forward(const Variable& x) const {
  const Variable h = autodiff::add(x, attn_drop_.forward(attn_.forward(ln1_.forward(x))));
  return autodiff::add(h, mlp_drop_.forward(mlp_.forward(ln2_.forward(h))));
}

GptModel::GptModel(const GptConfig& config, DType dtype, Device device, std::uint64_t seed)
    : Module("GptModel"),
      config_(checked(config)),
      device_(device),
      tok_emb_(config.vocab, config.d_model, dtype, device, seed, 0, kEmbeddingStd),
      pos_emb_(config.context, config.d_model, dtype, device, seed, tok_emb_.end_offset(),
               kEmbeddingStd),
      drop_(config.dropout, seed, 0),
      ln_f_(config.d_model, dtype, device, config.layer_norm_eps),
      // Drawn before the blocks (the order of the draws is the model's own).
      head_(Linear::without_bias(config.d_model, config.vocab, dtype, device, seed,
                                 pos_emb_.end_offset())) {
  std::uint64_t next = head_.end_offset();
  for (std::int64_t i = 0; i < config.layers; ++i) {
    blocks_.push_back(GptBlock(config, i, dtype, device, seed, next));
    next = blocks_[static_cast<std::size_t>(i)].end_offset();
  }
  register_module("tok_emb", tok_emb_);
  register_module("pos_emb", pos_emb_);
  register_module("drop", drop_);
  register_module("blocks", blocks_);
  register_module("ln_f", ln_f_);
  register_module("head", head_);
}

Variable GptModel::forward(const Tensor& tokens, DType compute) const {
  TENAX_EXPECTS(
      tokens.defined() && tokens.dtype() == DType::i64 && tokens.shape().rank() == 2 &&
          tokens.shape()[1] >= 1 && tokens.shape()[1] <= config_.context,
      UsageError,
      "nn::GptModel: tokens are " +
          (tokens.defined() ? tokens.describe() : std::string("undefined")) +
          " but must be i64 [batch, T] with 1 <= T <= context = " + std::to_string(config_.context),
      "pass token ids of shape [batch, T], T at most the model's context");
  const std::int64_t batch = tokens.shape()[0];
  const std::int64_t t = tokens.shape()[1];
  Tensor positions = Tensor::empty(Shape{batch, t}, DType::i64);
  for (std::int64_t i = 0; i < batch * t; ++i) positions.data_as<std::int64_t>()[i] = i % t;
  Variable x = autodiff::add(tok_emb_.forward(tokens), pos_emb_.forward(positions.to(device_)));
  if (x.value().dtype() != compute) x = autodiff::cast(x, compute);
  x = drop_.forward(x);
  for (const GptBlock& block : blocks_) x = block.forward(x);
  return head_.forward(ln_f_.forward(x));
}

}  // namespace tenax::train::nn
