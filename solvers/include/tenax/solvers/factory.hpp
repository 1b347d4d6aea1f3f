// Creation by name, PETSc-style: solvers and preconditioners chosen from configuration text
// ("-ksp_type gmres -pc_type ilu0" becomes make_solver("gmres", ...) with pc=ilu0).
//
//   auto solver = make_solver("cg", parse_solver_options("tol=1e-10,max_iters=500,pc=jacobi"));
//   SolveResult result = solver->solve(a, b, x);
//
// Unknown names throw UsageError listing the valid ones.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "tenax/solvers/krylov_solver.hpp"
#include "tenax/solvers/linear_operator.hpp"
#include "tenax/solvers/preconditioner.hpp"
#include "tenax/solvers/solver_options.hpp"

namespace tenax::solvers {

// "cg", "bicgstab", "gmres".
[[nodiscard]] std::span<const std::string_view> solver_names() noexcept;
// "none", "jacobi", "ilu0".
[[nodiscard]] std::span<const std::string_view> preconditioner_names() noexcept;

// A new solver of the named method. Options are validated (UsageError).
[[nodiscard]] std::unique_ptr<KrylovSolver> make_solver(std::string_view name,
                                                        const SolverOptions& options = {});

// The named preconditioner built for `a` (setup cost: jacobi reads the diagonal, ilu0 factors
// the matrix on the CPU). Throws UsageError when the operator cannot support it (no diagonal for
// jacobi; not a CSR matrix on the CPU for ilu0), naming the fix.
[[nodiscard]] PreconditionerPtr make_preconditioner(std::string_view name, const OperatorPtr& a);

}  // namespace tenax::solvers
