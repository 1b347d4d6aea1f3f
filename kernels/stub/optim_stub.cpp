// CUDA optimizer kernels of a build without CUDA: each throws NotCompiledError. Generated from
// the one kernel list, so no stub can be forgotten.
#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/optim_kernels.hpp"

namespace tenax::kernels::cuda {

#define TENAX_OPTIM_STUB(ret, name, Args)                                     \
  ret name(const ::tenax::kernels::Args& /*args*/) {                          \
    throw_not_compiled("the CUDA backend of ops::" #name, "TENAX_WITH_CUDA"); \
  }
TENAX_OPTIM_KERNELS(TENAX_OPTIM_STUB)
#undef TENAX_OPTIM_STUB

}  // namespace tenax::kernels::cuda
