"""PETSc KSP through petsc4py on the problems of bench/peers/PROBLEMS.md, for
bench/peers/run.py. Run under MPI, e.g.

  PETSC_DIR=/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real \
  mpirun --allow-run-as-root -n 2 --bind-to core /usr/bin/python3 petsc_krylov.py ...

(Debian's python3-petsc4py finds PETSc through PETSC_DIR or the /usr/lib/petsc alternative,
which only the PETSc -dev packages install; run.py sets PETSC_DIR when that link is absent.)

Each rank assembles its own block of rows of a parallel AIJ matrix (MatMPIAIJSetPreallocationCSR
with the rank's CSR arrays), the way a distributed application would. The KSP keeps PETSc's
defaults except: the type and preconditioner asked for, rtol = atol = 0 (so exactly
--max-iters iterations run), a divergence tolerance that never triggers, and for GMRES the
restart. Defaults that matter for the bytes model: left preconditioning, the preconditioned
residual norm computed every iteration, and GMRES with classical Gram-Schmidt and no
iterative refinement (-ksp_gmres_cgs_refinement_type refine_never; run.py passes
refine_ifneeded for its main GMRES row, tenax's choice). Options it does not know itself go to
PETSc's options database (e.g. -ksp_view, -ksp_gmres_cgs_refinement_type ...).

PETSc's event log is on during the solve (--no-log turns it off; on P4's GMRES the two were
within the run-to-run noise, the logged runs if anything faster): its call counts and flops
give the bytes the solve moved (logged_bytes_per_iteration), counted as in PROBLEMS.md.
Prints one JSON object (rank 0) on the last line of stdout.
"""

import argparse
import sys

import petsc4py

import problems


# Bytes one call of each logged operation moves on a rank with n local rows, the same counting
# as PROBLEMS.md: every vector read or written once, f64. VecMDot/VecMAXPY against k vectors
# log 2 k n flops: 8 k n bytes of basis vectors, plus the target once (read) or twice (read and
# written). PCApply is not listed: its work is logged by the Vec operations it calls (a copy
# for PCNONE, VecPointwiseMult for PCJACOBI).
VEC_BYTES_PER_ROW = {
    "VecDot": 16, "VecTDot": 16, "VecNorm": 8, "VecDotNorm2": 16, "VecAXPY": 24, "VecAYPX": 24,
    "VecWAXPY": 24, "VecAXPBY": 24, "VecAXPBYCZ": 32, "VecScale": 16, "VecCopy": 16,
    "VecSet": 8, "VecPointwiseMult": 24,
}
MULTI_VEC_BYTES_PER_ROW = {"VecMDot": 8, "VecMTDot": 8, "VecMAXPY": 16}


def event_counts(PETSc):
    names = list(VEC_BYTES_PER_ROW) + list(MULTI_VEC_BYTES_PER_ROW) + ["MatMult"]
    out = {}
    for name in names:
        info = PETSc.Log.Event(name).getPerfInfo()
        out[name] = (info["count"], info["flops"])
    return out


