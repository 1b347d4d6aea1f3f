// DiffusionSimulation: the integrator as a Workload gives the integrator's own bits for every
// scheme, the same bits on 1-3 thread ranks, rejects and reports a step that fails, resumes from
// its state, and refuses bad arguments.
#include "tenax/runtime/diffusion_simulation.hpp"

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
#include "tenax/solvers/laplacian_operator.hpp"

namespace tenax::runtime {
namespace {

using testing::on_thread_ranks;

constexpr std::int64_t kN = 101;  // 10201 points: 3 reduction blocks, ranges end inside rows
const double kH = 1.0 / static_cast<double>(kN + 1);

double initial(std::int64_t point) {
  const double x = static_cast<double>(point % kN + 1) * kH;
  const double y = static_cast<double>(point / kN + 1) * kH;
  return std::sin(3.0 * x) * (1.0 - y) + 0.25 * x * y;
}

solvers::IntegratorOptions scheme(solvers::TimeScheme s) {
  solvers::IntegratorOptions options;
  options.scheme = s;
  options.solver_options.tolerance = 1e-12;
  return options;
}

std::vector<std::uint64_t> bits_of(const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  std::vector<std::uint64_t> bits(static_cast<std::size_t>(host.numel()));
  std::memcpy(bits.data(), host.data(), bits.size() * sizeof(double));
  return bits;
}

constexpr solvers::TimeScheme kSchemes[] = {
    solvers::TimeScheme::explicit_euler, solvers::TimeScheme::rk4,
    solvers::TimeScheme::implicit_euler, solvers::TimeScheme::crank_nicolson};

// `steps` steps on `ranks` thread ranks (the distributed Laplacian for more than one); the whole
// field gathered.
std::vector<std::uint64_t> simulate(int ranks, solvers::TimeScheme s, int steps, double dt) {
  std::vector<std::uint64_t> result;
  const auto errors = on_thread_ranks(ranks, 60, [&](int rank, Communicator& comm) {
    solvers::OperatorPtr a;
    if (ranks > 1) {
      a = std::make_shared<const DistributedLaplacian2dOperator>(
          comm, kernels::block_aligned_range(kN * kN, comm.size(), comm.rank()), kN, kN, kH, kH);
    } else {
      a = std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH);
    }
    DiffusionSimulation sim(comm, a, 0.5, dt, scheme(s));
    sim.set_initial(initial);
    sim.init();
    for (int k = 0; k < steps; ++k) {
      sim.step(k, 1);
      sim.commit_step();
      ASSERT_EQ(sim.check(), std::nullopt);
    }
    EXPECT_EQ(sim.steps(), steps);
    EXPECT_DOUBLE_EQ(sim.time(), steps * dt);
    const Tensor whole = sim.field().gather();
    if (rank == 0) result = bits_of(whole);
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  return result;
}

TEST(DiffusionSimulation, GivesTheIntegratorsBitsForEveryScheme) {
  const double dt = 0.2 * kH * kH;  // within every explicit scheme's limit
  for (solvers::TimeScheme s : kSchemes) {
    SCOPED_TRACE(std::string(solvers::to_string(s)));
    // The integrator stepped by hand on the whole field.
    Tensor u = Tensor::empty({kN * kN}, DType::f64);
    for (std::int64_t p = 0; p < kN * kN; ++p) u.data_as<double>()[p] = initial(p);
    solvers::DiffusionIntegrator integrator(
        std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH), 0.5, scheme(s));
    for (int k = 0; k < 5; ++k) ASSERT_TRUE(integrator.step(u, dt).converged());
    const std::vector<std::uint64_t> expected = bits_of(u);
    EXPECT_EQ(simulate(1, s, 5, dt), expected);
    for (int ranks : {2, 3}) EXPECT_EQ(simulate(ranks, s, 5, dt), expected) << ranks << " ranks";
  }
}

TEST(DiffusionSimulation, AFailedStepIsReportedAndLeavesTheFieldAsItWas) {
  SingleRankCommunicator comm;
  solvers::IntegratorOptions options = scheme(solvers::TimeScheme::implicit_euler);
  options.solver_options.max_iterations = 1;  // a cold-ish solve cannot converge in one
  DiffusionSimulation sim(comm,
                          std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH), 0.5,
                          50.0 * kH * kH, options);
  sim.set_initial(initial);
  sim.init();
  const std::vector<std::uint64_t> before = bits_of(sim.field().local());
  const StateDict saved = sim.save_state();
  sim.step(0, 1);
  sim.commit_step();
  ASSERT_TRUE(sim.check().has_value());
  EXPECT_NE(sim.check()->find("implicit_euler step 1 ended with"), std::string::npos)
      << *sim.check();
  EXPECT_FALSE(sim.last_solve().converged());
  // What the Runner does next: the saved state back, the field as it was.
  sim.load_state(saved);
  EXPECT_EQ(bits_of(sim.field().local()), before);
  EXPECT_EQ(sim.steps(), 0);
  EXPECT_EQ(sim.check(), std::nullopt);
}

TEST(DiffusionSimulation, AnExplicitStepBeyondItsLimitIsCaughtAtItsFirstStep) {
  SingleRankCommunicator comm;
  DiffusionSimulation sim(comm,
                          std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH), 1.0,
                          10.0 * kH * kH / 4.0, scheme(solvers::TimeScheme::explicit_euler));
  sim.set_initial(initial);
  sim.init();
  sim.step(0, 1);
  sim.commit_step();
  ASSERT_TRUE(sim.check().has_value());
  EXPECT_NE(sim.check()->find("explicit_euler step 1 ended with diverged"), std::string::npos)
      << *sim.check();
  EXPECT_NE(sim.check()->find("stability limit"), std::string::npos) << *sim.check();
}

