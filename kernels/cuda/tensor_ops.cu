// CUDA backend of the data-movement, selection and axis-reduction kernels: the bodies of
// tensor_ops_bodies.hpp (the code the CPU backend runs), dispatched by tensor_ops_launch.hpp and
// launched over grid-stride loops on the device context's stream, one thread per index. A
// reduction's line and a scatter's column are each walked by one thread in the CPU's order, so the
// bits are the CPU backend's.
#include <cstdint>

#include "launch.cuh"
#include "tenax/kernels/detail/tensor_ops_kernels.hpp"
#include "tenax/kernels/detail/tensor_ops_launch.hpp"

namespace tenax::kernels::cuda {
namespace {

struct CudaLauncher {
  Device device;

  template <class Body>
  void each(std::int64_t n, const Body& body, const char* what, std::int64_t /*work*/) const {
    detail::for_each(device, n, body, what);
  }

  template <class Body>
  bool any(std::int64_t n, const Body& body, const char* what) const {
    return detail::for_each_any(device, n, body, what);
  }
};

}  // namespace

void slab_copy(const SlabCopyArgs& args) {
  kernels::detail::run_slab_copy(args, CudaLauncher{args.dst.device()});
}
void pad(const PadArgs& args) { kernels::detail::run_pad(args, CudaLauncher{args.dst.device()}); }
void strided_copy(const StridedCopyArgs& args) {
  kernels::detail::run_strided_copy(args, CudaLauncher{args.dst.device()});
}
void gather(const GatherArgs& args) {
  kernels::detail::run_gather(args, CudaLauncher{args.dst.device()});
}
void scatter(const ScatterArgs& args) {
  kernels::detail::run_scatter(args, CudaLauncher{args.dst.device()});
}
bool index_out_of_range(const IndexCheckArgs& args) {
  return kernels::detail::run_index_out_of_range(args, CudaLauncher{args.index.device()});
}
void where(const WhereArgs& args) {
  kernels::detail::run_where(args, CudaLauncher{args.out.device()});
}
void compare(const CompareArgs& args) {
  kernels::detail::run_compare(args, CudaLauncher{args.out.device()});
}
void reduce_axis(const ReduceAxisArgs& args) {
  kernels::detail::run_reduce_axis(args, CudaLauncher{args.out.device()});
}

}  // namespace tenax::kernels::cuda
