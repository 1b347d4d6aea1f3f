#!/usr/bin/env python3
"""Runs tenax and its peers (PETSc via petsc4py, Eigen, SciPy) on the linear-solver problems of
bench/peers/PROBLEMS.md in one invocation, with the STREAM triad of the same run as the
bandwidth ceiling, and prints a side-by-side Markdown table.

  bench/peers/install.sh                                  # once, as root: the peer packages
  cmake --build build --target peer_eigen_krylov peer_stream_triad poisson heat2d
  bench/peers/run.py --out peers.json                     # 3-4 minutes on 2 cores

Every code runs every problem --reps times (default 3), the codes alternating within each
round and the order rotating between rounds, after one untimed warm-up round at small sizes
that also checks each code works. The table gives the median. A code that is missing or fails
is reported as "not available" with the reason; the rest still run. This script uses the
Python standard library only; the peers run under --peer-python (default /usr/bin/python3,
where Debian's python3-petsc4py and python3-scipy live).
"""

import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# ---------------------------------------------------------------------------------------------
# Problems (PROBLEMS.md). Iteration counts are fixed (tolerance 0) so that every code does the
# same work; they are sized so the whole run stays well under 10 minutes on 2 cores.

FULL = {
    "P1": dict(dim=2, n=2048, problem="poisson", solver="cg", precond="none", iters=100),
    "P3": dict(dim=3, n=128, problem="poisson", solver="cg", precond="jacobi", iters=100),
    "P4b": dict(dim=2, n=1024, problem="convdiff", solver="bicgstab", precond="jacobi",
                iters=100),
    "P4g": dict(dim=2, n=1024, problem="convdiff", solver="gmres", precond="jacobi", iters=120),
    "P5": dict(dim=2, n=4096, steps=20),
}
# The warm-up round, and --quick: the same problems, small.
SMALL = {
    "P1": dict(FULL["P1"], n=256, iters=30),
    "P3": dict(FULL["P3"], n=32, iters=30),
    "P4b": dict(FULL["P4b"], n=256, iters=30),
    "P4g": dict(FULL["P4g"], n=256, iters=30),
    "P5": dict(FULL["P5"], n=512, steps=20),
}
BETA_H = 0.5
RESTART = 30

TITLES = {
    "P1": "P1 2-D Poisson {n}², CG, no preconditioner",
    "P2": "P2 2-D Poisson {n}², CG, tenax matrix-free stencil vs PETSc assembled",
    "P1r": "P1 on 2 ranks: tenax distributed CG (exact reductions, 1 thread per rank) vs PETSc",
    "P3": "P3 3-D Poisson {n}³, CG + Jacobi",
    "P4b": "P4 2-D convection-diffusion {n}², βh = 0.5, BiCGSTAB + Jacobi",
    "P4g": "P4 2-D convection-diffusion {n}², βh = 0.5, GMRES(30) + Jacobi",
    "P5": "P5 explicit heat step 2-D {n}² (f64)",
}

# ---------------------------------------------------------------------------------------------
# Bytes models (PROBLEMS.md, "Bytes models"): bytes one iteration moves, as counted from each
# code's source. Operator: CSR y = A x with f64 values and i32 indices, every array once.


def csr_bytes(rows, nnz):
    return 8 * nnz + 4 * nnz + 4 * (rows + 1) + 8 * rows + 8 * rows


def stencil_bytes(rows):
    return 16 * rows  # read p, write q; the neighbours come from cache


GMRES_MEAN_BASIS = (RESTART + 1) / 2  # basis vectors orthogonalised against, on average


