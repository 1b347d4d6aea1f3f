/// The dispatch of the tensor-ops kernels (tensor_ops_kernels.hpp) from runtime dtypes and ops to
/// the bodies of tensor_ops_bodies.hpp, written once for both backends.
/// @file
/// Each run_* function builds the body for the arguments' types and hands it to the backend's
/// launcher, which provides
///   launcher.each(n, body, what, work)  // body(e) for every e in [0, n); `work` elements per e
///   launcher.any(n, body, what)         // whether body(e) != 0 for some e in [0, n)
/// The CPU launcher (kernels/cpu/tensor_ops.cpp) runs a parallel loop, the CUDA one
/// (kernels/cuda/tensor_ops.cu) a grid-stride kernel. Needs no CUDA include. Internal to the
/// kernels layer.
#pragma once

#include <cstdint>
#include <cstring>

#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/tensor_ops_kernels.hpp"

namespace tenax::kernels::detail {

/// Calls f(TypeTag<R>{}) with R the raw word of dtype's elements (RawOf<size_of(dtype)>).
template <class F>
decltype(auto) dispatch_raw(DType dtype, F&& f) {
  switch (size_of(dtype)) {
    case 1:
      return f(TypeTag<RawOf<1>::type>{});
    case 2:
      return f(TypeTag<RawOf<2>::type>{});
    case 4:
      return f(TypeTag<RawOf<4>::type>{});
    default:
      return f(TypeTag<RawOf<8>::type>{});
  }
}

/// Calls f(TypeTag<I>{}) for an index dtype (i64 or i32; UsageError otherwise).
template <class F>
decltype(auto) dispatch_index(DType dtype, std::string_view op, F&& f) {
  switch (dtype) {
    case DType::i64:
      return f(TypeTag<std::int64_t>{});
    case DType::i32:
      return f(TypeTag<std::int32_t>{});
    default:
      throw_unsupported_dtype(op, dtype, "i64, i32");
  }
}

/// Calls f(Op{}) with the comparison functor of `op`.
template <class F>
decltype(auto) dispatch_compare(ops::CompareOp op, F&& f) {
  switch (op) {
    case ops::CompareOp::eq:
      return f(EqCompare{});
    case ops::CompareOp::ne:
      return f(NeCompare{});
    case ops::CompareOp::lt:
      return f(LtCompare{});
    case ops::CompareOp::le:
      return f(LeCompare{});
    case ops::CompareOp::gt:
      return f(GtCompare{});
    case ops::CompareOp::ge:
      return f(GeCompare{});
  }
  throw UsageError("compare: unknown CompareOp " + std::to_string(static_cast<int>(op)),
                   "pass one of the ops::CompareOp enumerators");
}

/// The body of a slab copy, for the arguments' element size R.
template <class R>
SlabCopyBody<R> slab_copy_body(const SlabCopyArgs& a) {
  return {static_cast<const R*>(a.src.data()),
          static_cast<R*>(a.dst.data()),
          a.inner,
          a.count,
          a.src_extent,
          a.src_begin,
          a.dst_extent,
          a.dst_begin};
}

/// The body of a pad, for the arguments' element size R.
template <class R>
PadBody<R> pad_body(const PadArgs& a) {
  R value{};
  std::memcpy(&value, &a.value_bits, sizeof(R));  // the low bytes, little-endian
  return {static_cast<const R*>(a.src.data()),
          static_cast<R*>(a.dst.data()),
          value,
          a.kind,
          a.inner,
          a.extent,
          a.before,
          a.out_extent};
}

template <class L>
void run_slab_copy(const SlabCopyArgs& a, L&& launcher) {
  dispatch_raw(a.dst.dtype(), [&](auto tag) {
    using R = typename decltype(tag)::type;
    launcher.each(a.outer * a.count * a.inner, slab_copy_body<R>(a), "slab_copy kernel", 1);
  });
}

template <class L>
void run_pad(const PadArgs& a, L&& launcher) {
  dispatch_raw(a.dst.dtype(), [&](auto tag) {
    using R = typename decltype(tag)::type;
    launcher.each(a.dst.numel(), pad_body<R>(a), "pad kernel", 1);
  });
}

template <class L>
void run_strided_copy(const StridedCopyArgs& a, L&& launcher) {
  dispatch_raw(a.dst.dtype(), [&](auto tag) {
    using R = typename decltype(tag)::type;
    launcher.each(a.count,
                  StridedCopyBody<R>{static_cast<const R*>(a.src.data()) + a.src_offset,
                                     static_cast<R*>(a.dst.data()) + a.dst_offset, a.layout},
                  "strided copy kernel", 1);
  });
}

template <class L>
void run_gather(const GatherArgs& a, L&& launcher) {
  dispatch_raw(a.dst.dtype(), [&](auto tag) {
    using R = typename decltype(tag)::type;
    dispatch_index(a.index.dtype(), "gather", [&](auto index_tag) {
      using I = typename decltype(index_tag)::type;
      launcher.each(a.dst.numel(),
                    GatherBody<R, I>{
                        static_cast<const R*>(a.src.data()), static_cast<const I*>(a.index.data()),
                        static_cast<R*>(a.dst.data()), a.inner, a.index.numel(), a.src_extent},
                    "gather kernel", 1);
    });
  });
}

template <class L>
void run_scatter(const ScatterArgs& a, L&& launcher) {
  const std::int64_t count = a.index.numel();
  dispatch_index(a.index.dtype(), "scatter", [&](auto index_tag) {
    using I = typename decltype(index_tag)::type;
    const auto* index = static_cast<const I*>(a.index.data());
    if (a.add) {
      dispatch_float(a.dst.dtype(), "scatter_add", [&](auto tag) {
        using S = typename decltype(tag)::type;
        launcher.each(
            a.outer * a.inner,
            ScatterBody<S, I, true>{static_cast<const S*>(a.src.data()), index,
                                    static_cast<S*>(a.dst.data()), a.inner, count, a.dst_extent},
            "scatter_add kernel", count);
      });
    } else {
      dispatch_raw(a.dst.dtype(), [&](auto tag) {
        using R = typename decltype(tag)::type;
        launcher.each(
            a.outer * a.inner,
            ScatterBody<R, I, false>{static_cast<const R*>(a.src.data()), index,
                                     static_cast<R*>(a.dst.data()), a.inner, count, a.dst_extent},
            "scatter kernel", count);
      });
    }
  });
}

template <class L>
bool run_index_out_of_range(const IndexCheckArgs& a, L&& launcher) {
  return dispatch_index(a.index.dtype(), "index check", [&](auto tag) {
    using I = typename decltype(tag)::type;
    return launcher.any(a.index.numel(),
                        IndexOutOfRangeBody<I>{static_cast<const I*>(a.index.data()), a.bound},
                        "index range kernel");
  });
}

template <class L>
void run_where(const WhereArgs& a, L&& launcher) {
  dispatch_raw(a.out.dtype(), [&](auto tag) {
    using R = typename decltype(tag)::type;
    launcher.each(a.out.numel(),
                  WhereBody<R>{static_cast<const std::uint8_t*>(a.cond.data()),
                               static_cast<const R*>(a.a.data()), static_cast<const R*>(a.b.data()),
                               static_cast<R*>(a.out.data())},
                  "where kernel", 1);
  });
}

template <class L>
void run_compare(const CompareArgs& a, L&& launcher) {
  dispatch_all(a.a.dtype(), "compare", [&](auto tag) {
    using S = typename decltype(tag)::type;
    dispatch_compare(a.op, [&](auto op) {
      launcher.each(a.out.numel(),
                    CompareBody<S, decltype(op)>{static_cast<const S*>(a.a.data()),
                                                 static_cast<const S*>(a.b.data()),
                                                 static_cast<std::uint8_t*>(a.out.data()), op},
                    "compare kernel", 1);
    });
  });
}

template <class L>
void run_reduce_axis(const ReduceAxisArgs& a, L&& launcher) {
  dispatch_float(a.x.dtype(), "reduce", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const auto* x = static_cast<const S*>(a.x.data());
    auto* out = static_cast<S*>(a.out.data());
    const std::int64_t n = a.out.numel();
    switch (a.op) {
      case ops::AxisReduction::sum:
        launcher.each(n, ReduceAxisBody<S, PlusCombine, false>{x, out, a.inner, a.extent, {}},
                      "reduce(sum) kernel", a.extent);
        return;
      case ops::AxisReduction::mean:
        launcher.each(n, ReduceAxisBody<S, PlusCombine, true>{x, out, a.inner, a.extent, {}},
                      "reduce(mean) kernel", a.extent);
        return;
      case ops::AxisReduction::max:
        launcher.each(n, ReduceAxisBody<S, MaxCombine, false>{x, out, a.inner, a.extent, {}},
                      "reduce(max) kernel", a.extent);
        return;
      case ops::AxisReduction::min:
        launcher.each(n, ReduceAxisBody<S, MinCombine, false>{x, out, a.inner, a.extent, {}},
                      "reduce(min) kernel", a.extent);
        return;
    }
  });
}

}  // namespace tenax::kernels::detail
