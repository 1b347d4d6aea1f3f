/// Backend kernels of the neural-network ops (ops_nn.hpp), declared once and implemented
/// per backend: tenax::kernels::cpu in kernels/cpu/nn.cpp, tenax::kernels::cuda in
/// kernels/cuda/nn.cu (or, in a build without CUDA, by kernels/stub/nn_stub.cpp, which throws
/// NotCompiledError).
/// @file
/// Kernels trust their arguments except for the label and index values, which only the kernels
/// read: the ops front end (kernels/src/ops_nn.cpp) has checked devices, dtypes, shapes and
/// aliasing, and returned early for empty operands. The CPU kernels throw UsageError for a label
/// outside [0, classes) or an index outside [0, vocab); the CUDA kernels write NaN for its row.
/// Not a public header.
#pragma once

#include <cstdint>

#include "tenax/core/context.hpp"
#include "tenax/core/tensor.hpp"

namespace tenax::kernels {

/// losses[rows] = softmax cross-entropy of logits[rows, classes] against labels[rows].
struct SoftmaxCrossEntropyArgs {
  Tensor logits;
  Tensor labels;
  Tensor losses;
  std::int64_t rows = 0;
  std::int64_t classes = 0;
};

/// grad[rows, classes] = scale * (softmax(logits) - one_hot(labels)).
struct SoftmaxCrossEntropyGradArgs {
  Tensor logits;
  Tensor labels;
  double scale = 1.0;
  Tensor grad;
  std::int64_t rows = 0;
  std::int64_t classes = 0;
};

/// y = softmax (or log-softmax) of x [outer, n, inner] along n (SoftmaxBody); causal: inner == 1.
struct SoftmaxArgs {
  Tensor x;
  Tensor y;
  std::int64_t outer = 0;
  std::int64_t n = 0;
  std::int64_t inner = 0;
  bool log = false;
  bool causal = false;
};

/// dx from the softmax (or log-softmax) output y and dy, all [outer, n, inner].
struct SoftmaxGradArgs {
  Tensor y;
  Tensor dy;
  Tensor dx;
  std::int64_t outer = 0;
  std::int64_t n = 0;
  std::int64_t inner = 0;
  bool log = false;
};

/// y, mean, rstd = layer_norm(x [rows, d], weight, bias, eps); weight and bias may be undefined.
struct LayerNormArgs {
  Tensor x;
  Tensor weight;
  Tensor bias;
  double eps = 1e-5;
  Tensor y;
  Tensor mean;
  Tensor rstd;
  std::int64_t rows = 0;
  std::int64_t d = 0;
};

/// dx of layer_norm from dy, x, weight (may be undefined), mean and rstd.
struct LayerNormGradInputArgs {
  Tensor dy;
  Tensor x;
  Tensor weight;
  Tensor mean;
  Tensor rstd;
  Tensor dx;
  std::int64_t rows = 0;
  std::int64_t d = 0;
};

/// dweight and dbias (either may be undefined) of layer_norm, summed over the rows in order.
struct LayerNormGradParamsArgs {
  Tensor dy;
  Tensor x;
  Tensor mean;
  Tensor rstd;
  Tensor dweight;
  Tensor dbias;
  std::int64_t rows = 0;
  std::int64_t d = 0;
};

/// dbias [d] (compute type) = the column sums of dy [rows, d], rows in order.
struct BiasGradArgs {
  Tensor dy;
  Tensor dbias;
  std::int64_t rows = 0;
  std::int64_t d = 0;
};

/// out [rows, d] = rows `indices` of weight [vocab, d].
struct EmbeddingArgs {
  Tensor weight;
  Tensor indices;
  Tensor out;
  std::int64_t rows = 0;
  std::int64_t d = 0;
  std::int64_t vocab = 0;
};

/// dweight [vocab, d] = the sums of the rows of dy [rows, d] at their indices (overwritten).
struct EmbeddingGradArgs {
  Tensor indices;
  Tensor dy;
  Tensor sums;  ///< [vocab, d] in dy's compute type: the weight gradient itself, or for f16/bf16
                ///< an f32 array the front end rounds into it

  std::int64_t rows = 0;
  std::int64_t d = 0;
  std::int64_t vocab = 0;
};

/// y = dropout(x) viewed as [samples, per_sample] (DropoutBody).
struct DropoutArgs {
  Tensor x;
  Tensor y;
  std::int64_t per_sample = 1;
  std::int64_t first_sample = 0;
  std::uint64_t seed = 0;
  std::uint32_t step = 0;
  std::uint32_t stream = 0;
  double p = 0;
};

/// The data of an operand the op may go without (layer_norm's weight and bias, its gradients),
/// as C* (the compute type of its op): nullptr for an undefined tensor.
template <class C>
[[nodiscard]] C* optional_data(const Tensor& t) {
  return t.defined() ? static_cast<C*>(t.data()) : nullptr;
}

}  // namespace tenax::kernels

// X(name, Args) for every kernel; declares each backend and generates the stubs.
#define TENAX_NN_KERNELS(X)                                  \
  X(softmax_cross_entropy, SoftmaxCrossEntropyArgs)          \
  X(softmax_cross_entropy_grad, SoftmaxCrossEntropyGradArgs) \
  X(softmax, SoftmaxArgs)                                    \
  X(softmax_grad, SoftmaxGradArgs)                           \
  X(layer_norm, LayerNormArgs)                               \
  X(layer_norm_grad_input, LayerNormGradInputArgs)           \
  X(layer_norm_grad_params, LayerNormGradParamsArgs)         \
  X(bias_grad, BiasGradArgs)                                 \
  X(embedding, EmbeddingArgs)                                \
  X(embedding_grad, EmbeddingGradArgs)                       \
  X(dropout, DropoutArgs)

#define TENAX_NN_DECLARE_KERNEL(name, Args) void name(const ::tenax::kernels::Args& args);
#define TENAX_NN_DECLARE_CPU_KERNEL_WITH_CONTEXT(name, Args) \
  void name(::tenax::CpuContext& context, const ::tenax::kernels::Args& args);

/// The CPU backend, the reference. The overloads without a context use CpuContext::instance();
/// results never depend on the context's thread count (bit for bit).
namespace tenax::kernels::cpu {
TENAX_NN_KERNELS(TENAX_NN_DECLARE_KERNEL)
TENAX_NN_KERNELS(TENAX_NN_DECLARE_CPU_KERNEL_WITH_CONTEXT)
}  // namespace tenax::kernels::cpu

/// The CUDA backend: runs on the tensors' device, enqueued on its context's stream.
namespace tenax::kernels::cuda {
TENAX_NN_KERNELS(TENAX_NN_DECLARE_KERNEL)
}  // namespace tenax::kernels::cuda

#undef TENAX_NN_DECLARE_KERNEL
#undef TENAX_NN_DECLARE_CPU_KERNEL_WITH_CONTEXT
