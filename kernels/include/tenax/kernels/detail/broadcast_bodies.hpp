/// Bodies of the broadcasting ops (ops_broadcast.hpp), written once for both backends.
/// @file
/// The front end (kernels/src/ops_broadcast.cpp) reduces every operand to a small layout: the
/// dimensions of extent 1 dropped, adjacent dimensions merged where every operand is contiguous
/// across them, a broadcast dimension given stride 0. For a bias [C] added to [B, C] that leaves
/// two dimensions; no layout has more than the rank of the shapes (at most Shape::kMaxRank).
///
/// The CUDA backend runs the functors per output element; the CPU backend runs the same arithmetic
/// from loops over rows (BroadcastBinaryBody::row) or tiles of outputs, in the same order with the
/// same roundings. Internal to the kernels layer.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tenax/core/half.hpp"
#include "tenax/core/host_device.hpp"
#include "tenax/kernels/detail/elementwise_bodies.hpp"

namespace tenax::kernels {

inline constexpr int kMaxLayoutRank = 8;

/// Element i of the output (row-major over `extent`) reads a[offset_a] and b[offset_b]. rank >= 1;
/// the last dimension's strides are 0 (broadcast) or 1.
struct BroadcastLayout {
  int rank = 0;
  std::int64_t extent[kMaxLayoutRank] = {};
  std::int64_t a_stride[kMaxLayoutRank] = {};
  std::int64_t b_stride[kMaxLayoutRank] = {};

  TENAX_HD void offsets(std::int64_t i, std::int64_t& offset_a, std::int64_t& offset_b) const {
    offset_a = 0;
    offset_b = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const std::int64_t k = i % extent[d];
      i /= extent[d];
      offset_a += k * a_stride[d];
      offset_b += k * b_stride[d];
    }
  }
};

/// out[i] = op(a[offset_a(i)], b[offset_b(i)]): the expression of BinaryBody, so equal shapes give
/// the bits of ops::binary.
template <class Op, class S>
struct BroadcastBinaryBody {
  const S* a;
  const S* b;
  S* out;
  Op op;
  BroadcastLayout layout;

  TENAX_HD void operator()(std::int64_t i) const {
    std::int64_t ia = 0;
    std::int64_t ib = 0;
    layout.offsets(i, ia, ib);
    store(out[i], op(load(a[ia]), load(b[ib])));
  }

  /// The elements of row r (the last dimension) of the output; kAStep / kBStep are the last
  /// dimension's strides of a and b (1, or 0 when broadcast).
  template <int kAStep, int kBStep>
  TENAX_HD void row(std::int64_t r) const {
    const std::int64_t inner = layout.extent[layout.rank - 1];
    std::int64_t ia = 0;
    std::int64_t ib = 0;
    layout.offsets(r * inner, ia, ib);
    const S* ar = a + ia;
    const S* br = b + ib;
    S* o = out + r * inner;
    for (std::int64_t j = 0; j < inner; ++j)
      store(o[j], op(load(ar[j * kAStep]), load(br[j * kBStep])));
  }
};

// ---- sum_to ----

/// `value` rounded once to storage type S: directly for f64 and f32; for f16 and bf16 through a
/// float rounded to odd (truncated, the last bit set when inexact), which float's 24 bits make
/// exact for the second rounding (the classic round-to-odd argument: 24 >= 11 + 2), so the
/// result is the nearest-even 16-bit value of `value` itself, not of float(value).
TENAX_HD inline float float_round_to_odd(double value) {
  const float nearest = static_cast<float>(value);
  if (value != value || static_cast<double>(nearest) == value) return nearest;
  std::uint32_t bits = bits_of(nearest);
  // Rounded away from zero (possibly to infinity): step back to the truncated value.
  if (fabs(static_cast<double>(nearest)) > fabs(value)) bits -= 1u;
  return float_of(bits | 1u);
}

template <class S>
TENAX_HD inline void store_rounded_once(S& dst, double value) {
  if constexpr (std::is_same_v<S, double>) {
    dst = value;
  } else if constexpr (std::is_same_v<S, float>) {
    dst = static_cast<float>(value);
  } else {
    store(dst, float_round_to_odd(value));
  }
}

/// Output element o of sum_to sums the elements of x at base(o) + (reduced offsets), the reduced
/// coordinates taken in row-major order, which is the row-major order of x. kept_* are the
/// dimensions x shares with the output (output index o is row-major over kept_extent); reduced_*
/// the dimensions summed away. Both ranks are >= 1 (a missing kind is one dimension of extent 1),
/// every extent >= 1.
struct SumToLayout {
  int kept_rank = 0;
  std::int64_t kept_extent[kMaxLayoutRank] = {};
  std::int64_t kept_stride[kMaxLayoutRank] = {};
  int reduced_rank = 0;
  std::int64_t reduced_extent[kMaxLayoutRank] = {};
  std::int64_t reduced_stride[kMaxLayoutRank] = {};

  /// The offset in x of the first input of output o.
  TENAX_HD std::int64_t base(std::int64_t o) const {
    std::int64_t offset = 0;
    for (int d = kept_rank - 1; d >= 0; --d) {
      offset += (o % kept_extent[d]) * kept_stride[d];
      o /= kept_extent[d];
    }
    return offset;
  }

  /// Advances offset (and index, the reduced coordinates) to the next reduced coordinate in
  /// row-major order, the last dimension excluded (the callers loop over it themselves).
  TENAX_HD void advance_outer(std::int64_t& offset, std::int64_t* index) const {
    for (int d = reduced_rank - 2; d >= 0; --d) {
      offset += reduced_stride[d];
      if (++index[d] < reduced_extent[d]) return;
      offset -= reduced_stride[d] * reduced_extent[d];
      index[d] = 0;
    }
  }

  /// The number of steps advance_outer takes through the reduced coordinates.
  [[nodiscard]] TENAX_HD std::int64_t outer_count() const {
    std::int64_t count = 1;
    for (int d = 0; d + 1 < reduced_rank; ++d) count *= reduced_extent[d];
    return count;
  }
};

/// out[o] = the sum of its inputs, each widened to double, added in row-major order of x into a
/// double that starts at 0, rounded once on store.
template <class S>
struct SumToBody {
  const S* x;
  S* out;
  SumToLayout layout;

  TENAX_HD void operator()(std::int64_t o) const {
    const int last = layout.reduced_rank - 1;
    const std::int64_t inner = layout.reduced_extent[last];
    const std::int64_t step = layout.reduced_stride[last];
    const std::int64_t outer = layout.outer_count();
    std::int64_t index[kMaxLayoutRank] = {};
    std::int64_t offset = layout.base(o);
    double sum = 0.0;
    for (std::int64_t k = 0; k < outer; ++k) {
      for (std::int64_t j = 0; j < inner; ++j)
        sum += static_cast<double>(load(x[offset + j * step]));
      layout.advance_outer(offset, index);
    }
    store_rounded_once(out[o], sum);
  }
};

}  // namespace tenax::kernels
