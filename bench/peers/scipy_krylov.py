"""SciPy's Krylov solvers (scipy.sparse.linalg.cg / bicgstab / gmres) on the problems of
bench/peers/PROBLEMS.md, for bench/peers/run.py.

Run with the system interpreter that has python3-scipy (Debian: /usr/bin/python3). SciPy's
CSR product is single-threaded; its vector work goes through the BLAS that NumPy/SciPy are
linked with (Debian 12 default: reference BLAS, one thread). That is SciPy as installed.

Tolerances are rtol = atol = 0, so every solve runs exactly --max-iters iterations; the count
is checked twice: with the callback (the way a user counts) and by counting products with A.
Prints one JSON object on the last line of stdout.
"""

import argparse
import sys
import time

import numpy as np
import scipy
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    problems.add_solver_arguments(parser)
    args = parser.parse_args()
    if args.solver == "gmres" and args.max_iters % args.restart != 0:
        # SciPy 1.10 counts gmres' maxiter in restart cycles.
        parser.error("gmres: --max-iters must be a multiple of --restart")

    t0 = time.perf_counter()
    n_rows = problems.rows_of(args.dim, args.n)
    csr = problems.csr_rows(args.dim, args.n, args.problem, args.beta_h, 0, n_rows)
    indptr, indices, data = csr
    a = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_rows))
    b = problems.rhs(args.dim, args.n, args.problem, csr, 0, n_rows)
    m = None
    if args.precond == "jacobi":
        inv_diag = 1.0 / a.diagonal()
        m = spla.LinearOperator(a.shape, matvec=lambda r: inv_diag * r, dtype=np.float64)
    setup_s = time.perf_counter() - t0

    # Counts products with A, independently of the callback.
    products = [0]

    def matvec(v):
        products[0] += 1
        return a @ v

    op = spla.LinearOperator(a.shape, matvec=matvec, dtype=np.float64)

    def solve(iterations):
        calls = [0]

        def callback(_):
            calls[0] += 1

        products[0] = 0
        x0 = np.zeros(n_rows)
        if args.solver == "cg":
            x, info = spla.cg(op, b, x0=x0, tol=0.0, atol=0.0, maxiter=iterations, M=m,
                              callback=callback)
        elif args.solver == "bicgstab":
            x, info = spla.bicgstab(op, b, x0=x0, tol=0.0, atol=0.0, maxiter=iterations, M=m,
                                    callback=callback)
        else:
            x, info = spla.gmres(op, b, x0=x0, tol=0.0, atol=0.0, restart=args.restart,
                                 maxiter=iterations // args.restart, M=m, callback=callback,
                                 callback_type="pr_norm")
        return x, info, calls[0], products[0]

    if args.warmup_iters > 0:
        # Untimed: brings the matrix and vectors through the caches once, as for every code.
        solve(args.restart if args.solver == "gmres" else args.warmup_iters)
    t1 = time.perf_counter()
    x, info, callbacks, matvecs = solve(args.max_iters)
    solve_s = time.perf_counter() - t1

    # What the counts mean in SciPy 1.10 (checked here on both cg and gmres): the callback runs
    # once per iteration (for gmres with callback_type="pr_norm": once per inner iteration).
    # Products with A: cg 1 per iteration, bicgstab 2, gmres 1 plus one residual per restart
    # cycle (x0 = 0 skips the first cycle's; the return adds one).
    iterations = callbacks
    if args.solver == "cg":
        iterations_from_matvecs = matvecs
    elif args.solver == "bicgstab":
        iterations_from_matvecs = matvecs // 2
    else:
        iterations_from_matvecs = matvecs - args.max_iters // args.restart
    residual = float(np.linalg.norm(b - a @ x))
    print(problems.result_line({
        "code": "scipy", "solver": args.solver, "precond": args.precond, "operator": "csr",
        "dim": args.dim, "n": args.n, "problem": args.problem,
        "beta_h": args.beta_h if args.problem == "convdiff" else 0.0,
        "rows": n_rows, "nnz": int(a.nnz), "requested_iterations": args.max_iters,
        "iterations": iterations, "iterations_from_matvecs": iterations_from_matvecs,
        "callbacks": callbacks, "matvecs": matvecs, "info": int(info),
        "residual": residual, "relative_residual": residual / float(np.linalg.norm(b)),
        "setup_s": setup_s, "solve_s": solve_s,
        "ms_per_iteration": 1e3 * solve_s / iterations if iterations > 0 else None,
        "restart": args.restart if args.solver == "gmres" else None,
        "threads": 1, "scipy_version": scipy.__version__, "numpy_version": np.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
