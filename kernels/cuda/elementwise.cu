// CUDA backend of the element-wise, fill, random, cast and mixed-precision-check kernels: the
// bodies of elementwise_bodies.hpp (the ones the CPU backend runs) launched over a grid.
#include <cstdint>
#include <type_traits>

#include "launch.cuh"
#include "tenax/kernels/detail/dispatch.hpp"
#include "tenax/kernels/detail/elementwise_bodies.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"

namespace tenax::kernels::cuda {

using detail::for_each;
using kernels::detail::dispatch_all;
using kernels::detail::dispatch_binary;
using kernels::detail::dispatch_float;
using kernels::detail::dispatch_unary;

void fill(const Tensor& t, double value) {
  dispatch_all(t.dtype(), "fill", [&](auto tag) {
    using S = typename decltype(tag)::type;
    for_each(t.device(), t.numel(), FillBody<S>{static_cast<S*>(t.data()), from_double<S>(value)},
             "fill kernel");
  });
}

void random_uniform(const Tensor& t, std::uint64_t seed, std::uint64_t offset, double low,
                    double high) {
  dispatch_float(t.dtype(), "random_uniform", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    for_each(t.device(), t.numel(),
             UniformBody<S>{static_cast<S*>(t.data()), seed, offset, static_cast<C>(low),
                            static_cast<C>(high - low)},
             "random_uniform kernel");
  });
}

void random_normal(const Tensor& t, std::uint64_t seed, std::uint64_t offset, double mean,
                   double stddev) {
  dispatch_float(t.dtype(), "random_normal", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    for_each(t.device(), t.numel(),
             NormalBody<S>{static_cast<S*>(t.data()), seed, offset, static_cast<C>(mean),
                           static_cast<C>(stddev)},
             "random_normal kernel");
  });
}

void cast(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype()) {
    // The same dtype is a copy of the bytes, as on the CPU (a widening round trip would quiet a
    // signalling NaN of f16/bf16), by the copy engine at the device's copy bandwidth, ordered
    // on the stream like every other op.
    const detail::Launch launch(dst.device());
    launch.check(cudaMemcpyAsync(dst.data(), src.data(), dst.nbytes(), cudaMemcpyDeviceToDevice,
                                 launch.stream),
                 "cudaMemcpyAsync (copy)");
    return;
  }
  dispatch_float(dst.dtype(), "cast", [&](auto dst_tag) {
    using D = typename decltype(dst_tag)::type;
    dispatch_float(src.dtype(), "cast", [&](auto src_tag) {
      using S = typename decltype(src_tag)::type;
      for_each(dst.device(), src.numel(),
               CastBody<D, S>{static_cast<D*>(dst.data()), static_cast<const S*>(src.data())},
               "cast kernel");
    });
  });
}

void axpby(double a, const Tensor& x, double b, const Tensor& y) {
  dispatch_float(y.dtype(), "axpby", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const auto* xs = static_cast<const S*>(x.data());
    auto* ys = static_cast<S*>(y.data());
    if (b == 0.0) {
      for_each(y.device(), y.numel(), AxBody<S>{xs, ys, static_cast<C>(a)}, "axpby kernel");
    } else {
      for_each(y.device(), y.numel(), AxpbyBody<S>{xs, ys, static_cast<C>(a), static_cast<C>(b)},
               "axpby kernel");
    }
  });
}

void scale(double a, const Tensor& x) {
  dispatch_float(x.dtype(), "scale", [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto* xs = static_cast<S*>(x.data());
    for_each(x.device(), x.numel(), AxBody<S>{xs, xs, static_cast<compute_t<S>>(a)},
             "scale kernel");
  });
}

void unary(ops::UnaryOp op, const Tensor& x, const Tensor& out) {
  dispatch_float(x.dtype(), "unary", [&](auto tag) {
    using S = typename decltype(tag)::type;
    dispatch_unary(op, [&](auto functor) {
      for_each(x.device(), x.numel(),
               UnaryBody<decltype(functor), S>{static_cast<const S*>(x.data()),
                                               static_cast<S*>(out.data()), functor},
               "unary kernel");
    });
  });
}

void binary(ops::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_float(a.dtype(), "binary", [&](auto tag) {
    using S = typename decltype(tag)::type;
    dispatch_binary(op, [&](auto functor) {
      for_each(a.device(), a.numel(),
               BinaryBody<decltype(functor), S>{static_cast<const S*>(a.data()),
                                                static_cast<const S*>(b.data()),
                                                static_cast<S*>(out.data()), functor},
               "binary kernel");
    });
  });
}

void unary_mul(ops::UnaryOp op, const Tensor& x, const Tensor& g, const Tensor& out) {
  dispatch_float(x.dtype(), "unary_mul", [&](auto tag) {
    using S = typename decltype(tag)::type;
    dispatch_unary(op, [&](auto functor) {
      for_each(x.device(), x.numel(),
               UnaryMulBody<decltype(functor), S>{static_cast<const S*>(x.data()),
                                                  static_cast<const S*>(g.data()),
                                                  static_cast<S*>(out.data()), functor},
               "unary_mul kernel");
    });
  });
}

bool unscale_and_check(const Tensor& t, double inv_scale) {
  return dispatch_float(t.dtype(), "unscale_and_check", [&](auto tag) {
    using S = typename decltype(tag)::type;
    return detail::for_each_any(
        t.device(), t.numel(),
        UnscaleCheckBody<S>{static_cast<S*>(t.data()), static_cast<compute_t<S>>(inv_scale)},
        "unscale_and_check kernel");
  });
}

}  // namespace tenax::kernels::cuda
