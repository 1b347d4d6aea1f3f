// CPU backend of the data-movement, selection and axis-reduction kernels: the bodies of
// tensor_ops_bodies.hpp, dispatched by tensor_ops_launch.hpp, run over the context's threads.
// Every index is computed by one thread with the body's own arithmetic, so the bits depend on
// neither the thread count nor the backend.
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "for_each.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/tensor_ops_kernels.hpp"
#include "tenax/kernels/detail/tensor_ops_launch.hpp"

namespace tenax::kernels::cpu {
namespace {

struct CpuLauncher {
  CpuContext& context;

  // Chunks of at least kMinChunk elements of work (`work` per index), as the element-wise ops.
  template <class Body>
  void each(std::int64_t n, const Body& body, const char* /*what*/, std::int64_t work) const {
    const std::int64_t min_chunk =
        std::max<std::int64_t>(1, detail::kMinChunk / std::max<std::int64_t>(1, work));
    context.parallel_for(0, n, min_chunk, [&body](std::int64_t first, std::int64_t last) {
      const Body local = body;
      for (std::int64_t e = first; e < last; ++e) local(e);
    });
  }

  template <class Body>
  bool any(std::int64_t n, const Body& body, const char* /*what*/) const {
    return detail::for_each_any(context, n, body);
  }
};

}  // namespace

// Slabs and padded rows a row at a time (SlabRowCopyBody, PadRowBody): the same copies without
// a division per element.
void slab_copy(CpuContext& context, const SlabCopyArgs& args) {
  kernels::detail::dispatch_raw(args.dst.dtype(), [&](auto tag) {
    using R = typename decltype(tag)::type;
    CpuLauncher{context}.each(args.outer,
                              SlabRowCopyBody<R>{kernels::detail::slab_copy_body<R>(args)},
                              "slab_copy kernel", args.count * args.inner);
  });
}
void pad(CpuContext& context, const PadArgs& args) {
  const std::int64_t row = args.out_extent * args.inner;
  if (row == 0) return;
  kernels::detail::dispatch_raw(args.dst.dtype(), [&](auto tag) {
    using R = typename decltype(tag)::type;
    CpuLauncher{context}.each(args.dst.numel() / row,
                              PadRowBody<R>{kernels::detail::pad_body<R>(args)}, "pad kernel", row);
  });
}
void strided_copy(CpuContext& context, const StridedCopyArgs& args) {
  const StridedLayout& layout = args.layout;
  const int last = layout.rank - 1;
  // Contiguous rows of 8 elements or more on both sides (a permutation that keeps the last
  // axis, a view of whole rows): a row at a time.
  if (layout.rank >= 2 && layout.src_stride[last] == 1 && layout.dst_stride[last] == 1 &&
      layout.extent[last] >= 8) {
    kernels::detail::dispatch_raw(args.dst.dtype(), [&](auto tag) {
      using R = typename decltype(tag)::type;
      CpuLauncher{context}.each(
          args.count / layout.extent[last],
          StridedRowCopyBody<R>{static_cast<const R*>(args.src.data()) + args.src_offset,
                                static_cast<R*>(args.dst.data()) + args.dst_offset, layout},
          "strided copy kernel", layout.extent[last]);
    });
    return;
  }
  kernels::detail::run_strided_copy(args, CpuLauncher{context});
}
void gather(CpuContext& context, const GatherArgs& args) {
  kernels::detail::run_gather(args, CpuLauncher{context});
}
void scatter(CpuContext& context, const ScatterArgs& args) {
  kernels::detail::run_scatter(args, CpuLauncher{context});
}
bool index_out_of_range(CpuContext& context, const IndexCheckArgs& args) {
  return kernels::detail::run_index_out_of_range(args, CpuLauncher{context});
}
void where(CpuContext& context, const WhereArgs& args) {
  kernels::detail::run_where(args, CpuLauncher{context});
}
void compare(CpuContext& context, const CompareArgs& args) {
  kernels::detail::run_compare(args, CpuLauncher{context});
}
void reduce_axis(CpuContext& context, const ReduceAxisArgs& args) {
  kernels::detail::run_reduce_axis(args, CpuLauncher{context});
}

#define TENAX_TENSOR_OPS_DEFAULT_CONTEXT(R, name, Args) \
  R name(const Args& args) { return name(CpuContext::instance(), args); }
TENAX_TENSOR_OPS_KERNELS(TENAX_TENSOR_OPS_DEFAULT_CONTEXT)
#undef TENAX_TENSOR_OPS_DEFAULT_CONTEXT

}  // namespace tenax::kernels::cpu
