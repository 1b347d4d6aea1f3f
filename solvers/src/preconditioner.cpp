#include "tenax/solvers/preconditioner.hpp"

#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::solvers {

IdentityPreconditioner::IdentityPreconditioner(std::int64_t size, DType dtype, Device device)
    : Preconditioner(size, size, dtype, device) {}

std::string IdentityPreconditioner::describe() const {
  return "identity preconditioner " + std::string(to_string(dtype())) + "[" +
         std::to_string(rows()) + "] on " + to_string(device());
}

void IdentityPreconditioner::apply_impl(const Tensor& r, const Tensor& z) const { ops::copy(z, r); }

}  // namespace tenax::solvers
