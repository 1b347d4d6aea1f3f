// CPU backend of the fused optimizer kernels: the bodies of optim_bodies.hpp run from for_each
// loops. Every element is updated on its own, so the result does not depend on the thread count.
#include "for_each.hpp"
#include "tenax/core/context.hpp"
#include "tenax/kernels/detail/optim_bodies.hpp"
#include "tenax/kernels/detail/optim_kernels.hpp"

namespace tenax::kernels::cpu {
namespace {

template <class T>
void sgd_typed(CpuContext& context, const SgdArgs& a) {
  T* buf = a.step.momentum != 0.0 ? a.momentum_buffer.data_as<T>() : nullptr;
  detail::for_each(context, a.param.numel(),
                   SgdBody<T>{a.param.data_as<T>(), a.grad.data_as<const T>(), buf,
                              sgd_coefficients<T>(a.step)});
}

template <class T>
void adam_typed(CpuContext& context, const AdamArgs& a) {
  detail::for_each(
      context, a.param.numel(),
      AdamBody<T>{a.param.data_as<T>(), a.grad.data_as<const T>(), a.exp_avg.data_as<T>(),
                  a.exp_avg_sq.data_as<T>(), adam_coefficients<T>(a.step)});
}

}  // namespace

void sgd_update(CpuContext& context, const SgdArgs& args) {
  if (args.param.dtype() == DType::f64) {
    sgd_typed<double>(context, args);
  } else {
    sgd_typed<float>(context, args);
  }
}

void adam_update(CpuContext& context, const AdamArgs& args) {
  if (args.param.dtype() == DType::f64) {
    adam_typed<double>(context, args);
  } else {
    adam_typed<float>(context, args);
  }
}

// The overloads without a context run on the process-wide one.
#define TENAX_OPTIM_CPU_ON_INSTANCE(ret, name, Args) \
  ret name(const Args& args) { return name(CpuContext::instance(), args); }
TENAX_OPTIM_KERNELS(TENAX_OPTIM_CPU_ON_INSTANCE)
#undef TENAX_OPTIM_CPU_ON_INSTANCE

}  // namespace tenax::kernels::cpu
