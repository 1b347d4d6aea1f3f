// CUDA softmax cross-entropy kernels of a build without CUDA: each throws NotCompiledError.
// Generated from the one kernel list, so no stub can be forgotten.
#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/nn_kernels.hpp"

namespace tenax::kernels::cuda {

#define TENAX_NN_STUB(name, Args)                                             \
  void name(const ::tenax::kernels::Args& /*args*/) {                         \
    throw_not_compiled("the CUDA backend of ops::" #name, "TENAX_WITH_CUDA"); \
  }
TENAX_NN_KERNELS(TENAX_NN_STUB)
#undef TENAX_NN_STUB

}  // namespace tenax::kernels::cuda