# Vector traffic per iteration in units of N * 1 byte, by (code, solver, precond).
VECTOR_BYTES = {
    ("tenax", "cg", "none"): 64,      # spmv_dot/stencil_dot + cg_residual 24 + cg_advance 40
    ("tenax", "cg", "jacobi"): 80,    # cg_residual with z 40 + cg_advance 40
    ("petsc", "cg", "none"): 128,     # AYPX 24, dot 16, 2 AXPY 48, PCApply copy 16, norm 8, dot 16
    ("petsc", "cg", "jacobi"): 136,   # PCApply = pointwise multiply 24 instead of a copy
    ("eigen", "cg", "none"): 128,     # dot 16, 2 axpy 48, squaredNorm 8, z = r 16, dot 16, p 24
    ("eigen", "cg", "jacobi"): 136,   # z = D^-1 r 24
    ("scipy", "cg", "none"): 216,     # CGREVCOM 144 (psolve copy, dots, p: axpy+copy, 2 axpy,
    ("scipy", "cg", "jacobi"): 240,   #   norm) + Python glue around A x 72; Jacobi psolve +24
    ("petsc", "bicgstab", "jacobi"): 216,  # KSPSolve_BCGS, 2 Jacobi applications included
    ("eigen", "bicgstab", "jacobi"): 224,  # Eigen::BiCGSTAB loop, 2 Jacobi solves included
    ("scipy", "bicgstab", "jacobi"): 472,  # BICGSTABREVCOM + glue (2 x 72) + psolve (2 x 40)
    # GMRES(m), per inner iteration with k basis vectors (mean (m+1)/2): classical
    # Gram-Schmidt dots 8(k+1), update 8(k+2), refinement check norm 8 (ifneeded), norm 8,
    # scale 16, Jacobi 24.
    ("petsc", "gmres", "jacobi"): 16 * GMRES_MEAN_BASIS + 80,
    ("petsc-refine-never", "gmres", "jacobi"): 16 * GMRES_MEAN_BASIS + 72,
    # SciPy: modified Gram-Schmidt, a dot 16 and an axpy 24 per basis vector, norm 8, copy 16,
    # scale 16, glue around A x 72, Jacobi psolve 40.
    ("scipy", "gmres", "jacobi"): 40 * GMRES_MEAN_BASIS + 152,
}
# tenax: its own bytes_per_iteration when it reports one; otherwise the static model above or, for
# BiCGSTAB and GMRES, the PETSc model of the same method (the textbook sequence of the same vector
# operations).
TENAX_FALLBACK = {"bicgstab": ("petsc", "bicgstab", "jacobi"),
                  "gmres": ("petsc", "gmres", "jacobi")}


def model_bytes(family, solver, precond, operator, rows, nnz, tenax_reported=None):
    """(bytes per iteration, how it was obtained)."""
    spmvs = 2 if solver == "bicgstab" else 1
    op = stencil_bytes(rows) if operator == "stencil" else csr_bytes(rows, nnz)
    key = (family, solver, precond)
    # tenax's own count first: its CPU products read a compact index (CsrMatrix::compacted), fewer
    # bytes than the CSR arrays of the static model.
    if family == "tenax" and tenax_reported:
        return float(tenax_reported), "tenax --json bytes_per_iteration"
    if key in VECTOR_BYTES:
        return spmvs * op + VECTOR_BYTES[key] * rows, "model"
    if family == "tenax" and solver in TENAX_FALLBACK:
        return (spmvs * op + VECTOR_BYTES[TENAX_FALLBACK[solver]] * rows,
                "PETSc's model; tenax reports none")
    return None, "no model"


# ---------------------------------------------------------------------------------------------


def now():
    return time.monotonic()


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return None


def last_json_line(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def tail(text, lines=6):
    return "\n".join(text.strip().splitlines()[-lines:])


class Runner:
    def __init__(self, args):
        self.args = args
        self.t_start = now()
        self.raw = []

    def remaining(self):
        return self.args.budget - (now() - self.t_start)

    def run(self, cmd, env_extra, timeout, label):
        """Runs cmd; returns (rc, stdout, stderr, wall_s)."""
        env = dict(os.environ)
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ left in the source tree
        env.update(env_extra)
        t0 = now()
        try:
            # A process group of its own: a timeout also ends what it started (mpirun's ranks).
            p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True)
            try:
                out, err = p.communicate(timeout=timeout)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, err = p.communicate()
                rc = "timeout"
                err = (err or "") + f"\n(killed after {timeout:.0f} s)"
        except OSError as e:
            rc, out, err = "oserror", "", str(e)
        wall = now() - t0
        if self.args.verbose:
            print(f"  [{now() - self.t_start:6.1f}s] {label}: rc={rc} wall={wall:.1f}s",
                  file=sys.stderr, flush=True)
        return rc, out, err, wall


def find_petsc_dir():
    if os.environ.get("PETSC_DIR"):
        return os.environ["PETSC_DIR"]
    if os.path.exists("/usr/lib/petsc"):
        return None  # petsc4py's default works
    found = sorted(glob.glob("/usr/lib/petscdir/petsc3.*/x86_64-linux-gnu-real"))
    return found[-1] if found else None


