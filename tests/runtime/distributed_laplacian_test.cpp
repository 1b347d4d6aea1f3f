// The distributed 5-point Laplacian with the threads communicator at 1 to 4 ranks: each rank's
// points of y = A x and of x.(A x) carry the single-process bits of Laplacian2dOperator, on grids
// whose rank boundaries fall inside grid rows and whose rows are longer than a rank's share (so
// a rank's ghosts come from several ranks); and the heat integrators (explicit Euler, RK4,
// implicit Euler, Crank-Nicolson with CG) step a sharded field with the single-process bits, with
// no scope in the caller: the operator's partition makes the reductions global.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/shard_vectors.hpp"
#include "runtime/thread_ranks.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/distributed_laplacian.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/time_integrator.hpp"

namespace tenax::runtime {
namespace {

using kernels::ShardRange;

using testing::bits;
using testing::random_vector;

void expect_no_errors(const std::vector<std::string>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

struct Grid {
  std::int64_t ny;
  std::int64_t nx;
};

class DistributedLaplacian : public ::testing::TestWithParam<int> {};

TEST_P(DistributedLaplacian, ProductAndDotHaveTheSingleProcessBits) {
  const int ranks = GetParam();
  // Rank boundaries inside rows; rows longer than a block (ghosts from two ranks away); one row;
  // one column; a grid smaller than a block (ranks beyond the first hold nothing).
  for (const Grid g : {Grid{40, 301}, Grid{3, 5000}, Grid{1, 9000}, Grid{9000, 1}, Grid{7, 9}}) {
    SCOPED_TRACE("grid " + std::to_string(g.ny) + " x " + std::to_string(g.nx));
    const std::int64_t n = g.ny * g.nx;
    const double hy = 1.0 / static_cast<double>(g.ny + 1);
    const double hx = 1.0 / static_cast<double>(g.nx + 1);
    const Tensor x = random_vector(n, 11);
    Tensor y = Tensor::empty({n}, DType::f64);
    const solvers::Laplacian2dOperator whole(g.ny, g.nx, hy, hx);
    const double dot = whole.apply_dot(x, y);
    expect_no_errors(testing::on_thread_ranks(ranks, 60, [&](int r, Communicator& comm) {
      const ShardRange range = kernels::block_aligned_range(n, ranks, r);
      const DistributedLaplacian2dOperator op(comm, range, g.ny, g.nx, hy, hx);
      const Tensor xs = x.slice(range.first, range.first + range.count).clone();
      Tensor ys = Tensor::empty({range.count}, DType::f64);
      for (int repeat = 0; repeat < 2; ++repeat) {  // the buffers are reused
        ops::fill(ys, 0.0);
        const double mine = op.apply_dot(xs, ys);
        ASSERT_EQ(bits(mine), bits(dot)) << "x.(A x) on rank " << r;
        for (std::int64_t i = 0; i < range.count; ++i) {
          ASSERT_EQ(bits(ys.data_as<double>()[i]), bits(y.data_as<double>()[range.first + i]))
              << "point " << range.first + i << " on rank " << r;
        }
      }
      op.apply(xs, ys);
      for (std::int64_t i = 0; i < range.count; ++i) {
        ASSERT_EQ(bits(ys.data_as<double>()[i]), bits(y.data_as<double>()[range.first + i]));
      }
      const Tensor d = op.diagonal();
      const Tensor dw = whole.diagonal();
      for (std::int64_t i = 0; i < range.count; ++i) {
        ASSERT_EQ(bits(d.data_as<double>()[i]), bits(dw.data_as<double>()[range.first + i]));
      }
      if (ranks > 1 && range.count > 0 && range.count < n) {
        EXPECT_GT(op.ghost_count(), 0) << op.describe();
      }
    }));
  }
}

TEST_P(DistributedLaplacian, HeatIntegratorsStepTheShardsWithTheSingleProcessBits) {
  const int ranks = GetParam();
  const std::int64_t ny = 70;
  const std::int64_t nx = 190;  // 13300 points: four blocks, boundaries inside rows
  const std::int64_t n = ny * nx;
  const double h = 1.0 / 71.0;
  for (const char* scheme : {"explicit_euler", "rk4", "implicit_euler", "crank_nicolson"}) {
    SCOPED_TRACE(scheme);
    solvers::IntegratorOptions options;
    options.scheme = solvers::time_scheme_from_string(scheme);
    options.solver_options.tolerance = 1e-10;
    const double dt =
        std::string(scheme).find("explicit") != std::string::npos || std::string(scheme) == "rk4"
            ? 0.2 * h * h
            : 5 * h * h;
    Tensor u = random_vector(n, 21);
    const Tensor u0 = u.clone();
    solvers::DiffusionIntegrator single = solvers::make_heat_integrator(ny, nx, h, h, 1.0, options);
    std::vector<std::int64_t> iterations;
    for (int step = 0; step < 4; ++step) {
      const solvers::SolveResult result = single.step(u, dt);
      ASSERT_TRUE(result.converged()) << result.detail;
      iterations.push_back(result.iterations);
    }
    expect_no_errors(testing::on_thread_ranks(ranks, 60, [&](int r, Communicator& comm) {
      const ShardRange range = kernels::block_aligned_range(n, ranks, r);
      solvers::DiffusionIntegrator mine(
          std::make_shared<const DistributedLaplacian2dOperator>(comm, range, ny, nx, h, h), 1.0,
          options);
      const Tensor us = u0.slice(range.first, range.first + range.count).clone();
      for (int step = 0; step < 4; ++step) {
        const solvers::SolveResult result = mine.step(us, dt);
        ASSERT_TRUE(result.converged()) << result.detail;
        EXPECT_EQ(result.iterations, iterations[static_cast<std::size_t>(step)]) << "rank " << r;
      }
      for (std::int64_t i = 0; i < range.count; ++i) {
        ASSERT_EQ(bits(us.data_as<double>()[i]), bits(u.data_as<double>()[range.first + i]))
            << "u[" << range.first + i << "] on rank " << r;
      }
    }));
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, DistributedLaplacian, ::testing::Values(1, 2, 3, 4));

TEST(DistributedLaplacianMisuse, GridsThatDoNotMatchTheRangesAreUsageErrors) {
  auto comm = make_thread_communicators(1, CommOptions{})[0];
  const ShardRange range = kernels::block_aligned_range(100, 1, 0);
  for (const Grid g : {Grid{9, 10}, Grid{0, 100}, Grid{100, 0}, Grid{-10, -10}}) {
    try {
      DistributedLaplacian2dOperator op(*comm, range, g.ny, g.nx, 0.1, 0.1);
      FAIL() << "a " << g.ny << " x " << g.nx << " grid over 100 points was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("ny * nx"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(DistributedLaplacian2dOperator(*comm, range, 10, 10, 0.0, 0.1), UsageError);
  EXPECT_THROW(DistributedLaplacian2dOperator(*comm, range, 10, 10, 0.1, -1.0), UsageError);
  const auto errors = testing::on_thread_ranks(2, 60, [&](int, Communicator& c) {
    // Both ranks claim the first half: the points are not tiled.
    DistributedLaplacian2dOperator op(c, kernels::block_aligned_range(10000, 2, 0), 100, 100, 0.1,
                                      0.1);
  });
  for (const std::string& e : errors) EXPECT_NE(e.find("expected"), std::string::npos) << e;
}

}  // namespace
}  // namespace tenax::runtime
