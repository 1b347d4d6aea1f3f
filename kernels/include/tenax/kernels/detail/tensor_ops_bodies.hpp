/// Bodies of the data-movement, selection and axis-reduction ops (ops_shape.hpp, ops_index.hpp,
/// ops_select.hpp, ops_reduce_axis.hpp), written once for both backends.
/// @file
/// Every op sees its contiguous tensors around one axis as [outer, extent, inner] (the axes before
/// it merged into outer, those after it into inner). The CUDA backend runs each functor once per
/// index over a grid-stride loop, the CPU backend from a parallel loop over the same indices: the
/// same reads, writes and arithmetic. Data movement copies raw storage words (RawOf), so every
/// dtype keeps its bits. Internal to the kernels layer.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tenax/core/half.hpp"
#include "tenax/core/host_device.hpp"
#include "tenax/kernels/detail/broadcast_bodies.hpp"
#include "tenax/kernels/detail/elementwise_bodies.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"
#include "tenax/kernels/reduction_order.hpp"

namespace tenax::kernels {

/// The unsigned word of an element of kBytes bytes: what data movement copies.
template <int kBytes>
struct RawOf;
/// 1-byte elements (u8).
template <>
struct RawOf<1> {
  using type = std::uint8_t;  ///< the word
};
/// 2-byte elements (f16, bf16).
template <>
struct RawOf<2> {
  using type = std::uint16_t;  ///< the word
};
/// 4-byte elements (f32, i32).
template <>
struct RawOf<4> {
  using type = std::uint32_t;  ///< the word
};
/// 8-byte elements (f64, i64).
template <>
struct RawOf<8> {
  using type = std::uint64_t;  ///< the word
};

/// dst[o, dst_begin + j, i] = src[o, src_begin + j, i] for j < count, for index e over
/// [outer, count, inner] in row-major order. Concat (one call per input), narrow and roll (two
/// calls) are this copy.
template <class R>
struct SlabCopyBody {
  const R* src;
  R* dst;
  std::int64_t inner;
  std::int64_t count;
  std::int64_t src_extent;
  std::int64_t src_begin;
  std::int64_t dst_extent;
  std::int64_t dst_begin;

  TENAX_HD void operator()(std::int64_t e) const {
    const std::int64_t i = e % inner;
    const std::int64_t r = e / inner;
    const std::int64_t j = r % count;
    const std::int64_t o = r / count;
    dst[(o * dst_extent + dst_begin + j) * inner + i] =
        src[(o * src_extent + src_begin + j) * inner + i];
  }
};

/// SlabCopyBody a slab at a time: slab o is count * inner contiguous elements on both sides,
/// copied in order (the same element copies). The CPU backend runs it (no division per element).
template <class R>
struct SlabRowCopyBody {
  SlabCopyBody<R> slab;

  TENAX_HD void operator()(std::int64_t o) const {
    const std::int64_t length = slab.count * slab.inner;
    const R* from = slab.src + (o * slab.src_extent + slab.src_begin) * slab.inner;
    R* to = slab.dst + (o * slab.dst_extent + slab.dst_begin) * slab.inner;
    for (std::int64_t e = 0; e < length; ++e) to[e] = from[e];
  }
};

/// The pad modes of ops::PadMode, as the bodies see them.
enum class PadKind : int { constant = 0, periodic = 1, reflect = 2 };

/// The input coordinate that output coordinate k (relative to the input's start; k < 0 or
/// k >= n outside it) reads under a periodic or reflect pad of an axis of extent n >= 1.
TENAX_HD inline std::int64_t pad_source(PadKind kind, std::int64_t k, std::int64_t n) {
  if (kind == PadKind::periodic) {
    k %= n;
    return k < 0 ? k + n : k;
  }
  const std::int64_t period = 2 * n;  // mirror images repeat every 2n
  k %= period;
  if (k < 0) k += period;
  return k >= n ? period - 1 - k : k;
}

/// out[o, j, i] over [outer, out_extent, inner]: x[o, j - before, i] inside the input, the
/// constant `value` (its stored word) or the element pad_source names outside it. before >= 0 and
/// out_extent = before + extent + after with after >= 0 (ops::pad checks them).
template <class R>
struct PadBody {
  const R* src;
  R* dst;
  R value;
  PadKind kind;
  std::int64_t inner;
  std::int64_t extent;
  std::int64_t before;
  std::int64_t out_extent;

  TENAX_HD void operator()(std::int64_t e) const {
    const std::int64_t i = e % inner;
    const std::int64_t r = e / inner;
    const std::int64_t j = r % out_extent;
    const std::int64_t o = r / out_extent;
    std::int64_t k = j - before;
    if (k < 0 || k >= extent) {
      if (kind == PadKind::constant) {
        dst[e] = value;
        return;
      }
      k = pad_source(kind, k, extent);
    }
    dst[e] = src[(o * extent + k) * inner + i];
  }
};

/// PadBody an outer row at a time: row o's out_extent * inner elements, in order (the same
/// element values). The CPU backend runs it (no division per element).
template <class R>
struct PadRowBody {
  PadBody<R> pad;

