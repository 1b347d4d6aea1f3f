// Reductions over vectors split across ranks (runtime/sharded_reductions.hpp) with the threads
// communicator at 1 to 4 ranks: every rank gets the bits of the single-process reduction over the
// whole vector, for every length (empty shards included) and every reduction op, and the fused
// Krylov updates write the same vectors; the error against a long double reference stays within
// the order's bound.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/thread_ranks.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/kernels/ops_krylov.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/sharded_reductions.hpp"

namespace tenax::runtime {
namespace {

using kernels::ShardRange;

// Runs body(rank, comm) on one thread per rank; returns each rank's error text ("" if none).
std::vector<std::string> run_ranks(int size, const std::function<void(int, Communicator&)>& body) {
  return testing::on_thread_ranks(size, 20, body);
}

// Values of mixed magnitude and sign, so that a change of summation order changes the bits.
Tensor random_vector(std::int64_t n, DType dtype, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-12, 12);
  Tensor t = Tensor::empty({n}, DType::f64);
  for (std::int64_t i = 0; i < n; ++i)
    t.data_as<double>()[i] = std::ldexp(mantissa(random), exponent(random));
  return dtype == DType::f64 ? t : ops::cast(t, dtype);
}

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

// The shard of a vector: a copy of its elements [range.first, range.first + range.count).
Tensor shard_of(const Tensor& whole, const ShardRange& range) {
  return whole.slice(range.first, range.first + range.count).clone();
}

void expect_same_elements(const Tensor& whole, const ShardRange& range, const Tensor& shard,
                          const std::string& what) {
  const Tensor a = ops::cast(whole.slice(range.first, range.first + range.count), DType::f64);
  const Tensor b = ops::cast(shard, DType::f64);
  for (std::int64_t i = 0; i < range.count; ++i) {
    ASSERT_EQ(bits(a.data_as<double>()[i]), bits(b.data_as<double>()[i]))
        << what << " element " << range.first + i;
  }
}

struct Case {
  std::int64_t n;
  DType dtype;
};

class ShardedReductionsTest : public ::testing::TestWithParam<int> {};

TEST_P(ShardedReductionsTest, EveryReductionHasTheSingleProcessBitsOnEveryRank) {
  const int ranks = GetParam();
  const std::int64_t block = kernels::kReduceBlock;
  for (const Case c : {Case{0, DType::f64}, Case{1, DType::f64}, Case{block - 1, DType::f64},
                       Case{block, DType::f32}, Case{block + 1, DType::f64},
                       Case{3 * block + 5, DType::f32}, Case{25 * block + 77, DType::f64}}) {
    SCOPED_TRACE("n " + std::to_string(c.n) + " " + std::string(to_string(c.dtype)));
    const Tensor x = random_vector(c.n, c.dtype, 1);
    const Tensor y = random_vector(c.n, c.dtype, 2);
    const double dot = ops::dot(x, y), nrm2 = ops::nrm2(x), sum = ops::sum(x);
    const double max = c.n > 0 ? ops::max(x) : 0.0;  // undefined for an empty vector
    // A NaN in the last element: on the last rank that holds elements.
    Tensor poisoned = x.clone();
    if (c.n > 0) {
      const Tensor nan = Tensor::empty({1}, c.dtype);
      ops::fill(nan, std::numeric_limits<double>::quiet_NaN());
      ops::copy(poisoned.slice(c.n - 1, c.n), nan);
    }
    const double poisoned_max = c.n > 0 ? ops::max(poisoned) : 0.0;
    // A vector whose squares underflow (f64 scaled by 1e-300): nrm2's rescaled form, over the
    // global largest element, gives every rank the single process's norm; zeros give 0.
    Tensor tiny = x.clone();
    if (c.dtype == DType::f64) ops::scale(1e-300, tiny);
    const double tiny_nrm2 = ops::nrm2(tiny);
    if (c.dtype == DType::f64 && c.n > 0) EXPECT_GT(tiny_nrm2, 0.0) << "underflowed to 0";
    Tensor zeros = Tensor::empty_like(x);
    ops::fill(zeros, 0.0);
    const std::int64_t nonfinite = ops::count_nonfinite(poisoned);

    // The fused Krylov updates: x += a p, r -= a q (and z = inv_diag r), with their dots.
    const Tensor p = random_vector(c.n, c.dtype, 3), q = random_vector(c.n, c.dtype, 4);
    const Tensor inv_diag = random_vector(c.n, c.dtype, 5);
    Tensor cg_x = x.clone(), cg_r = y.clone();
    const double cg_rr = ops::cg_update(0.37, p, q, cg_x, cg_r);
    Tensor pcg_x = x.clone(), pcg_r = y.clone(), pcg_z = Tensor::empty_like(x);
    const ops::PcgDots pcg = ops::pcg_jacobi_update(-1.3, p, q, pcg_x, pcg_r, inv_diag, pcg_z);

    const auto errors = run_ranks(ranks, [&](int r, Communicator& comm) {
      const ShardRange range = kernels::block_aligned_range(c.n, ranks, r);
      const Tensor xs = shard_of(x, range), ys = shard_of(y, range);
      const Tensor ps = shard_of(p, range), qs = shard_of(q, range);
      const Tensor ds = shard_of(inv_diag, range), poisoned_s = shard_of(poisoned, range);
      Tensor cx = shard_of(x, range), cr = shard_of(y, range);
      Tensor px = shard_of(x, range), pr = shard_of(y, range), pz = Tensor::empty_like(xs);
      ShardedReductions reductions(comm, range);
      EXPECT_EQ(bits(ops::dot(xs, ys)), bits(dot)) << "dot on rank " << r;
      EXPECT_EQ(bits(ops::nrm2(xs)), bits(nrm2)) << "nrm2 on rank " << r;
      EXPECT_EQ(bits(ops::nrm2(shard_of(tiny, range))), bits(tiny_nrm2))
          << "nrm2 of tiny values on rank " << r;
      EXPECT_EQ(ops::nrm2(shard_of(zeros, range)), 0.0) << "nrm2 of zeros on rank " << r;
      EXPECT_EQ(bits(ops::sum(xs)), bits(sum)) << "sum on rank " << r;
      if (c.n > 0) {  // a rank's shard may be empty, the vector may not
        EXPECT_EQ(bits(ops::max(xs)), bits(max)) << "max on rank " << r;
        EXPECT_EQ(bits(ops::max(poisoned_s)), bits(poisoned_max)) << "max with a NaN on rank " << r;
      }
      EXPECT_EQ(ops::count_nonfinite(poisoned_s), nonfinite) << "count on rank " << r;
      EXPECT_EQ(bits(ops::cg_update(0.37, ps, qs, cx, cr)), bits(cg_rr)) << "cg rr on rank " << r;
      const ops::PcgDots d = ops::pcg_jacobi_update(-1.3, ps, qs, px, pr, ds, pz);
      EXPECT_EQ(bits(d.rz), bits(pcg.rz)) << "pcg rz on rank " << r;
      EXPECT_EQ(bits(d.rr), bits(pcg.rr)) << "pcg rr on rank " << r;
      expect_same_elements(cg_x, range, cx, "cg x");
      expect_same_elements(cg_r, range, cr, "cg r");
      expect_same_elements(pcg_z, range, pz, "pcg z");
    });
    for (int r = 0; r < ranks; ++r)
      EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
  }
}

// The exact reductions across ranks against a long double reference: the error of the sharded
// dot, sum and norm is within the bound of the one reduction order (a lane sums 256 terms in
// sequence, then 4 halving levels, then the tree over the blocks: ulp/2 times the sum of the
// terms' magnitudes per level), for sums with heavy cancellation, on every rank and for every
// number of ranks; their bits are the single-process ones (above), so their error is too.
TEST_P(ShardedReductionsTest, ErrorsAreWithinTheOrdersBoundAgainstALongDoubleReference) {
  const int ranks = GetParam();
  const std::int64_t n = 37 * kernels::kReduceBlock + 1234;
  const Tensor x = random_vector(n, DType::f64, 11);
  const Tensor y = random_vector(n, DType::f64, 12);
  // Cancellation: the second halves repeat the first ones, y's with its sign flipped and
  // slightly off, so the dot and the sum are far smaller than their terms.
  for (std::int64_t i = n / 2; i < 2 * (n / 2); ++i) {
    x.data_as<double>()[i] = x.data_as<double>()[i - n / 2];
    y.data_as<double>()[i] = -y.data_as<double>()[i - n / 2] * (1.0 + 1e-9);
  }
  long double dot = 0, sum = 0, squares = 0, dot_scale = 0, sum_scale = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const long double xi = x.data_as<double>()[i];
    const long double yi = y.data_as<double>()[i];
    dot += xi * yi;
    dot_scale += std::fabs(xi * yi);
    sum += yi;
    sum_scale += std::fabs(yi);
    squares += xi * xi;
  }
  const double levels =
      256 + 4 + std::ceil(std::log2(static_cast<double>(n / kernels::kReduceBlock + 1))) + 2;
  const double u = std::numeric_limits<double>::epsilon() / 2;
  const auto errors = run_ranks(ranks, [&](int r, Communicator& comm) {
    const ShardRange range = kernels::block_aligned_range(n, ranks, r);
    const Tensor xs = shard_of(x, range), ys = shard_of(y, range);
    ShardedReductions reductions(comm, range);
    const double d = ops::dot(xs, ys), s = ops::sum(ys), norm = ops::nrm2(xs);
    EXPECT_LE(std::fabs(static_cast<long double>(d) - dot), levels * u * dot_scale)
        << "dot on rank " << r;
    EXPECT_LE(std::fabs(static_cast<long double>(s) - sum), levels * u * sum_scale)
        << "sum on rank " << r;
    EXPECT_LE(std::fabs(static_cast<long double>(norm) - std::sqrt(squares)),
              (levels + 1) * u * std::sqrt(squares))
        << "nrm2 on rank " << r;
    // The cancellation is real: the dot and the sum are far smaller than their terms.
    EXPECT_LT(std::fabs(static_cast<double>(dot)), 1e-3 * static_cast<double>(dot_scale));
    EXPECT_LT(std::fabs(static_cast<double>(sum)), 1e-3 * static_cast<double>(sum_scale));
  });
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << r;
}

