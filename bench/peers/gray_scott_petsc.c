/* Gray-Scott reaction-diffusion, explicit Euler, on a periodic n x n grid: the PETSc peer of
 * tenax's gray_scott example (bench/peers/gray_scott.py compares them).
 *
 *   u' = Du lap(u) - u v^2 + F (1 - u)
 *   v' = Dv lap(v) + u v^2 - (F + k) v
 *
 * Grid spacing 1, the 5-point Laplacian, periodic both ways, f64, fields indexed [y][x].
 * Initial condition: u = 1, v = 0, except the square n/2 - n/10 <= x, y < n/2 + n/10 (integer
 * division) where u = 0.5 and v = 0.25; at every point both get the same + amp * (r - 0.5), as
 * tenax's examples/gray_scott.cpp does, with r uniform in [0, 1) from a counter-based hash of
 * (seed, global point index) (tenax uses its own generator), so the initial state does not
 * depend on the number of ranks and gray_scott_numpy.py draws the same numbers. -no_perturb
 * starts without the noise (for the cross-check of the peers).
 *
 * The PETSc way, written as a performance-minded user would for explicit Euler:
 *   - one DMDA, DMDACreate2d(DM_BOUNDARY_PERIODIC x2, DMDA_STENCIL_STAR, stencil width 1) with
 *     dof = 2 (u and v interleaved, accessed as Field **), as PETSc's own Gray-Scott tutorial
 *     (src/ts/tutorials/advection-diffusion-reaction/ex5.c) does. Two DMs with dof = 1 would
 *     need two ghost updates per step (twice the messages and scatter set-up per step, the same
 *     bytes) and two arrays whose u and v of one point lie in different cache lines; with dof = 2
 *     one DMGlobalToLocal per step fills the ghosts of both fields, and the update reads one
 *     stream and writes one.
 *   - a hand-written time loop: DMGlobalToLocalBegin/End into the ghosted local vector, then
 *     one pass over the owned points reading the local array (DMDAVecGetArrayRead) and writing
 *     U + dt f(U) straight into the global vector (DMDAVecGetArray): no second state vector, no
 *     VecAXPY. TS (TSEULER with an RHS function) would do the same scatter and loop plus a
 *     VecAXPY and a work vector per step, i.e. more memory traffic; it is not timed here.
 *
 * Options: -n N (1024) -steps S (timed steps, 200) -warmup W (10) -F -k -Du -Dv -dt -seed
 *          -amp (0.01) -no_perturb -output FILE (PETSc binary of the final state in natural
 *          order: n*n*2 doubles, [y][x][u,v]) -json (print the JSON line; it is printed anyway)
 * Timing: each timed step is timed on every rank with MPI_Wtime (the ghost exchange keeps the
 * ranks in step); a step's time is the maximum over the ranks; ms_per_step is the median over
 * the timed steps, as tenax's --json reports. bytes_per_step = 32 n^2 (u, v read + written,
 * the model shared with tenax; PETSc moves more: the scatter into the local vector reads and
 * writes the state once more).
 */
#include <petscdmda.h>

#include <stdint.h>
#include <stdlib.h>

typedef struct {
  PetscScalar u, v;
} Field;

