/// Backend kernels of the fused optimizer ops (ops_optim.hpp), declared once and implemented per
/// backend: tenax::kernels::cpu in kernels/cpu/optim.cpp, tenax::kernels::cuda in
/// kernels/cuda/optim.cu (or, in a build without CUDA, by kernels/stub/optim_stub.cpp, which
/// throws NotCompiledError).
/// @file
/// Kernels trust their arguments: the ops front end (kernels/src/ops_optim.cpp) has checked
/// devices, dtypes (f64 or f32), shapes, aliasing and the scalars, and returned early for empty
/// operands. Not a public header.
#pragma once

#include "tenax/core/context.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops_optim.hpp"

namespace tenax::kernels {

/// param -= lr * (SGD direction); momentum_buffer is undefined when step.momentum == 0.
struct SgdArgs {
  Tensor param;
  Tensor grad;
  Tensor momentum_buffer;
  ops::SgdStep step;
};

/// One Adam / AdamW step on param, exp_avg and exp_avg_sq.
struct AdamArgs {
  Tensor param;
  Tensor grad;
  Tensor exp_avg;
  Tensor exp_avg_sq;
  ops::AdamStep step;
};

}  // namespace tenax::kernels

// X(return type, name, Args) for every kernel; declares each backend and generates the stubs.
#define TENAX_OPTIM_KERNELS(X) \
  X(void, sgd_update, SgdArgs) \
  X(void, adam_update, AdamArgs)

#define TENAX_OPTIM_DECLARE_KERNEL(ret, name, Args) ret name(const ::tenax::kernels::Args& args);
#define TENAX_OPTIM_DECLARE_CPU_KERNEL_WITH_CONTEXT(ret, name, Args) \
  ret name(::tenax::CpuContext& context, const ::tenax::kernels::Args& args);

/// The CPU backend, the reference. The overloads without a context use CpuContext::instance();
/// results never depend on the context's thread count (each element is updated on its own).
namespace tenax::kernels::cpu {
TENAX_OPTIM_KERNELS(TENAX_OPTIM_DECLARE_KERNEL)
TENAX_OPTIM_KERNELS(TENAX_OPTIM_DECLARE_CPU_KERNEL_WITH_CONTEXT)
}  // namespace tenax::kernels::cpu

/// The CUDA backend: enqueued on the tensors' device context's stream (asynchronous).
namespace tenax::kernels::cuda {
TENAX_OPTIM_KERNELS(TENAX_OPTIM_DECLARE_KERNEL)
}  // namespace tenax::kernels::cuda

#undef TENAX_OPTIM_DECLARE_KERNEL
#undef TENAX_OPTIM_DECLARE_CPU_KERNEL_WITH_CONTEXT
