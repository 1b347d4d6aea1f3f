// KrylovSolve: a Krylov solve as a Workload gives the solver's own iterates, resumes from its
// state with the history of an uninterrupted solve, gives the single-rank bits on 2 and 3 thread
// ranks, calls the caller's monitor, and refuses bad arguments.
#include "tenax/runtime/krylov_solve.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "runtime/thread_ranks.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/distributed_laplacian.hpp"
#include "tenax/runtime/distributed_vector.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/laplacian_operator.hpp"

namespace tenax::runtime {
namespace {

using testing::on_thread_ranks;

constexpr std::int64_t kN = 101;  // 10201 rows: 3 reduction blocks, ranges end inside grid rows
const double kH = 1.0 / static_cast<double>(kN + 1);

Tensor rhs(const kernels::ShardRange& range) {
  Tensor b = Tensor::empty({range.count}, DType::f64);
  for (std::int64_t k = 0; k < range.count; ++k) {
    const std::int64_t p = range.first + k;
    b.data_as<double>()[k] = 1.0 + std::sin(0.01 * static_cast<double>(p));
  }
  return b;
}

std::vector<std::uint64_t> bits_of(const Tensor& t) {
  std::vector<std::uint64_t> bits(static_cast<std::size_t>(t.numel()));
  std::memcpy(bits.data(), t.data(), bits.size() * sizeof(double));
  return bits;
}

solvers::SolverOptions options(std::int64_t max_iterations = 1000) {
  solvers::SolverOptions o;
  o.tolerance = 1e-9;
  o.max_iterations = max_iterations;
  return o;
}

// Runs the workload's steps by hand until it finishes.
void run(KrylovSolve& solve) {
  for (std::int64_t s = 0; !solve.finished(); ++s) {
    solve.step(s, 1);
    solve.commit_step();
  }
}

TEST(KrylovSolve, GivesTheSolversOwnIterates) {
  const kernels::ShardRange all{0, kN * kN, kN * kN};
  const auto a = std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH);
  for (const char* method : {"cg", "bicgstab", "gmres"}) {
    SCOPED_TRACE(method);
    Tensor x = Tensor::empty({kN * kN}, DType::f64);
    ops::fill(x, 0.0);
    const solvers::SolveResult expected =
        solvers::make_solver(method, options())->solve(a, rhs(all), x);
    KrylovSolve solve(a, rhs(all), method, options(), 7);
    solve.init();
    run(solve);
    EXPECT_EQ(solve.result().iterations, expected.iterations);
    EXPECT_EQ(bits_of(solve.solution()), bits_of(x));
    EXPECT_EQ(solve.residual_history().numel(), expected.iterations + 1);
    EXPECT_EQ(solve.step_metrics()[1].value, static_cast<double>(expected.iterations));
  }
}

TEST(KrylovSolve, ResumesWithTheHistoryOfAnUninterruptedSolve) {
  const kernels::ShardRange all{0, kN * kN, kN * kN};
  const auto a = std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH);
  KrylovSolve whole(a, rhs(all), "cg", options(), 5);
  whole.init();
  run(whole);
  KrylovSolve first(a, rhs(all), "cg", options(), 5);
  first.init();
  for (int s = 0; s < 4; ++s) {
    first.step(s, 1);
    first.commit_step();
  }
  const StateDict saved = first.save_state();
  KrylovSolve second(a, rhs(all), "cg", options(), 5);
  second.load_state(saved);
  EXPECT_EQ(second.result().iterations, 20);
  run(second);
  EXPECT_EQ(bits_of(second.solution()), bits_of(whole.solution()));
  EXPECT_EQ(bits_of(second.residual_history()), bits_of(whole.residual_history()));
  // A damaged history is refused.
  StateDict damaged = saved;
  damaged.set("residual_history", Tensor::empty({3}, DType::f64));
  KrylovSolve third(a, rhs(all), "cg", options(), 5);
  EXPECT_THROW(third.load_state(damaged), UsageError);
}

