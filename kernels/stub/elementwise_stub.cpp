// The CUDA element-wise and reduction kernels in a build without CUDA: each throws
// NotCompiledError. Generated from the one kernel list, so no stub can be forgotten.
#include <cstdint>

#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/kernel_declarations.hpp"

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif

namespace tenax::kernels::cuda {

#define TENAX_CUDA_KERNEL_STUB(ret, name, params, args) \
  ret name params { throw_not_compiled("the CUDA kernel of ops::" #name, "TENAX_WITH_CUDA"); }
TENAX_ELEMENTWISE_KERNELS(TENAX_CUDA_KERNEL_STUB)
#undef TENAX_CUDA_KERNEL_STUB

}  // namespace tenax::kernels::cuda
