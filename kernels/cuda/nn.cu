// CUDA backend of the softmax cross-entropy kernels: the bodies of nn_bodies.hpp (the arithmetic
// the CPU backend runs) over a grid-stride loop, one thread per row, each row's maximum, sum and
// elements taken column by column in the CPU's order. A label outside [0, C) gives NaN for its
// row (a kernel cannot throw).
#include <cstdint>

#include "launch.cuh"
#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/nn_bodies.hpp"
#include "tenax/kernels/detail/nn_kernels.hpp"

namespace tenax::kernels::cuda {

void softmax_cross_entropy(const SoftmaxCrossEntropyArgs& args) {
  kernels::detail::dispatch_float(args.logits.dtype(), "softmax_cross_entropy", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    detail::for_each(args.logits.device(), args.rows,
                     SoftmaxXentLossBody<S>{static_cast<const S*>(args.logits.data()),
                                            static_cast<const std::int64_t*>(args.labels.data()),
                                            static_cast<C*>(args.losses.data()), args.classes},
                     "softmax_cross_entropy kernel");
  });
}

void softmax_cross_entropy_grad(const SoftmaxCrossEntropyGradArgs& args) {
  kernels::detail::dispatch_float(args.logits.dtype(), "softmax_cross_entropy_grad", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    detail::for_each(args.logits.device(), args.rows,
                     SoftmaxXentGradBody<S>{static_cast<const S*>(args.logits.data()),
                                            static_cast<const std::int64_t*>(args.labels.data()),
                                            static_cast<S*>(args.grad.data()), args.classes,
                                            static_cast<C>(args.scale)},
                     "softmax_cross_entropy_grad kernel");
  });
}

}  // namespace tenax::kernels::cuda
