/// Bodies of the neural-network ops (ops_nn.hpp), written once for both backends.
/// @file
/// S is the logits' storage type and C = compute_t<S> the type everything is computed in: double
/// for f64 logits, float for f32, f16 and bf16 (loaded into float, whatever the storage). A row's
/// maximum and its sum of exp(x - max) are taken one column after the other, in order, by one
/// thread on either backend. exp and log are each backend's (expf/exp, logf/log), so CPU and CUDA
/// agree within a few units in the last place, not bit for bit. Every other body of this file
/// (softmax along an axis, layer norm, embedding) follows the same rule: one thread per row (or
/// per column for the sums over rows), its elements in order, except LayerNorm's row sums, which
/// follow reduction_order.hpp (ordered_sum: 16 lanes a CPU keeps in vector registers; serial,
/// they were a third of its time). Internal to the kernels layer.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tenax/core/half.hpp"
#include "tenax/core/host_device.hpp"
#include "tenax/core/philox.hpp"
#include "tenax/kernels/detail/elementwise_bodies.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"

namespace tenax::kernels {

/// A quiet NaN of C (float or double).
template <class C>
TENAX_HD inline C quiet_nan() {
  if constexpr (sizeof(C) == sizeof(double)) {
    return double_of(0x7ff8000000000000u);
  } else {
    return float_of(0x7fc00000u);
  }
}

/// +infinity of C (float or double).
template <class C>
TENAX_HD inline C infinity() {
  if constexpr (sizeof(C) == sizeof(double)) {
    return double_of(0x7ff0000000000000u);
  } else {
    return float_of(0x7f800000u);
  }
}

/// The label of a row when it is a class index, else -1.
TENAX_HD inline std::int64_t valid_label(std::int64_t label, std::int64_t classes) {
  return label >= 0 && label < classes ? label : -1;
}

/// The longest line whose exponentials a CPU softmax keeps on the stack (4 KiB in f32): the
/// softmax of f16 and bf16 lines, and the cross-entropy gradient's rows.
inline constexpr std::int64_t kStagedSoftmaxLine = 1024;

/// A row's maximum (NaN when the row has a NaN) and the sum of exp(x - max) over the row, in the
/// order of reduction_order.hpp (fold_line): lanes that vectorise, the same bits on every backend.
template <class C>
struct SoftmaxStats {
  C max;
  C sum;
};

template <class S>
TENAX_HD inline SoftmaxStats<compute_t<S>> softmax_stats(const S* row, std::int64_t classes) {
  using C = compute_t<S>;
  const MaximumOp max_op{};
  const ExpOp exp_op{};
  const C m = fold_line<C>(classes, max_op, -infinity<C>(),
                           [row](std::int64_t j) { return C(load(row[j])); });
  const C sum = ordered_sum<C>(
      classes, [row, m, exp_op](std::int64_t j) { return exp_op(load(row[j]) - m); });
  return {m, sum};
}

/// loss[i] = logsumexp(row i) - row_i[label_i], as log(sum) - (row_i[label_i] - max), which keeps
/// full precision for large logits. NaN for a label outside [0, classes).
template <class S>
struct SoftmaxXentLossBody {
  const S* logits;
  const std::int64_t* labels;
  compute_t<S>* losses;
  std::int64_t classes;

  TENAX_HD void operator()(std::int64_t i) const {
    using C = compute_t<S>;
    const std::int64_t label = valid_label(labels[i], classes);
    if (label < 0) {
      losses[i] = quiet_nan<C>();
      return;
    }
    const S* row = logits + i * classes;
    const SoftmaxStats<C> stats = softmax_stats(row, classes);
    losses[i] = LogOp{}(stats.sum) - (load(row[label]) - stats.max);
  }
};

/// grad[i, j] = scale * (softmax(row i)_j - (j == label_i)), computed in C and rounded once on
/// store; NaN for the whole row when its label is outside [0, classes). operator()(i) writes row
/// i: the row's softmax_stats first, then its elements in order, each reading only logits[i, j]
/// before writing grad[i, j] (so grad may be the logits themselves).
template <class S>
struct SoftmaxXentGradBody {
  const S* logits;
  const std::int64_t* labels;
  S* grad;
  std::int64_t classes;
  compute_t<S> scale;

