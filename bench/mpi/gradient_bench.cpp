// bench_gradients: combining f32 gradients across ranks, in one run under mpirun
// (bench/comm_bench.sh): the exact exchange (the single-process bits for any number of ranks:
// gradient trees over 16 grains per rank... see gradient_exchange.hpp) against the fast one
// (the communicator's native all-reduce) and a raw MPI_Allreduce, at 1 KiB to 64 MiB of
// gradients (target: exact <= 1.3x fast at >= 1 MiB). Each measured call includes what the
// exchange does in a training step: packing the parameters' gradients, the messages and the
// unpacking into the gradients. The trees are built before each timed call (that work is the
// backward pass's). Medians over interleaved repetitions, printed by rank 0 as Markdown rows.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/train/autodiff/grain.hpp"
#include "tenax/train/gradient_exchange.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace tenax;
namespace autodiff = train::autodiff;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The slowest rank's seconds for `body`, started together.
template <class Body>
double timed(Body&& body) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = Clock::now();
  body();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

}  // namespace

int main() {
  auto comm = runtime::make_communicator(runtime::CommKind::mpi);
  const int rank = comm->rank();
  const int size = comm->size();
  // 16 grains per rank: each rank's grains are one whole subtree when size is a power of two.
  const std::int64_t grains = 16 * size;
  const train::GrainRange mine = train::detail::grains_of_rank(grains, size, rank);
  if (rank == 0) {
    std::printf(
        "| f32 gradients (np %d) | exact | fast | raw MPI_Allreduce | exact / fast | "
        "target |\n|---|---|---|---|---|---|\n",
        size);
  }
  for (const std::int64_t bytes : {std::int64_t{1} << 10, std::int64_t{1} << 20,
                                   std::int64_t{16} << 20, std::int64_t{64} << 20}) {
    const std::int64_t n = bytes / 4;
    const autodiff::Variable parameter =
        autodiff::Variable::parameter(Tensor::empty({n}, DType::f32));
    Tensor grain_gradient = Tensor::empty({n}, DType::f32);
    ops::random_uniform(grain_gradient, 3, static_cast<std::uint64_t>(rank) * 7, -1.0, 1.0);
    Tensor raw = Tensor::empty({n}, DType::f32);
    ops::fill(raw, 1.0);
    const int repetitions = bytes >= (std::int64_t{16} << 20) ? 7 : 31;
    std::vector<double> exact, fast, mpi;
    for (int r = 0; r < repetitions + 2; ++r) {  // the first two are warm-up
      std::vector<autodiff::GrainScope::GradientTree> trees;
      {
        autodiff::GrainScope scope(1);
        for (std::int64_t g = mine.first; g < mine.end; ++g) {
          autodiff::GrainScope::add_gradient(parameter, grain_gradient, g);
        }
        trees = autodiff::GrainScope::take_gradients();
      }
      parameter.zero_grad();
      const double e = timed([&] {
        train::detail::ExactExchange exchange(*comm, std::move(trees), grains, {parameter});
        exchange.run(*comm);
      });
      const double f = timed([&] {
        train::detail::FastExchange exchange({parameter});
        exchange.run(*comm);
      });
      const double m = timed([&] {
        MPI_Allreduce(MPI_IN_PLACE, raw.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      });
      if (r >= 2) {
        exact.push_back(e);
        fast.push_back(f);
        mpi.push_back(m);
      }
    }
    if (rank == 0) {
      const std::string label = bytes < (1 << 20) ? std::to_string(bytes >> 10) + " KiB"
                                                  : std::to_string(bytes >> 20) + " MiB";
      std::printf("| %s | %.1f us | %.1f us | %.1f us | %.2fx | %s |\n", label.c_str(),
                  1e6 * median(exact), 1e6 * median(fast), 1e6 * median(mpi),
                  median(exact) / median(fast), bytes >= (1 << 20) ? "<= 1.3x" : "-");
    }
  }
  comm.reset();
  return 0;
}