class Case:
    """One code on one problem: builds its command line and knows its bytes model."""

    def __init__(self, pid, code, family, solver, precond, operator="csr", extra=None,
                 solver_options=None):
        self.pid, self.code, self.family = pid, code, family
        self.solver, self.precond, self.operator = solver, precond, operator
        self.extra = extra or []
        self.solver_options = solver_options or []  # tenax: more key=value solver options
        self.run_dir = None  # tenax's run directory of the current run
        self.unavailable = None  # reason, once known
        self.results = []  # parsed JSON per timed repetition

    def command(self, ctx, p):
        common = ["--dim", str(p["dim"]), "--n", str(p["n"]), "--problem", p["problem"]]
        if p["problem"] == "convdiff":
            common += ["--beta-h", str(BETA_H)]
        solver = ["--solver", self.solver, "--precond", self.precond,
                  "--max-iters", str(p["iters"])]
        if self.solver == "gmres":
            solver += ["--restart", str(RESTART)]
        if self.family == "tenax":
            exe = os.path.join(ctx.tenax_bin, "poisson")
            # poisson resumes from its run directory: a fresh one per run, removed afterwards,
            # and no periodic checkpoints inside the timed solve.
            self.run_dir = tempfile.mkdtemp(prefix="tenax-peers-poisson-")
            return ([exe] + common + solver +
                    ["--operator", self.operator, "--tol", "0", "--atol", "0", "--device", "cpu",
                     "--run-dir", self.run_dir, "--checkpoint-every", "0", "--progress", "quiet",
                     # No divergence stop (PETSc gets divtol 1e300; Eigen and SciPy have none):
                     # BiCGSTAB's residual on P4 grows a millionfold before it falls.
                     "--solver-options", ",".join(["divtol=inf"] + self.solver_options),
                     "--json"] + self.extra,
                    {"TENAX_NUM_THREADS": str(ctx.threads)}, exe)
        if self.family == "eigen":
            exe = os.path.join(ctx.peer_bin, "peer_eigen_krylov")
            return ([exe] + common + solver + ["--threads", str(ctx.threads)],
                    dict(ctx.omp_env), exe)
        if self.family == "scipy":
            script = os.path.join(HERE, "scipy_krylov.py")
            return ([ctx.peer_python, script] + common + solver + self.extra,
                    dict(ctx.scipy_env), ctx.peer_python)
        if self.family == "petsc":
            script = os.path.join(HERE, "petsc_krylov.py")
            mpi = [ctx.mpirun]
            if os.geteuid() == 0:
                mpi.append("--allow-run-as-root")
            mpi += ["-n", str(ctx.ranks), "--bind-to", ctx.bind]
            env = {"OMP_NUM_THREADS": "1"}
            if ctx.petsc_dir:
                env["PETSC_DIR"] = ctx.petsc_dir
                mpi += ["-x", "PETSC_DIR"]
            mpi += ["-x", "OMP_NUM_THREADS"]
            return (mpi + [ctx.peer_python, script] + common + solver + self.extra, env,
                    ctx.mpirun)
        raise AssertionError(self.family)


class RanksCase(Case):
    """tenax's poisson on ctx.ranks processes (mpirun, one worker thread per rank, bound to
    cores as PETSc's ranks are): rows split across the ranks, reductions in the single-process
    order, so its iterates are the one-process run's."""

    def command(self, ctx, p):
        cmd, env, exe = super().command(ctx, p)
        env = dict(env, TENAX_NUM_THREADS="1")
        mpi = [ctx.mpirun]
        if os.geteuid() == 0:
            mpi.append("--allow-run-as-root")
        mpi += ["-n", str(ctx.ranks), "--bind-to", ctx.bind, "-x", "TENAX_NUM_THREADS"]
        return mpi + cmd, env, exe


