/// Bodies of the softmax cross-entropy ops (ops_nn.hpp), written once for both backends.
/// @file
/// S is the logits' storage type and C = compute_t<S> the type everything is computed in: double
/// for f64 logits, float for f32, f16 and bf16 (loaded into float, whatever the storage). A row's
/// maximum and its sum of exp(x - max) are taken one column after the other, in order, by one
/// thread on either backend. exp and log are each backend's (expf/exp, logf/log), so CPU and CUDA
/// agree within a few units in the last place, not bit for bit. Internal to the kernels layer.
#pragma once

#include <cstdint>

#include "tenax/core/half.hpp"
#include "tenax/core/host_device.hpp"
#include "tenax/kernels/detail/elementwise_bodies.hpp"

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

/// The label of a row when it is a class index, else -1.
TENAX_HD inline std::int64_t valid_label(std::int64_t label, std::int64_t classes) {
  return label >= 0 && label < classes ? label : -1;
}

/// A row's maximum (NaN when the row has a NaN) and the sum of exp(x - max) over the row.
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
  C m = load(row[0]);
  for (std::int64_t j = 1; j < classes; ++j) m = max_op(m, load(row[j]));
  C sum = C(0);
  for (std::int64_t j = 0; j < classes; ++j) sum += exp_op(load(row[j]) - m);
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
    const SoftmaxStats<C> stats = softmax_stats(row, classes);
    const ExpOp exp_op{};
    for (std::int64_t j = 0; j < classes; ++j) {
      const C p = exp_op(load(row[j]) - stats.max) / stats.sum;
      store(out[j], scale * (p - (j == label ? C(1) : C(0))));
    }
  }
};

}  // namespace tenax::kernels
