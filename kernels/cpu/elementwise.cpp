// CPU backend of the element-wise, fill, cast and mixed-precision-check kernels: the bodies of
// elementwise_bodies.hpp run from for_each loops.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>

#include "for_each.hpp"
#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/elementwise_bodies.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"

namespace tenax::kernels::cpu {

using detail::for_each;
using kernels::detail::dispatch_all;
using kernels::detail::dispatch_binary;
using kernels::detail::dispatch_float;
using kernels::detail::dispatch_unary;

void fill(CpuContext& context, const Tensor& t, double value) {
  dispatch_all(t.dtype(), "fill", [&](auto tag) {
    using S = typename decltype(tag)::type;
    for_each(context, t.numel(), FillBody<S>{static_cast<S*>(t.data()), from_double<S>(value)});
  });
}

void random_uniform(CpuContext& context, const Tensor& t, std::uint64_t seed, std::uint64_t offset,
                    double low, double high) {
  dispatch_float(t.dtype(), "random_uniform", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    for_each(context, t.numel(),
             UniformBody<S>{static_cast<S*>(t.data()), seed, offset, static_cast<C>(low),
                            static_cast<C>(high - low)});
  });
}

void random_normal(CpuContext& context, const Tensor& t, std::uint64_t seed, std::uint64_t offset,
                   double mean, double stddev) {
  dispatch_float(t.dtype(), "random_normal", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    for_each(context, t.numel(),
             NormalBody<S>{static_cast<S*>(t.data()), seed, offset, static_cast<C>(mean),
                           static_cast<C>(stddev)});
  });
}

void cast(CpuContext& context, const Tensor& dst, const Tensor& src) {
  dispatch_float(dst.dtype(), "cast", [&](auto dst_tag) {
    using D = typename decltype(dst_tag)::type;
    dispatch_float(src.dtype(), "cast", [&](auto src_tag) {
      using S = typename decltype(src_tag)::type;
      for_each(context, src.numel(),
               CastBody<D, S>{static_cast<D*>(dst.data()), static_cast<const S*>(src.data())});
    });
  });
}

void axpby(CpuContext& context, double a, const Tensor& x, double b, const Tensor& y) {
  dispatch_float(y.dtype(), "axpby", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const auto* xs = static_cast<const S*>(x.data());
    auto* ys = static_cast<S*>(y.data());
    if (b == 0.0) {
      for_each(context, y.numel(), AxBody<S>{xs, ys, static_cast<C>(a)});
    } else {
      for_each(context, y.numel(), AxpbyBody<S>{xs, ys, static_cast<C>(a), static_cast<C>(b)});
    }
  });
}

void scale(CpuContext& context, double a, const Tensor& x) {
  dispatch_float(x.dtype(), "scale", [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto* xs = static_cast<S*>(x.data());
    for_each(context, x.numel(), AxBody<S>{xs, xs, static_cast<compute_t<S>>(a)});
  });
}

namespace {

// A 16-bit element has 65536 values, so a unary op over f16 or bf16 is a table: out = table[x].
// The table is the op's own results over every bit pattern, computed by the same body and loop
// as an array would be (NaNs, infinities and subnormals included), so a looked-up element has the
// bits a computed one has, on any target; the lookup costs a load where the exact GELU costs a
// double-precision polynomial and exponential. Filled on an op's first array of kTableMinElements
// or more, kept for the process (128 KiB per op and type: at most 15 ops x 2 types, 3.75 MiB).
inline constexpr std::int64_t kTableMinElements = std::int64_t{1} << 16;
inline constexpr std::int64_t kTableEntries = std::int64_t{1} << 16;

struct TableLookupBody {
  const std::uint16_t* x;
  std::uint16_t* out;
  const std::uint16_t* table;
  void operator()(std::int64_t i) const { out[i] = table[x[i]]; }
};

// UnaryMulBody with op(x) looked up, a block at a time: the block's op(x) gathered from the table
// (scalar loads), then g * op(x) as BinaryBody's mul over the block, which vectorises (an element
// at a time, gather and product together ran at a third of the speed).
template <class S>
void table_mul(CpuContext& context, const std::uint16_t* x, const S* g, S* out,
               const std::uint16_t* table, std::int64_t n) {
  constexpr std::int64_t kBlock = 256;
  context.parallel_for(0, n, detail::kMinChunk, [&](std::int64_t begin, std::int64_t end) {
    S fx[kBlock];
    for (std::int64_t at = begin; at < end; at += kBlock) {
      const std::int64_t count = std::min(kBlock, end - at);
      for (std::int64_t k = 0; k < count; ++k) fx[k].bits = table[x[at + k]];
      detail::run_chunk_best(BinaryBody<MulOp, S>{g + at, fx, out + at, MulOp{}}, 0, count);
    }
  });
}

// The table of one op (each UnaryOp has its own functor type) over one 16-bit type. Filled on
// the calling thread through a one-thread context (the same loop, no pool): a fill that waited for
// the pool could deadlock against a pool chunk waiting for the fill.
template <class S, class Functor>
const std::uint16_t* unary_table(Functor functor) {
  static_assert(sizeof(S) == sizeof(std::uint16_t));
  static struct {
    std::once_flag filled;
    std::unique_ptr<std::uint16_t[]> entries;
  } table;
  std::call_once(table.filled, [&] {
    auto inputs = std::make_unique<std::uint16_t[]>(kTableEntries);
    auto results = std::make_unique<std::uint16_t[]>(kTableEntries);
    for (std::int64_t i = 0; i < kTableEntries; ++i) inputs[i] = static_cast<std::uint16_t>(i);
    CpuContext calling_thread(1);
    for_each(calling_thread, kTableEntries,
             UnaryBody<Functor, S>{reinterpret_cast<const S*>(inputs.get()),
                                   reinterpret_cast<S*>(results.get()), functor});
    table.entries = std::move(results);
  });
  return table.entries.get();
}

}  // namespace

