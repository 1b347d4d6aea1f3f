// Kernels of your own on CUDA: the same kernel source run over a grid's fields on the GPU and on
// the CPU (the reference) gives the same bits, on every boundary kind, for a one-step kernel and
// for StencilSimulation's steps (new fields, and the in-place blocked sweep of a small
// micro-batch). Where the CUDA backend is built, CMake compiles this file with nvcc (the kernel's
// device code is instantiated here); without a usable GPU every test skips with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/gpu_comparison.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/grid.hpp"
#include "tenax/runtime/stencil.hpp"

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

// u and v after `steps` steps on `device` (micro-batch rows per step), gathered to the host.
std::vector<double> simulate(Device device, const Boundary& b, std::int64_t micro_batch,
                             int steps) {
  SingleRankCommunicator comm;
  const Grid grid(comm, {.extents = {67, 131}, .boundaries = {b}});
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
    out.insert(out.end(), whole.data_as<double>(), whole.data_as<double>() + whole.numel());
  }
  return out;
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
