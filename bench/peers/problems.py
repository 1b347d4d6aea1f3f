"""The matrices and right-hand sides of bench/peers/PROBLEMS.md, built with NumPy for the PETSc
and SciPy peers (peer_eigen_krylov builds the same in C++).

Grid points are numbered with x fastest (row = i + n*j [+ n*n*k]); each interior point is a
row; neighbours on the Dirichlet-zero boundary are dropped; columns ascend within a row.
No 1/h^2 factor: the 2-D Laplacian is the (4, -1, -1, -1, -1) stencil, the 3-D one
(6, -1 x 6). Convection-diffusion -Lap(u) + beta (u_x + u_y [+ u_z]), beta > 0, first-order
upwind, scaled the same way (times h^2): the upstream (minus) neighbours get -1 - beta*h, the
downstream ones -1, the centre 2*dim + dim*beta*h.
"""

import argparse

import numpy as np


def add_problem_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dim", type=int, choices=(2, 3), required=True)
    parser.add_argument("--n", type=int, required=True, help="interior points per side")
    parser.add_argument("--problem", choices=("poisson", "convdiff"), default="poisson")
    parser.add_argument("--beta-h", type=float, default=0.5,
                        help="beta*h of convdiff (ignored for poisson)")


def add_solver_arguments(parser: argparse.ArgumentParser) -> None:
    """The problem and the solver flags every Python peer takes."""
    add_problem_arguments(parser)
    parser.add_argument("--solver", choices=("cg", "bicgstab", "gmres"), required=True)
    parser.add_argument("--precond", choices=("none", "jacobi"), default="none")
    parser.add_argument("--restart", type=int, default=30)
    parser.add_argument("--max-iters", type=int, required=True)
    parser.add_argument("--warmup-iters", type=int, default=2)


def rows_of(dim: int, n: int) -> int:
    return n ** dim


def stencil(dim: int, problem: str, beta_h: float):
    """(offset along each axis, coefficient) pairs in ascending column order."""
    bh = beta_h if problem == "convdiff" else 0.0
    up = -1.0 - bh
    down = -1.0
    centre = 2.0 * dim + dim * bh
    axes = [2, 1, 0] if dim == 3 else [1, 0]  # z, y, x: the minus side, farthest column first
    entries = []
    for axis in axes:
        entries.append((axis, -1, up))
    entries.append((None, 0, centre))
    for axis in reversed(axes):
        entries.append((axis, +1, down))
    return entries


def csr_rows(dim: int, n: int, problem: str, beta_h: float, r0: int, r1: int):
    """CSR arrays (indptr int32, indices int32, data float64) of rows [r0, r1)."""
    rows = np.arange(r0, r1, dtype=np.int64)
    coord = [rows % n, (rows // n) % n]
    if dim == 3:
        coord.append(rows // (n * n))
    stride = [1, n, n * n]
    entries = stencil(dim, problem, beta_h)
    cols = np.empty((rows.size, len(entries)), dtype=np.int64)
    vals = np.empty((rows.size, len(entries)), dtype=np.float64)
    keep = np.empty((rows.size, len(entries)), dtype=bool)
    for e, (axis, step, coef) in enumerate(entries):
        if axis is None:
            cols[:, e] = rows
            keep[:, e] = True
        else:
            cols[:, e] = rows + step * stride[axis]
            keep[:, e] = coord[axis] > 0 if step < 0 else coord[axis] < n - 1
        vals[:, e] = coef
    counts = keep.sum(axis=1)
    indptr = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    if indptr[-1] > np.iinfo(np.int32).max or r1 > np.iinfo(np.int32).max:
        raise SystemExit("the matrix does not fit 32-bit indices")
    return (indptr.astype(np.int32), cols[keep].astype(np.int32), vals[keep])


def rhs(dim: int, n: int, problem: str, rows_csr, r0: int, r1: int):
    """b for rows [r0, r1), the right-hand side of tenax's poisson example.

    convdiff: b = A 1 (the solution is all ones), from the rows' CSR arrays (indptr, indices,
    data) as returned by csr_rows. poisson: h^2 f for the manufactured solution
    u = g(x) g(y) [g(z)], g(t) = t (1 - t) e^t, f = -Laplacian(u) = sum over the axes of
    a(t_axis) * g(other coordinates), a(t) = t (t + 3) e^t, at t = h (i + 1). tenax assembles
    (1/h^2) A and b = f: the same system times 1/h^2, so the iterates are the same.
    """
    if problem == "convdiff":
        indptr, _, data = rows_csr
        return np.add.reduceat(data, indptr[:-1].astype(np.int64))
    h = 1.0 / (n + 1)
    rows = np.arange(r0, r1, dtype=np.int64)
    g, a = [], []
    for axis in range(dim):
        t = h * ((rows // n ** axis) % n + 1).astype(np.float64)
        g.append(t * (1.0 - t) * np.exp(t))
        a.append(t * (t + 3.0) * np.exp(t))
    f = np.zeros(rows.size)
    for axis in range(dim):
        term = a[axis].copy()
        for other in range(dim):
            if other != axis:
                term *= g[other]
        f += term
    return h * h * f


def result_line(fields: dict) -> str:
    """One JSON object, the last stdout line every peer prints."""
    import json
    return json.dumps(fields)
