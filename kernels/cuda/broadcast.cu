// CUDA backend of the broadcasting kernels: the functors of broadcast_bodies.hpp (the arithmetic
// the CPU backend runs) launched over grid-stride loops, one thread per output element. A sum_to
// output adds its inputs sequentially in x's row-major order, as on the CPU, so the bits are the
// CPU backend's; for the bias gradient ([B, C] -> [C]) neighbouring threads read neighbouring
// elements of each row of x, so the reads coalesce.
#include <cstdint>

#include "launch.cuh"
#include "tenax/kernels/detail/broadcast_bodies.hpp"
#include "tenax/kernels/detail/broadcast_kernels.hpp"
#include "tenax/kernels/detail/dispatch.hpp"

namespace tenax::kernels::cuda {

void broadcast_binary(const BroadcastBinaryArgs& args) {
  kernels::detail::dispatch_float(args.out.dtype(), "broadcast_binary", [&](auto tag) {
    using S = typename decltype(tag)::type;
    kernels::detail::dispatch_binary(args.op, [&](auto functor) {
      detail::for_each(
          args.out.device(), args.out.numel(),
          BroadcastBinaryBody<decltype(functor), S>{
              static_cast<const S*>(args.a.data()), static_cast<const S*>(args.b.data()),
              static_cast<S*>(args.out.data()), functor, args.layout},
          "broadcast_binary kernel");
    });
  });
}

void sum_to(const SumToArgs& args) {
  kernels::detail::dispatch_float(args.out.dtype(), "sum_to", [&](auto tag) {
    using S = typename decltype(tag)::type;
    detail::for_each(args.out.device(), args.out.numel(),
                     SumToBody<S>{static_cast<const S*>(args.x.data()),
                                  static_cast<S*>(args.out.data()), args.layout},
                     "sum_to kernel");
  });
}

}  // namespace tenax::kernels::cuda
