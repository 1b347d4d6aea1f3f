// CPU backend of the neural-network kernels: rows (or columns, for the sums over rows) spread over
// the context's threads, each handled by one thread with the bodies of nn_bodies.hpp (the
// arithmetic the CUDA backend runs), its elements in order. Labels and indices are checked first,
// so a bad one throws before anything is written.
#include <algorithm>
#include <cstdint>
#include <string>

#include "for_each.hpp"
#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/nn_bodies.hpp"
#include "tenax/kernels/detail/nn_kernels.hpp"

namespace tenax::kernels::cpu {
namespace {

// UsageError for the first label outside [0, classes).
void check_labels(const char* op, const Tensor& labels, std::int64_t classes) {
  const auto* values = static_cast<const std::int64_t*>(labels.data());
  for (std::int64_t i = 0; i < labels.numel(); ++i) {
    TENAX_EXPECTS(valid_label(values[i], classes) >= 0, UsageError,
                  std::string(op) + ": labels[" + std::to_string(i) + "] (row " +
                      std::to_string(i) + ") is " + std::to_string(values[i]) +
                      ", outside [0, C) for C = " + std::to_string(classes) + " classes of logits",
                  "pass class indices in [0, " + std::to_string(classes) +
                      ") (check the data loader's labels and the model's number of classes)");
  }
}

// body(i) for every row i in [0, rows), the rows spread over the context's threads in chunks of
// about detail::kMinChunk logits, each chunk's loop compiled for AVX2 too (call_best: the same
// bits; the lanes of the bodies' ordered sums then run side by side).
template <class Body>
void for_each_row(CpuContext& context, std::int64_t rows, std::int64_t classes, const Body& body) {
  context.parallel_for(0, rows, std::max<std::int64_t>(1, detail::kMinChunk / classes),
                       [&body](std::int64_t first, std::int64_t last) {
                         detail::call_best([&body, first, last] {
                           const Body local = body;
                           for (std::int64_t i = first; i < last; ++i) local(i);
                         });
                       });
}

// UsageError for the first index outside [0, vocab).
void check_indices(const char* op, const Tensor& indices, std::int64_t vocab) {
  const auto* values = static_cast<const std::int64_t*>(indices.data());
  for (std::int64_t i = 0; i < indices.numel(); ++i) {
    TENAX_EXPECTS(valid_label(values[i], vocab) >= 0, UsageError,
                  std::string(op) + ": indices[" + std::to_string(i) + "] (flat position) is " +
                      std::to_string(values[i]) + ", outside [0, " + std::to_string(vocab) +
                      ") for a table of " + std::to_string(vocab) + " rows",
                  "pass token ids in [0, " + std::to_string(vocab) +
                      ") (check the data's vocabulary and the embedding's size)");
  }
}

}  // namespace

void softmax_cross_entropy(CpuContext& context, const SoftmaxCrossEntropyArgs& args) {
  check_labels("softmax_cross_entropy", args.labels, args.classes);
  kernels::detail::dispatch_float(args.logits.dtype(), "softmax_cross_entropy", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const SoftmaxXentLossBody<S> body{static_cast<const S*>(args.logits.data()),
                                      static_cast<const std::int64_t*>(args.labels.data()),
                                      static_cast<C*>(args.losses.data()), args.classes};
    for_each_row(context, args.rows, args.classes, body);
  });
}

void softmax_cross_entropy_grad(CpuContext& context, const SoftmaxCrossEntropyGradArgs& args) {
  check_labels("softmax_cross_entropy_grad", args.labels, args.classes);
  kernels::detail::dispatch_float(args.logits.dtype(), "softmax_cross_entropy_grad", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const SoftmaxXentGradBody<S> body{static_cast<const S*>(args.logits.data()),
                                      static_cast<const std::int64_t*>(args.labels.data()),
                                      static_cast<S*>(args.grad.data()), args.classes,
                                      static_cast<C>(args.scale)};
    for_each_row(context, args.rows, args.classes, body);
  });
}

void softmax(CpuContext& context, const SoftmaxArgs& args) {
  kernels::detail::dispatch_float(args.x.dtype(), "softmax", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const SoftmaxBody<S> body{static_cast<const S*>(args.x.data()),
                              static_cast<S*>(args.y.data()),
                              args.n,
                              args.inner,
                              args.log,
                              args.causal};
    for_each_row(context, args.outer * args.inner, args.n, body);
  });
}

void softmax_grad(CpuContext& context, const SoftmaxGradArgs& args) {
  kernels::detail::dispatch_float(args.y.dtype(), "softmax_grad", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const SoftmaxGradBody<S> body{static_cast<const S*>(args.y.data()),
                                  static_cast<const S*>(args.dy.data()),
                                  static_cast<S*>(args.dx.data()),
                                  args.n,
                                  args.inner,
                                  args.log};
    for_each_row(context, args.outer * args.inner, args.n, body);
  });
}