class HeatCase(Case):
    def __init__(self):
        super().__init__("P5", "tenax heat2d", "tenax", "heat", "none", "stencil")

    def command(self, ctx, p):
        exe = os.path.join(ctx.tenax_bin, "heat2d")
        self.run_dir = tempfile.mkdtemp(prefix="tenax-peers-heat-")
        return ([exe, "--n", str(p["n"]), "--steps", str(p["steps"]), "--device", "cpu",
                 "--checkpoint-every", "0", "--run-dir", self.run_dir, "--progress", "quiet",
                 # The step itself: the Runner's NaN scan of the whole field after every step
                 # (a second read of it) is switched off; RESULTS.md gives its cost separately.
                 "--anomaly-check-every", "0"],
                {"TENAX_NUM_THREADS": str(ctx.threads)}, exe)

    def parse(self, p):
        """Per-step time from the step events of events.jsonl: the mean interval between the
        first and the last step event, so start-up and the final checkpoint are outside."""
        times = []
        try:
            with open(os.path.join(self.run_dir, "events.jsonl")) as f:
                for line in f:
                    ev = json.loads(line)
                    if ev.get("event") == "step":
                        times.append(ev["time"])
        except (OSError, ValueError):
            return None
        if len(times) < 2:
            return None
        steps = len(times) - 1
        sec = (times[-1] - times[0]) / steps
        rows = p["n"] * p["n"]
        return {"code": "tenax", "solver": "heat", "operator": "stencil", "rows": rows,
                "nnz": None, "requested_iterations": p["steps"], "iterations": len(times),
                "timed_steps": steps, "solve_s": times[-1] - times[0],
                "ms_per_iteration": 1e3 * sec, "residual": None, "relative_residual": None}


def build_cases(codes):
    cases = []

    def add(case):
        if case.family in codes:
            cases.append(case)

    for pid in ("P1", "P3"):
        solver, precond = FULL[pid]["solver"], FULL[pid]["precond"]
        add(Case(pid, "tenax (csr)", "tenax", solver, precond, "csr"))
        if pid == "P1":
            add(Case("P2", "tenax (stencil)", "tenax", solver, precond, "stencil"))
            add(RanksCase("P1r", "tenax (csr, 2 ranks)", "tenax", solver, precond, "csr"))
        add(Case(pid, "petsc", "petsc", solver, precond))
        add(Case(pid, "eigen", "eigen", solver, precond))
        add(Case(pid, "scipy", "scipy", solver, precond))
    add(Case("P4b", "tenax (csr)", "tenax", "bicgstab", "jacobi"))
    add(Case("P4b", "petsc", "petsc", "bicgstab", "jacobi"))
    add(Case("P4b", "eigen", "eigen", "bicgstab", "jacobi"))
    add(Case("P4b", "scipy", "scipy", "bicgstab", "jacobi"))
    add(Case("P4g", "tenax (csr)", "tenax", "gmres", "jacobi"))
    # tenax's classical Gram-Schmidt: once (PETSc's default) and twice (always refined).
    add(Case("P4g", "tenax (csr, orthog=cgs)", "tenax", "gmres", "jacobi",
             solver_options=["orthog=cgs"]))
    add(Case("P4g", "tenax (csr, orthog=cgs2)", "tenax", "gmres", "jacobi",
             solver_options=["orthog=cgs2"]))
    # Same orthogonalisation as tenax: classical Gram-Schmidt, refinement if needed.
    add(Case("P4g", "petsc", "petsc", "gmres", "jacobi",
             extra=["-ksp_gmres_cgs_refinement_type", "refine_ifneeded"]))
    # PETSc's own default: never refine (no test norm, no second Gram-Schmidt pass).
    c = Case("P4g", "petsc (refine_never: PETSc default)", "petsc", "gmres", "jacobi",
             extra=["-ksp_gmres_cgs_refinement_type", "refine_never"])
    c.model_family = "petsc-refine-never"
    add(c)
    add(Case("P4g", "scipy", "scipy", "gmres", "jacobi"))
    if "tenax" in codes:
        cases.append(HeatCase())
    return cases


def problem_of(pid):
    return "P1" if pid in ("P2", "P1r") else pid


class Ctx:
    pass