def logged_bytes(calls, flops, n, nnz, matmult=True):
    total = 0.0
    for name, per_row in VEC_BYTES_PER_ROW.items():
        total += calls.get(name, 0) * per_row * n
    for name, per_row in MULTI_VEC_BYTES_PER_ROW.items():
        total += 4.0 * flops.get(name, 0) + calls.get(name, 0) * per_row * n
    if matmult:  # CSR: values 8, column indices 4, row pointers 4, x read 8, y written 8
        total += calls.get("MatMult", 0) * (12.0 * nnz + 4.0 * (n + 1) + 16.0 * n)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Arguments it does not know (e.g. -ksp_view) go to PETSc's options database.")
    problems.add_solver_arguments(parser)
    parser.add_argument("--no-log", action="store_true",
                        help="leave PETSc's event log off (no logged bytes)")
    args, petsc_options = parser.parse_known_args()
    petsc4py.init(sys.argv[:1] + petsc_options)
    from petsc4py import PETSc

    if not args.no_log:
        PETSc.Log.begin()  # event counts and flops of the timed solve feed the logged bytes
    comm = PETSc.COMM_WORLD
    n_rows = problems.rows_of(args.dim, args.n)

    comm.barrier()
    t0 = PETSc.Log.getTime()
    a = PETSc.Mat().create(comm=comm)
    a.setSizes(((PETSc.DECIDE, n_rows), (PETSc.DECIDE, n_rows)))
    a.setType(PETSc.Mat.Type.AIJ)
    a.setUp()
    r0, r1 = a.getOwnershipRange()
    csr = problems.csr_rows(args.dim, args.n, args.problem, args.beta_h, r0, r1)
    a.setPreallocationCSR(csr)  # also inserts the values
    a.assemble()
    b = a.createVecLeft()
    b.getArray()[:] = problems.rhs(args.dim, args.n, args.problem, csr, r0, r1)
    del csr
    x = a.createVecRight()

    ksp = PETSc.KSP().create(comm=comm)
    ksp.setOperators(a)
    ksp.setType({"cg": PETSc.KSP.Type.CG, "bicgstab": PETSc.KSP.Type.BCGS,
                 "gmres": PETSc.KSP.Type.GMRES}[args.solver])
    ksp.getPC().setType({"none": PETSc.PC.Type.NONE, "jacobi": PETSc.PC.Type.JACOBI}[args.precond])
    if args.solver == "gmres":
        ksp.setGMRESRestart(args.restart)
    ksp.setInitialGuessNonzero(False)
    ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=args.max_iters)
    ksp.setFromOptions()  # only what was passed on the command line changes anything
    ksp.setUp()
    comm.barrier()
    setup_s = PETSc.Log.getTime() - t0

    if args.warmup_iters > 0:
        # Untimed: brings the matrix and vectors through the caches once, as for every code.
        ksp.setTolerances(max_it=args.restart if args.solver == "gmres" else args.warmup_iters)
        x.set(0.0)
        ksp.solve(b, x)
        ksp.setTolerances(max_it=args.max_iters)

    x.set(0.0)
    before = event_counts(PETSc) if not args.no_log else {}
    comm.barrier()
    t1 = PETSc.Log.getTime()
    ksp.solve(b, x)
    comm.barrier()
    solve_s = PETSc.Log.getTime() - t1
    after = event_counts(PETSc) if not args.no_log else {}
    calls = {k: after[k][0] - before[k][0] for k in after}
    flops = {k: after[k][1] - before[k][1] for k in after}
    iterations = ksp.getIterationNumber()
    reason = ksp.getConvergedReason()

    r = b.duplicate()
    a.mult(x, r)
    r.aypx(-1.0, b)  # r = b - A x
    residual = r.norm()
    b_norm = b.norm()
    local_nnz = a.getInfo(PETSc.Mat.InfoType.LOCAL)["nz_used"]
    mpi = comm.tompi4py()
    nnz = int(mpi.allreduce(local_nnz))
    logged = mpi.allreduce(logged_bytes(calls, flops, r1 - r0, local_nnz))
    vec_logged = mpi.allreduce(logged_bytes(calls, flops, r1 - r0, local_nnz, matmult=False))
    if args.no_log:
        logged = vec_logged = None
    calls = {k: int(mpi.allreduce(v)) for k, v in calls.items() if v}

    if comm.getRank() == 0:
        print(problems.result_line({
            "code": "petsc", "solver": args.solver, "precond": args.precond, "operator": "csr",
            "dim": args.dim, "n": args.n, "problem": args.problem,
            "beta_h": args.beta_h if args.problem == "convdiff" else 0.0,
            "rows": n_rows, "nnz": nnz, "requested_iterations": args.max_iters,
            "iterations": iterations, "converged_reason": int(reason),
            "ksp_type": ksp.getType(), "pc_type": ksp.getPC().getType(),
            "pc_side": int(ksp.getPCSide()), "norm_type": int(ksp.getNormType()),
            "residual": residual, "relative_residual": residual / b_norm,
            "ksp_residual_norm": ksp.getResidualNorm(),
            "logged_bytes_per_iteration": logged / iterations if logged and iterations
            else None,
            "logged_vector_bytes_per_row_iteration":
                vec_logged / iterations / n_rows if vec_logged and iterations else None,
            "event_calls_all_ranks": calls,
            "gmres_refinements": (calls.get("VecMDot", 0) // comm.getSize() - iterations
                                  if args.solver == "gmres" else None),
            "setup_s": setup_s, "solve_s": solve_s,
            "ms_per_iteration": 1e3 * solve_s / iterations if iterations > 0 else None,
            "restart": args.restart if args.solver == "gmres" else None,
            "ranks": comm.getSize(), "mat_type": a.getType(),
            "petsc_version": ".".join(str(v) for v in PETSc.Sys.getVersion()),
        }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
