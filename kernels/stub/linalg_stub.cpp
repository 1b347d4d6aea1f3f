// CUDA linear-algebra kernels of a build without CUDA: each throws NotCompiledError.
#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/linalg_kernels.hpp"

namespace tenax::kernels {

namespace cuda {

#define TENAX_LINALG_STUB(name, Args)                                         \
  void name(const ::tenax::kernels::Args& /*args*/) {                         \
    throw_not_compiled("the CUDA backend of ops::" #name, "TENAX_WITH_CUDA"); \
  }
TENAX_LINALG_KERNELS(TENAX_LINALG_STUB)
#undef TENAX_LINALG_STUB

}  // namespace cuda

}  // namespace tenax::kernels