TEST(KrylovSolve, RanksGiveTheSingleRankBits) {
  const kernels::ShardRange all{0, kN * kN, kN * kN};
  KrylovSolve single(std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH), rhs(all),
                     "cg", options(), 10);
  single.init();
  run(single);
  for (int ranks : {2, 3}) {
    std::vector<std::uint64_t> gathered;
    const auto errors = on_thread_ranks(ranks, 60, [&](int rank, Communicator& comm) {
      const kernels::ShardRange range = kernels::block_aligned_range(kN * kN, ranks, rank);
      KrylovSolve solve(
          std::make_shared<const DistributedLaplacian2dOperator>(comm, range, kN, kN, kH, kH),
          rhs(range), "cg", options(), 10);
      const StateLayout layout = solve.state_layout();
      EXPECT_FALSE(layout.shards.empty());
      for (const io::TensorShard& shard : layout.shards) {
        EXPECT_EQ(shard.begin, range.first) << shard.name;
        EXPECT_EQ(shard.end, range.first + range.count) << shard.name;
      }
      solve.init();
      run(solve);
      const Tensor whole = DistributedVector(comm, range, solve.solution()).gather();
      if (rank == 0) gathered = bits_of(whole);
    });
    for (const std::string& error : errors) EXPECT_EQ(error, "");
    EXPECT_EQ(gathered, bits_of(single.solution())) << ranks << " ranks";
  }
}

TEST(KrylovSolve, CallsTheCallersMonitorAfterItsOwnHistory) {
  const kernels::ShardRange all{0, kN * kN, kN * kN};
  std::vector<std::int64_t> seen;
  solvers::SolverOptions o = options();
  o.monitor = [&seen](const solvers::ResidualRecord& r) { seen.push_back(r.iteration); };
  KrylovSolve solve(std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH), rhs(all),
                    "cg", o, 50);
  solve.init();
  run(solve);
  ASSERT_EQ(static_cast<std::int64_t>(seen.size()), solve.result().iterations + 1);
  EXPECT_EQ(seen.front(), 0);
  EXPECT_EQ(seen.back(), solve.result().iterations);
  EXPECT_EQ(solve.residual_history().numel(), solve.result().iterations + 1);
}

TEST(KrylovSolve, StepsToTheIterationLimitRoundUpWithoutOverflow) {
  const kernels::ShardRange all{0, kN * kN, kN * kN};
  const auto a = std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH);
  EXPECT_EQ(KrylovSolve(a, rhs(all), "cg", options(10), 3).steps_to_iteration_limit(), 4);
  EXPECT_EQ(KrylovSolve(a, rhs(all), "cg", options(9), 3).steps_to_iteration_limit(), 3);
  EXPECT_EQ(KrylovSolve(a, rhs(all), "cg", options(0), 3).steps_to_iteration_limit(), 1);
  const std::int64_t most = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(KrylovSolve(a, rhs(all), "cg", options(most), 10).steps_to_iteration_limit(),
            most / 10 + 1);
}

TEST(KrylovSolve, ANonFiniteRightHandSideStopsTheSolveAtOnceSayingSo) {
  const kernels::ShardRange all{0, kN * kN, kN * kN};
  Tensor b = rhs(all);
  b.data_as<double>()[123] = std::numeric_limits<double>::quiet_NaN();
  KrylovSolve solve(std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH), b, "cg",
                    options(), 10);
  solve.init();
  EXPECT_TRUE(solve.finished());
  EXPECT_EQ(solve.result().status, solvers::SolveStatus::non_finite);
  EXPECT_EQ(solve.result().iterations, 0);
}

TEST(KrylovSolve, RefusesBadArguments) {
  const kernels::ShardRange all{0, kN * kN, kN * kN};
  const auto a = std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH);
  EXPECT_THROW(KrylovSolve(nullptr, rhs(all), "cg"), UsageError);
  EXPECT_THROW(KrylovSolve(a, rhs(all), "cg", options(), 0), UsageError);
  EXPECT_THROW(KrylovSolve(a, rhs(all), "lsqr"), UsageError);
  EXPECT_THROW(KrylovSolve(a, Tensor::empty({5}, DType::f64), "cg"), UsageError);
  EXPECT_THROW(KrylovSolve(a, Tensor::empty({kN * kN}, DType::f32), "cg"), UsageError);
  KrylovSolve idle(a, rhs(all), "cg");
  EXPECT_THROW(idle.step(0, 1), UsageError);  // before init()
}

}  // namespace
}  // namespace tenax::runtime
