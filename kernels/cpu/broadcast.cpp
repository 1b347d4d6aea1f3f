// CPU backend of the broadcasting kernels, running the arithmetic of broadcast_bodies.hpp.
//
// broadcast_binary: the output's rows (its last merged dimension) are spread over the context's
// threads; a row is a tight loop whose operand steps (0 or 1) are compile-time constants, so it
// vectorises.
//
// sum_to: the outputs are spread over the threads; each output is summed by one thread in x's
// row-major order, so the bits do not depend on the thread count. When x's last axis is kept (the
// bias gradient, [B, C] -> [C]), neighbouring outputs are summed side by side in tiles, each
// still adding its own inputs in the same order, so that x streams through memory row by row
// instead of column by column.
#include <algorithm>
#include <cstdint>

#include "for_each.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/broadcast_bodies.hpp"
#include "tenax/kernels/detail/broadcast_kernels.hpp"
#include "tenax/kernels/detail/dispatch.hpp"

namespace tenax::kernels::cpu {
namespace {

template <int kAStep, int kBStep, class Body>
void run_rows(CpuContext& context, const Body& body) {
  const BroadcastLayout& layout = body.layout;
  const std::int64_t inner = layout.extent[layout.rank - 1];
  std::int64_t rows = 1;
  for (int d = 0; d + 1 < layout.rank; ++d) rows *= layout.extent[d];
  const std::int64_t min_rows = std::max<std::int64_t>(1, detail::kMinChunk / inner);
  context.parallel_for(0, rows, min_rows, [&body](std::int64_t first, std::int64_t last) {
    const Body local = body;
    for (std::int64_t r = first; r < last; ++r) local.template row<kAStep, kBStep>(r);
  });
}

// Outputs summed side by side when x's last axis is kept.
constexpr std::int64_t kTile = 64;

// Outputs [first, last) of sum_to for a layout whose last kept dimension is x's last axis
// (kept_stride 1): each tile of neighbouring outputs walks the reduced coordinates once, adding
// element t of each contiguous run to output t.
template <class S>
void sum_to_tiles(const SumToBody<S>& body, std::int64_t first, std::int64_t last) {
  const SumToLayout& layout = body.layout;
  const std::int64_t row = layout.kept_extent[layout.kept_rank - 1];
  const int inner_axis = layout.reduced_rank - 1;
  const std::int64_t inner = layout.reduced_extent[inner_axis];
  const std::int64_t step = layout.reduced_stride[inner_axis];
  const std::int64_t outer = layout.outer_count();
  const S* x = body.x;
  for (std::int64_t o = first; o < last;) {
    const std::int64_t len = std::min({kTile, row - o % row, last - o});
    double sums[kTile] = {};
    std::int64_t index[kMaxLayoutRank] = {};
    std::int64_t offset = layout.base(o);
    for (std::int64_t k = 0; k < outer; ++k) {
      for (std::int64_t j = 0; j < inner; ++j) {
        const S* run = x + offset + j * step;
        for (std::int64_t t = 0; t < len; ++t) sums[t] += static_cast<double>(load(run[t]));
      }
      layout.advance_outer(offset, index);
    }
    for (std::int64_t t = 0; t < len; ++t) store_rounded_once(body.out[o + t], sums[t]);
    o += len;
  }
}

}  // namespace

void broadcast_binary(CpuContext& context, const BroadcastBinaryArgs& args) {
  kernels::detail::dispatch_float(args.out.dtype(), "broadcast_binary", [&](auto tag) {
    using S = typename decltype(tag)::type;
    kernels::detail::dispatch_binary(args.op, [&](auto functor) {
      const BroadcastBinaryBody<decltype(functor), S> body{
          static_cast<const S*>(args.a.data()), static_cast<const S*>(args.b.data()),
          static_cast<S*>(args.out.data()), functor, args.layout};
      const int last = args.layout.rank - 1;
      const bool a_steps = args.layout.a_stride[last] != 0;
      const bool b_steps = args.layout.b_stride[last] != 0;
      if (a_steps && b_steps) {
        run_rows<1, 1>(context, body);
      } else if (a_steps) {
        run_rows<1, 0>(context, body);
      } else if (b_steps) {
        run_rows<0, 1>(context, body);
      } else {
        run_rows<0, 0>(context, body);
      }
    });
  });
}

void sum_to(CpuContext& context, const SumToArgs& args) {
  kernels::detail::dispatch_float(args.out.dtype(), "sum_to", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const SumToBody<S> body{static_cast<const S*>(args.x.data()), static_cast<S*>(args.out.data()),
                            args.layout};
    const SumToLayout& layout = args.layout;
    const std::int64_t outputs = args.out.numel();
    const std::int64_t per_output = std::max<std::int64_t>(1, args.x.numel() / outputs);
    const std::int64_t min_chunk = std::max<std::int64_t>(1, detail::kMinChunk / per_output);
    const bool tiled = layout.kept_stride[layout.kept_rank - 1] == 1;
    context.parallel_for(0, outputs, min_chunk,
                         [&body, tiled](std::int64_t first, std::int64_t last) {
                           if (tiled) {
                             sum_to_tiles(body, first, last);
                           } else {
                             const SumToBody<S> local = body;
                             for (std::int64_t o = first; o < last; ++o) local(o);
                           }
                         });
  });
}

void broadcast_binary(const BroadcastBinaryArgs& args) {
  broadcast_binary(CpuContext::instance(), args);
}

void sum_to(const SumToArgs& args) { sum_to(CpuContext::instance(), args); }

}  // namespace tenax::kernels::cpu
