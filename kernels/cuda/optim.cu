// CUDA backend of the fused optimizer kernels: the bodies of optim_bodies.hpp (the ones the CPU
// backend runs, with the same host-rounded coefficients) launched as grid-stride loops on the
// device context's stream. Built with --fmad=false and IEEE sqrt and division, so every element
// gets the CPU backend's bits.
#include "launch.cuh"
#include "tenax/kernels/detail/optim_bodies.hpp"
#include "tenax/kernels/detail/optim_kernels.hpp"

namespace tenax::kernels::cuda {
namespace {

template <class T>
void sgd_typed(const SgdArgs& a) {
  T* buf = a.step.momentum != 0.0 ? a.momentum_buffer.data_as<T>() : nullptr;
  detail::for_each(
      a.param.device(), a.param.numel(),
      SgdBody<T>{a.param.data_as<T>(), a.grad.data_as<const T>(), buf, sgd_coefficients<T>(a.step)},
      "sgd_update kernel");
}

template <class T>
void adam_typed(const AdamArgs& a) {
  detail::for_each(
      a.param.device(), a.param.numel(),
      AdamBody<T>{a.param.data_as<T>(), a.grad.data_as<const T>(), a.exp_avg.data_as<T>(),
                  a.exp_avg_sq.data_as<T>(), adam_coefficients<T>(a.step)},
      "adam_update kernel");
}

}  // namespace

void sgd_update(const SgdArgs& args) {
  if (args.param.dtype() == DType::f64) {
    sgd_typed<double>(args);
  } else {
    sgd_typed<float>(args);
  }
}

void adam_update(const AdamArgs& args) {
  if (args.param.dtype() == DType::f64) {
    adam_typed<double>(args);
  } else {
    adam_typed<float>(args);
  }
}

}  // namespace tenax::kernels::cuda
