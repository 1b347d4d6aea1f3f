/// Backend kernels of the data-movement, selection and axis-reduction ops (ops_shape.hpp,
/// ops_index.hpp, ops_select.hpp, ops_reduce_axis.hpp), declared once and implemented per backend:
/// tenax::kernels::cpu in kernels/cpu/tensor_ops.cpp, tenax::kernels::cuda in
/// kernels/cuda/tensor_ops.cu (or, in a build without CUDA, by kernels/stub/tensor_ops_stub.cpp,
/// which throws NotCompiledError).
/// @file
/// Kernels trust their arguments: the ops front end has checked devices, dtypes, shapes, index
/// ranges and aliasing, and returned early when nothing is to be written. Not a public header.
#pragma once

#include <cstdint>

#include "tenax/core/context.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/detail/tensor_ops_bodies.hpp"
#include "tenax/kernels/ops_reduce_axis.hpp"
#include "tenax/kernels/ops_select.hpp"

namespace tenax::kernels {

/// dst[o, dst_begin + j, i] = src[o, src_begin + j, i] for o < outer, j < count, i < inner
/// (SlabCopyBody); count >= 1, outer >= 1, inner >= 1.
struct SlabCopyArgs {
  Tensor src;                   ///< [outer, src_extent, inner]
  Tensor dst;                   ///< [outer, dst_extent, inner]
  std::int64_t outer = 1;       ///< product of the extents before the axis
  std::int64_t inner = 1;       ///< product of the extents after the axis
  std::int64_t count = 0;       ///< positions copied along the axis
  std::int64_t src_extent = 0;  ///< src's extent along the axis
  std::int64_t src_begin = 0;   ///< first position read
  std::int64_t dst_extent = 0;  ///< dst's extent along the axis
  std::int64_t dst_begin = 0;   ///< first position written
};

/// dst = src padded along the axis (PadBody); dst has at least one element.
struct PadArgs {
  Tensor src;                        ///< [outer, extent, inner]
  Tensor dst;                        ///< [outer, out_extent, inner]
  PadKind kind = PadKind::constant;  ///< what is read outside src
  std::uint64_t value_bits = 0;      ///< the constant, as dst's stored word (low bytes)
  std::int64_t inner = 1;            ///< product of the extents after the axis
  std::int64_t extent = 0;           ///< src's extent along the axis (>= 1 unless constant)
  std::int64_t before = 0;           ///< positions padded in front
  std::int64_t out_extent = 0;       ///< dst's extent along the axis
};

/// The elements of a strided layout copied (StridedCopyBody): src and dst are the tensors whose
/// storage is read and written, the offsets where the layout starts in them (in elements from
/// their first element); layout.extent has at least one element and every position it names is
/// within the storage (the front end checked). dst's positions are distinct.
struct StridedCopyArgs {
  Tensor src;                   ///< the storage read
  std::int64_t src_offset = 0;  ///< elements from src's first element to the layout's first
  Tensor dst;                   ///< the storage written
  std::int64_t dst_offset = 0;  ///< elements from dst's first element to the layout's first
  StridedLayout layout;         ///< the extents walked and both sides' strides
  std::int64_t count = 0;       ///< the product of layout.extent (>= 1)
};

/// dst[o, j, i] = src[o, index[j], i]; dst has at least one element, the index is in range.
struct GatherArgs {
  Tensor src;                   ///< [outer, src_extent, inner]
  Tensor index;                 ///< 1-D i64 or i32, count entries
  Tensor dst;                   ///< [outer, count, inner]
  std::int64_t inner = 1;       ///< product of the extents after the axis
  std::int64_t src_extent = 0;  ///< src's extent along the axis
};

/// dst[o, index[j], i] = (or += when `add`) src[o, j, i], j in order; src has at least one
/// element, the index is in range.
struct ScatterArgs {
  Tensor src;                   ///< [outer, count, inner]
  Tensor index;                 ///< 1-D i64 or i32, count entries
  Tensor dst;                   ///< [outer, dst_extent, inner], updated in place
  bool add = false;             ///< scatter_add (floating dst) rather than scatter
  std::int64_t outer = 1;       ///< product of the extents before the axis
  std::int64_t inner = 1;       ///< product of the extents after the axis
  std::int64_t dst_extent = 0;  ///< dst's extent along the axis
};

/// Whether some entry of `index` (1-D i64 or i32, at least one entry) lies outside [0, bound).
struct IndexCheckArgs {
  Tensor index;            ///< the index
  std::int64_t bound = 0;  ///< one past the largest valid entry
};

/// out = cond ? a : b element by element (at least one element).
struct WhereArgs {
  Tensor cond;  ///< u8 mask
  Tensor a;     ///< read where cond != 0
  Tensor b;     ///< read where cond == 0
  Tensor out;   ///< a's shape, dtype and device
};

/// out = (a op b) as u8 (at least one element).
struct CompareArgs {
  ops::CompareOp op = ops::CompareOp::eq;  ///< the comparison
  Tensor a;                                ///< left operand
  Tensor b;                                ///< right operand, a's dtype
  Tensor out;                              ///< u8, a's shape
};

/// out[o, i] = op over x[o, 0..extent-1, i] (ReduceAxisBody); out has at least one element, and
/// extent >= 1 for max and min.
struct ReduceAxisArgs {
  ops::AxisReduction op = ops::AxisReduction::sum;  ///< the reduction
  Tensor x;                                         ///< [outer, extent, inner], floating
  Tensor out;                                       ///< outer * inner elements, x's dtype
  std::int64_t inner = 1;                           ///< product of the extents after the axis
  std::int64_t extent = 0;                          ///< the length of each line
};

}  // namespace tenax::kernels

// X(return type, name, Args) for every kernel; declares each backend and generates the stubs.
#define TENAX_TENSOR_OPS_KERNELS(X)           \
  X(void, slab_copy, SlabCopyArgs)            \
  X(void, pad, PadArgs)                       \
  X(void, strided_copy, StridedCopyArgs)      \
  X(void, gather, GatherArgs)                 \
  X(void, scatter, ScatterArgs)               \
  X(bool, index_out_of_range, IndexCheckArgs) \
  X(void, where, WhereArgs)                   \
  X(void, compare, CompareArgs)               \
  X(void, reduce_axis, ReduceAxisArgs)

#define TENAX_TENSOR_OPS_DECLARE_KERNEL(R, name, Args) R name(const ::tenax::kernels::Args& args);
#define TENAX_TENSOR_OPS_DECLARE_CPU_KERNEL_WITH_CONTEXT(R, name, Args) \
  R name(::tenax::CpuContext& context, const ::tenax::kernels::Args& args);

/// The CPU backend, the reference. The overloads without a context use CpuContext::instance();
/// results never depend on the context's thread count (bit for bit).
namespace tenax::kernels::cpu {
TENAX_TENSOR_OPS_KERNELS(TENAX_TENSOR_OPS_DECLARE_KERNEL)
TENAX_TENSOR_OPS_KERNELS(TENAX_TENSOR_OPS_DECLARE_CPU_KERNEL_WITH_CONTEXT)
}  // namespace tenax::kernels::cpu

/// The CUDA backend: runs on the tensors' device, enqueued on its context's stream
/// (index_out_of_range waits for its answer).
namespace tenax::kernels::cuda {
TENAX_TENSOR_OPS_KERNELS(TENAX_TENSOR_OPS_DECLARE_KERNEL)
}  // namespace tenax::kernels::cuda

#undef TENAX_TENSOR_OPS_DECLARE_KERNEL
#undef TENAX_TENSOR_OPS_DECLARE_CPU_KERNEL_WITH_CONTEXT