  TENAX_HD void operator()(std::int64_t i) const {
    using C = compute_t<S>;
    const std::int64_t label = valid_label(labels[i], classes);
    const S* row = logits + i * classes;
    S* out = grad + i * classes;
    if (label < 0) {
      for (std::int64_t j = 0; j < classes; ++j) store(out[j], quiet_nan<C>());
      return;
    }
    const ExpOp exp_op{};
#if !defined(__CUDA_ARCH__)
    if (classes <= kStagedSoftmaxLine) {
      // softmax_stats with the exponentials kept on the stack: one per element, not two (host
      // only: a device thread would keep them in slow local memory).
      const MaximumOp max_op{};
      const C m = fold_line<C>(classes, max_op, -infinity<C>(),
                               [row](std::int64_t j) { return C(load(row[j])); });
      C staged[kStagedSoftmaxLine];
      const C sum = ordered_sum<C>(classes, [row, m, exp_op, &staged](std::int64_t j) {
        const C e = exp_op(load(row[j]) - m);
        staged[j] = e;
        return e;
      });
      for (std::int64_t j = 0; j < classes; ++j) {
        store(out[j], scale * (staged[j] / sum - (j == label ? C(1) : C(0))));
      }
      return;
    }
#endif
    const SoftmaxStats<C> stats = softmax_stats(row, classes);
    for (std::int64_t j = 0; j < classes; ++j) {
      const C p = exp_op(load(row[j]) - stats.max) / stats.sum;
      store(out[j], scale * (p - (j == label ? C(1) : C(0))));
    }
  }
};

/// The stride of a line whose elements are adjacent, known at compile time: the loops over such a
/// line load whole vectors (with a stride known only at run time, one element at a time).
struct UnitStep {
  TENAX_HD constexpr operator std::int64_t() const { return 1; }
};

/// Softmax or log-softmax of the lines of x along one axis, x viewed as [outer, n, inner]: line r
/// (r in [0, outer * inner)) holds the n elements x[o, :, i] (o = r / inner, i = r % inner), at
/// stride inner. Causal (inner == 1, the lines the rows of [..., n, n] matrices): line r is row q =
/// r % n of its matrix and only its elements j <= q take part; the others are written as 0 (a
/// probability of 0, or -inf for log).
template <class S>
struct SoftmaxBody {
  const S* x;
  S* y;
  std::int64_t n;
  std::int64_t inner;
  bool log;
  bool causal;

