// CUDA broadcasting kernels of a build without CUDA: each throws NotCompiledError. Generated from
// the one kernel list, so no stub can be forgotten.
#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/broadcast_kernels.hpp"

namespace tenax::kernels::cuda {

#define TENAX_BROADCAST_STUB(name, Args)                                      \
  void name(const ::tenax::kernels::Args& /*args*/) {                         \
    throw_not_compiled("the CUDA backend of ops::" #name, "TENAX_WITH_CUDA"); \
  }
TENAX_BROADCAST_KERNELS(TENAX_BROADCAST_STUB)
#undef TENAX_BROADCAST_STUB

}  // namespace tenax::kernels::cuda