TEST(DiffusionSimulation, StateIsTheFieldSplitByTheOperatorsPartition) {
  const auto errors = on_thread_ranks(2, 30, [&](int rank, Communicator& comm) {
    const kernels::ShardRange range = kernels::block_aligned_range(kN * kN, 2, rank);
    DiffusionSimulation sim(
        comm, std::make_shared<const DistributedLaplacian2dOperator>(comm, range, kN, kN, kH, kH),
        0.5, kH * kH / 8, scheme(solvers::TimeScheme::rk4), "temperature");
    sim.init();
    const StateLayout layout = sim.state_layout();
    ASSERT_EQ(layout.shards.size(), 1u);
    EXPECT_EQ(layout.shards[0].name, "temperature");
    EXPECT_EQ(layout.shards[0].begin, range.first);
    EXPECT_EQ(layout.shards[0].end, range.first + range.count);
    EXPECT_EQ(layout.shards[0].extent, kN * kN);
    const StateDict state = sim.save_state();
    EXPECT_EQ(state.tensor("temperature").shape(), (Shape{range.count}));
    EXPECT_EQ(ops::max(state.tensor("temperature")), 0.0);  // no initial values: zeros
    // A state of another problem is refused, naming both shapes.
    StateDict other = state;
    other.set("temperature", Tensor::empty({range.count + 1}, DType::f64));
    try {
      sim.load_state(other);
      ADD_FAILURE() << "a field of another length was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("f64[" + std::to_string(range.count) + "]"),
                std::string::npos)
          << e.what();
    }
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
}

TEST(DiffusionSimulation, RefusesBadArguments) {
  SingleRankCommunicator comm;
  const auto a = std::make_shared<const solvers::Laplacian2dOperator>(kN, kN, kH, kH);
  for (double dt : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                    std::numeric_limits<double>::infinity()}) {
    EXPECT_THROW(DiffusionSimulation(comm, a, 1.0, dt), UsageError) << dt;
  }
  EXPECT_THROW(DiffusionSimulation(comm, nullptr, 1.0, 0.1), UsageError);
  EXPECT_THROW(DiffusionSimulation(comm, a, -1.0, 0.1), UsageError);  // the integrator's check
  EXPECT_THROW(DiffusionSimulation(comm, a, 1.0, 0.1, {}, ""), UsageError);
  EXPECT_THROW(static_cast<void>(DiffusionSimulation(comm, a, 1.0, 0.1).field()), UsageError);
  const auto errors = on_thread_ranks(2, 30, [&](int, Communicator& ranks) {
    try {
      DiffusionSimulation sim(ranks, a, 1.0, 0.1);
      ADD_FAILURE() << "a local operator on 2 ranks was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("local operator"), std::string::npos) << e.what();
    }
    // An operator over these ranks with another communicator.
    const auto spread = std::make_shared<const DistributedLaplacian2dOperator>(
        ranks, kernels::block_aligned_range(kN * kN, 2, ranks.rank()), kN, kN, kH, kH);
    SingleRankCommunicator other;
    try {
      DiffusionSimulation sim(other, spread, 1.0, 0.1);
      ADD_FAILURE() << "an operator over another communicator was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("another communicator"), std::string::npos) << e.what();
    }
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
}

}  // namespace
}  // namespace tenax::runtime