def run_case(runner, ctx, case, sizes, timed, label):
    p = sizes[problem_of(case.pid)]
    cmd, env, exe = case.command(ctx, p)
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)) and shutil.which(exe) is None:
        case.unavailable = f"not built / not installed: {exe}"
        if case.run_dir:
            shutil.rmtree(case.run_dir, ignore_errors=True)
        return None
    timeout = ctx.timeout if timed else max(60, ctx.timeout // 2)
    timeout = min(timeout, max(10, runner.remaining()))
    load0 = loadavg()
    rc, out, err, wall = runner.run(cmd, env, timeout, label)
    load1 = loadavg()
    parsed = case.parse(p) if isinstance(case, HeatCase) else last_json_line(out)
    if case.run_dir:
        shutil.rmtree(case.run_dir, ignore_errors=True)
        case.run_dir = None
    record = {"problem": case.pid, "code": case.code, "timed": timed, "rc": rc, "wall_s": wall,
              "loadavg_before": load0, "loadavg_after": load1, "command": cmd,
              "result": parsed}
    if rc != 0 or parsed is None:
        record["stderr_tail"] = tail(err, 12)
        record["stdout_tail"] = tail(out, 6)
    runner.raw.append(record)
    if rc != 0 or parsed is None:
        why = ("timed out" if rc == "timeout" else f"exit {rc}" if rc != 0
               else "no JSON result line")
        msg = tail(err, 2).replace("\n", " / ") or tail(out, 1)
        case.unavailable = f"{why}: {msg[:300]}"
        return None
    return parsed


def run_stream(runner, ctx, label):
    exe = os.path.join(ctx.peer_bin, "peer_stream_triad")
    if not os.access(exe, os.X_OK):
        return {"error": f"not built: {exe}"}
    args = ["--threads", str(ctx.threads)]
    if ctx.quick:
        args += ["--elements", str(1 << 23), "--reps", "10"]
    rc, out, err, wall = runner.run([exe] + args, dict(ctx.omp_env), 120, label)
    parsed = last_json_line(out)
    if rc != 0 or parsed is None:
        return {"error": f"exit {rc}: {tail(err, 2)}"}
    parsed["loadavg"] = loadavg()
    parsed["label"] = label
    return parsed


# ---------------------------------------------------------------------------------------------
# Reporting


def fmt(x, digits=3):
    if x is None:
        return "—"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.{digits - 1}f}" if abs(x) >= 1 else f"{x:.{digits}f}"


def summarise(case, sizes):
    """Median over the timed repetitions, plus what the table shows."""
    p = sizes[problem_of(case.pid)]
    ok = [r for r in case.results if r.get("ms_per_iteration")]
    if not ok:
        return None
    ms = [r["ms_per_iteration"] for r in ok]
    med = statistics.median(ms)
    first = ok[0]
    rows, nnz = first.get("rows"), first.get("nnz")
    if isinstance(case, HeatCase):
        bytes_it, source = 16 * rows, "model"
    else:
        family = getattr(case, "model_family", case.family)
        bytes_it, source = model_bytes(family, case.solver, case.precond, case.operator, rows,
                                       nnz, first.get("bytes_per_iteration"))
    static = bytes_it
    if not isinstance(case, HeatCase):
        if case.family == "petsc" and first.get("logged_bytes_per_iteration"):
            # PETSc's own event log of the timed solve (calls x bytes per call): exact where
            # the static model cannot know the counts, e.g. GMRES refinements.
            bytes_it = statistics.median(r["logged_bytes_per_iteration"] for r in ok)
            source = "PETSc log"
    requested = p.get("iters", p.get("steps"))
    its = sorted({r.get("iterations") for r in ok})
    iters_ok = its == [requested]
    extra_checks = [r.get("iterations_from_matvecs") for r in ok
                    if r.get("iterations_from_matvecs") is not None]
    if extra_checks and any(x != requested for x in extra_checks):
        iters_ok = False
    rel = [r.get("relative_residual") for r in ok if r.get("relative_residual") is not None]
    absolute = [r.get("residual") for r in ok if r.get("residual") is not None]
    return {
        "problem": case.pid, "code": case.code, "reps": len(ok), "ms_per_iteration": med,
        "ms_min": min(ms), "ms_max": max(ms), "iterations": its, "requested": requested,
        "iterations_ok": iters_ok, "bytes_per_iteration": bytes_it, "bytes_source": source,
        "static_model_bytes_per_iteration": static,
        "gmres_refinements": first.get("gmres_refinements"),
        "gbps": bytes_it / (med * 1e-3) * 1e-9 if bytes_it else None,
        "relative_residual": statistics.median(rel) if rel else None,
        "residual": statistics.median(absolute) if absolute else None, "rows": rows,
        "tenax_reported_bytes_per_iteration": first.get("bytes_per_iteration"),
        "tenax_reported_gbps": first.get("gbps"),
        "tenax_status": first.get("status"),
    }


