/// The backend kernels behind the element-wise ops, declared once.
/// @file
/// TENAX_ELEMENTWISE_KERNELS lists every kernel as X(return type, name, (parameters),
/// (arguments)). The list declares the same functions in tenax::kernels::cpu and
/// tenax::kernels::cuda, the CPU overloads that take an explicit CpuContext, and (in
/// kernels/stub/) the CUDA stubs of a build without CUDA, so a new kernel is added in one place.
///
/// Kernels trust their arguments: tenax::ops has checked devices, dtypes and shapes. All tensors
/// of one call are on the backend's device and contiguous. Internal to the kernels layer.
#pragma once

#include <cstdint>

#include "tenax/core/context.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

// clang-format off
#define TENAX_ELEMENTWISE_KERNELS(X)                                                             \
  X(void, fill, (const Tensor& t, double value), (t, value))                                     \
  X(void, random_uniform, (const Tensor& t, std::uint64_t seed, std::uint64_t offset,           \
                           double low, double high), (t, seed, offset, low, high))               \
  X(void, random_normal, (const Tensor& t, std::uint64_t seed, std::uint64_t offset,            \
                          double mean, double stddev), (t, seed, offset, mean, stddev))          \
  /* dst and src on the same device, same element count, any floating dtypes */                  \
  X(void, cast, (const Tensor& dst, const Tensor& src), (dst, src))                              \
  X(void, axpby, (double a, const Tensor& x, double b, const Tensor& y), (a, x, b, y))           \
  X(void, scale, (double a, const Tensor& x), (a, x))                                            \
  X(void, unary, (ops::UnaryOp op, const Tensor& x, const Tensor& out), (op, x, out))            \
  X(void, binary, (ops::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out),       \
    (op, a, b, out))                                                                             \
  X(void, unary_mul, (ops::UnaryOp op, const Tensor& x, const Tensor& g, const Tensor& out),     \
    (op, x, g, out))                                                                             \
  X(bool, unscale_and_check, (const Tensor& t, double inv_scale), (t, inv_scale))                \
  X(double, sum, (const Tensor& x), (x))                                                         \
  X(double, dot, (const Tensor& x, const Tensor& y), (x, y))                                     \
  X(double, nrm2, (const Tensor& x), (x))                                                        \
  X(double, max, (const Tensor& x), (x))                                                         \
  X(std::int64_t, count_nonfinite, (const Tensor& x), (x))                                       \
  X(::tenax::ops::NonfiniteReport, find_nonfinite, (const Tensor& x), (x))                       \
  /* t *= inv_scale in place, unless inv_scale == 1 (then t is only read) */                     \
  X(::tenax::ops::UnscaleReport, unscale_and_measure, (const Tensor& t, double inv_scale),       \
    (t, inv_scale))
// clang-format on

// Parameter list with a leading CpuContext& (used as `name TENAX_WITH_CPU_CONTEXT params`).
#define TENAX_WITH_CPU_CONTEXT(...) (CpuContext & context, __VA_ARGS__)

#define TENAX_DECLARE_KERNEL(ret, name, params, args) ret name params;
#define TENAX_DECLARE_CPU_KERNEL_WITH_CONTEXT(ret, name, params, args) \
  ret name TENAX_WITH_CPU_CONTEXT params;

namespace tenax::kernels {

/// The CPU backend, the reference. The overloads without a context use CpuContext::instance();
/// results never depend on the context's thread count.
namespace cpu {
TENAX_ELEMENTWISE_KERNELS(TENAX_DECLARE_KERNEL)
TENAX_ELEMENTWISE_KERNELS(TENAX_DECLARE_CPU_KERNEL_WITH_CONTEXT)
}  // namespace cpu

/// The CUDA backend: runs on the tensors' device, ordered on its context's stream. In a build
/// without CUDA every function throws NotCompiledError.
namespace cuda {
TENAX_ELEMENTWISE_KERNELS(TENAX_DECLARE_KERNEL)
}  // namespace cuda

}  // namespace tenax::kernels