void unary(CpuContext& context, ops::UnaryOp op, const Tensor& x, const Tensor& out) {
  dispatch_float(x.dtype(), "unary", [&](auto tag) {
    using S = typename decltype(tag)::type;
    dispatch_unary(op, [&](auto functor) {
      if constexpr (sizeof(S) == sizeof(std::uint16_t)) {
        if (x.numel() >= kTableMinElements) {
          for_each(
              context, x.numel(),
              TableLookupBody{static_cast<const std::uint16_t*>(x.data()),
                              static_cast<std::uint16_t*>(out.data()), unary_table<S>(functor)});
          return;
        }
      }
      for_each(context, x.numel(),
               UnaryBody<decltype(functor), S>{static_cast<const S*>(x.data()),
                                               static_cast<S*>(out.data()), functor});
    });
  });
}

void unary_mul(CpuContext& context, ops::UnaryOp op, const Tensor& x, const Tensor& g,
               const Tensor& out) {
  dispatch_float(x.dtype(), "unary_mul", [&](auto tag) {
    using S = typename decltype(tag)::type;
    dispatch_unary(op, [&](auto functor) {
      if constexpr (sizeof(S) == sizeof(std::uint16_t)) {
        if (x.numel() >= kTableMinElements) {
          const std::uint16_t* table = unary_table<S>(functor);
          table_mul<S>(context, static_cast<const std::uint16_t*>(x.data()),
                       static_cast<const S*>(g.data()), static_cast<S*>(out.data()), table,
                       x.numel());
          return;
        }
      }
      for_each(context, x.numel(),
               UnaryMulBody<decltype(functor), S>{static_cast<const S*>(x.data()),
                                                  static_cast<const S*>(g.data()),
                                                  static_cast<S*>(out.data()), functor});
    });
  });
}

void binary(CpuContext& context, ops::BinaryOp op, const Tensor& a, const Tensor& b,
            const Tensor& out) {
  dispatch_float(a.dtype(), "binary", [&](auto tag) {
    using S = typename decltype(tag)::type;
    dispatch_binary(op, [&](auto functor) {
      for_each(context, a.numel(),
               BinaryBody<decltype(functor), S>{static_cast<const S*>(a.data()),
                                                static_cast<const S*>(b.data()),
                                                static_cast<S*>(out.data()), functor});
    });
  });
}

bool unscale_and_check(CpuContext& context, const Tensor& t, double inv_scale) {
  return dispatch_float(t.dtype(), "unscale_and_check", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return detail::for_each_any(
        context, t.numel(),
        UnscaleCheckBody<S>{static_cast<S*>(t.data()), static_cast<compute_t<S>>(inv_scale)});
  });
}

// The overloads without a context run on the process-wide one.
#define TENAX_CPU_KERNEL_ON_INSTANCE(ret, name, params, args) \
  ret name params { return name(CpuContext::instance(), TENAX_UNPAREN args); }
#define TENAX_UNPAREN(...) __VA_ARGS__
TENAX_ELEMENTWISE_KERNELS(TENAX_CPU_KERNEL_ON_INSTANCE)
#undef TENAX_CPU_KERNEL_ON_INSTANCE
#undef TENAX_UNPAREN

}  // namespace tenax::kernels::cpu
