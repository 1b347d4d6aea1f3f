// The rule of reduction_order.hpp: the tree over global block indices, split across ranks.
// Every split of the blocks into contiguous ranges (empty ones included) must assemble, from each
// range's own nodes, the root that one process computes from all partials, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/kernels/detail/reduce_bodies.hpp"
#include "tenax/kernels/reduction_order.hpp"

namespace tenax::kernels {
namespace {

// Partials of wildly different magnitudes, so that any change of association changes the bits.
std::vector<double> spread_values(std::int64_t m, std::mt19937_64& random) {
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 30);
  std::vector<double> p(static_cast<std::size_t>(m));
  for (double& v : p) v = std::ldexp(mantissa(random), exponent(random));
  return p;
}

// Cuts [0, m) into `ranks` contiguous ranges at random points (ranges may be empty).
std::vector<std::int64_t> random_cuts(std::int64_t m, int ranks, std::mt19937_64& random) {
  std::uniform_int_distribution<std::int64_t> at(0, m);
  std::vector<std::int64_t> cuts{0, m};
  for (int r = 1; r < ranks; ++r) cuts.push_back(at(random));
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

template <class Combine>
void expect_split_matches_one_process(const std::vector<double>& p, int terms,
                                      const std::vector<std::int64_t>& cuts, Combine f) {
  const auto m = static_cast<std::int64_t>(p.size()) / terms;
  std::vector<double> expected(static_cast<std::size_t>(terms));
  for (int t = 0; t < terms; ++t) {
    std::vector<double> copy(p.begin() + t * m, p.begin() + (t + 1) * m);
    expected[static_cast<std::size_t>(t)] = combine_partials(copy.data(), m, f);
  }
  std::vector<ShardNodes> shards;
  for (std::size_t r = 0; r + 1 < cuts.size(); ++r) {
    std::vector<double> mine;  // term-major, as the backends hand them over
    for (int t = 0; t < terms; ++t) {
      mine.insert(mine.end(), p.begin() + t * m + cuts[r], p.begin() + t * m + cuts[r + 1]);
    }
    shards.push_back(shard_nodes(mine, terms, cuts[r], m, f));
    EXPECT_LE(static_cast<std::int64_t>(shards.back().nodes.size()), 2 * tree_root_level(m) + 2);
  }
  std::vector<double> got(static_cast<std::size_t>(terms));
  assemble_root(std::span<const ShardNodes>(shards), terms, m, f, got);
  for (int t = 0; t < terms; ++t) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(got[static_cast<std::size_t>(t)]),
              std::bit_cast<std::uint64_t>(expected[static_cast<std::size_t>(t)]))
        << "m " << m << " term " << t << " cuts " << ::testing::PrintToString(cuts);
  }
}

TEST(ReductionOrder, CoverNodesTileTheRangeWithWholeNodes) {
  for (std::int64_t m = 1; m <= 70; ++m) {
    for (std::int64_t a = 0; a <= m; ++a) {
      for (std::int64_t b = a; b <= m; ++b) {
        std::int64_t next = a;
        for (const TreeNode& node : cover_nodes(a, b, m)) {
          const std::int64_t begin = node.index << node.level;
          const std::int64_t end = std::min(m, (node.index + 1) << node.level);
          ASSERT_EQ(begin, next) << "m " << m << " [" << a << ", " << b << ")";
          ASSERT_LE(end, b);
          ASSERT_LE(node.level, tree_root_level(m));
          next = end;
        }
        ASSERT_EQ(next, b) << "m " << m << " [" << a << ", " << b << ")";
      }
    }
  }
  // The whole tree is its root.
  EXPECT_EQ(cover_nodes(0, 1000, 1000), (std::vector<TreeNode>{{10, 0}}));
  EXPECT_THROW((void)cover_nodes(3, 2, 10), UsageError);
  EXPECT_THROW((void)cover_nodes(0, 11, 10), UsageError);
  EXPECT_THROW((void)cover_nodes(-1, 2, 10), UsageError);
}

TEST(ReductionOrder, EverySplitOfTheBlocksAssemblesTheSingleProcessSum) {
  std::mt19937_64 random(11);
  for (std::int64_t m = 0; m <= 70; ++m) {
    for (int ranks = 1; ranks <= 5; ++ranks) {
      for (int trial = 0; trial < 6; ++trial) {
        const std::vector<double> p = spread_values(2 * m, random);
        const auto cuts = random_cuts(m, ranks, random);
        expect_split_matches_one_process(std::vector<double>(p.begin(), p.begin() + m), 1, cuts,
                                         PlusCombine{});
        expect_split_matches_one_process(p, 2, cuts, PlusCombine{});
      }
    }
  }
  // Large trees: a few thousand blocks on up to 7 ranks.
  for (const std::int64_t m : {1023, 1024, 1025, 4097, 65537}) {
    const std::vector<double> p = spread_values(m, random);
    for (int ranks = 2; ranks <= 7; ++ranks) {
      expect_split_matches_one_process(p, 1, random_cuts(m, ranks, random), PlusCombine{});
    }
  }
}

