/// The solvers layer in one include: linear operators, stopping criteria, Krylov solvers,
/// preconditioners, creation by name, mixed-precision refinement, time integrators and test
/// systems (Poisson and convection–diffusion matrices, manufactured solutions). @file
#pragma once

#include "tenax/solvers/assemble_csr.hpp"
#include "tenax/solvers/bicgstab.hpp"
#include "tenax/solvers/callable_operator.hpp"
#include "tenax/solvers/cg.hpp"
#include "tenax/solvers/convection_diffusion.hpp"
#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/dense_solve.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/gmres.hpp"
#include "tenax/solvers/ilu0_preconditioner.hpp"
#include "tenax/solvers/jacobi_preconditioner.hpp"
#include "tenax/solvers/krylov_solver.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/linear_operator.hpp"
#include "tenax/solvers/manufactured.hpp"
#include "tenax/solvers/mixed_precision.hpp"
#include "tenax/solvers/poisson.hpp"
#include "tenax/solvers/preconditioner.hpp"
#include "tenax/solvers/residual_monitor.hpp"
#include "tenax/solvers/scaled_shifted_operator.hpp"
#include "tenax/solvers/solve_status.hpp"
#include "tenax/solvers/solver_options.hpp"
#include "tenax/solvers/stopping_criteria.hpp"
#include "tenax/solvers/time_integrator.hpp"
