/// Backend kernels of the softmax cross-entropy ops (ops_nn.hpp), declared once and implemented
/// per backend: tenax::kernels::cpu in kernels/cpu/nn.cpp, tenax::kernels::cuda in
/// kernels/cuda/nn.cu (or, in a build without CUDA, by kernels/stub/nn_stub.cpp, which throws
/// NotCompiledError).
/// @file
/// Kernels trust their arguments except for the label values, which only the kernels read: the
/// ops front end (kernels/src/ops_nn.cpp) has checked devices, dtypes, shapes and aliasing, and
/// returned early for B == 0. The CPU kernels throw UsageError for a label outside [0, classes);
/// the CUDA kernels write NaN for its row. Not a public header.
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

}  // namespace tenax::kernels

// X(name, Args) for every kernel; declares each backend and generates the stubs.
#define TENAX_NN_KERNELS(X)                         \
  X(softmax_cross_entropy, SoftmaxCrossEntropyArgs) \
  X(softmax_cross_entropy_grad, SoftmaxCrossEntropyGradArgs)

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