  // The lines' stride stays a run-time value even where it is 1: measured, the loops the
  // compiler then vectorises (16 lanes of a double-precision exponential) were no faster for f32
  // and slower for bf16 than these, whose exponentials run one element at a time, pipelined.
  TENAX_HD void operator()(std::int64_t r) const {
    using C = compute_t<S>;
    const std::int64_t base = (r / inner) * n * inner + r % inner;
    const std::int64_t used = causal ? r % n + 1 : n;
    const MaximumOp max_op{};
    const ExpOp exp_op{};
    const S* line = x + base;
    S* out = y + base;
    const std::int64_t step = inner;
    const C m = fold_line<C>(used, max_op, -infinity<C>(),
                             [line, step](std::int64_t j) { return C(load(line[j * step])); });
    // Loops without a branch inside, so that they vectorise.
    if (log) {
      const C sum = ordered_sum<C>(used, [line, step, m, exp_op](std::int64_t j) {
        return exp_op(load(line[j * step]) - m);
      });
      const C log_sum = LogOp{}(sum);
      for (std::int64_t j = 0; j < used; ++j) {
        store(out[j * step], (load(line[j * step]) - m) - log_sum);
      }
    } else if constexpr (std::is_same_v<S, C>) {
      // Where the storage is the compute type, each exponential is kept in the output (exactly
      // the value the sum adds) and divided there: one exponential per element, not two.
      const C sum = ordered_sum<C>(used, [line, out, step, m, exp_op](std::int64_t j) {
        const C e = exp_op(load(line[j * step]) - m);
        out[j * step] = e;
        return e;
      });
      for (std::int64_t j = 0; j < used; ++j) out[j * step] = out[j * step] / sum;
    } else {
#if !defined(__CUDA_ARCH__)
      if (used <= kStagedSoftmaxLine) {
        // The same with the exponentials kept in compute precision on the stack (the output
        // cannot hold them): the same bits, one exponential per element. Host only: a device
        // thread would keep the line in slow local memory.
        C staged[kStagedSoftmaxLine];
        const C sum = ordered_sum<C>(used, [line, step, m, exp_op, &staged](std::int64_t j) {
          const C e = exp_op(load(line[j * step]) - m);
          staged[j] = e;
          return e;
        });
        for (std::int64_t j = 0; j < used; ++j) store(out[j * step], staged[j] / sum);
        for (std::int64_t j = used; j < n; ++j) store(out[j * step], C(0));
        return;
      }
#endif
      const C sum = ordered_sum<C>(used, [line, step, m, exp_op](std::int64_t j) {
        return exp_op(load(line[j * step]) - m);
      });
      for (std::int64_t j = 0; j < used; ++j) {
        store(out[j * step], exp_op(load(line[j * step]) - m) / sum);
      }
    }
    const C outside = log ? -infinity<C>() : C(0);
    for (std::int64_t j = used; j < n; ++j) store(out[j * step], outside);
  }
};

/// The gradient of SoftmaxBody's lines from its output y: softmax dx = y (dy - sum(dy y)),
/// log-softmax dx = dy - exp(y) sum(dy). Elements outside a causal line have y = 0 (softmax) and
/// get dx = 0; log-softmax is not causal.
template <class S>
struct SoftmaxGradBody {
  const S* y;
  const S* dy;
  S* dx;
  std::int64_t n;
  std::int64_t inner;
  bool log;

  TENAX_HD void operator()(std::int64_t r) const {
    const std::int64_t base = (r / inner) * n * inner + r % inner;
    if (inner == 1) {
#if !defined(__CUDA_ARCH__)
      if constexpr (!std::is_same_v<S, compute_t<S>>) {
        if (!log && n <= kStagedSoftmaxLine) {  // y and dy widened once, not in each pass
          using C = compute_t<S>;
          C y_staged[kStagedSoftmaxLine];
          C dy_staged[kStagedSoftmaxLine];
          for (std::int64_t j = 0; j < n; ++j) y_staged[j] = load(y[base + j]);
          for (std::int64_t j = 0; j < n; ++j) dy_staged[j] = load(dy[base + j]);
          const C s = ordered_sum<C>(
              n, [&y_staged, &dy_staged](std::int64_t j) { return dy_staged[j] * y_staged[j]; });
          for (std::int64_t j = 0; j < n; ++j) {
            store(dx[base + j], y_staged[j] * (dy_staged[j] - s));
          }
          return;
        }
      }
#endif
      line(y + base, dy + base, dx + base, UnitStep{});
    } else {
      line(y + base, dy + base, dx + base, inner);
    }
  }

