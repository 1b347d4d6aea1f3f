#!/usr/bin/env python3
"""Gray-Scott reaction-diffusion, explicit Euler, periodic n x n grid, in NumPy: the NumPy peer
of tenax's gray_scott example (bench/peers/gray_scott.py compares them).

  u' = Du lap(u) - u v^2 + F (1 - u),   v' = Dv lap(v) + u v^2 - (F + k) v

Grid spacing 1, 5-point Laplacian, f64, fields indexed [y][x]. Initial condition as in
gray_scott_petsc.c: u = 1, v = 0, except the square n/2 - n/10 <= x, y < n/2 + n/10 where
u = 0.5, v = 0.25, and at every point both + amp * (r - 0.5) (as tenax's gray_scott), r from the
same counter-based hash (splitmix64 of seed and the global index y*n + x), so this and the PETSc
peer start from the same state. --no-perturb starts without the noise.

The idiomatic fast NumPy way (as in N. Rougier's "From Python to Numpy" Gray-Scott): each field
lives in an (n+2) x (n+2) array with a one-point halo; a step copies the periodic wrap into the
halo (4 strips), forms the Laplacian from four shifted slices, and updates the interior view in
place. Every temporary is preallocated and every operation writes through out= or an in-place
operator, so a step allocates nothing (np.roll would allocate 8 arrays per step). NumPy's
elementwise operations run on one thread; each is a separate pass over memory, so the step
moves far more than the 32 bytes per point the model counts.

Timing: --warmup untimed steps, then --steps steps each timed with perf_counter; ms_per_step is
the median. The last stdout line is a JSON object like tenax's --json.

  /usr/bin/python3 bench/peers/gray_scott_numpy.py --n 1024 --steps 100
  ... --n 128 --steps 200 --warmup 0 --no-perturb --compare-petsc final.bin   (cross-check)
  ... --compare-h5 gray_scott.h5   (tenax's --output of the same model, steps and start)
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def mix64(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def uniform01(seed, stream, index):
    """The generator of gray_scott_petsc.c: uniform in [0, 1) from (seed, stream, index)."""
    with np.errstate(over="ignore"):
        z = mix64(np.uint64(seed) + GOLDEN * (np.uint64(2) * index + np.uint64(stream + 1)))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def initial_state(n, seed, amp, perturb):
    u = np.ones((n, n))
    v = np.zeros((n, n))
    lo, hi = n // 2 - n // 10, n // 2 + n // 10
    u[lo:hi, lo:hi] = 0.5
    v[lo:hi, lo:hi] = 0.25
    if perturb:
        y, x = np.mgrid[0:n, 0:n].astype(np.uint64)
        noise = amp * (uniform01(seed, 0, y * np.uint64(n) + x) - 0.5)
        u += noise
        v += noise
    return u, v


class GrayScott:
    def __init__(self, u0, v0, F, k, Du, Dv, dt):
        n = u0.shape[0]
        self.n, self.F, self.k, self.Du, self.Dv, self.dt = n, F, k, Du, Dv, dt
        self.U = np.empty((n + 2, n + 2))
        self.V = np.empty((n + 2, n + 2))
        self.u = self.U[1:-1, 1:-1]  # interior views: the state
        self.v = self.V[1:-1, 1:-1]
        self.u[...] = u0
        self.v[...] = v0
        self.lu, self.lv, self.uvv, self.t = (np.empty((n, n)) for _ in range(4))

    @staticmethod
    def wrap(Z):
        """Periodic halo: rows first, then whole columns (corners are not read)."""
        Z[0, 1:-1] = Z[-2, 1:-1]
        Z[-1, 1:-1] = Z[1, 1:-1]
        Z[:, 0] = Z[:, -2]
        Z[:, -1] = Z[:, 1]

    @staticmethod
    def laplacian(Z, z, out, scratch):
        # ((west + east) + south) + north - 4 z: the order of gray_scott_petsc.c.
        np.add(Z[1:-1, :-2], Z[1:-1, 2:], out=out)
        out += Z[:-2, 1:-1]
        out += Z[2:, 1:-1]
        out -= np.multiply(z, 4.0, out=scratch)

    def step(self):
        U, V, u, v, lu, lv, uvv, t = self.U, self.V, self.u, self.v, self.lu, self.lv, \
            self.uvv, self.t
        self.wrap(U)
        self.wrap(V)
        self.laplacian(U, u, lu, t)
        self.laplacian(V, v, lv, t)
        np.multiply(u, v, out=uvv)
        uvv *= v                          # u v^2, from the old u and v
        # u += dt (Du lap u - u v^2 + F (1 - u))
        lu *= self.Du
        lu -= uvv
        np.subtract(1.0, u, out=t)
        t *= self.F
        lu += t
        lu *= self.dt
        u += lu
        # v += dt (Dv lap v + u v^2 - (F + k) v)
        lv *= self.Dv
        lv += uvv
        np.multiply(v, self.F + self.k, out=t)
        lv -= t
        lv *= self.dt
        v += lv


def read_petsc_vec(path):
    """A Vec written by VecView to a PETSc binary viewer: big-endian int32 class id 1211214 and
    length, then big-endian f64 values (gray_scott_petsc.c: [y][x][u, v])."""
    with open(path, "rb") as f:
        head = np.frombuffer(f.read(8), dtype=">i4")
        if head[0] != 1211214:
            raise SystemExit(f"{path}: not a PETSc binary Vec (class id {head[0]})")
        data = np.frombuffer(f.read(8 * int(head[1])), dtype=">f8").astype(np.float64)
    return data


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=100, help="timed steps (default 100)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps first (default 10)")
    ap.add_argument("--F", type=float, default=0.037)
    ap.add_argument("--k", type=float, default=0.06)
    ap.add_argument("--Du", type=float, default=0.16)
    ap.add_argument("--Dv", type=float, default=0.08)
    ap.add_argument("--dt", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--amp", type=float, default=0.01, help="perturbation amplitude (0.01)")
    ap.add_argument("--no-perturb", action="store_true", help="no random perturbation")
    ap.add_argument("--output", help="write the final u and v here (.npz)")
    ap.add_argument("--compare-petsc", metavar="FILE", action="append", default=[],
                    help="gray_scott_petsc -output FILE of the same run: print the max abs "
                    "differences (also in the JSON line, named after the file); repeatable")
    ap.add_argument("--compare-h5", metavar="FILE",
                    help="an HDF5 file with datasets /u and /v, shape [n][n] (tenax's gray_scott "
                    "--output of the same run): print the max abs differences (needs h5py)")
    ap.add_argument("--json", action="store_true", help="accepted; the JSON line is always printed")
    a = ap.parse_args()
    if a.n < 3 or a.steps < 1 or a.warmup < 0:
        ap.error("--n >= 3, --steps >= 1, --warmup >= 0")

    u0, v0 = initial_state(a.n, a.seed, a.amp, not a.no_perturb)
    gs = GrayScott(u0, v0, a.F, a.k, a.Du, a.Dv, a.dt)
    del u0, v0
    for _ in range(a.warmup):
        gs.step()
    times = []
    clock = time.perf_counter
    for _ in range(a.steps):
        t0 = clock()
        gs.step()
        times.append(clock() - t0)
    med = statistics.median(times)
    u, v = gs.u, gs.v
    bytes_step = 32.0 * a.n * a.n
    result = {"code": "numpy", "n": a.n, "steps": a.steps, "warmup": a.warmup, "threads": 1,
              "ms_per_step": 1e3 * med, "ms_per_step_min": 1e3 * min(times),
              "ms_per_step_mean": 1e3 * sum(times) / len(times), "bytes_per_step": bytes_step,
              "gbps": bytes_step / med * 1e-9, "sum_u": float(u.sum()), "sum_v": float(v.sum()),
              "min_v": float(v.min()), "max_v": float(v.max()), "perturb": not a.no_perturb,
              "finite": bool(np.isfinite(u).all() and np.isfinite(v).all()),
              "numpy": np.__version__}
    if a.output:
        np.savez(a.output, u=u, v=v)
    others = []
    for path in a.compare_petsc:
        data = read_petsc_vec(path)
        if data.size != 2 * a.n * a.n:
            raise SystemExit(f"{path}: {data.size} values, expected {2 * a.n * a.n}")
        fields = data.reshape(a.n, a.n, 2)
        name = os.path.splitext(os.path.basename(path))[0]
        others.append((name, fields[:, :, 0], fields[:, :, 1]))
    if a.compare_h5:
        try:
            import h5py
        except ImportError:
            raise SystemExit("--compare-h5 needs h5py (Debian: python3-h5py)")
        with h5py.File(a.compare_h5, "r") as f:
            hu, hv = np.asarray(f["u"], dtype=np.float64), np.asarray(f["v"], dtype=np.float64)
        if hu.shape != (a.n, a.n) or hv.shape != (a.n, a.n):
            raise SystemExit(f"{a.compare_h5}: /u {hu.shape}, /v {hv.shape}, expected "
                             f"({a.n}, {a.n})")
        others.append((os.path.splitext(os.path.basename(a.compare_h5))[0], hu, hv))
    for name, ou, ov in others:
        du, dv = float(np.abs(ou - u).max()), float(np.abs(ov - v).max())
        result.setdefault("max_abs_diff", {})[name] = {"u": du, "v": dv}
        print(f"gray_scott_numpy: max |u_{name} - u_numpy| = {du:.3e}, "
              f"max |v_{name} - v_numpy| = {dv:.3e}")
    print(f"gray_scott_numpy: n={a.n} steps={a.steps} (+{a.warmup} warm-up): median "
          f"{1e3 * med:.4f} ms/step, sum u {result['sum_u']:.12e}, sum v {result['sum_v']:.12e}")
    print(json.dumps(result))
    return 0 if result["finite"] else 1


if __name__ == "__main__":
    sys.exit(main())
