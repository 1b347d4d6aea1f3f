/// Backend kernels of the broadcasting ops (ops_broadcast.hpp), declared once and implemented per
/// backend: tenax::kernels::cpu in kernels/cpu/broadcast.cpp, tenax::kernels::cuda in
/// kernels/cuda/broadcast.cu (or, in a build without CUDA, by kernels/stub/broadcast_stub.cpp,
/// which throws NotCompiledError).
/// @file
/// Kernels trust their arguments: the ops front end (kernels/src/ops_broadcast.cpp) has checked
/// devices, dtypes (one floating dtype), shapes and aliasing, built the layouts, and returned early
/// for empty outputs and empty inputs. Not a public header.
#pragma once

#include "tenax/core/context.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/detail/broadcast_bodies.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::kernels {

/// out = op(a, b) with a and b broadcast to out's shape as `layout` describes.
struct BroadcastBinaryArgs {
  ops::BinaryOp op = ops::BinaryOp::add;
  Tensor a;
  Tensor b;
  Tensor out;
  BroadcastLayout layout;
};

/// out = x summed over the dimensions `layout` reduces (x.numel() > 0).
struct SumToArgs {
  Tensor x;
  Tensor out;
  SumToLayout layout;
};

/// The layouts the front end builds (exposed for tests that call a backend directly).
/// make_broadcast_layout: `out` is broadcast_shape(a, b). make_sum_to_layout: `target` broadcasts
/// to x, and x has at least one element.
[[nodiscard]] BroadcastLayout make_broadcast_layout(const Shape& out, const Shape& a,
                                                    const Shape& b);
[[nodiscard]] SumToLayout make_sum_to_layout(const Shape& x, const Shape& target);

}  // namespace tenax::kernels

// X(name, Args) for every kernel; declares each backend and generates the stubs.
#define TENAX_BROADCAST_KERNELS(X)         \
  X(broadcast_binary, BroadcastBinaryArgs) \
  X(sum_to, SumToArgs)

#define TENAX_BROADCAST_DECLARE_KERNEL(name, Args) void name(const ::tenax::kernels::Args& args);
#define TENAX_BROADCAST_DECLARE_CPU_KERNEL_WITH_CONTEXT(name, Args) \
  void name(::tenax::CpuContext& context, const ::tenax::kernels::Args& args);

/// The CPU backend, the reference. The overloads without a context use CpuContext::instance();
/// results never depend on the context's thread count (bit for bit).
namespace tenax::kernels::cpu {
TENAX_BROADCAST_KERNELS(TENAX_BROADCAST_DECLARE_KERNEL)
TENAX_BROADCAST_KERNELS(TENAX_BROADCAST_DECLARE_CPU_KERNEL_WITH_CONTEXT)
}  // namespace tenax::kernels::cpu

/// The CUDA backend: runs on the tensors' device, enqueued on its context's stream.
namespace tenax::kernels::cuda {
TENAX_BROADCAST_KERNELS(TENAX_BROADCAST_DECLARE_KERNEL)
}  // namespace tenax::kernels::cuda

#undef TENAX_BROADCAST_DECLARE_KERNEL
#undef TENAX_BROADCAST_DECLARE_CPU_KERNEL_WITH_CONTEXT