def table(cases, sizes, stream_gbps):
    summaries = {(c.pid, c.code): summarise(c, sizes) for c in cases}
    ref_code = {"P1": "tenax (csr)", "P2": "tenax (stencil)", "P1r": "tenax (csr, 2 ranks)",
                "P3": "tenax (csr)",
                "P4b": "tenax (csr)", "P4g": "tenax (csr)", "P5": None}
    lines = ["| problem | code | iterations | ms/iter | GB/s (model) | fraction of STREAM "
             "| tenax speed-up vs this peer | bytes/iter (model) | ‖b−Ax‖/‖b‖ |",
             "|---|---|---|---|---|---|---|---|---|"]
    rows_out = []
    # Unpreconditioned or constant-diagonal CG and left-preconditioned GMRES produce the same
    # iterates in every code (same A up to a scale, b, x0 = 0), so their residuals agree to many
    # digits: a check that all codes solve the same problem. BiCGSTAB is left-preconditioned in PETSc
    # and right-preconditioned in Eigen and SciPy, and amplifies rounding: no check there.
    reference_residual = {}
    for pid, ids in (("P1", ("P1",)), ("P2", ("P1",)), ("P1r", ("P1",)), ("P3", ("P3",)),
                     ("P4g", ("P4g",))):
        vals = [summaries[(c.pid, c.code)]["relative_residual"] for c in cases
                if c.pid in ids and c.family in ("petsc", "scipy", "eigen")
                and summaries.get((c.pid, c.code))
                and summaries[(c.pid, c.code)]["relative_residual"] is not None]
        if vals:
            reference_residual[pid] = statistics.median(vals)
    order = ["P1", "P2", "P1r", "P3", "P4b", "P4g", "P5"]
    for pid in order:
        p = sizes[problem_of(pid)]
        title = TITLES[pid].format(n=p["n"])
        group = [c for c in cases if c.pid == pid]
        if pid in ("P2", "P1r"):  # the PETSc row is P1's measurement, compared with this one
            group += [c for c in cases if c.pid == "P1" and c.family == "petsc"]
        if not group:
            continue
        ref = summaries.get((pid, ref_code[pid])) if ref_code[pid] else None
        for c in group:
            s = summaries.get((c.pid, c.code))
            label = c.code + (" (P1 run)" if pid == "P2" and c.pid == "P1" else "")
            if s is None:
                why = c.unavailable or "no result"
                lines.append(f"| {title} | {label} | not available: {why} | | | | | | |")
                rows_out.append({"problem": pid, "code": label, "available": False,
                                 "reason": why})
                continue
            it_txt = "/".join(str(i) for i in s["iterations"])
            if not s["iterations_ok"]:
                it_txt += f" ⚠ (asked {s['requested']})"
            ms_txt = f"{fmt(s['ms_per_iteration'])} ({fmt(s['ms_min'])}–{fmt(s['ms_max'])})"
            frac = s["gbps"] / stream_gbps if s["gbps"] and stream_gbps else None
            speedup = None
            if c.family == "tenax":
                speed = "—"
            elif ref is None:
                speed = "n/a (tenax not available)" if ref_code[pid] else "—"
            else:
                speedup = s["ms_per_iteration"] / ref["ms_per_iteration"]
                speed = f"{speedup:.2f}×"
            bytes_txt = (f"{s['bytes_per_iteration'] / 1e6:.0f} MB"
                         if s["bytes_per_iteration"] else "—")
            if s["bytes_source"] != "model":
                bytes_txt += f" ({s['bytes_source']})"
            res = s["relative_residual"]
            if res is not None:
                res_txt = f"{res:.6g}"
                ref_res = reference_residual.get(pid)
                # tenax's GMRES may precondition from the other side than PETSc and SciPy
                # (different iterates, same work): no check for it there.
                checked = not (c.family == "tenax" and pid == "P4g")
                if checked and ref_res and abs(res - ref_res) > 1e-4 * abs(ref_res):
                    res_txt += " ⚠ differs from the peers"
            elif s["residual"] is not None:
                res_txt = f"{s['residual']:.6g} (absolute)"
            else:
                res_txt = "—"
            lines.append(f"| {title} | {label} | {it_txt} | {ms_txt} | {fmt(s['gbps'])} | "
                         f"{f'{frac:.0%}' if frac is not None else '—'} | {speed} | "
                         f"{bytes_txt} | {res_txt} |")
            rows_out.append(dict(s, problem=pid, code=label, available=True,
                                 fraction_of_stream=frac, tenax_speedup=speedup))
    return "\n".join(lines), rows_out


# ---------------------------------------------------------------------------------------------


