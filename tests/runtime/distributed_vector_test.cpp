// runtime::DistributedVector with the threads communicator at 1 to 5 ranks: dot, nrm2, sum, max
// and count_nonfinite are global by construction and bitwise the single-process reductions over
// the whole vector, for uneven ranges and empty ranks; a Krylov solve on a distributed operator
// with no scope in the caller has the single-process bits; and the misuse that used to be silent
// (a local reduction of a distributed vector, a local part of the wrong length, vectors split
// differently, two partitions at once) does not compile or is a UsageError naming cause and fix.
#include "tenax/runtime/distributed_vector.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/shard_vectors.hpp"
#include "runtime/thread_ranks.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/distributed_csr.hpp"
#include "tenax/runtime/sharded_reductions.hpp"
#include "tenax/solvers/csr_operator.hpp"
#include "tenax/solvers/factory.hpp"
#include "tenax/solvers/poisson.hpp"

namespace tenax::runtime {
namespace {

using kernels::kReduceBlock;
using kernels::ShardRange;
using testing::bits;

// A local reduction of a distributed vector is not something one can write.
template <class V>
concept LocallyReducible = requires(const V& v) {
  ops::nrm2(v);
};
static_assert(LocallyReducible<Tensor>);
static_assert(!LocallyReducible<DistributedVector>);
static_assert(!std::is_convertible_v<DistributedVector, Tensor>);

Tensor zeros(std::int64_t n) {
  Tensor t = Tensor::empty({n}, DType::f64);
  ops::fill(t, 0.0);
  return t;
}

void expect_no_errors(const std::vector<std::string>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// Values of mixed magnitude and sign, so that another summation order gives other bits.
Tensor mixed_vector(std::int64_t n, std::uint64_t seed) {
  Tensor t = testing::random_vector(n, seed);
  for (std::int64_t i = 0; i < n; ++i) {
    double& v = t.data_as<double>()[i];
    v = std::ldexp(v, static_cast<int>(i * 7 % 25) - 12);
  }
  return t;
}

// Uneven whole-block ranges of n elements over `ranks`: rank r's share grows with r, and rank 1
// (of 3 or more) holds nothing, so some ranks are empty and the others differ in size.
ShardRange uneven_range(std::int64_t n, int ranks, int rank) {
  const std::int64_t blocks = kernels::reduce_block_count(n);
  std::vector<std::int64_t> cut(static_cast<std::size_t>(ranks) + 1, 0);
  for (int r = 1; r < ranks; ++r) {
    cut[static_cast<std::size_t>(r)] =
        blocks * static_cast<std::int64_t>(r) * r / (static_cast<std::int64_t>(ranks) * ranks);
  }
  cut[static_cast<std::size_t>(ranks)] = blocks;
  if (ranks >= 3) cut[2] = cut[1];
  const std::int64_t first = std::min(n, cut[static_cast<std::size_t>(rank)] * kReduceBlock);
  const std::int64_t end = std::min(n, cut[static_cast<std::size_t>(rank) + 1] * kReduceBlock);
  return ShardRange{first, end - first, n};
}

DistributedVector part_of(Communicator& comm, const Tensor& whole, const ShardRange& range) {
  return {comm, range, whole.slice(range.first, range.first + range.count).clone()};
}

class DistributedVectorTest : public ::testing::TestWithParam<int> {};

TEST_P(DistributedVectorTest, ReductionsAreGlobalWithTheSingleProcessBitsOnEveryRank) {
  const int ranks = GetParam();
  for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, kReduceBlock - 1, kReduceBlock,
                               3 * kReduceBlock + 17, 11 * kReduceBlock + 5}) {
    for (const DType dtype : {DType::f64, DType::f32}) {
      SCOPED_TRACE("n " + std::to_string(n) + " " + std::string(to_string(dtype)));
      const Tensor x = ops::cast(mixed_vector(n, 1), dtype);
      const Tensor y = ops::cast(mixed_vector(n, 2), dtype);
      Tensor z = ops::cast(mixed_vector(n, 3), DType::f64);  // with a NaN and an infinity
      if (n > 2) {
        z.data_as<double>()[n / 2] = std::numeric_limits<double>::quiet_NaN();
        z.data_as<double>()[n - 1] = std::numeric_limits<double>::infinity();
      }
      z = ops::cast(z, dtype);
      const double dot = ops::dot(x, y);
      const double nrm2 = ops::nrm2(x);
      const double sum = ops::sum(y);
      const double max = n > 0 ? ops::max(x) : 0.0;
      const std::int64_t nonfinite = ops::count_nonfinite(z);
      for (const bool even : {true, false}) {
        expect_no_errors(testing::on_thread_ranks(ranks, 20, [&](int r, Communicator& comm) {
          const ShardRange range =
              even ? kernels::block_aligned_range(n, ranks, r) : uneven_range(n, ranks, r);
          const DistributedVector xs = part_of(comm, x, range);
          const DistributedVector ys = part_of(comm, y, range);
          const DistributedVector zs = part_of(comm, z, range);
          EXPECT_EQ(xs.size(), n);
          EXPECT_EQ(bits(xs.dot(ys)), bits(dot)) << "dot on rank " << r;
          EXPECT_EQ(bits(xs.nrm2()), bits(nrm2)) << "nrm2 on rank " << r;
          EXPECT_EQ(bits(ys.sum()), bits(sum)) << "sum on rank " << r;
          if (n > 0) EXPECT_EQ(bits(xs.max()), bits(max)) << "max on rank " << r;
          EXPECT_EQ(zs.count_nonfinite(), nonfinite) << "count_nonfinite on rank " << r;
          // Outside the vector's calls, reductions on this thread are local again.
          EXPECT_EQ(kernels::ShardedReductionScope::active(), nullptr);
        }));
      }
    }
  }
}

TEST_P(DistributedVectorTest, UnevenRangesReallyAreUnevenWithEmptyRanks) {
  // The split the test above uses: whole blocks that tile the vector, some ranks empty.
  const int ranks = GetParam();
  const std::int64_t n = 11 * kReduceBlock + 5;
  std::int64_t next = 0;
  int empty = 0;
  for (int r = 0; r < ranks; ++r) {
    const ShardRange range = uneven_range(n, ranks, r);
    EXPECT_EQ(range.first, next);
    EXPECT_TRUE(range.count == 0 || range.aligned());
    next = range.first + range.count;
    empty += range.count == 0 ? 1 : 0;
  }
  EXPECT_EQ(next, n);
  if (ranks >= 3) EXPECT_GE(empty, 1);
}

// The solution bits and residuals of a CG solve on one process.
struct Solve {
  Tensor x;
  solvers::SolveResult result;
};

// CG and BiCGSTAB to 1e-10; GMRES(50), slower on the Laplacian, to 1e-6.
solvers::SolverOptions options_for(const std::string& method) {
  solvers::SolverOptions options;
  options.tolerance = method == "gmres" ? 1e-6 : 1e-10;
  options.max_iterations = 2000;
  options.restart = 50;
  return options;
}

Solve single_process_solve(const CsrMatrix& a, const Tensor& b, const char* method) {
  const solvers::SolverOptions options = options_for(method);
  Solve out{Tensor::empty({a.rows()}, DType::f64), {}};
  ops::fill(out.x, 0.0);
  out.result =
      solvers::make_solver(method, options)->solve(solvers::make_csr_operator(a), b, out.x);
  return out;
}

TEST_P(DistributedVectorTest, ASolveOnADistributedOperatorNeedsNoScopeInTheCaller) {
  const int ranks = GetParam();
  const CsrMatrix a = solvers::poisson_2d_csr(90, 90, 1.0 / 91, 1.0 / 91);  // two blocks
  const std::int64_t n = a.rows();
  const Tensor b = testing::random_vector(n, 7);
  for (const char* method : {"cg", "bicgstab", "gmres"}) {
    SCOPED_TRACE(method);
    const Solve single = single_process_solve(a, b, method);
    ASSERT_TRUE(single.result.converged()) << single.result.detail;
    const double single_norm = ops::nrm2(single.x);
    for (const bool caller_scope : {false, true}) {  // a caller's scope of old is joined
      expect_no_errors(testing::on_thread_ranks(ranks, 60, [&](int r, Communicator& comm) {
        const ShardRange range = kernels::block_aligned_range(n, ranks, r);
        const auto op =
            std::make_shared<const DistributedCsrOperator>(comm, range, csr_rows(a, range));
        const DistributedVector bs = part_of(comm, b, range);
        const DistributedVector xs = DistributedVector::of_operator(comm, *op);
        ops::fill(xs.local(), 0.0);
        const solvers::SolverOptions options = options_for(method);
        std::optional<ShardedReductions> scope;
        if (caller_scope) scope.emplace(comm, range);
        const solvers::SolveResult result =
            solvers::make_solver(method, options)->solve(op, bs.local(), xs.local());
        EXPECT_EQ(result.iterations, single.result.iterations) << "rank " << r;
        EXPECT_EQ(bits(result.residual), bits(single.result.residual)) << "rank " << r;
        for (std::int64_t i = 0; i < range.count; ++i) {
          ASSERT_EQ(bits(xs.local().data_as<double>()[i]),
                    bits(single.x.data_as<double>()[range.first + i]))
              << "x[" << range.first + i << "] on rank " << r;
        }
        // The solution's norm, global through the vector, is the single-process one.
        EXPECT_EQ(bits(xs.nrm2()), bits(single_norm)) << "rank " << r;
      }));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, DistributedVectorTest, ::testing::Values(1, 2, 3, 4, 5));

// Runs `call`, which must throw UsageError whose cause holds `cause` and whose fix is not empty.
template <class Call>
void expect_usage_error(const Call& call, const std::string& cause) {
  try {
    call();
    FAIL() << "no error; expected one about: " << cause;
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find(cause), std::string::npos) << e.what();
    EXPECT_FALSE(e.fix().empty()) << e.what();
  }
}

TEST(DistributedVectorMisuse, ALocalPartThatDoesNotFitThePartitionIsRefused) {
  auto comm = make_thread_communicators(1, CommOptions{})[0];
  const std::int64_t n = 3 * kReduceBlock;
  const ShardRange whole{0, n, n};
  expect_usage_error(
      [&] { (void)DistributedVector(*comm, whole, Tensor::empty({n - 1}, DType::f64)); },
      "the local part has " + std::to_string(n - 1) + " elements");
  expect_usage_error(
      [&] {
        (void)DistributedVector(*comm, whole, Tensor::empty({3, n / 3}, DType::f64));
      },
      "not a 1-D floating-point vector");
  expect_usage_error([&] { (void)DistributedVector(*comm, whole, Tensor::empty({n}, DType::i64)); },
                     "not a 1-D floating-point vector");
  expect_usage_error([&] { (void)DistributedVector(*comm, whole, Tensor{}); }, "undefined");
  expect_usage_error(
      [&] {
        (void)DistributedVector(*comm, ShardRange{100, 5000, n}, Tensor::empty({5000}, DType::f64));
      },
      "does not start and end at reduction blocks");
  expect_usage_error(
      [&] {
        (void)DistributedVector(*comm, ShardRange{0, n + 1, n}, Tensor::empty({n + 1}, DType::f64));
      },
      "is not a range of the vector");
  // The one vector of no elements has no maximum.
  const DistributedVector none(*comm, ShardRange{0, 0, 0}, Tensor::empty({0}, DType::f64));
  expect_usage_error([&] { (void)none.max(); }, "no elements");
}

TEST(DistributedVectorMisuse, VectorsSplitDifferentlyAreRefusedBeforeAnyCommunication) {
  const std::int64_t n = 2 * kReduceBlock;
  auto one = make_thread_communicators(1, CommOptions{});
  auto other = make_thread_communicators(1, CommOptions{});
  const DistributedVector x(*one[0], ShardRange{0, n, n}, zeros({n}));
  const DistributedVector y(*other[0], ShardRange{0, n, n}, zeros({n}));
  const DistributedVector shorter(*one[0], ShardRange{0, kReduceBlock, kReduceBlock},
                                  zeros({kReduceBlock}));
  expect_usage_error([&] { (void)x.dot(y); }, "but y is");
  expect_usage_error([&] { (void)x.dot(shorter); }, "but y is");
  EXPECT_EQ(x.dot(x), 0.0);
}

TEST(DistributedVectorMisuse, RangesThatDoNotTileTheVectorFailOnEveryRank) {
  const std::int64_t n = 2 * kReduceBlock;
  const auto errors = testing::on_thread_ranks(2, 20, [&](int, Communicator& comm) {
    // Both ranks claim the first block; the second is nobody's.
    const DistributedVector x(comm, ShardRange{0, kReduceBlock, n}, zeros({kReduceBlock}));
    (void)x.sum();
  });
  for (const std::string& e : errors) EXPECT_NE(e.find("tile"), std::string::npos) << e;
}

TEST(DistributedVectorMisuse, ASolveOnAnOperatorOfAnotherPartitionInsideAScopeIsRefused) {
  // A caller's scope over one vector cannot silently make a distributed solve reduce over it.
  const CsrMatrix a = solvers::poisson_2d_csr(64, 64, 1.0, 1.0);
  const std::int64_t n = a.rows();
  expect_no_errors(testing::on_thread_ranks(2, 20, [&](int r, Communicator& comm) {
    const ShardRange range = kernels::block_aligned_range(n, 2, r);
    const auto op = std::make_shared<const DistributedCsrOperator>(comm, range, csr_rows(a, range));
    const ShardRange other = kernels::block_aligned_range(3 * n, 2, r);
    const ShardedReductions scope(comm, other);
    const Tensor b = zeros({range.count});
    const Tensor x = zeros({range.count});
    expect_usage_error([&] { (void)solvers::make_solver("cg", {})->solve(op, b, x); },
                       "while this thread reduces over another distributed vector");
  }));
}

TEST(DistributedVectorMisuse, OfOperatorNeedsAnOperatorSplitOverTheCommunicator) {
  auto comm = make_thread_communicators(1, CommOptions{})[0];
  const CsrMatrix a = solvers::poisson_2d_csr(8, 8, 1.0, 1.0);
  const auto local = solvers::make_csr_operator(a);
  expect_usage_error([&] { (void)DistributedVector::of_operator(*comm, *local); },
                     "is not split over this communicator's ranks");
}

}  // namespace
}  // namespace tenax::runtime