  template <class Step>
  TENAX_HD void line(const S* y_line, const S* dy_line, S* dx_line, Step step) const {
    using C = compute_t<S>;
    const ExpOp exp_op{};
    if (log) {
      const C s =
          ordered_sum<C>(n, [dy_line, step](std::int64_t j) { return C(load(dy_line[j * step])); });
      for (std::int64_t j = 0; j < n; ++j) {
        store(dx_line[j * step], load(dy_line[j * step]) - exp_op(load(y_line[j * step])) * s);
      }
      return;
    }
    const C s = ordered_sum<C>(n, [y_line, dy_line, step](std::int64_t j) {
      return C(load(dy_line[j * step])) * C(load(y_line[j * step]));
    });
    for (std::int64_t j = 0; j < n; ++j) {
      store(dx_line[j * step], load(y_line[j * step]) * (load(dy_line[j * step]) - s));
    }
  }
};

/// The longest row a CPU layer normalisation of f16 or bf16 widens once onto the stack (16 KiB).
inline constexpr std::int64_t kStagedRow = 4096;

/// Layer normalisation of row r of x [rows, d]: mean and biased variance taken in C, two passes,
/// each sum in the order of reduction_order.hpp (ordered_sum); rstd = 1 / sqrt(var + eps);
/// y = (x - mean) rstd w + b (w, b of type C, nullptr for none). mean and rstd are saved per row
/// for the gradient.
template <class S>
struct LayerNormBody {
  const S* x;
  const compute_t<S>* weight;
  const compute_t<S>* bias;
  S* y;
  compute_t<S>* mean;
  compute_t<S>* rstd;
  std::int64_t d;
  compute_t<S> eps;

  TENAX_HD void operator()(std::int64_t r) const {
    using C = compute_t<S>;
    const S* row = x + r * d;
#if !defined(__CUDA_ARCH__)
    if constexpr (!std::is_same_v<S, C>) {
      if (d <= kStagedRow) {  // the row widened once, not in each of the three passes
        C staged[kStagedRow];
        for (std::int64_t j = 0; j < d; ++j) staged[j] = load(row[j]);
        normalise(r, [&staged](std::int64_t j) { return staged[j]; });
        return;
      }
    }
#endif
    normalise(r, [row](std::int64_t j) { return C(load(row[j])); });
  }

  template <class X>
  TENAX_HD void normalise(std::int64_t r, const X& x_at) const {
    using C = compute_t<S>;
    const C mu = ordered_sum<C>(d, x_at) / C(d);
    const C squares = ordered_sum<C>(d, [&x_at, mu](std::int64_t j) {
      const C centred = x_at(j) - mu;
      return centred * centred;
    });
    const C inv = C(1) / SqrtOp{}(squares / C(d) + eps);
    mean[r] = mu;
    rstd[r] = inv;
    S* out = y + r * d;
    for (std::int64_t j = 0; j < d; ++j) {
      C v = (x_at(j) - mu) * inv;
      if (weight != nullptr) v = v * weight[j];
      if (bias != nullptr) v = v + bias[j];
      store(out[j], v);
    }
  }
};

/// The input gradient of row r of LayerNormBody: with g = dy w (dy without a weight) and
/// xhat = (x - mean) rstd, dx = rstd (g - mean(g) - xhat mean(g xhat)), the sums in the order of
/// reduction_order.hpp.
template <class S>
struct LayerNormGradInputBody {
  const S* dy;
  const S* x;
  const compute_t<S>* weight;
  const compute_t<S>* mean;
  const compute_t<S>* rstd;
  S* dx;
  std::int64_t d;

