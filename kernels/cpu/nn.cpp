// CPU backend of the softmax cross-entropy kernels: rows spread over the context's threads, each
// row handled by one thread with the bodies of nn_bodies.hpp (the arithmetic the CUDA backend
// runs), columns in order. The labels are checked first, so a bad label throws before anything
// is written.
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
// about detail::kMinChunk logits.
template <class Body>
void for_each_row(CpuContext& context, std::int64_t rows, std::int64_t classes, const Body& body) {
  context.parallel_for(0, rows, std::max<std::int64_t>(1, detail::kMinChunk / classes),
                       [&body](std::int64_t first, std::int64_t last) {
                         for (std::int64_t i = first; i < last; ++i) body(i);
                       });
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

void softmax_cross_entropy(const SoftmaxCrossEntropyArgs& args) {
  softmax_cross_entropy(CpuContext::instance(), args);
}

void softmax_cross_entropy_grad(const SoftmaxCrossEntropyGradArgs& args) {
  softmax_cross_entropy_grad(CpuContext::instance(), args);
}

}  // namespace tenax::kernels::cpu
