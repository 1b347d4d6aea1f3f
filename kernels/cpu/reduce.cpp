// CPU backend of the reductions, in the fixed order of reduce_bodies.hpp: blocks are spread over
// the threads, each block is folded by a register array of lanes, and the block partials are
// combined on the calling thread. No step depends on which thread ran a block, so the bits are the
// same for any thread count and equal to the CUDA backend's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"
#include "tenax/kernels/reduce_bodies.hpp"

namespace tenax::kernels::cpu {

namespace {

// Blocks per parallel_for chunk at least (2^15 elements, as for the element-wise kernels).
constexpr std::int64_t kMinBlocksPerChunk = 8;

// Steps 2-3 of the reduction order for elements [begin, end) of one block. The lanes live in
// registers and the block is read front to back.
template <class Map, class Combine>
double reduce_block(const Map& map, Combine f, std::int64_t begin, std::int64_t end) {
  double lanes[kReduceLanes];
  for (int j = 0; j < kReduceLanes; ++j) lanes[j] = Combine::identity();
  std::int64_t row = begin;
  for (; row + kReduceLanes <= end; row += kReduceLanes) {
    for (int j = 0; j < kReduceLanes; ++j) lanes[j] = f(lanes[j], map(row + j));
  }
  const int rest = static_cast<int>(end - row);
  for (int j = 0; j < rest; ++j) lanes[j] = f(lanes[j], map(row + j));
  for (int s = kReduceLanes / 2; s > 0; s /= 2) {
    for (int j = 0; j < s; ++j) lanes[j] = f(lanes[j], lanes[j + s]);
  }
  return lanes[0];
}

template <class Map, class Combine>
double reduce(CpuContext& context, std::int64_t n, const Map& map, Combine f) {
  const std::int64_t blocks = reduce_block_count(n);
  std::vector<double> partials(static_cast<std::size_t>(blocks));
  double* p = partials.data();
  context.parallel_for(0, blocks, kMinBlocksPerChunk,
                       [&map, f, p, n](std::int64_t first, std::int64_t last) {
                         const Map local = map;
                         for (std::int64_t b = first; b < last; ++b) {
                           const std::int64_t begin = b * kReduceBlock;
                           p[b] = reduce_block(local, f, begin, std::min(n, begin + kReduceBlock));
                         }
                       });
  return combine_partials(p, blocks, f);
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