TEST(ReductionOrder, MaximumKeepsANaNOfAnyRank) {
  std::mt19937_64 random(12);
  for (std::int64_t m = 1; m <= 40; ++m) {
    std::vector<double> p = spread_values(m, random);
    p[static_cast<std::size_t>(random() % static_cast<std::uint64_t>(m))] =
        std::numeric_limits<double>::quiet_NaN();
    const auto cuts = random_cuts(m, 3, random);
    expect_split_matches_one_process(p, 1, cuts, MaxCombine{});
    std::vector<ShardNodes> shards;
    for (std::size_t r = 0; r + 1 < cuts.size(); ++r) {
      shards.push_back(
          shard_nodes(std::span<const double>(p.data() + cuts[r], p.data() + cuts[r + 1]), 1,
                      cuts[r], m, MaxCombine{}));
    }
    double got = 0;
    assemble_root(std::span<const ShardNodes>(shards), 1, m, MaxCombine{}, std::span(&got, 1));
    EXPECT_TRUE(std::isnan(got)) << "m " << m;
  }
}

TEST(ReductionOrder, AssemblyWithoutSomeBlocksIsAUsageError) {
  std::mt19937_64 random(13);
  const std::vector<double> p = spread_values(20, random);
  // Blocks [0, 12) only: the tree over 20 blocks misses [12, 20).
  const ShardNodes part =
      shard_nodes(std::span<const double>(p.data(), 12), 1, 0, 20, PlusCombine{});
  double got = 0;
  EXPECT_THROW(assemble_root(std::span<const ShardNodes>(&part, 1), 1, 20, PlusCombine{},
                             std::span(&got, 1)),
               UsageError);
  // No blocks at all: the identity, whatever the shards.
  assemble_root(std::span<const ShardNodes>(), 1, 0, PlusCombine{}, std::span(&got, 1));
  EXPECT_EQ(got, 0.0);
}

TEST(ReductionOrder, AStreamOfLeavesOnEveryRankAssemblesTheSingleProcessRoot) {
  std::mt19937_64 random(14);
  for (std::int64_t m = 1; m <= 50; ++m) {
    const std::vector<double> p = spread_values(m, random);
    std::vector<double> copy = p;
    const double expected = combine_partials(copy.data(), m, PlusCombine{});
    for (int ranks = 1; ranks <= 4; ++ranks) {
      const auto cuts = random_cuts(m, ranks, random);
      // Each rank streams its leaves, merging siblings as it goes, as a gradient tree does.
      std::vector<std::pair<TreeNode, double>> given;
      for (std::size_t r = 0; r + 1 < cuts.size(); ++r) {
        LeafStream stream;
        std::vector<double> values;
        for (std::int64_t i = cuts[r]; i < cuts[r + 1]; ++i) {
          values.push_back(p[static_cast<std::size_t>(i)]);
          for (int k = stream.push(i); k > 0; --k) {
            const double right = values.back();
            values.pop_back();
            values.back() = values.back() + right;
          }
        }
        ASSERT_EQ(stream.nodes(), LeafStream::of_range(cuts[r], cuts[r + 1]));
        for (std::size_t k = 0; k < values.size(); ++k)
          given.push_back({stream.nodes()[k], values[k]});
      }
      const auto lookup = [&](const TreeNode& node) -> const double* {
        for (const auto& [n, v] : given) {
          if (n == node) return &v;
        }
        return nullptr;
      };
      const double got = tree_root<double>(m, lookup, [](double a, double b) { return a + b; });
      EXPECT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(expected))
          << "m " << m << " cuts " << ::testing::PrintToString(cuts);
    }
  }
}

TEST(ReductionOrder, BlockAlignedRangesTileTheVectorEvenly) {
  for (const std::int64_t total :
       {std::int64_t{0}, std::int64_t{1}, kReduceBlock - 1, kReduceBlock, kReduceBlock + 1,
        5 * kReduceBlock + 17, std::int64_t{1} << 40}) {
    for (int ranks = 1; ranks <= 9; ++ranks) {
      std::int64_t next = 0;
      std::int64_t most = 0;
      std::int64_t fewest = std::numeric_limits<std::int64_t>::max();
      for (int r = 0; r < ranks; ++r) {
        const ShardRange range = block_aligned_range(total, ranks, r);
        EXPECT_TRUE(range.aligned() || range.count == 0) << total << " " << ranks << " " << r;
        EXPECT_EQ(range.first, next);
        EXPECT_EQ(range.total, total);
        next = range.first + range.count;
        const std::int64_t blocks = reduce_block_count(range.count);
        most = std::max(most, blocks);
        fewest = std::min(fewest, blocks);
      }
      EXPECT_EQ(next, total);
      EXPECT_LE(most - fewest, 1) << total << " on " << ranks;
    }
  }
  EXPECT_THROW((void)block_aligned_range(10, 0, 0), UsageError);
  EXPECT_THROW((void)block_aligned_range(10, 2, 2), UsageError);
  EXPECT_THROW((void)block_aligned_range(-1, 2, 0), UsageError);
}

}  // namespace
}  // namespace tenax::kernels
