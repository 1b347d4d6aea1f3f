// A heat step (FTCS, the 5-point Laplacian, zero Dirichlet boundaries) on an n x n f64 grid, two
// ways in one run: the library's hand-written sweep (ops::laplacian_5pt_update: AVX2 copy,
// prefetch hints) and the same arithmetic as a user kernel over a runtime::Grid
// (apply_stencil, the same *_point bodies, so the same bits). Both read the field once and write
// the new one once: 16 bytes per point; the counters report GB/s at that count. Target: the user
// kernel at >= 0.95x the hand-written sweep. Also the Gray-Scott step of examples/gray_scott.cpp
// (32 bytes per point) as a user kernel, and the halo exchange alone on one rank (periodic:
// local copies) for its share of a step. On two thread ranks, the Gray-Scott step and its
// exchange with the grid split into slabs of rows (argument 0) or into column blocks (1: the
// ghost columns packed through strided views, exchanged after the rows), for the price of a
// block split's exchange.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "tenax/kernels/detail/stencil_bodies.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/grid.hpp"
#include "tenax/runtime/stencil.hpp"

namespace {

using tenax::DType;
using tenax::Tensor;
namespace rt = tenax::runtime;

struct Ftcs {
  tenax::kernels::Laplacian2dCoefficients<double> c;
  double factor;
  template <class Field>
  TENAX_HD void operator()(const Field& u, double& out) const {
    const double center = u(0, 0);
    const double lap =
        tenax::kernels::laplacian_5pt_point(center, u(0, -1), u(0, 1), u(-1, 0), u(1, 0), c);
    out = tenax::kernels::explicit_update_point(center, lap, factor);
  }
};

struct GrayScott {
  double F, k, Du, Dv, dt;
  template <class Field>
  TENAX_HD void operator()(const Field& u, const Field& v, double& u_next, double& v_next) const {
    const double uc = u(0, 0);
    const double vc = v(0, 0);
    const double lap_u = (u(-1, 0) + u(1, 0)) + (u(0, -1) + u(0, 1)) - 4.0 * uc;
    const double lap_v = (v(-1, 0) + v(1, 0)) + (v(0, -1) + v(0, 1)) - 4.0 * vc;
    const double uvv = uc * vc * vc;
    u_next = uc + dt * (Du * lap_u - uvv + F * (1.0 - uc));
    v_next = vc + dt * (Dv * lap_v + uvv - (F + k) * vc);
  }
};

void set_bytes(benchmark::State& state, double bytes_per_point, std::int64_t n) {
  state.counters["GB/s"] = benchmark::Counter(
      bytes_per_point * static_cast<double>(n * n) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void BM_HeatHandWritten(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const Tensor u = Tensor::empty({n, n}, DType::f64);
  const Tensor out = Tensor::empty({n, n}, DType::f64);
  tenax::ops::fill(u, 1.0);
  const double h = 1.0 / static_cast<double>(n + 1);
  for (auto _ : state) {
    tenax::ops::laplacian_5pt_update(u, out, 0, 0.2 * h * h, h, h);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 16.0, n);
}

void BM_HeatUserKernel(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  rt::SingleRankCommunicator comm;
  const rt::Grid grid(comm, {.extents = {n, n}, .boundaries = {rt::Boundary::dirichlet(0.0)}});
  const Tensor u = grid.make_field(DType::f64);
  const Tensor out = grid.make_field(DType::f64);
  tenax::ops::fill(grid.owned(u), 1.0);
  grid.exchange({u});
  const double h = 1.0 / static_cast<double>(n + 1);
  const Ftcs kernel{tenax::kernels::laplacian_coefficients<double>(h, h), 0.2 * h * h};
  for (auto _ : state) {
    rt::apply_stencil<double>(grid, kernel, {u}, {out});
    benchmark::ClobberMemory();
  }
  set_bytes(state, 16.0, n);
}

void BM_GrayScottUserKernel(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  rt::SingleRankCommunicator comm;
  const rt::Grid grid(comm, {.extents = {n, n}});
  const Tensor u = grid.make_field(DType::f64);
  const Tensor v = grid.make_field(DType::f64);
  const Tensor un = grid.make_field(DType::f64);
  const Tensor vn = grid.make_field(DType::f64);
  tenax::ops::fill(grid.owned(u), 1.0);
  tenax::ops::fill(grid.owned(v), 0.25);
  const GrayScott kernel{0.037, 0.06, 0.16, 0.08, 1.0};
  for (auto _ : state) {
    grid.exchange({u, v});
    rt::apply_stencil<double>(grid, kernel, {u, v}, {un, vn});
    benchmark::ClobberMemory();
  }
  set_bytes(state, 32.0, n);
}

// StencilSimulation's whole step without the Runner: new fields from the pool, the exchange
// overlapped with the interior rows, the edge rows.
// Steps of a Gray-Scott StencilSimulation on `grid` (n x n), one per benchmark iteration. A rate
// counter is the mean over a benchmark's threads: each counts the whole grid's bytes per step.
void gray_scott_steps(benchmark::State& state, const rt::Grid& grid) {
  const std::int64_t n = state.range(0);
  rt::StencilSimulation<GrayScott, 2> sim(grid, tenax::Device::cpu(), {"u", "v"},
                                          GrayScott{0.037, 0.06, 0.16, 0.08, 1.0});
  sim.set_initial([](const std::int64_t*, double* uv) {
    uv[0] = 1.0;
    uv[1] = 0.25;
  });
  sim.init();
  std::int64_t step = 0;
  for (auto _ : state) {
    sim.step(step++, n);
    sim.commit_step();
  }
  set_bytes(state, 32.0, n);
}

void BM_GrayScottSimulationStep(benchmark::State& state) {
  rt::SingleRankCommunicator comm;
  gray_scott_steps(state, rt::Grid(comm, {.extents = {state.range(0), state.range(0)}}));
}

void BM_GrayScottHaloOnly(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  rt::SingleRankCommunicator comm;
  const rt::Grid grid(comm, {.extents = {n, n}});
  const Tensor u = grid.make_field(DType::f64);
  const Tensor v = grid.make_field(DType::f64);
  for (auto _ : state) {
    grid.exchange({u, v});
    benchmark::ClobberMemory();
  }
}

// Two thread ranks' communicators, made once and shared by the benchmark threads (the exchange's
// messages pair up within each iteration, so runs may reuse them).
std::shared_ptr<rt::Communicator> thread_rank(int rank) {
  static std::once_flag once;
  static std::vector<std::shared_ptr<rt::Communicator>> comms;
  std::call_once(once, [] { comms = rt::make_thread_communicators(2); });
  return comms[static_cast<std::size_t>(rank)];
}

// Grid of benchmark thread `state.thread_index()` of 2: rows split (range(1) 0) or columns (1).
rt::GridOptions split_options(const benchmark::State& state) {
  const std::int64_t n = state.range(0);
  return {.extents = {n, n},
          .ranks = state.range(1) == 0 ? std::vector<int>{2, 1} : std::vector<int>{1, 2}};
}

void BM_GrayScottStepTwoRanks(benchmark::State& state) {
  gray_scott_steps(state, rt::Grid(*thread_rank(state.thread_index()), split_options(state)));
}

void BM_GrayScottHaloTwoRanks(benchmark::State& state) {
  const rt::Grid grid(*thread_rank(state.thread_index()), split_options(state));
  const Tensor u = grid.make_field(DType::f64);
  const Tensor v = grid.make_field(DType::f64);
  for (auto _ : state) {
    grid.exchange({u, v});
    benchmark::ClobberMemory();
  }
}

BENCHMARK(BM_HeatHandWritten)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HeatUserKernel)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GrayScottUserKernel)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GrayScottSimulationStep)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GrayScottHaloOnly)->Arg(1024)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_GrayScottStepTwoRanks)
    ->Args({1024, 0})
    ->Args({1024, 1})
    ->Threads(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_GrayScottHaloTwoRanks)
    ->Args({1024, 0})
    ->Args({1024, 1})
    ->Threads(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