  TENAX_HD void operator()(std::int64_t o) const {
    R* out = pad.dst + o * pad.out_extent * pad.inner;
    if (pad.kind == PadKind::constant) {
      // Three runs of the row (before >= 0, out_extent = before + extent + after): the constant,
      // the input's row, the constant. Element by element with inner = 1 (the padded last axis
      // of an attention's qkv gradient) the loop below ran at 4 GB/s.
      const std::int64_t head = pad.before * pad.inner;
      const std::int64_t body = pad.extent * pad.inner;
      const std::int64_t row = pad.out_extent * pad.inner;
      for (std::int64_t e = 0; e < head; ++e) out[e] = pad.value;
      const R* from = pad.src + o * body;
      for (std::int64_t e = 0; e < body; ++e) out[head + e] = from[e];
      for (std::int64_t e = head + body; e < row; ++e) out[e] = pad.value;
      return;
    }
    for (std::int64_t j = 0; j < pad.out_extent; ++j) {
      std::int64_t k = j - pad.before;
      R* run = out + j * pad.inner;
      if (k < 0 || k >= pad.extent) {
        if (pad.kind == PadKind::constant) {
          for (std::int64_t i = 0; i < pad.inner; ++i) run[i] = pad.value;
          continue;
        }
        k = pad_source(pad.kind, k, pad.extent);
      }
      const R* from = pad.src + (o * pad.extent + k) * pad.inner;
      for (std::int64_t i = 0; i < pad.inner; ++i) run[i] = from[i];
    }
  }
};

/// Element e (row-major over extent[0, rank)) of a copy between two strided layouts: its
/// coordinates times src_stride locate the element read, times dst_stride the element written.
/// A permutation reads with x's strides reordered and writes row-major; a strided view's copy and
/// assignment read and write with the views' strides; a fill reads one element (src strides 0).
struct StridedLayout {
  int rank = 0;                                  ///< >= 1
  std::int64_t extent[kMaxLayoutRank] = {};      ///< the extents walked
  std::int64_t src_stride[kMaxLayoutRank] = {};  ///< elements of src between neighbours
  std::int64_t dst_stride[kMaxLayoutRank] = {};  ///< elements of dst between neighbours
};

/// The offsets in src (`from`) and dst (`to`) of index e, row-major over the layout's first
/// `axes` extents.
TENAX_HD inline void strided_offsets(const StridedLayout& layout, int axes, std::int64_t e,
                                     std::int64_t& from, std::int64_t& to) {
  std::int64_t rest = e;
  for (int d = axes - 1; d >= 0; --d) {
    const std::int64_t c = rest % layout.extent[d];
    rest /= layout.extent[d];
    from += c * layout.src_stride[d];
    to += c * layout.dst_stride[d];
  }
}

/// dst[dst offset(e)] = src[src offset(e)] for the layout.
template <class R>
struct StridedCopyBody {
  const R* src;
  R* dst;
  StridedLayout layout;

  TENAX_HD void operator()(std::int64_t e) const {
    std::int64_t from = 0;
    std::int64_t to = 0;
    strided_offsets(layout, layout.rank, e, from, to);
    dst[to] = src[from];
  }
};

/// StridedCopyBody a row at a time, for a layout whose last extent is contiguous on both sides
/// (unit strides): row r (r in [0, count / extent[rank - 1])) has its offsets computed once and
/// its elements copied in order. The same element copies as StridedCopyBody's; the CPU backend
/// runs it (fewer divisions), the CUDA one the element-wise body (coalesced accesses).
template <class R>
struct StridedRowCopyBody {
  const R* src;
  R* dst;
  StridedLayout layout;

  TENAX_HD void operator()(std::int64_t r) const {
    std::int64_t from = 0;
    std::int64_t to = 0;
    strided_offsets(layout, layout.rank - 1, r, from, to);
    const std::int64_t length = layout.extent[layout.rank - 1];
    for (std::int64_t i = 0; i < length; ++i) dst[to + i] = src[from + i];
  }
};

/// out[o, j, i] = x[o, index[j], i] over [outer, count, inner] (count = the index's length).
template <class R, class I>
struct GatherBody {
  const R* src;
  const I* index;
  R* dst;
  std::int64_t inner;
  std::int64_t count;
  std::int64_t src_extent;

