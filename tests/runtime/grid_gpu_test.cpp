// Kernels of your own on CUDA: the same kernel source run over a grid's fields on the GPU and on
// the CPU (the reference) gives the same bits, on every boundary kind, for a one-step kernel and
// for StencilSimulation's steps (new fields, and the in-place blocked sweep of a small
// micro-batch), on one rank and on thread ranks that split the grid into blocks. Where the CUDA
// backend is built, CMake compiles this file with nvcc (the kernel's
// device code is instantiated here); without a usable GPU every test skips with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/grid.hpp"
#include "tenax/runtime/stencil.hpp"
#include "thread_ranks.hpp"

namespace tenax::runtime {
namespace {

using GridGpu = testing::GpuTest;

// A 9-point stencil with a reaction term: every neighbour and a nonlinear point term.
struct NinePoint {
  template <class Field>
  TENAX_HD void operator()(const Field& u, const Field& v, double& un, double& vn) const {
    const double edges = (u(-1, 0) + u(1, 0)) + (u(0, -1) + u(0, 1));
    const double corners = (u(-1, -1) + u(1, 1)) + (u(-1, 1) + u(1, -1));
    const double uvv = u(0, 0) * v(0, 0) * v(0, 0);
    un = u(0, 0) + 0.1 * (4.0 * edges + corners - 20.0 * u(0, 0)) / 6.0 - uvv;
    vn = v(0, 0) + 0.05 * ((v(-1, 0) + v(1, 0)) - 2.0 * v(0, 0)) + uvv - 0.06 * v(0, 0);
  }
};

// u and v after `steps` steps on `device` (micro-batch rows per step), gathered to the host of
// rank 0 (split: the grid's ranks per axis over `comm`; empty: the grid's choice).
std::vector<double> simulate_on(Communicator& comm, Device device, const Boundary& b,
                                std::int64_t micro_batch, int steps,
                                const std::vector<int>& split = {}) {
  const Grid grid(comm, {.extents = {67, 131}, .boundaries = {b}, .ranks = split});
  StencilSimulation<NinePoint, 2> sim(grid, device, {"u", "v"}, NinePoint{});
  sim.set_initial([](const std::int64_t* p, double* values) {
    values[0] = 1.0 + 0.25 * std::sin(0.1 * static_cast<double>(p[0] * 131 + p[1]));
    values[1] = 0.25 * std::cos(0.07 * static_cast<double>(p[0] + 3 * p[1]));
  });
  sim.init();
  for (int s = 0; s < steps; ++s) {
    sim.step(s, micro_batch);
    sim.commit_step();
  }
  std::vector<double> out;
  for (const char* name : {"u", "v"}) {
    const Tensor whole = grid.gather(sim.field(name));
    if (comm.rank() == 0) {
      out.insert(out.end(), whole.data_as<double>(), whole.data_as<double>() + whole.numel());
    }
  }
  return out;
}

std::vector<double> simulate(Device device, const Boundary& b, std::int64_t micro_batch,
                             int steps) {
  SingleRankCommunicator comm;
  return simulate_on(comm, device, b, micro_batch, steps);
}

TEST_F(GridGpu, AUserKernelGivesTheCpuBitsOnEveryBoundary) {
  for (const Boundary& b : {Boundary::periodic(), Boundary::dirichlet(0.5), Boundary::neumann()}) {
    SCOPED_TRACE(to_string(b));
    const std::vector<double> cpu = simulate(Device::cpu(), b, 1000, 20);
    EXPECT_EQ(simulate(gpu(), b, 1000, 20), cpu);
    // The in-place blocked sweep (the out-of-memory backoff) on the device.
    EXPECT_EQ(simulate(gpu(), b, 5, 20), cpu);
  }
}

TEST_F(GridGpu, BlocksOfThreadRanksOnTheDeviceGiveTheSingleRankCpuBits) {
  // Ranks sharing the device, the grid split into blocks: the ghost layers packed through views
  // on the device, exchanged axis after axis.
  const Boundary b = Boundary::dirichlet(0.5);
  const std::vector<double> cpu = simulate(Device::cpu(), b, 1000, 12);
  for (const std::vector<int>& split : {std::vector<int>{2, 2}, {1, 3}}) {
    for (const std::int64_t micro_batch : {1000, 5}) {
      std::vector<double> got;
      const auto errors = tenax::testing::on_thread_ranks(
          split[0] * split[1], 60, [&](int rank, Communicator& comm) {
            std::vector<double> mine = simulate_on(comm, gpu(), b, micro_batch, 12, split);
            if (rank == 0) got = std::move(mine);
          });
      for (const std::string& error : errors) EXPECT_EQ(error, "");
      EXPECT_EQ(got, cpu) << split[0] << " x " << split[1] << ", micro-batch " << micro_batch;
    }
  }
}

// A kernel that takes its point (a source varying in space) on a 3-D grid.
struct Source {
  template <class Field>
  TENAX_HD void operator()(const kernels::GridPoint& p, const Field& u, double& out) const {
    out = u(0, 0, 0) + 0.125 * (u(-1, 0, 0) + u(1, 0, 0) + u(0, -1, 0) + u(0, 1, 0)) +
          1e-3 * static_cast<double>(p[0] * 10000 + p[1] * 100 + p[2]);
  }
};

TEST_F(GridGpu, AKernelThatTakesItsPointGivesTheCpuBits) {
  SingleRankCommunicator comm;
  const Grid grid(comm, {.extents = {9, 6, 70}, .boundaries = {Boundary::dirichlet(0.25)}});
  std::vector<double> results[2];
  int k = 0;
  for (const Device device : {Device::cpu(), gpu()}) {
    const Tensor u = grid.make_field(DType::f64, device);
    const Tensor out = grid.make_field(DType::f64, device);
    Tensor whole = Tensor::empty({9, 6, 70}, DType::f64);
    for (std::int64_t i = 0; i < whole.numel(); ++i) whole.data_as<double>()[i] = std::sin(0.3 * i);
    grid.scatter(whole, u);
    grid.exchange({u});
    apply_stencil<double>(grid, Source{}, {u}, {out});
    const Tensor back = grid.gather(out);
    results[k++].assign(back.data_as<double>(), back.data_as<double>() + back.numel());
  }
  EXPECT_EQ(results[1], results[0]);
}

TEST_F(GridGpu, FieldsCrossBetweenTheDeviceAndTheHostWhole) {
  SingleRankCommunicator comm;
  const Grid grid(comm, {.extents = {5, 4, 3}, .ghost_width = 2});
  const Tensor field = grid.make_field(DType::f64, gpu());
  Tensor whole = Tensor::empty({5, 4, 3}, DType::f64);
  for (std::int64_t i = 0; i < whole.numel(); ++i) whole.data_as<double>()[i] = 0.5 * i;
  grid.scatter(whole, field);
  grid.exchange({field});
  const Tensor back = grid.gather(field);
  EXPECT_EQ(std::vector<double>(back.data_as<double>(), back.data_as<double>() + back.numel()),
            std::vector<double>(whole.data_as<double>(), whole.data_as<double>() + whole.numel()));
}

}  // namespace
}  // namespace tenax::runtime