  TENAX_HD void operator()(std::int64_t r) const {
    using C = compute_t<S>;
    const S* g_row = dy + r * d;
    const S* x_row = x + r * d;
    const C* w = weight;
#if !defined(__CUDA_ARCH__)
    if constexpr (!std::is_same_v<S, C>) {
      if (d <= kStagedRow) {  // g and x widened once, not in each of the three passes
        C g_staged[kStagedRow];
        C x_staged[kStagedRow];
        if (w != nullptr) {
          for (std::int64_t j = 0; j < d; ++j) g_staged[j] = C(load(g_row[j]) * w[j]);
        } else {
          for (std::int64_t j = 0; j < d; ++j) g_staged[j] = C(load(g_row[j]));
        }
        for (std::int64_t j = 0; j < d; ++j) x_staged[j] = load(x_row[j]);
        row(
            r, [&g_staged](std::int64_t j) { return g_staged[j]; },
            [&x_staged](std::int64_t j) { return x_staged[j]; });
        return;
      }
    }
#endif
    const auto x_at = [x_row](std::int64_t j) { return C(load(x_row[j])); };
    // The two cases apart, so that the loops carry no test of the weight.
    if (w != nullptr) {
      row(
          r, [g_row, w](std::int64_t j) { return C(load(g_row[j]) * w[j]); }, x_at);
    } else {
      row(
          r, [g_row](std::int64_t j) { return C(load(g_row[j])); }, x_at);
    }
  }

  template <class G, class X>
  TENAX_HD void row(std::int64_t r, const G& g_at, const X& x_at) const {
    using C = compute_t<S>;
    const C mu = mean[r];
    const C inv = rstd[r];
    const C mean_g = ordered_sum<C>(d, g_at) / C(d);
    const C mean_gx =
        ordered_sum<C>(d, [&g_at, &x_at, mu,
                           inv](std::int64_t j) { return g_at(j) * ((x_at(j) - mu) * inv); }) /
        C(d);
    S* out = dx + r * d;
    for (std::int64_t j = 0; j < d; ++j) {
      const C xhat = (x_at(j) - mu) * inv;
      store(out[j], inv * (g_at(j) - mean_g - xhat * mean_gx));
    }
  }
};

/// The parameter gradients of column j of LayerNormBody over rows [0, rows), in row order:
/// dweight[j] = sum dy xhat, dbias[j] = sum dy (either may be nullptr).
template <class S>
struct LayerNormGradParamsBody {
  const S* dy;
  const S* x;
  const compute_t<S>* mean;
  const compute_t<S>* rstd;
  compute_t<S>* dweight;
  compute_t<S>* dbias;
  std::int64_t rows;
  std::int64_t d;

  TENAX_HD void operator()(std::int64_t j) const { columns(j, j + 1); }

  // Columns [first, last) at once, rows outer (the CPU's order of memory): each column's sums
  // take the rows in order, with the same terms, so the bits are those of one column at a time.
  TENAX_HD void columns(std::int64_t first, std::int64_t last) const {
    using C = compute_t<S>;
    constexpr std::int64_t kMax = 64;
    C sum_w[kMax];
    C sum_b[kMax];
    for (std::int64_t begin = first; begin < last; begin += kMax) {
      const std::int64_t width = last - begin < kMax ? last - begin : kMax;
      for (std::int64_t c = 0; c < width; ++c) sum_w[c] = sum_b[c] = C(0);
      for (std::int64_t r = 0; r < rows; ++r) {
        const S* g_row = dy + r * d + begin;
        const S* x_row = x + r * d + begin;
        for (std::int64_t c = 0; c < width; ++c) {
          const C g = load(g_row[c]);
          sum_w[c] += g * ((load(x_row[c]) - mean[r]) * rstd[r]);
          sum_b[c] += g;
        }
      }
      for (std::int64_t c = 0; c < width; ++c) {
        if (dweight != nullptr) dweight[begin + c] = sum_w[c];
        if (dbias != nullptr) dbias[begin + c] = sum_b[c];
      }
    }
  }
};

/// The gradient of a bias added to every row of [rows, d]: dbias[j] = the sum of column j of dy
/// over the rows in order, in the compute type (the rule of LayerNormGradParamsBody's dbias).
template <class S>
struct BiasGradBody {
  const S* dy;
  compute_t<S>* dbias;
  std::int64_t rows;
  std::int64_t d;

  TENAX_HD void operator()(std::int64_t j) const { columns(j, j + 1); }