  TENAX_HD void operator()(std::int64_t e) const {
    const std::int64_t i = e % inner;
    const std::int64_t r = e / inner;
    const std::int64_t j = r % count;
    const std::int64_t o = r / count;
    dst[e] = src[(o * src_extent + static_cast<std::int64_t>(index[j])) * inner + i];
  }
};

/// 1 when index[i] lies outside [0, bound), 0 otherwise.
template <class I>
struct IndexOutOfRangeBody {
  const I* index;
  std::int64_t bound;

  TENAX_HD int operator()(std::int64_t i) const {
    const auto v = static_cast<std::int64_t>(index[i]);
    return (v < 0 || v >= bound) ? 1 : 0;
  }
};

/// Column c = (o, i) of the target: for j = 0, 1, ..., count - 1 in order, target[o, index[j], i]
/// is set to (kAdd false: raw words) or incremented by (kAdd true: a floating S, the sum rounded
/// on store) src[o, j, i]. One thread per column, so duplicates resolve in index order.
template <class S, class I, bool kAdd>
struct ScatterBody {
  const S* src;
  const I* index;
  S* dst;
  std::int64_t inner;
  std::int64_t count;
  std::int64_t dst_extent;

  TENAX_HD void operator()(std::int64_t c) const {
    const std::int64_t i = c % inner;
    const std::int64_t o = c / inner;
    for (std::int64_t j = 0; j < count; ++j) {
      S& d = dst[(o * dst_extent + static_cast<std::int64_t>(index[j])) * inner + i];
      const S v = src[(o * count + j) * inner + i];
      if constexpr (kAdd) {
        store(d, load(d) + load(v));
      } else {
        d = v;
      }
    }
  }
};

/// out[i] = cond[i] != 0 ? a[i] : b[i], raw words.
template <class R>
struct WhereBody {
  const std::uint8_t* cond;
  const R* a;
  const R* b;
  R* out;

  TENAX_HD void operator()(std::int64_t i) const {
    const R va = a[i];
    const R vb = b[i];
    out[i] = cond[i] != 0 ? va : vb;
  }
};

/// The value an element compares by: floats as stored (f16/bf16 widened exactly to float),
/// integers as themselves.
template <class S>
TENAX_HD inline auto compare_value(S v) {
  if constexpr (std::is_integral_v<S>) {
    return v;
  } else {
    return load(v);
  }
}

/// The comparisons of ops::CompareOp.
struct EqCompare {
  template <class T>
  TENAX_HD bool operator()(T a, T b) const {  ///< a == b
    return a == b;
  }
};
/// a != b.
struct NeCompare {
  template <class T>
  TENAX_HD bool operator()(T a, T b) const {  ///< a != b
    return a != b;
  }
};
/// a < b.
struct LtCompare {
  template <class T>
  TENAX_HD bool operator()(T a, T b) const {  ///< a < b
    return a < b;
  }
};
/// a <= b.
struct LeCompare {
  template <class T>
  TENAX_HD bool operator()(T a, T b) const {  ///< a <= b
    return a <= b;
  }
};
/// a > b.
struct GtCompare {
  template <class T>
  TENAX_HD bool operator()(T a, T b) const {  ///< a > b
    return a > b;
  }
};
/// a >= b.
struct GeCompare {
  template <class T>
  TENAX_HD bool operator()(T a, T b) const {  ///< a >= b
    return a >= b;
  }
};

/// out[i] = 1 when op(a[i], b[i]), 0 otherwise.
template <class S, class Op>
struct CompareBody {
  const S* a;
  const S* b;
  std::uint8_t* out;
  Op op;

  TENAX_HD void operator()(std::int64_t i) const {
    const bool result = op(compare_value(a[i]), compare_value(b[i]));
    out[i] = result ? 1 : 0;
  }
};

/// NaN-propagating minimum, the mirror of MaxCombine (identity +inf).
struct MinCombine {
  TENAX_HD static constexpr double identity() { return double_of(0x7ff0000000000000u); }  // +inf
  TENAX_HD double operator()(double a, double b) const { return (a != a || a < b) ? a : b; }
};

/// Output c = (o, i) folds the line x[o, 0..extent-1, i] by the order of reduction_order.hpp with
/// Combine (fold_line), then stores the result (divided by extent when kMean) rounded once to S.
template <class S, class Combine, bool kMean>
struct ReduceAxisBody {
  const S* x;
  S* out;
  std::int64_t inner;
  std::int64_t extent;
  Combine f;

  TENAX_HD void operator()(std::int64_t c) const {
    const std::int64_t i = c % inner;
    const std::int64_t o = c / inner;
    const S* line = x + o * extent * inner + i;
    double result = fold_line<double>(extent, f, Combine::identity(), [line, this](std::int64_t k) {
      return static_cast<double>(load(line[k * inner]));
    });
    if constexpr (kMean) result = result / static_cast<double>(extent);
    store_rounded_once(out[c], result);
  }
};

}  // namespace tenax::kernels
