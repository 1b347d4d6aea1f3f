// CUDA Krylov kernels of a build without CUDA: each throws NotCompiledError. Generated from the
// one kernel list, so no stub can be forgotten.
#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/krylov_kernels.hpp"

namespace tenax::kernels::cuda {

#define TENAX_KRYLOV_STUB(ret, name, Args)                                    \
  ret name(const ::tenax::kernels::Args& /*args*/) {                          \
    throw_not_compiled("the CUDA backend of ops::" #name, "TENAX_WITH_CUDA"); \
  }
TENAX_KRYLOV_KERNELS(TENAX_KRYLOV_STUB)
#undef TENAX_KRYLOV_STUB

}  // namespace tenax::kernels::cuda
