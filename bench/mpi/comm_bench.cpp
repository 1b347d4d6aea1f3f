// bench_comm: the communicator against raw MPI in one run, under mpirun (bench/comm_bench.sh):
//  1. the step agreement (Communicator::agree, a 32-byte record per rank gathered and settled)
//     against a raw 8-byte MPI_Allreduce (target: <= 1.5x);
//  2. all_reduce of f32 tensors through the communicator against raw MPI_Allreduce at 1 KiB,
//     1 MiB and 64 MiB (target: <= 1.05x at >= 1 MiB);
//  3. the two agreements of a step against a heat2d-sized step of this rank (its rows of a
//     1024^2 grid, FTCS, halo exchange included) (target: <= 2 %);
//  4. a dot product of a vector split across the ranks with the single-process bits (ops::dot
//     inside ShardedReductions: the block partials' tree nodes gathered) against the usual
//     non-reproducible way (the local dot, then an 8-byte MPI_Allreduce), at 2^22 elements in
//     all (a CG vector of the 2048^2 Poisson problem) and at 4096 (latency only).
// Every pair is measured interleaved (A, B, A, B, ...) over repetitions after a warm-up; the
// medians are printed by rank 0, as Markdown rows for bench/RESULTS.md.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/sharded_reductions.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace tenax;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per call of `body` over `iterations` calls, started together on every rank.
double time_per_call(int iterations, const std::function<void()>& body) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) body();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
  // The slowest rank's time is the collective's.
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

struct Pair {
  double ours;
  double theirs;
};

Pair interleaved(int repetitions, int iterations, const std::function<void()>& ours,
                 const std::function<void()>& theirs) {
  time_per_call(iterations, ours);  // warm-up
  time_per_call(iterations, theirs);
  std::vector<double> a, b;
  for (int r = 0; r < repetitions; ++r) {
    a.push_back(time_per_call(iterations, ours));
    b.push_back(time_per_call(iterations, theirs));
  }
  return {median(a), median(b)};
}

}  // namespace

int main() {
  // The communicator initialises MPI as every tenax job does (with its settings), then the raw
  // calls use MPI_COMM_WORLD.
  auto comm = runtime::make_communicator(runtime::CommKind::mpi);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  constexpr int kRepetitions = 15;
  if (rank == 0) {
    std::printf("| measure (np %d) | tenax | raw MPI | ratio | target |\n|---|---|---|---|---|\n",
                size);
  }

  {
    runtime::StepProposal proposal;
    proposal.step = 1;
    long long value = 1;
    const Pair p = interleaved(
        kRepetitions, 2000, [&] { (void)comm->agree(proposal); },
        [&] { MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD); });
    if (rank == 0) {
      std::printf(
          "| step agreement vs 8-byte MPI_Allreduce | %.2f us | %.2f us | %.2fx | <= 1.5x |\n",
          1e6 * p.ours, 1e6 * p.theirs, p.ours / p.theirs);
    }
  }

  for (const std::int64_t bytes :
       {std::int64_t{1} << 10, std::int64_t{1} << 20, std::int64_t{64} << 20}) {
    const std::int64_t n = bytes / 4;
    Tensor ours = Tensor::empty({n}, DType::f32);
    Tensor theirs = Tensor::empty({n}, DType::f32);
    ops::fill(ours, 0.0);
    ops::fill(theirs, 0.0);
    const int iterations = bytes <= (1 << 10) ? 2000 : bytes <= (1 << 20) ? 200 : 5;
    const Pair p = interleaved(
        kRepetitions, iterations, [&] { comm->all_reduce(ours, runtime::ReduceOp::sum); },
        [&] {
          MPI_Allreduce(MPI_IN_PLACE, theirs.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        });
    if (rank == 0) {
      const std::string label = bytes < (1 << 20) ? std::to_string(bytes >> 10) + " KiB"
                                                  : std::to_string(bytes >> 20) + " MiB";
      std::printf("| all_reduce f32 %s | %.1f us | %.1f us | %.3fx | %s |\n", label.c_str(),
                  1e6 * p.ours, 1e6 * p.theirs, p.ours / p.theirs,
                  bytes >= (1 << 20) ? "<= 1.05x" : "-");
    }
  }

  {
    // This rank's rows of a 1024^2 grid with a halo row per neighbour, as heat2d holds them.
    const std::int64_t n = 1024;
    const std::int64_t rows = n / size;
    const std::int64_t top = rank > 0 ? 1 : 0;
    const std::int64_t slab_rows = rows + top + (rank + 1 < size ? 1 : 0);
    Tensor slab = Tensor::empty({slab_rows, n}, DType::f64);
    Tensor next = Tensor::empty({slab_rows, n}, DType::f64);
    ops::fill(slab, 1.0);
    const double h = 1.0 / static_cast<double>(n + 1);
    auto step = [&] {
      if (rank > 0) comm->send(slab.slice(top, top + 1), rank - 1, 1);
      if (rank + 1 < size) comm->send(slab.slice(top + rows - 1, top + rows), rank + 1, 2);
      if (rank > 0) comm->receive(slab.slice(0, 1), rank - 1, 2);
      if (rank + 1 < size) comm->receive(slab.slice(slab_rows - 1, slab_rows), rank + 1, 1);
      ops::laplacian_5pt_update(slab, next.slice(top, top + rows), top, 0.2 * h * h, h, h);
      std::swap(slab, next);
    };
    runtime::StepProposal proposal;
    proposal.step = 1;
    const Pair p = interleaved(
        kRepetitions, 50,
        [&] {
          (void)comm->agree(proposal);
          (void)comm->agree(proposal);
        },
        step);
    if (rank == 0) {
      std::printf(
          "| 2 agreements per step vs a heat2d 1024^2 step (its rows) | %.2f us | %.1f us "
          "| %.2f %% | <= 2 %% |\n",
          1e6 * p.ours, 1e6 * p.theirs, 100 * p.ours / p.theirs);
    }
  }
  for (const std::int64_t total : {std::int64_t{4096}, std::int64_t{1} << 22}) {
    const kernels::ShardRange range = kernels::block_aligned_range(total, size, rank);
    Tensor x = Tensor::empty({range.count}, DType::f64);
    ops::random_uniform(x, 1, static_cast<std::uint64_t>(range.first), -1.0, 1.0);
    double sink = 0;
    const int iterations = total <= 4096 ? 2000 : 50;
    const Pair p = interleaved(
        kRepetitions, iterations,
        [&] {
          runtime::ShardedReductions exact(*comm, range);
          sink += ops::dot(x, x);
        },
        [&] {
          double local = ops::dot(x, x);
          MPI_Allreduce(MPI_IN_PLACE, &local, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
          sink += local;
        });
    if (rank == 0) {
      std::printf(
          "| dot of %lld f64 split across ranks: single-process bits vs local dot + "
          "8-byte MPI_Allreduce | %.1f us | %.1f us | %.2fx | - |\n",
          static_cast<long long>(total), 1e6 * p.ours, 1e6 * p.theirs, p.ours / p.theirs);
    }
    if (sink == 1234.5) std::printf(" ");  // keeps the dots from being optimised away
  }
  comm.reset();
  return 0;  // MPI is finalised at exit
}
