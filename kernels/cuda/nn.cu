// CUDA backend of the neural-network kernels: the bodies of nn_bodies.hpp (the arithmetic the
// CPU backend runs) over a grid-stride loop, one thread per row (or per column for the sums over
// rows), each taking its elements in the CPU's order. A label or index outside its range gives
// NaN for its row (a kernel cannot throw).
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

void softmax(const SoftmaxArgs& args) {
  kernels::detail::dispatch_float(args.x.dtype(), "softmax", [&](auto tag) {
    using S = typename decltype(tag)::type;
    detail::for_each(
        args.x.device(), args.outer * args.inner,
        SoftmaxBody<S>{static_cast<const S*>(args.x.data()), static_cast<S*>(args.y.data()), args.n,
                       args.inner, args.log, args.causal},
        "softmax kernel");
  });
}

void softmax_grad(const SoftmaxGradArgs& args) {
  kernels::detail::dispatch_float(args.y.dtype(), "softmax_grad", [&](auto tag) {
    using S = typename decltype(tag)::type;
    detail::for_each(
        args.y.device(), args.outer * args.inner,
        SoftmaxGradBody<S>{static_cast<const S*>(args.y.data()),
                           static_cast<const S*>(args.dy.data()), static_cast<S*>(args.dx.data()),
                           args.n, args.inner, args.log},
        "softmax_grad kernel");
  });
}

void layer_norm(const LayerNormArgs& args) {
  kernels::detail::dispatch_float(args.x.dtype(), "layer_norm", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    detail::for_each(
        args.x.device(), args.rows,
        LayerNormBody<S>{static_cast<const S*>(args.x.data()), optional_data<const C>(args.weight),
                         optional_data<const C>(args.bias), static_cast<S*>(args.y.data()),
                         static_cast<C*>(args.mean.data()), static_cast<C*>(args.rstd.data()),
                         args.d, static_cast<C>(args.eps)},
        "layer_norm kernel");
  });
}

void layer_norm_grad_input(const LayerNormGradInputArgs& args) {
  kernels::detail::dispatch_float(args.x.dtype(), "layer_norm_grad_input", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    detail::for_each(
        args.x.device(), args.rows,
        LayerNormGradInputBody<S>{
            static_cast<const S*>(args.dy.data()), static_cast<const S*>(args.x.data()),
            optional_data<const C>(args.weight), static_cast<const C*>(args.mean.data()),
            static_cast<const C*>(args.rstd.data()), static_cast<S*>(args.dx.data()), args.d},
        "layer_norm_grad_input kernel");
  });
}

void layer_norm_grad_params(const LayerNormGradParamsArgs& args) {
  kernels::detail::dispatch_float(args.x.dtype(), "layer_norm_grad_params", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    detail::for_each(
        args.x.device(), args.d,
        LayerNormGradParamsBody<S>{
            static_cast<const S*>(args.dy.data()), static_cast<const S*>(args.x.data()),
            static_cast<const C*>(args.mean.data()), static_cast<const C*>(args.rstd.data()),
            optional_data<C>(args.dweight), optional_data<C>(args.dbias), args.rows, args.d},
        "layer_norm_grad_params kernel");
  });
}

void bias_grad(const BiasGradArgs& args) {
  kernels::detail::dispatch_float(args.dy.dtype(), "bias_grad", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    detail::for_each(args.dy.device(), args.d,
                     BiasGradBody<S>{static_cast<const S*>(args.dy.data()),
                                     static_cast<C*>(args.dbias.data()), args.rows, args.d},
                     "bias_grad kernel");
  });
}

void embedding(const EmbeddingArgs& args) {
  kernels::detail::dispatch_float(args.weight.dtype(), "embedding", [&](auto tag) {
    using S = typename decltype(tag)::type;
    detail::for_each(args.weight.device(), args.rows,
                     EmbeddingBody<S>{static_cast<const S*>(args.weight.data()),
                                      static_cast<const std::int64_t*>(args.indices.data()),
                                      static_cast<S*>(args.out.data()), args.d, args.vocab},
                     "embedding kernel");
  });
}

void embedding_grad(const EmbeddingGradArgs& args) {
  kernels::detail::dispatch_float(args.dy.dtype(), "embedding_grad", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    {
      const detail::Launch launch(args.sums.device());
      launch.check(cudaMemsetAsync(args.sums.data(), 0, args.sums.nbytes(), launch.stream),
                   "cudaMemsetAsync");
    }
    detail::for_each(
        args.dy.device(), args.d,
        EmbeddingGradBody<S>{static_cast<const std::int64_t*>(args.indices.data()),
                             static_cast<const S*>(args.dy.data()),
                             static_cast<C*>(args.sums.data()), args.rows, args.d, args.vocab},
        "embedding_grad kernel");
  });
}

void dropout(const DropoutArgs& args) {
  kernels::detail::dispatch_float(args.x.dtype(), "dropout", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    detail::for_each(
        args.x.device(), args.x.numel(),
        DropoutBody<S>{static_cast<const S*>(args.x.data()), static_cast<S*>(args.y.data()),
                       args.per_sample, args.first_sample, args.seed, args.step, args.stream,
                       static_cast<float>(args.p), static_cast<C>(1.0 / (1.0 - args.p))},
        "dropout kernel");
  });
}

}  // namespace tenax::kernels::cuda
