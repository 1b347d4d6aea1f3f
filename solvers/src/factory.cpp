#include "tenax/solvers/factory.hpp"

#include <string>

#include "detail/format.hpp"
#include "tenax/core/error.hpp"
#include "tenax/solvers/bicgstab.hpp"
#include "tenax/solvers/cg.hpp"
#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/gmres.hpp"
#include "tenax/solvers/ilu0_preconditioner.hpp"
#include "tenax/solvers/jacobi_preconditioner.hpp"

namespace tenax::solvers {
namespace {

constexpr std::string_view kSolverNames[] = {"cg", "bicgstab", "gmres"};
constexpr std::string_view kPreconditionerNames[] = {"none", "jacobi", "ilu0"};

PreconditionerPtr make_ilu0(const OperatorPtr& a) {
  TENAX_EXPECTS(
      a->device().is_cpu(), UsageError,
      "ilu0 runs on the CPU only, but " + a->describe() + " is on " + to_string(a->device()),
      "use pc=jacobi on " + to_string(a->device()) + ", or solve on the CPU");
  const auto* csr = dynamic_cast<const CsrOperator*>(a.get());
  TENAX_EXPECTS(csr != nullptr, UsageError,
                "ilu0 needs an assembled CSR matrix, but the operator is " + a->describe(),
                "use pc=jacobi, or assemble the operator as a CsrOperator (e.g. "
                "make_csr_operator(poisson_2d_csr(...)))");
  return std::make_shared<const Ilu0Preconditioner>(csr->matrix());
}

}  // namespace

std::span<const std::string_view> solver_names() noexcept { return kSolverNames; }

std::span<const std::string_view> preconditioner_names() noexcept { return kPreconditionerNames; }

std::unique_ptr<KrylovSolver> make_solver(std::string_view name, const SolverOptions& options) {
  if (name == "cg") return std::make_unique<ConjugateGradient>(options);
  if (name == "bicgstab") return std::make_unique<BiCgStab>(options);
  if (name == "gmres") return std::make_unique<Gmres>(options);
  throw UsageError("unknown solver '" + std::string(name) + "'",
                   "use one of: " + detail::join_names(kSolverNames));
}

PreconditionerPtr make_preconditioner(std::string_view name, const OperatorPtr& a) {
  TENAX_EXPECTS(a != nullptr, UsageError,
                "make_preconditioner('" + std::string(name) + "') was given a null operator",
                "pass the operator the preconditioner approximates");
  if (name == "none") {
    return std::make_shared<const IdentityPreconditioner>(a->rows(), a->dtype(), a->device());
  }
  if (name == "jacobi") return std::make_shared<const JacobiPreconditioner>(*a);
  if (name == "ilu0") return make_ilu0(a);
  throw UsageError("unknown preconditioner '" + std::string(name) + "'",
                   "use one of: " + detail::join_names(kPreconditionerNames));
}

}  // namespace tenax::solvers
