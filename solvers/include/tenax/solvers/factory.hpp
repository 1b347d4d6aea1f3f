/// Creation by name, PETSc-style: solvers and preconditioners chosen from configuration text
/// ("-ksp_type gmres -pc_type ilu0" becomes make_solver("gmres", ...) with pc=ilu0).
/// @file
/// ```
/// auto solver = make_solver("cg", parse_solver_options("tol=1e-10,max_iters=500,pc=jacobi"));
/// SolveResult result = solver->solve(a, b, x);
/// ```
/// Unknown names throw UsageError listing the valid ones.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "tenax/solvers/krylov_solver.hpp"
#include "tenax/solvers/linear_operator.hpp"
#include "tenax/solvers/preconditioner.hpp"
#include "tenax/solvers/solver_options.hpp"

namespace tenax::solvers {

/// The names make_solver accepts: "cg", "bicgstab", "gmres" (static storage).
[[nodiscard]] std::span<const std::string_view> solver_names() noexcept;
/// The names make_preconditioner and SolverOptions::preconditioner accept: "none", "jacobi",
/// "ilu0" (static storage).
[[nodiscard]] std::span<const std::string_view> preconditioner_names() noexcept;

/// A new solver of the named method ("cg": ConjugateGradient, "bicgstab": BiCgStab, "gmres":
/// Gmres), owned by the caller. Throws UsageError for an unknown name (listing the valid ones)
/// and for invalid options (validate()).
[[nodiscard]] std::unique_ptr<KrylovSolver> make_solver(std::string_view name,
                                                        const SolverOptions& options = {});

/// The named preconditioner built for `a` ("none": IdentityPreconditioner, "jacobi":
/// JacobiPreconditioner, "ilu0": Ilu0Preconditioner; setup cost: jacobi reads the diagonal, ilu0
/// factors the matrix on the CPU). It does not keep `a` alive. Throws UsageError for a null `a`,
/// an unknown name, or an operator that cannot support it (no usable diagonal for jacobi; not a
/// CsrOperator on the CPU for ilu0), naming the fix.
[[nodiscard]] PreconditionerPtr make_preconditioner(std::string_view name, const OperatorPtr& a);

}  // namespace tenax::solvers