TEST_P(ShardedReductionsTest, RangesThatDoNotTileTheVectorFailOnEveryRank) {
  const int ranks = GetParam();
  if (ranks == 1) GTEST_SKIP() << "one rank always tiles its vector";
  const std::int64_t n = 8 * kernels::kReduceBlock;
  const auto errors = run_ranks(ranks, [&](int, Communicator& comm) {
    // Every rank claims the first rank's range: blocks counted twice, others missing.
    const ShardRange range = kernels::block_aligned_range(n, ranks, 0);
    const Tensor x = random_vector(range.count, DType::f64, 9);
    ShardedReductions reductions(comm, range);
    (void)ops::sum(x);
  });
  for (int r = 0; r < ranks; ++r) {
    EXPECT_NE(errors[static_cast<std::size_t>(r)].find("overlap or leave a gap"), std::string::npos)
        << "rank " << r << ": " << errors[static_cast<std::size_t>(r)];
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShardedReductionsTest, ::testing::Values(1, 2, 3, 4));

TEST(ShardedReductions, MisuseIsAUsageErrorNamingTheFix) {
  auto comm = make_thread_communicators(1, CommOptions{})[0];
  // A range that does not start at a reduction block.
  try {
    ShardedReductions reductions(*comm, ShardRange{100, 5000, 10000});
    FAIL() << "an unaligned range was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("block_aligned_range"), std::string::npos) << e.what();
  }
  const ShardRange whole = kernels::block_aligned_range(10000, 1, 0);
  ShardedReductions reductions(*comm, whole);
  // Scopes do not nest.
  EXPECT_THROW(ShardedReductions(*comm, whole), UsageError);
  // A reduction over something else than the shard.
  try {
    (void)ops::sum(Tensor::empty({7}, DType::f64));
    FAIL() << "a reduction over 7 elements inside a scope of 10000 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("7 elements"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("10000"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tenax::runtime