/* splitmix64 of (seed, stream, index): the counter-based generator gray_scott_numpy.py repeats. */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static double uniform01(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t z = mix64(seed + 0x9e3779b97f4a7c15ULL * (2 * index + stream + 1));
  return (double)(z >> 11) * 0x1.0p-53;
}

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  DM da;
  Vec U, Uloc;
  Field** x;
  PetscInt n = 1024, steps = 200, warmup = 10, xs, ys, xm, ym, i, j, s;
  PetscReal F = 0.037, k = 0.06, Du = 0.16, Dv = 0.08, dt = 1.0, amp = 0.01;
  PetscInt seed = 42;
  PetscBool no_perturb = PETSC_FALSE, json = PETSC_TRUE, flg;
  char output[PETSC_MAX_PATH_LEN] = "";
  PetscMPIInt rank, size;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Gray-Scott explicit Euler", NULL);
  PetscCall(PetscOptionsInt("-n", "grid points per side", NULL, n, &n, NULL));
  PetscCall(PetscOptionsInt("-steps", "timed steps", NULL, steps, &steps, NULL));
  PetscCall(PetscOptionsInt("-warmup", "untimed steps first", NULL, warmup, &warmup, NULL));
  PetscCall(PetscOptionsReal("-F", "feed rate", NULL, F, &F, NULL));
  PetscCall(PetscOptionsReal("-k", "kill rate", NULL, k, &k, NULL));
  PetscCall(PetscOptionsReal("-Du", "diffusion of u", NULL, Du, &Du, NULL));
  PetscCall(PetscOptionsReal("-Dv", "diffusion of v", NULL, Dv, &Dv, NULL));
  PetscCall(PetscOptionsReal("-dt", "time step", NULL, dt, &dt, NULL));
  PetscCall(PetscOptionsInt("-seed", "perturbation seed", NULL, seed, &seed, NULL));
  PetscCall(PetscOptionsReal("-amp", "perturbation amplitude", NULL, amp, &amp, NULL));
  PetscCall(PetscOptionsBool("-no_perturb", "no random perturbation", NULL, no_perturb, &no_perturb,
                             NULL));
  PetscCall(PetscOptionsString("-output", "final state, PETSc binary", NULL, output, output,
                               sizeof(output), &flg));
  PetscCall(PetscOptionsBool("-json", "print the JSON line (it is printed anyway)", NULL, json,
                             &json, NULL));
  PetscOptionsEnd();
  PetscCheck(n >= 3, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be at least 3");
  PetscCheck(steps >= 1 && warmup >= 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE,
             "-steps >= 1, -warmup >= 0");

  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC,
                         DMDA_STENCIL_STAR, n, n, PETSC_DECIDE, PETSC_DECIDE, 2, 1, NULL, NULL,
                         &da));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  PetscCall(DMDASetFieldName(da, 0, "u"));
  PetscCall(DMDASetFieldName(da, 1, "v"));
  PetscCall(DMCreateGlobalVector(da, &U));
  PetscCall(DMCreateLocalVector(da, &Uloc));
  PetscCall(DMDAGetCorners(da, &xs, &ys, NULL, &xm, &ym, NULL));

  /* Initial condition. */
  {
    const PetscInt lo = n / 2 - n / 10, hi = n / 2 + n / 10;
    PetscCall(DMDAVecGetArray(da, U, &x));
    for (j = ys; j < ys + ym; j++) {
      for (i = xs; i < xs + xm; i++) {
        const PetscBool square = i >= lo && i < hi && j >= lo && j < hi;
        const uint64_t g = (uint64_t)j * (uint64_t)n + (uint64_t)i;
        const double noise = no_perturb ? 0.0 : amp * (uniform01((uint64_t)seed, 0, g) - 0.5);
        x[j][i].u = (square ? 0.5 : 1.0) + noise;
        x[j][i].v = (square ? 0.25 : 0.0) + noise;
      }
    }
    PetscCall(DMDAVecRestoreArray(da, U, &x));
  }

  double* step_s;
  PetscCall(PetscMalloc1(steps, &step_s));
  double t_total = 0.0;
  for (s = -warmup; s < steps; s++) {
    const Field** xl;
    const double t0 = MPI_Wtime();
    PetscCall(DMGlobalToLocalBegin(da, U, INSERT_VALUES, Uloc));
    PetscCall(DMGlobalToLocalEnd(da, U, INSERT_VALUES, Uloc));
    PetscCall(DMDAVecGetArrayRead(da, Uloc, &xl));
    PetscCall(DMDAVecGetArray(da, U, &x));
    for (j = ys; j < ys + ym; j++) {
      const Field *row = xl[j], *south = xl[j - 1], *north = xl[j + 1];
      Field* out = x[j];
      for (i = xs; i < xs + xm; i++) {
        const PetscScalar u = row[i].u, v = row[i].v;
        const PetscScalar lu = row[i - 1].u + row[i + 1].u + south[i].u + north[i].u - 4.0 * u;
        const PetscScalar lv = row[i - 1].v + row[i + 1].v + south[i].v + north[i].v - 4.0 * v;
        const PetscScalar uvv = u * v * v;
        out[i].u = u + dt * (Du * lu - uvv + F * (1.0 - u));
        out[i].v = v + dt * (Dv * lv + uvv - (F + k) * v);
      }
    }
    PetscCall(DMDAVecRestoreArray(da, U, &x));
    PetscCall(DMDAVecRestoreArrayRead(da, Uloc, &xl));
    const double t1 = MPI_Wtime();
    if (s >= 0) {
      step_s[s] = t1 - t0;
      t_total += t1 - t0;
    }
  }
  /* A step took as long as its slowest rank. */
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, step_s, (PetscMPIInt)steps, MPI_DOUBLE, MPI_MAX,
                             PETSC_COMM_WORLD));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &t_total, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD));
  qsort(step_s, (size_t)steps, sizeof(double), cmp_double);
  const double median_s =
      steps % 2 ? step_s[steps / 2] : 0.5 * (step_s[steps / 2 - 1] + step_s[steps / 2]);
  const double min_s = step_s[0];

  /* Checks of the final state: finite, and sums for a quick comparison between codes. */
  PetscReal sums[2], vmin, vmax;
  PetscCall(VecStrideSum(U, 0, &sums[0]));
  PetscCall(VecStrideSum(U, 1, &sums[1]));
  PetscCall(VecStrideMin(U, 1, NULL, &vmin));
  PetscCall(VecStrideMax(U, 1, NULL, &vmax));
  if (output[0]) {
    PetscViewer viewer;
    PetscCall(PetscViewerCreate(PETSC_COMM_WORLD, &viewer));
    PetscCall(PetscViewerSetType(viewer, PETSCVIEWERBINARY));
    PetscCall(PetscViewerFileSetMode(viewer, FILE_MODE_WRITE));
    PetscCall(PetscViewerBinarySetSkipInfo(viewer, PETSC_TRUE));
    PetscCall(PetscViewerFileSetName(viewer, output));
    PetscCall(VecView(U, viewer)); /* a DMDA vector is written in natural order: [y][x][u,v] */
    PetscCall(PetscViewerDestroy(&viewer));
  }

  const double bytes = 32.0 * (double)n * (double)n;
  PetscInt px, py;
  PetscCall(
      DMDAGetInfo(da, NULL, NULL, NULL, NULL, &px, &py, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "gray_scott_petsc: n=%" PetscInt_FMT " ranks=%d (%" PetscInt_FMT
                        "x%" PetscInt_FMT ") steps=%" PetscInt_FMT " (+%" PetscInt_FMT
                        " warm-up): median %.4f ms/step, sum u %.12e, sum v %.12e\n",
                        n, size, px, py, steps, warmup, 1e3 * median_s, (double)sums[0],
                        (double)sums[1]));
  PetscCall(
      PetscPrintf(PETSC_COMM_WORLD,
                  "{\"code\": \"petsc\", \"n\": %" PetscInt_FMT ", \"steps\": %" PetscInt_FMT
                  ", \"warmup\": %" PetscInt_FMT
                  ", \"ranks\": %d, \"ms_per_step\": %.6f, \"ms_per_step_min\": %.6f, "
                  "\"ms_per_step_mean\": %.6f, \"bytes_per_step\": %.0f, \"gbps\": %.3f, "
                  "\"sum_u\": %.15e, \"sum_v\": %.15e, \"min_v\": %.15e, \"max_v\": %.15e, "
                  "\"perturb\": %s, \"finite\": %s}\n",
                  n, steps, warmup, size, 1e3 * median_s, 1e3 * min_s,
                  1e3 * t_total / (double)steps, bytes, bytes / median_s * 1e-9, (double)sums[0],
                  (double)sums[1], (double)vmin, (double)vmax, no_perturb ? "false" : "true",
                  PetscIsInfOrNanReal(sums[0]) || PetscIsInfOrNanReal(sums[1]) ? "false" : "true"));

  PetscCall(PetscFree(step_s));
  PetscCall(VecDestroy(&Uloc));
  PetscCall(VecDestroy(&U));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
