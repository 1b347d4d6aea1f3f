// CPU backend of the reductions, in the order of reduction_order.hpp (block_reduction.hpp's loops).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "block_reduction.hpp"
#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"

namespace tenax::kernels::cpu {

namespace {

template <class Map, class Combine>
double reduce(CpuContext& context, std::int64_t n, const Map& map, Combine f) {
  return reduce_blocks<1>(
             context, n, kMinReduceBlocksPerChunk,
             [&map, f](std::int64_t begin, std::int64_t end) {
               return ReduceTerms<1>{{fold_block(map, f, begin, end)}};
             },
             f)
      .v[0];
}

}  // namespace

double sum(CpuContext& context, const Tensor& x) {
  return kernels::detail::dispatch_float(x.dtype(), "sum", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(context, x.numel(), ValueMap<S>{static_cast<const S*>(x.data())}, PlusCombine{});
  });
}

double dot(CpuContext& context, const Tensor& x, const Tensor& y) {
  return kernels::detail::dispatch_float(x.dtype(), "dot", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(context, x.numel(),
                  ProductMap<S>{static_cast<const S*>(x.data()), static_cast<const S*>(y.data())},
                  PlusCombine{});
  });
}

double nrm2(CpuContext& context, const Tensor& x) {
  return std::sqrt(kernels::detail::dispatch_float(x.dtype(), "nrm2", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(context, x.numel(), SquareMap<S>{static_cast<const S*>(x.data())}, PlusCombine{});
  }));
}

double max(CpuContext& context, const Tensor& x) {
  return kernels::detail::dispatch_float(x.dtype(), "max", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(context, x.numel(), ValueMap<S>{static_cast<const S*>(x.data())}, MaxCombine{});
  });
}

std::int64_t count_nonfinite(CpuContext& context, const Tensor& x) {
  return kernels::detail::dispatch_float(x.dtype(), "count_nonfinite", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return static_cast<std::int64_t>(reduce(
        context, x.numel(), NonfiniteMap<S>{static_cast<const S*>(x.data())}, PlusCombine{}));
  });
}

}  // namespace tenax::kernels::cpu
