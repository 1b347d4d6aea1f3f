// CUDA backend of the reductions, in the fixed order of reduce_bodies.hpp (reduce_launch.cuh):
// each reduction block is folded by a group of kReduceLanes threads (thread j of the group is lane
// j, reading 64 contiguous bytes per step together with its group; then a shuffle halving tree),
// then one thread block combines the partials level by level. Every operation happens in the same
// order as on the CPU, so the bits are equal to the CPU backend's.
#include <cmath>
#include <cstdint>

#include "reduce_launch.cuh"
#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"

namespace tenax::kernels::cuda {

namespace {

// A map's value as the one term of a single reduction.
template <class Map>
struct SingleTerm {
  Map map;
  TENAX_HD detail::ReduceTerms<1> operator()(std::int64_t i) const { return {{map(i)}}; }
};

template <class Map, class Combine>
double reduce(Device device, std::int64_t n, const Map& map, Combine f, const char* what) {
  return detail::reduce_terms<1>(device, n, SingleTerm<Map>{map}, f, what).v[0];
}

}  // namespace

double sum(const Tensor& x) {
  return kernels::detail::dispatch_float(x.dtype(), "sum", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(x.device(), x.numel(), ValueMap<S>{static_cast<const S*>(x.data())},
                  PlusCombine{}, "sum kernel");
  });
}

double dot(const Tensor& x, const Tensor& y) {
  return kernels::detail::dispatch_float(x.dtype(), "dot", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(x.device(), x.numel(),
                  ProductMap<S>{static_cast<const S*>(x.data()), static_cast<const S*>(y.data())},
                  PlusCombine{}, "dot kernel");
  });
}

double nrm2(const Tensor& x) {
  return std::sqrt(kernels::detail::dispatch_float(x.dtype(), "nrm2", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(x.device(), x.numel(), SquareMap<S>{static_cast<const S*>(x.data())},
                  PlusCombine{}, "nrm2 kernel");
  }));
}

double max(const Tensor& x) {
  return kernels::detail::dispatch_float(x.dtype(), "max", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return reduce(x.device(), x.numel(), ValueMap<S>{static_cast<const S*>(x.data())}, MaxCombine{},
                  "max kernel");
  });
}

std::int64_t count_nonfinite(const Tensor& x) {
  return kernels::detail::dispatch_float(x.dtype(), "count_nonfinite", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return static_cast<std::int64_t>(reduce(x.device(), x.numel(),
                                            NonfiniteMap<S>{static_cast<const S*>(x.data())},
                                            PlusCombine{}, "count_nonfinite kernel"));
  });
}

}  // namespace tenax::kernels::cuda
