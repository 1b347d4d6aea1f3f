// SampleOrder: every epoch visits every sample once, in an order that is a function of
// (seed, epoch) alone (the same whatever order positions are asked in, by whichever rank), file
// order unshuffled, pinned values (train_mlp's batches depend on them), a fair shuffle, and the
// refusals.
#include "tenax/train/sample_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"

namespace tenax::train {
namespace {

TEST(SampleOrder, EveryEpochVisitsEverySampleOnceAndEpochsDiffer) {
  SampleOrder order(1000, 42, true);
  std::vector<std::int64_t> all(1000);
  std::iota(all.begin(), all.end(), 0);
  std::vector<std::vector<std::int64_t>> epochs;
  for (std::int64_t e = 0; e < 4; ++e) {
    std::vector<std::int64_t> epoch = order.samples(e * 1000, 1000);
    epochs.push_back(epoch);
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, all) << "epoch " << e;
  }
  for (std::size_t e = 1; e < epochs.size(); ++e) EXPECT_NE(epochs[e], epochs[0]);
  EXPECT_NE(epochs[0], all) << "a shuffled epoch in file order";
}

// describe() names the positions and their samples, every one for a batch of up to 32.
TEST(SampleOrder, DescribeNamesTheSamplesOfABatch) {
  SampleOrder order(10, 0, false);  // file order: sample p % 10 at position p
  EXPECT_EQ(order.describe(12, 3), "samples 12..14 of the data order: rows 2, 3, 4");
  SampleOrder big(1000, 0, false);
  const std::string text = big.describe(64, 40);
  EXPECT_EQ(text.rfind("samples 64..103 of the data order: rows 64, 65, ", 0), 0u) << text;
  EXPECT_NE(text.find(", 95, ..."), std::string::npos) << text;
  EXPECT_EQ(text.find("96"), std::string::npos) << text;
}

TEST(SampleOrder, APositionsSampleIsTheSameWhateverAsksForItAndInWhatOrder) {
  // One reader takes the stream in batches of 64; "ranks" each take their rows of every batch,
  // micro-batches of 8, jumping between epochs; a fresh order takes positions backwards.
  SampleOrder whole(300, 9, true);
  const std::vector<std::int64_t> expected = whole.samples(0, 64 * 20);
  for (const int ranks : {2, 3, 4}) {
    std::vector<SampleOrder> per_rank(static_cast<std::size_t>(ranks), SampleOrder(300, 9, true));
    for (std::int64_t k = 0; k < 20; ++k) {
      for (std::int64_t r = 0; r < 64; r += 8) {
        SampleOrder& mine = per_rank[static_cast<std::size_t>((r / 8) % ranks)];
        for (std::int64_t i = r; i < r + 8; ++i) {
          ASSERT_EQ(mine.sample(k * 64 + i), expected[static_cast<std::size_t>(k * 64 + i)])
              << ranks << " ranks, step " << k << ", row " << i;
        }
      }
    }
  }
  SampleOrder backwards(300, 9, true);
  for (std::int64_t p = 64 * 20 - 1; p >= 0; --p) {
    ASSERT_EQ(backwards.sample(p), expected[static_cast<std::size_t>(p)]) << "position " << p;
  }
  // Another seed, another order.
  SampleOrder other(300, 10, true);
  EXPECT_NE(other.samples(0, 300), whole.samples(0, 300));
}

TEST(SampleOrder, UnshuffledIsFileOrderEpochAfterEpoch) {
  SampleOrder order(7, 42, false);
  EXPECT_FALSE(order.shuffled());
  EXPECT_EQ(order.size(), 7);
  EXPECT_EQ(order.samples(5, 6), (std::vector<std::int64_t>{5, 6, 0, 1, 2, 3}));
  EXPECT_EQ(order.sample(std::int64_t{1} << 62), (std::int64_t{1} << 62) % 7);
}

TEST(SampleOrder, TheOrderIsPinned) {
  // The Philox draw of every epoch (train_mlp's batches, and a resumed run's, depend on it): a
  // change here changes every shuffled training run.
  SampleOrder order(10, 7, true);
  EXPECT_EQ(order.samples(0, 10), (std::vector<std::int64_t>{7, 9, 6, 0, 4, 3, 1, 2, 8, 5}));
  EXPECT_EQ(order.samples(10, 10), (std::vector<std::int64_t>{2, 0, 1, 4, 7, 8, 9, 6, 3, 5}));
}

TEST(SampleOrder, TheShuffleIsFair) {
  // Position 0 of 8000 epochs of 4 samples: each sample about 2000 times (binomial sd ~39).
  SampleOrder order(4, 3, true);
  std::vector<int> counts(4, 0);
  for (std::int64_t e = 0; e < 8000; ++e) ++counts[static_cast<std::size_t>(order.sample(e * 4))];
  for (const int c : counts) EXPECT_NEAR(c, 2000, 200) << "sample drawn " << c << " times";
}

TEST(SampleOrder, BadSizesAndPositionsAreRefusedNamingThem) {
  const auto refused = [](auto call, const std::string& words) {
    try {
      call();
      ADD_FAILURE() << "accepted: " << words;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused([] { SampleOrder(0, 1, true); }, "over 0 samples");
  refused([] { SampleOrder(-5, 1, true); }, "over -5 samples");
  refused([] { SampleOrder((std::int64_t{1} << 40) + 1, 1, true); }, "over 1099511627777 samples");
  SampleOrder order(10, 1, true);
  refused([&] { (void)order.sample(-1); }, "stream position -1");
  refused([&] { (void)order.samples(0, -2); }, "-2 samples");
  refused([&] { (void)order.samples(std::numeric_limits<std::int64_t>::max() - 1, 5); },
          "5 samples from stream position");
}

}  // namespace
}  // namespace tenax::train