namespace tenax::runtime {
namespace {

// gather() puts every rank's part in its place on the root, for uneven block ranges and ranks
// that hold nothing (5 ranks over 3 blocks and a bit), on any root; the other ranks get nothing.
TEST(DistributedVectorGather, EveryRanksPartLandsInItsPlaceOnTheRoot) {
  const std::int64_t total = 3 * kernels::kReduceBlock + 17;
  for (const int ranks : {1, 2, 3, 5}) {
    for (const int root : {0, ranks - 1}) {
      const auto errors = testing::on_thread_ranks(ranks, 30, [&](int rank, Communicator& comm) {
        const kernels::ShardRange range = kernels::block_aligned_range(total, ranks, rank);
        Tensor local = Tensor::empty({range.count}, DType::f64);
        for (std::int64_t i = 0; i < range.count; ++i) {
          local.data_as<double>()[i] = 0.5 * static_cast<double>(range.first + i);
        }
        const Tensor whole = DistributedVector(comm, range, local).gather(root);
        if (rank != root) {
          EXPECT_FALSE(whole.defined());
          return;
        }
        ASSERT_EQ(whole.numel(), total);
        for (std::int64_t i = 0; i < total; ++i) {
          ASSERT_EQ(whole.data_as<double>()[i], 0.5 * static_cast<double>(i)) << i;
        }
      });
      for (const std::string& error : errors) EXPECT_EQ(error, "") << ranks << " ranks";
    }
  }
}

}  // namespace
}  // namespace tenax::runtime
