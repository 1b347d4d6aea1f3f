// CUDA data-movement, selection and axis-reduction kernels of a build without CUDA: each throws
// NotCompiledError. Generated from the one kernel list, so no stub can be forgotten.
#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/tensor_ops_kernels.hpp"

namespace tenax::kernels::cuda {

#define TENAX_TENSOR_OPS_STUB(R, name, Args)                                  \
  R name(const ::tenax::kernels::Args& /*args*/) {                            \
    throw_not_compiled("the CUDA backend of ops::" #name, "TENAX_WITH_CUDA"); \
  }
TENAX_TENSOR_OPS_KERNELS(TENAX_TENSOR_OPS_STUB)
#undef TENAX_TENSOR_OPS_STUB

}  // namespace tenax::kernels::cuda
