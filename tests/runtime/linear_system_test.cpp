// LinearSystem: a whole system's sizes and bytes (assembled and matrix-free), the checks of its
// parts, its rows split over 1 to 4 ranks of the threads communicator (each rank's A, b and
// solution are the whole system's rows, bit for bit, and the error and the gathered solution are
// the single-process ones), the bytes model, and the refusals.
#include "tenax/runtime/linear_system.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "runtime/thread_ranks.hpp"
#include "tenax/core/error.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/distributed_csr.hpp"
#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/laplacian_operator.hpp"
#include "tenax/solvers/manufactured.hpp"
#include "tenax/solvers/poisson.hpp"

namespace tenax::runtime {
namespace {

using tenax::testing::expect_usage_error;

using testing::bits;
using testing::make_tensor;

// n f64 values uniform in [-1, 1) from `seed`, as a CPU tensor.
Tensor random_vector(std::int64_t n, unsigned seed) {
  return make_tensor(testing::uniform_values(n, seed, -1.0, 1.0), DType::f64);
}

std::vector<std::string> run_ranks(int size, const std::function<void(int, Communicator&)>& body) {
  return testing::on_thread_ranks(size, 60, body);
}

// The manufactured Poisson system on an n x n grid, assembled.
LinearSystem poisson_system(std::int64_t n) {
  const double h = 1.0 / static_cast<double>(n + 1);
  const solvers::ManufacturedSolution u = solvers::manufactured_poisson(2, n);
  return whole_system(solvers::make_csr_operator(solvers::poisson_2d_csr(n, n, h, h)), u.rhs,
                      u.solution);
}

TEST(LinearSystem, AWholeSystemKnowsItsSizesAndTheBytesOfAProduct) {
  const LinearSystem system = poisson_system(20);
  const auto& csr = dynamic_cast<const solvers::CsrOperator&>(*system.a);
  EXPECT_EQ(system.rows, 400);
  EXPECT_EQ(system.nnz, 5 * 400 - 4 * 20);
  EXPECT_EQ(system.local_nnz, system.nnz);
  EXPECT_EQ(system.product_bytes, csr.matrix().product_bytes());
  EXPECT_GT(system.product_bytes, 0);
  EXPECT_EQ(system.range.first, 0);
  EXPECT_EQ(system.range.count, 400);
  EXPECT_EQ(system.range.total, 400);
  EXPECT_EQ(system.comm, nullptr);
  EXPECT_EQ(system.b.numel(), 400);
  ASSERT_TRUE(system.solution.has_value());
  EXPECT_EQ(system.solution->size(), 400u);

  // Matrix-free: no entries, no matrix bytes; the solution may be unknown.
  const solvers::OperatorPtr stencil =
      std::make_shared<solvers::Laplacian2dOperator>(20, 20, 1.0, 1.0, DType::f64);
  const LinearSystem free = whole_system(stencil, random_vector(400, 1));
  EXPECT_EQ(free.rows, 400);
  EXPECT_EQ(free.nnz, 0);
  EXPECT_EQ(free.product_bytes, 0);
  EXPECT_FALSE(free.solution.has_value());
}

TEST(LinearSystem, PartsThatDoNotFitTogetherAreRefused) {
  const solvers::OperatorPtr a = solvers::make_csr_operator(solvers::poisson_2d_csr(3, 4, 1, 1));
  expect_usage_error([] { (void)whole_system(nullptr, random_vector(3, 1)); },
                     "the operator is null", "operator A");
  expect_usage_error(
      [&] {
        const Tensor dense = Tensor::empty({2, 3}, DType::f64);
        ops::fill(dense, 1.0);
        (void)whole_system(solvers::make_csr_operator(CsrMatrix::from_dense(dense)),
                           random_vector(2, 1));
      },
      "A is 2 x 3", "square A");
  expect_usage_error([&] { (void)whole_system(a, random_vector(11, 1)); }, "b is f64[11] on cpu, A",
                     "cast b to A's dtype");
  expect_usage_error([&] { (void)whole_system(a, ops::cast(random_vector(12, 1), DType::f32)); },
                     "b is f32[12] on cpu", "cast b to A's dtype");
  expect_usage_error(
      [&] { (void)whole_system(a, random_vector(12, 1), std::vector<double>(5, 1.0)); },
      "the solution has 5 values, A has 12 rows", "one value per row of A");
}

TEST(LinearSystem, SolutionErrorIsTheLargestAndRootMeanSquareDifference) {
  const LinearSystem system = poisson_system(4);  // 16 rows
  const Tensor x = make_tensor(*system.solution, DType::f64);
  x.data_as<double>()[3] += 0.5;
  x.data_as<double>()[9] -= 0.25;
  const SolutionError error = solution_error(system, x);
  EXPECT_EQ(error.max, 0.5);
  EXPECT_DOUBLE_EQ(error.rms, std::sqrt((0.25 + 0.0625) / 16.0));
  const SolutionError exact = solution_error(system, make_tensor(*system.solution, DType::f64));
  EXPECT_EQ(exact.max, 0.0);
  EXPECT_EQ(exact.rms, 0.0);
  // Any floating dtype: x in f32 is measured in f64 (its rounding error, and no more).
  const SolutionError rounded = solution_error(system, make_tensor(*system.solution, DType::f32));
  EXPECT_GT(rounded.max, 0.0);
  EXPECT_LT(rounded.max, 1e-8);
  expect_usage_error([&] { (void)solution_error(system, random_vector(15, 1)); },
                     "x is f64[15] on cpu, the system has 16 rows", "this rank's rows");
  const LinearSystem unknown = whole_system(system.a, system.b);
  expect_usage_error([&] { (void)solution_error(unknown, x); }, "exact solution is not known",
                     "whole_system's third argument");
  EXPECT_EQ(gather_solution(system, x).data(), x.data()) << "a whole system's x itself";
}

// Four reduction blocks and a bit: 2, 3 and 4 ranks all hold rows, and the last a short range.
class SplitSystem : public ::testing::TestWithParam<int> {};

TEST_P(SplitSystem, EachRankHoldsItsRowsOfTheWholeSystemBitForBit) {
  const int ranks = GetParam();
  const std::int64_t n = 130;  // 16 900 rows
  const LinearSystem whole = poisson_system(n);
  const Tensor x = random_vector(whole.rows, 7);
  const Tensor ax = Tensor::empty({whole.rows}, DType::f64);
  whole.a->apply(x, ax);
  const SolutionError want = solution_error(whole, x);
  std::vector<std::int64_t> local_nnz(static_cast<std::size_t>(ranks));
  const auto errors = run_ranks(ranks, [&](int r, Communicator& comm) {
    const LinearSystem split = split_rows(whole, comm);
    const kernels::ShardRange range = kernels::block_aligned_range(whole.rows, ranks, r);
    EXPECT_EQ(split.range.first, range.first);
    EXPECT_EQ(split.range.count, range.count);
    EXPECT_EQ(split.rows, whole.rows);
    EXPECT_EQ(split.nnz, whole.nnz);
    local_nnz[static_cast<std::size_t>(r)] = split.local_nnz;
    if (ranks == 1) {
      EXPECT_EQ(split.comm, nullptr);
      EXPECT_EQ(split.a.get(), whole.a.get()) << "one rank: the whole system itself";
    } else {
      EXPECT_EQ(split.comm, &comm);
      EXPECT_NE(dynamic_cast<const DistributedCsrOperator*>(split.a.get()), nullptr);
    }
    // A, b and the solution are the whole system's rows.
    const Tensor xs = x.slice(range.first, range.first + range.count).clone();
    const Tensor ys = Tensor::empty({range.count}, DType::f64);
    split.a->apply(xs, ys);
    for (std::int64_t i = 0; i < range.count; ++i) {
      const std::int64_t g = range.first + i;
      ASSERT_EQ(bits(ys.data_as<double>()[i]), bits(ax.data_as<double>()[g])) << g;
      ASSERT_EQ(bits(split.b.data_as<double>()[i]), bits(whole.b.data_as<double>()[g])) << g;
      ASSERT_EQ(bits((*split.solution)[static_cast<std::size_t>(i)]),
                bits((*whole.solution)[static_cast<std::size_t>(g)]))
          << g;
    }
    // The error over the whole system and the gathered solution, as on one process.
    const SolutionError got = solution_error(split, xs);
    EXPECT_EQ(bits(got.max), bits(want.max)) << "rank " << r;
    EXPECT_EQ(bits(got.rms), bits(want.rms)) << "rank " << r;
    const Tensor gathered = gather_solution(split, xs);
    if (r == 0) {
      ASSERT_EQ(gathered.numel(), whole.rows);
      for (std::int64_t g = 0; g < whole.rows; ++g) {
        ASSERT_EQ(bits(gathered.data_as<double>()[g]), bits(x.data_as<double>()[g])) << g;
      }
    } else {
      EXPECT_FALSE(gathered.defined());
    }
    // The bytes of a product, all ranks together: the same on every rank.
    EXPECT_GT(split.product_bytes, 0);
  });
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << r;
  std::int64_t total = 0;
  for (const std::int64_t count : local_nnz) total += count;
  EXPECT_EQ(total, whole.nnz);
}

INSTANTIATE_TEST_SUITE_P(Ranks, SplitSystem, ::testing::Values(1, 2, 3, 4));

TEST(SplitSystem, MatrixFreeAndAlreadySplitSystemsAreRefused) {
  const solvers::OperatorPtr stencil =
      std::make_shared<solvers::Laplacian2dOperator>(70, 70, 1.0, 1.0, DType::f64);
  const LinearSystem free = whole_system(stencil, random_vector(4900, 1));
  const LinearSystem assembled = poisson_system(70);
  const auto errors = run_ranks(2, [&](int, Communicator& comm) {
    expect_usage_error([&] { (void)split_rows(free, comm); },
                       "only an assembled CSR matrix on the CPU is split by rows",
                       "assemble A (solvers::CsrOperator)");
    const LinearSystem split = split_rows(assembled, comm);
    expect_usage_error([&] { (void)split_rows(split, comm); },
                       "the system is already split over 2 ranks", "once");
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
}

TEST(LinearSystem, BytesPerIterationFollowTheSolversTrafficModel) {
  const LinearSystem system = poisson_system(50);  // 2500 rows
  for (const char* method : {"cg", "bicgstab", "gmres"}) {
    SCOPED_TRACE(method);
    const auto solver = solvers::make_solver(method, {.preconditioner = "jacobi"});
    const auto traffic = solver->iteration_traffic(30);
    ASSERT_TRUE(traffic.has_value());
    const double pass = 2500.0 * 8.0;
    EXPECT_EQ(bytes_per_iteration(system, *solver, 30),
              traffic->applies * (static_cast<double>(system.product_bytes) + 2 * pass) +
                  traffic->passes * pass);
    EXPECT_GT(bytes_per_iteration(system, *solver, 30), static_cast<double>(system.product_bytes));
  }
  const auto ilu = solvers::make_solver("cg", {.preconditioner = "ilu0"});
  EXPECT_EQ(bytes_per_iteration(system, *ilu, 30), 0.0) << "ILU(0) is not modelled";
}

}  // namespace
}  // namespace tenax::runtime