  // Columns [first, last) at once, rows outer (the CPU's order of memory); each column's sum
  // takes the rows in order, so the bits are those of one column at a time.
  TENAX_HD void columns(std::int64_t first, std::int64_t last) const {
    using C = compute_t<S>;
    constexpr std::int64_t kMax = 64;  // 64 f32 sums stay in vector registers
    C sum[kMax];
    for (std::int64_t begin = first; begin < last; begin += kMax) {
      const std::int64_t width = last - begin < kMax ? last - begin : kMax;
      for (std::int64_t c = 0; c < width; ++c) sum[c] = C(0);
      for (std::int64_t r = 0; r < rows; ++r) {
        const S* g_row = dy + r * d + begin;
        for (std::int64_t c = 0; c < width; ++c) sum[c] += load(g_row[c]);
      }
      for (std::int64_t c = 0; c < width; ++c) dbias[begin + c] = sum[c];
    }
  }
};

/// Row i of out [rows, d] is row indices[i] of weight [vocab, d]; NaN for an index outside
/// [0, vocab) (the CPU front end refuses such an index before anything runs).
template <class S>
struct EmbeddingBody {
  const S* weight;
  const std::int64_t* indices;
  S* out;
  std::int64_t d;
  std::int64_t vocab;

  TENAX_HD void operator()(std::int64_t i) const {
    const std::int64_t index = valid_label(indices[i], vocab);
    S* row = out + i * d;
    if (index < 0) {
      for (std::int64_t j = 0; j < d; ++j) store(row[j], quiet_nan<compute_t<S>>());
      return;
    }
    const S* source = weight + index * d;
    for (std::int64_t j = 0; j < d; ++j) row[j] = source[j];
  }
};

/// Column j of the embedding's weight gradient: sums[indices[i], j] += dy[i, j] for i in order
/// (sums zeroed before), in the compute type C -- for f16/bf16 dy, sums is an f32 array the
/// front end rounds to the weight's dtype once at the end; one thread owns a column, so no two
/// write one element. An index outside [0, vocab) is skipped.
template <class S>
struct EmbeddingGradBody {
  const std::int64_t* indices;
  const S* dy;
  compute_t<S>* sums;
  std::int64_t rows;
  std::int64_t d;
  std::int64_t vocab;

  TENAX_HD void operator()(std::int64_t j) const {
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t index = valid_label(indices[i], vocab);
      if (index < 0) continue;
      sums[index * d + j] += load(dy[i * d + j]);
    }
  }
};

/// Dropout of x viewed as [samples, per_sample]: element e of sample first_sample + i / per_sample
/// is kept, scaled by 1 / (1 - p), when its uniform u >= p, and zeroed otherwise, where u comes
/// from one Philox block keyed by the seed, counter (e, sample, step, 0x80000000 | stream): a
/// pure function of (seed, stream, step, global sample, element), whatever the micro-batch, the
/// rank or the backend. (The high bit of counter word 3 keeps these blocks apart from the draws
/// of ops::random_uniform/normal, whose word 3 is 0.) Applied to a gradient with the same key it
/// is the dropout's backward.
template <class S>
struct DropoutBody {
  const S* x;
  S* y;
  std::int64_t per_sample;
  std::int64_t first_sample;
  std::uint64_t seed;
  std::uint32_t step;
  std::uint32_t stream;
  float p;
  compute_t<S> scale;  // 1 / (1 - p)

  TENAX_HD void operator()(std::int64_t i) const {
    using C = compute_t<S>;
    const auto element = static_cast<std::uint32_t>(i % per_sample);
    const auto sample = static_cast<std::uint32_t>(first_sample + i / per_sample);
    const Uint32x4 bits = philox4x32_10(
        Uint32x4{element, sample, step, 0x80000000u | stream},
        Uint32x2{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
    const float u = static_cast<float>(bits.v[0] >> 8) * 0x1p-24f;
    store(y[i], u >= p ? load(x[i]) * scale : C(0));
  }
};

}  // namespace tenax::kernels