void layer_norm(CpuContext& context, const LayerNormArgs& args) {
  kernels::detail::dispatch_float(args.x.dtype(), "layer_norm", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const LayerNormBody<S> body{static_cast<const S*>(args.x.data()),
                                optional_data<const C>(args.weight),
                                optional_data<const C>(args.bias),
                                static_cast<S*>(args.y.data()),
                                static_cast<C*>(args.mean.data()),
                                static_cast<C*>(args.rstd.data()),
                                args.d,
                                static_cast<C>(args.eps)};
    for_each_row(context, args.rows, args.d, body);
  });
}

void layer_norm_grad_input(CpuContext& context, const LayerNormGradInputArgs& args) {
  kernels::detail::dispatch_float(args.x.dtype(), "layer_norm_grad_input", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const LayerNormGradInputBody<S> body{static_cast<const S*>(args.dy.data()),
                                         static_cast<const S*>(args.x.data()),
                                         optional_data<const C>(args.weight),
                                         static_cast<const C*>(args.mean.data()),
                                         static_cast<const C*>(args.rstd.data()),
                                         static_cast<S*>(args.dx.data()),
                                         args.d};
    for_each_row(context, args.rows, args.d, body);
  });
}

void layer_norm_grad_params(CpuContext& context, const LayerNormGradParamsArgs& args) {
  kernels::detail::dispatch_float(args.x.dtype(), "layer_norm_grad_params", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const LayerNormGradParamsBody<S> body{static_cast<const S*>(args.dy.data()),
                                          static_cast<const S*>(args.x.data()),
                                          static_cast<const C*>(args.mean.data()),
                                          static_cast<const C*>(args.rstd.data()),
                                          optional_data<C>(args.dweight),
                                          optional_data<C>(args.dbias),
                                          args.rows,
                                          args.d};
    // Blocks of columns over the threads, each summing its rows in order, rows outer.
    context.parallel_for(0, args.d, 64, [&body](std::int64_t first, std::int64_t last) {
      detail::call_best([&body, first, last] { body.columns(first, last); });
    });
  });
}

void bias_grad(CpuContext& context, const BiasGradArgs& args) {
  kernels::detail::dispatch_float(args.dy.dtype(), "bias_grad", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const BiasGradBody<S> body{static_cast<const S*>(args.dy.data()),
                               static_cast<C*>(args.dbias.data()), args.rows, args.d};
    // Blocks of columns over the threads, each summing its rows in order, rows outer.
    context.parallel_for(0, args.d, 64, [&body](std::int64_t first, std::int64_t last) {
      detail::call_best([&body, first, last] { body.columns(first, last); });
    });
  });
}

void embedding(CpuContext& context, const EmbeddingArgs& args) {
  check_indices("embedding", args.indices, args.vocab);
  if (args.d == 0) return;  // rows without columns: the indices checked, nothing to copy
  kernels::detail::dispatch_float(args.weight.dtype(), "embedding", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const EmbeddingBody<S> body{static_cast<const S*>(args.weight.data()),
                                static_cast<const std::int64_t*>(args.indices.data()),
                                static_cast<S*>(args.out.data()), args.d, args.vocab};
    for_each_row(context, args.rows, args.d, body);
  });
}

void embedding_grad(CpuContext& context, const EmbeddingGradArgs& args) {
  check_indices("embedding_grad", args.indices, args.vocab);
  if (args.d == 0) return;  // rows without columns: the indices checked, nothing to sum
  kernels::detail::dispatch_float(args.dy.dtype(), "embedding_grad", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    C* sums = static_cast<C*>(args.sums.data());
    std::fill(sums, sums + args.sums.numel(), C{});  // after the index check: nothing written
    const EmbeddingGradBody<S> body{static_cast<const std::int64_t*>(args.indices.data()),
                                    static_cast<const S*>(args.dy.data()),
                                    sums,
                                    args.rows,
                                    args.d,
                                    args.vocab};
    for_each_row(context, args.d, args.rows, body);
  });
}

void dropout(CpuContext& context, const DropoutArgs& args) {
  kernels::detail::dispatch_float(args.x.dtype(), "dropout", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const DropoutBody<S> body{static_cast<const S*>(args.x.data()),
                              static_cast<S*>(args.y.data()),
                              args.per_sample,
                              args.first_sample,
                              args.seed,
                              args.step,
                              args.stream,
                              static_cast<float>(args.p),
                              static_cast<C>(1.0 / (1.0 - args.p))};
    for_each_row(context, args.x.numel(), 1, body);
  });
}

// The context-free overloads use the process's CPU context.
#define TENAX_NN_ON_INSTANCE(name, Args) \
  void name(const Args& args) { name(CpuContext::instance(), args); }
TENAX_NN_KERNELS(TENAX_NN_ON_INSTANCE)
#undef TENAX_NN_ON_INSTANCE

}  // namespace tenax::kernels::cpu