def versions(ctx):
    info = {"python_driver": platform.python_version(), "machine": platform.machine(),
            "nproc": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    add_package_versions(info, ("python3-petsc4py-real3.18", "python3-scipy", "libeigen3-dev",
                                "openmpi-bin"))
    return info


def add_package_versions(info, packages):
    """info[package] = its installed Debian version, for each of `packages` that dpkg knows."""
    for pkg in packages:
        try:
            v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                               text=True, timeout=10).stdout.strip()
            if v:
                info[pkg] = v
        except (OSError, subprocess.TimeoutExpired):
            pass


def main():
    intro, _, rest = __doc__.partition("\n\n")
    ap = argparse.ArgumentParser(description=" ".join(intro.split()),
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=rest)
    ap.add_argument("--build", default=os.path.join(REPO, "build"),
                    help="build directory holding bin/ (default: <repo>/build)")
    ap.add_argument("--tenax-bin", help="directory with tenax's poisson and heat2d "
                    "(default: <build>/bin)")
    ap.add_argument("--peer-bin", help="directory with peer_eigen_krylov and "
                    "peer_stream_triad (default: <build>/bin)")
    ap.add_argument("--peer-python", default="/usr/bin/python3" if os.path.exists(
        "/usr/bin/python3") else sys.executable,
        help="interpreter with petsc4py and scipy (default: /usr/bin/python3)")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--ranks", type=int, default=2, help="PETSc MPI ranks (default 2)")
    ap.add_argument("--bind", default="core", help="mpirun --bind-to value (default core)")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for tenax, Eigen and STREAM (default 2)")
    ap.add_argument("--plain-openmp", action="store_true",
                    help="run Eigen and STREAM without OMP_PROC_BIND/OMP_PLACES/"
                    "OMP_WAIT_POLICY=active")
    ap.add_argument("--plain-malloc", action="store_true",
                    help="run SciPy with glibc's default malloc thresholds")
    ap.add_argument("--reps", type=int, default=3, help="timed runs per code (default 3)")
    ap.add_argument("--codes", default="tenax,petsc,eigen,scipy")
    ap.add_argument("--only", help="problems to run, e.g. P1,P3 (P2 comes with P1, P4 is "
                    "P4b and P4g)")
    ap.add_argument("--quick", action="store_true",
                    help="small sizes, one repetition: checks the harness in a minute")
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--timeout", type=int, default=180, help="seconds per run (default 180)")
    ap.add_argument("--budget", type=float, default=570,
                    help="seconds for the whole run; later runs are skipped past it")
    ap.add_argument("--out", help="write the raw results and the table rows here (JSON)")
    ap.add_argument("-v", "--verbose", action="store_true", help="log each run on stderr")
    args = ap.parse_args()

    ctx = Ctx()
    ctx.tenax_bin = os.path.abspath(args.tenax_bin or os.path.join(args.build, "bin"))
    ctx.peer_bin = os.path.abspath(args.peer_bin or os.path.join(args.build, "bin"))
    ctx.peer_python, ctx.mpirun, ctx.ranks, ctx.bind = (args.peer_python, args.mpirun,
                                                        args.ranks, args.bind)
    ctx.threads, ctx.timeout, ctx.quick = args.threads, args.timeout, args.quick
    ctx.petsc_dir = find_petsc_dir()
    # Eigen (and STREAM) in their fastest setup here: threads pinned one per core, and kept
    # spinning between parallel regions. Eigen parallelises only the sparse product, with a
    # dynamic schedule; a helper thread that went to sleep during the serial vector work wakes
    # late (a halted vCPU on this VM) and the master takes most chunks itself: passive waiting
    # cost Eigen 5-20 % per CG iteration on P1.
    ctx.omp_env = {"OMP_NUM_THREADS": str(args.threads)}
    if not args.plain_openmp:
        ctx.omp_env.update(OMP_PROC_BIND="close", OMP_PLACES="cores", OMP_WAIT_POLICY="active")
    # SciPy allocates two result arrays per product with A. At N = 2048^2 each is exactly
    # 32 MiB, glibc's largest dynamic mmap threshold, so by default every one is a fresh
    # mapping whose 8192 pages fault in: +70 % per CG iteration on P1 (85 vs 50 ms). These
    # settings keep them on the heap, reused; smaller problems are not affected.
    ctx.scipy_env = {"OMP_NUM_THREADS": "1"}
    if not args.plain_malloc:
        ctx.scipy_env.update(MALLOC_MMAP_THRESHOLD_=str(1 << 32),
                             MALLOC_TRIM_THRESHOLD_=str(1 << 32),
                             MALLOC_TOP_PAD_=str(1 << 29))
    sizes = SMALL if args.quick else FULL
    reps = 1 if args.quick else args.reps
    codes = {c.strip() for c in args.codes.split(",") if c.strip()}

    cases = build_cases(codes)
    if args.only:
        wanted = set()
        for w in args.only.split(","):
            w = w.strip()
            wanted |= {"P1", "P2", "P1r"} if w in ("P1", "P2", "P1r") else {"P4b", "P4g"} if w == "P4" \
                else {w}
        cases = [c for c in cases if c.pid in wanted]

    runner = Runner(args)
    started = datetime.datetime.now().astimezone()
    print(f"bench/peers/run.py — {started:%Y-%m-%d %H:%M %Z}; tenax: {ctx.tenax_bin}; "
          f"peers: {ctx.peer_bin}; load average {loadavg()}", file=sys.stderr, flush=True)

    streams = [run_stream(runner, ctx, "stream (start)")]

    if not args.no_warmup:
        # Untimed, small: loads every binary and library once and finds codes that do not work.
        for c in cases:
            if c.unavailable:
                continue
            run_case(runner, ctx, c, SMALL, False, f"warm-up {c.pid} {c.code}")

    for rep in range(reps):
        live = [c for c in cases if not c.unavailable]
        if not live:
            break
        # Rotate the order so no code always runs first (or right after the same neighbour).
        k = rep % len(live)
        for c in live[k:] + live[:k]:
            if c.unavailable:
                continue
            if runner.remaining() < 5:
                c.skipped = True
                continue
            parsed = run_case(runner, ctx, c, sizes, True, f"rep {rep + 1} {c.pid} {c.code}")
            if parsed is not None:
                c.results.append(parsed)

    streams.append(run_stream(runner, ctx, "stream (end)"))
    good = [s for s in streams if "best_gbps" in s]
    stream_best = max((s["best_gbps"] for s in good), default=None)
    elapsed = now() - runner.t_start

    md, rows = table(cases, sizes, stream_best)
    print()
    print(f"## tenax vs peers — {started:%Y-%m-%d %H:%M}")
    print()
    if good:
        st = "; ".join(f"{s['label']}: best {s['best_gbps']:.1f} GB/s, median "
                       f"{s['median_gbps']:.1f} GB/s (load average {s['loadavg']})"
                       for s in good)
        nt = [s["nontemporal_best_gbps"] for s in good if s.get("nontemporal_best_gbps")]
        print(f"STREAM triad, {ctx.threads} threads, 24 B/element: {st}. "
              f"Denominator for 'fraction of STREAM': **{stream_best:.1f} GB/s** (the best).")
        if nt:
            print(f"The same triad with non-temporal stores (no write-allocate read of a; "
                  f"not the denominator): best {max(nt):.1f} GB/s.")
    else:
        print(f"STREAM triad not available ({streams[0].get('error')}): no fractions.")
    print()
    print(md)
    print()
    print(f"ms/iter: median of {reps} run(s) (min–max). GB/s: the row's bytes model "
          "(PROBLEMS.md) / ms per iteration. Speed-up: this peer's ms/iter / tenax's "
          "(>1: tenax faster). ‖b−Ax‖/‖b‖: recomputed by each peer after its solve; tenax's "
          "--json relative_residual. For CG, and for GMRES in PETSc and SciPy, the codes "
          "compute the same iterates: ⚠ marks a residual more than 1e-4 (relative) away from "
          "the peers' median, i.e. a different problem, not rounding.")
    print(f"Wall time {elapsed:.0f} s; load average at the end {loadavg()}.")
    skipped = [c for c in cases if getattr(c, "skipped", False)]
    if skipped:
        print(f"Skipped past the {args.budget:.0f} s budget: "
              + ", ".join(f"{c.pid} {c.code}" for c in skipped))

    if args.out:
        doc = {"started": started.isoformat(), "wall_s": elapsed, "argv": sys.argv,
               "sizes": sizes, "reps": reps, "beta_h": BETA_H, "restart": RESTART,
               "threads": ctx.threads, "ranks": ctx.ranks, "petsc_dir": ctx.petsc_dir,
               "openmp_env": ctx.omp_env, "scipy_env": ctx.scipy_env,
               "versions": versions(ctx), "stream": streams,
               "stream_denominator_gbps": stream_best, "rows": rows, "runs": runner.raw}
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"Raw results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
