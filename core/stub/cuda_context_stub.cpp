// CUDA contexts of a build without CUDA.
#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"

namespace tenax::cuda {

Context& context(Device /*device*/) { throw_not_compiled("CUDA contexts", "TENAX_WITH_CUDA"); }

}  // namespace tenax::cuda
