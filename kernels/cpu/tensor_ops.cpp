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

void slab_copy(CpuContext& context, const SlabCopyArgs& args) {
  kernels::detail::run_slab_copy(args, CpuLauncher{context});
}
void pad(CpuContext& context, const PadArgs& args) {
  kernels::detail::run_pad(args, CpuLauncher{context});
}
void strided_copy(CpuContext& context, const StridedCopyArgs& args) {
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
