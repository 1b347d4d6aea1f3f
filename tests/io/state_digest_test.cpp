// The state digest: the same value for a state held whole or split over any number of ranks
// (along any axis), a different one after any single flipped bit, a moved row or a changed
// scalar, and nothing from the entries left out.
#include "tenax/io/state_digest.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/runner_entries.hpp"

namespace tenax::io {
namespace {

Tensor counting(const Shape& shape, DType dtype = DType::f64) {
  Tensor t = Tensor::empty(shape, dtype);
  auto* bytes = static_cast<unsigned char*>(t.data());
  for (std::size_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(i * 37 + 11);
  return t;
}

// The slab [begin, end) along `axis` of `whole`, copied.
Tensor slab(const Tensor& whole, int axis, std::int64_t begin, std::int64_t end) {
  const TensorShard all{"x", axis, 0, whole.shape()[axis], whole.shape()[axis]};
  const TensorShard part{"x", axis, begin, end, whole.shape()[axis]};
  Tensor out = Tensor::empty(part.part_shape(whole.shape()), whole.dtype());
  copy_shard_overlap(all, whole, part, out);
  return out;
}

// The digest of `whole` split into `cuts` along `axis`, each slab a rank's, with a replicated
// scalar beside it.
std::uint64_t split_digest(const Tensor& whole, int axis, const std::vector<std::int64_t>& cuts) {
  std::uint64_t common = 0;
  std::uint64_t partial = 0;
  for (std::size_t r = 0; r + 1 < cuts.size(); ++r) {
    StateDict state;
    state.set("t", 0.25);
    state.set("x", slab(whole, axis, cuts[r], cuts[r + 1]));
    const DigestLayout layout{{{"x", axis, cuts[r], cuts[r + 1], whole.shape()[axis]}}, {}, false};
    const DigestParts parts = digest_parts(state, layout, static_cast<int>(r));
    if (r == 0) common = parts.common;
    EXPECT_EQ(parts.common, common) << "rank " << r << ": the common part differs";
    partial += parts.partial;
  }
  return combine_digest(common, partial);
}

TEST(StateDigest, TheSameForAnyNumberOfRanksAlongAnyAxis) {
  const Tensor rows = counting({7, 5});
  const std::uint64_t one = split_digest(rows, 0, {0, 7});
  EXPECT_EQ(split_digest(rows, 0, {0, 3, 7}), one);
  EXPECT_EQ(split_digest(rows, 0, {0, 1, 2, 7}), one);
  EXPECT_EQ(split_digest(rows, 0, {0, 0, 7}), one) << "an empty slab contributes nothing";
  const Tensor basis = counting({3, 10}, DType::f32);
  const std::uint64_t whole = split_digest(basis, 1, {0, 10});
  EXPECT_EQ(split_digest(basis, 1, {0, 4, 10}), whole);
  EXPECT_EQ(split_digest(basis, 1, {0, 2, 5, 9, 10}), whole);
}

// A tensor large enough that its sum is split over the CPU's threads digests as its slabs do,
// each small enough to be summed on one thread; a flipped bit at its far end still shows.
TEST(StateDigest, ALargeTensorSummedOnSeveralThreadsDigestsAsItsSmallSlabs) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f64}) {
    Tensor big = counting({3, 300'007}, dtype);
    const std::uint64_t whole = split_digest(big, 1, {0, 300'007});
    EXPECT_EQ(split_digest(big, 1, {0, 70'000, 140'001, 210'000, 300'007}), whole)
        << to_string(dtype);
    EXPECT_EQ(split_digest(big, 0, {0, 1, 2, 3}), whole) << to_string(dtype);
    static_cast<unsigned char*>(big.data())[big.nbytes() - 1] ^= 0x10;
    EXPECT_NE(split_digest(big, 1, {0, 300'007}), whole) << to_string(dtype);
  }
}

TEST(StateDigest, EveryFlippedBitOfEveryDTypeChangesIt) {
  for (DType dtype :
       {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8}) {
    const Tensor x = counting({4, 3}, dtype);
    StateDict state;
    state.set("x", x);
    const std::uint64_t clean = digest_parts(state, {}, 0).common;
    auto* bytes = static_cast<unsigned char*>(x.data());
    for (std::size_t byte = 0; byte < x.nbytes(); ++byte) {
      for (int bit = 0; bit < 8; ++bit) {
        bytes[byte] ^= static_cast<unsigned char>(1u << bit);
        EXPECT_NE(digest_parts(state, {}, 0).common, clean)
            << to_string(dtype) << " byte " << byte << " bit " << bit;
        bytes[byte] ^= static_cast<unsigned char>(1u << bit);
      }
    }
    EXPECT_EQ(digest_parts(state, {}, 0).common, clean);
  }
}

TEST(StateDigest, AFlipInOneRanksSlabChangesTheStateDigest) {
  Tensor rows = counting({6, 4});
  const std::uint64_t clean = split_digest(rows, 0, {0, 2, 4, 6});
  rows.data_as<double>()[13] = std::nextafter(rows.data_as<double>()[13], 1e300);
  EXPECT_NE(split_digest(rows, 0, {0, 2, 4, 6}), clean);
}

TEST(StateDigest, MovedValuesRenamedEntriesAndChangedScalarsChangeIt) {
  const Tensor x = counting({4, 2});
  StateDict state;
  state.set("x", x);
  state.set("step", std::int64_t{3});
  state.set("t", 0.5);
  state.set("name", std::string("run"));
  const std::uint64_t clean = digest_parts(state, {}, 0).common;

  Tensor swapped = counting({4, 2});
  std::vector<double> row(2);
  std::memcpy(row.data(), swapped.data_as<double>(), 16);
  std::memcpy(swapped.data_as<double>(), swapped.data_as<double>() + 2, 16);
  std::memcpy(swapped.data_as<double>() + 2, row.data(), 16);
  StateDict moved = state;
  moved.set("x", swapped);
  EXPECT_NE(digest_parts(moved, {}, 0).common, clean) << "two rows swapped";

  StateDict reshaped = state;
  reshaped.set("x", x.reshape({2, 4}));
  EXPECT_NE(digest_parts(reshaped, {}, 0).common, clean) << "the same bytes in another shape";

  StateDict renamed;
  renamed.set("y", x);
  renamed.set("step", std::int64_t{3});
  renamed.set("t", 0.5);
  renamed.set("name", std::string("run"));
  EXPECT_NE(digest_parts(renamed, {}, 0).common, clean);

  for (const auto& [key, value] : std::vector<std::pair<std::string, StateDict::Value>>{
           {"step", std::int64_t{4}}, {"t", 0.5000000000000001}, {"name", std::string("rum")}}) {
    StateDict changed = state;
    changed.set(key, value);
    EXPECT_NE(digest_parts(changed, {}, 0).common, clean) << key;
  }
}

TEST(StateDigest, RankLocalEntriesAreLeftOutAndPerRankStatesAreSeededWithTheRank) {
  StateDict state;
  state.set("x", counting({3}));
  state.set("seconds", 1.5);
  const DigestLayout layout{{}, {"seconds"}, false};
  const DigestParts clean = digest_parts(state, layout, 0);
  state.set("seconds", 99.0);
  EXPECT_EQ(digest_parts(state, layout, 0).common, clean.common);
  EXPECT_EQ(digest_parts(state, layout, 1).common, clean.common) << "replicated: any rank";

  const DigestLayout own{{}, {"seconds"}, true};
  const DigestParts zero = digest_parts(state, own, 0);
  const DigestParts one = digest_parts(state, own, 1);
  EXPECT_EQ(zero.common, one.common) << "nothing is compared between the ranks";
  EXPECT_NE(zero.partial, one.partial) << "rank 1's copy of rank 0's state is another state";
}

TEST(StateDigest, AShardThatDoesNotFitItsTensorIsRefused) {
  StateDict state;
  state.set("x", counting({4, 2}));
  state.set("n", std::int64_t{1});
  EXPECT_THROW((void)digest_parts(state, {{{"x", 0, 0, 3, 9}}, {}, false}, 0), UsageError);
  EXPECT_THROW((void)digest_parts(state, {{{"n", 0, 0, 1, 1}}, {}, false}, 0), UsageError);
}

TEST(StateDigest, ACheckpointsFilesAreCheckedAgainstTheDigestTheRanksRecorded) {
  // Two rank files as the Runner writes them: the workload's state, its shard table, the entries
  // left out and the agreed digest.
  const Tensor whole = counting({6, 3});
  const ShardTable table{{{{"workload/u", 0, 0, 4, 6}}, {{"workload/u", 0, 4, 6, 6}}}};
  std::vector<StateDict> files(2);
  std::vector<DigestParts> parts;
  for (int r = 0; r < 2; ++r) {
    StateDict workload;
    workload.set("u", slab(whole, 0, r == 0 ? 0 : 4, r == 0 ? 4 : 6));
    workload.set("t", 0.5);
    workload.set("seconds", 1.0 + r);
    const TensorShard shard = table.ranks[static_cast<std::size_t>(r)][0];
    parts.push_back(
        digest_parts(workload, {{{"u", 0, shard.begin, shard.end, 6}}, {"seconds"}, false}, r));
    files[static_cast<std::size_t>(r)].merge("workload", workload);
    files[static_cast<std::size_t>(r)].set(runner_entry::shards, format_shard_table(table));
    files[static_cast<std::size_t>(r)].set(runner_entry::digest_rank_local,
                                           std::string("seconds\n"));
    files[static_cast<std::size_t>(r)].set(runner_entry::digest_per_rank, std::int64_t{0});
  }
  for (StateDict& f : files) f.set(runner_entry::state_digest, to_hex64(vote(parts).digest));
  const std::optional<CheckpointDigest> clean = checkpoint_digest(files, "test");
  ASSERT_TRUE(clean.has_value());
  EXPECT_TRUE(clean->matches());
  // A value changed after the agreement: the files no longer hold the recorded state.
  Tensor changed = files[1].tensor("workload/u").clone();
  changed.data_as<double>()[1] += 1.0;
  files[1].set("workload/u", changed);
  EXPECT_FALSE(checkpoint_digest(files, "test")->matches());
  // Rank 1's copy of a replicated entry differs: rank 1 cannot be told from rank 0 with two.
  files[1].set("workload/u", slab(whole, 0, 4, 6));
  files[1].set("workload/t", 0.25);
  const std::optional<CheckpointDigest> split = checkpoint_digest(files, "test");
  EXPECT_EQ(split->suspects, (std::vector<int>{0, 1}));
  // Without a recorded digest (a checkpoint older than digests) there is nothing to check.
  StateDict old;
  old.set("workload/u", whole);
  EXPECT_FALSE(checkpoint_digest(std::vector<StateDict>{old}, "test").has_value());
  // A damaged record is an IoError naming where.
  files[0].set(runner_entry::state_digest, std::string("not hex"));
  EXPECT_THROW((void)checkpoint_digest(files, "test"), IoError);
}

// The part `shard` describes of `whole` (a slab or a box), copied.
Tensor part(const Tensor& whole, const TensorShard& shard) {
  Tensor out = Tensor::empty(shard.part_shape(whole.shape()), whole.dtype());
  copy_shard_overlap(shard.whole(), whole, shard, out);
  return out;
}

// The digest of `whole` split into `shards` (slabs or boxes), each a rank's, with a replicated
// scalar beside it.
std::uint64_t shard_digest(const Tensor& whole, const std::vector<TensorShard>& shards) {
  std::uint64_t common = 0;
  std::uint64_t partial = 0;
  for (std::size_t r = 0; r < shards.size(); ++r) {
    StateDict state;
    state.set("t", 0.25);
    state.set("x", part(whole, shards[r]));
    const DigestLayout layout{{shards[r]}, {}, false};
    const DigestParts parts = digest_parts(state, layout, static_cast<int>(r));
    if (r == 0) common = parts.common;
    EXPECT_EQ(parts.common, common) << "rank " << r << ": the common part differs";
    partial += parts.partial;
  }
  return combine_digest(common, partial);
}

// 2 x 2 boxes of axes `a` and `b` of `whole`, cut at `cut_a` and `cut_b`.
std::vector<TensorShard> boxes(const Tensor& whole, int a, std::int64_t cut_a, int b,
                               std::int64_t cut_b) {
  const std::int64_t na = whole.shape()[a];
  const std::int64_t nb = whole.shape()[b];
  std::vector<TensorShard> shards;
  for (const auto& [a0, a1] : {std::pair{std::int64_t{0}, cut_a}, std::pair{cut_a, na}}) {
    for (const auto& [b0, b1] : {std::pair{std::int64_t{0}, cut_b}, std::pair{cut_b, nb}}) {
      shards.push_back({"x", a, a0, a1, na, {{b, b0, b1, nb}}});
    }
  }
  return shards;
}

TEST(StateDigest, TheSameForBoxesAsForSlabsAndTheWholeTensor) {
  for (const DType dtype : {DType::f64, DType::f32, DType::u8}) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor x = counting({5, 7, 3}, dtype);
    const std::uint64_t whole = split_digest(x, 0, {0, 5});
    EXPECT_EQ(split_digest(x, 0, {0, 2, 5}), whole);
    EXPECT_EQ(split_digest(x, 1, {0, 3, 7}), whole);
    EXPECT_EQ(shard_digest(x, boxes(x, 0, 2, 1, 4)), whole) << "2 x 2 boxes of axes 0 and 1";
    EXPECT_EQ(shard_digest(x, boxes(x, 0, 3, 1, 1)), whole);
    EXPECT_EQ(shard_digest(x, boxes(x, 0, 0, 1, 7)), whole) << "empty boxes contribute nothing";
    EXPECT_EQ(shard_digest(x, boxes(x, 1, 5, 2, 2)), whole) << "boxes of axes 1 and 2";
    EXPECT_EQ(shard_digest(x, boxes(x, 0, 4, 2, 1)), whole) << "boxes of axes 0 and 2";
    std::vector<TensorShard> cube;
    for (int r = 0; r < 8; ++r) {
      const std::int64_t i = r / 4 == 0 ? 0 : 2;
      const std::int64_t j = (r / 2) % 2 == 0 ? 0 : 5;
      const std::int64_t k = r % 2 == 0 ? 0 : 1;
      cube.push_back(
          {"x", 0, i, i == 0 ? 2 : 5, 5, {{1, j, j == 0 ? 5 : 7, 7}, {2, k, k == 0 ? 1 : 3, 3}}});
    }
    EXPECT_EQ(shard_digest(x, cube), whole) << "2 x 2 x 2 boxes";
    EXPECT_EQ(shard_digest(x, {{"x", 0, 0, 5, 5, {{1, 0, 7, 7}}}}), whole) << "one box";
  }
  // A box holds its own elements: a flip in one changes the digest, and so does a box whose
  // elements are the right ones at the wrong place.
  Tensor x = counting({5, 7, 3});
  const std::uint64_t clean = shard_digest(x, boxes(x, 0, 2, 1, 4));
  Tensor flipped = x.clone();
  static_cast<unsigned char*>(flipped.data())[((3 * 7 + 5) * 3 + 1) * 8] ^= 1;
  EXPECT_NE(shard_digest(flipped, boxes(flipped, 0, 2, 1, 4)), clean);
  EXPECT_NE(shard_digest(x.reshape({7, 5, 3}), boxes(x.reshape({7, 5, 3}), 0, 2, 1, 4)), clean);
}

// Slab digests are the values they were before boxes existed (computed then).
TEST(StateDigest, SlabDigestsAreTheValuesBeforeBoxes) {
  const auto parts_of = [](const Tensor& whole, int axis, std::int64_t begin, std::int64_t end,
                           int rank) {
    StateDict state;
    state.set("t", 0.25);
    state.set("x", slab(whole, axis, begin, end));
    return digest_parts(state, {{{"x", axis, begin, end, whole.shape()[axis]}}, {}, false}, rank);
  };
  const Tensor a = counting({5, 7, 3});
  EXPECT_EQ(parts_of(a, 0, 2, 5, 1).common, 0x015ad0b199ddf3aaULL);
  EXPECT_EQ(parts_of(a, 0, 2, 5, 1).partial, 0x26d1f1361c5d4b5bULL);
  EXPECT_EQ(parts_of(a, 1, 3, 7, 0).partial, 0x6cee43958c192a01ULL);
  EXPECT_EQ(parts_of(a, 2, 1, 3, 0).partial, 0x1e2c66e913536eb5ULL);
  const Tensor b = counting({3, 10}, DType::f32);
  EXPECT_EQ(parts_of(b, 1, 4, 10, 1).common, 0x94d95f447410a8ecULL);
  EXPECT_EQ(parts_of(b, 1, 4, 10, 1).partial, 0xa389ca60abf857c6ULL);
  StateDict state;
  state.set("x", a);
  state.set("n", std::int64_t{3});
  EXPECT_EQ(digest_parts(state, {}, 0).common, 0x88a8098b45a1dc13ULL);
}

TEST(StateDigest, ACheckpointOfBoxesIsCheckedAgainstItsRecordedDigest) {
  const Tensor whole = counting({4, 6});
  const std::vector<TensorShard> shards = boxes(whole, 0, 1, 1, 4);
  ShardTable table;
  for (TensorShard s : shards) {
    s.name = "workload/u";
    table.ranks.push_back({s});
  }
  std::vector<StateDict> files(shards.size());
  std::vector<DigestParts> parts;
  for (std::size_t r = 0; r < shards.size(); ++r) {
    StateDict workload;
    workload.set("u", part(whole, shards[r]));
    workload.set("t", 0.5);
    TensorShard mine = shards[r];
    mine.name = "u";
    parts.push_back(digest_parts(workload, {{mine}, {}, false}, static_cast<int>(r)));
    files[r].merge("workload", workload);
    files[r].set(runner_entry::shards, format_shard_table(table));
  }
  StateDict one;
  one.set("u", whole);
  one.set("t", 0.5);
  const DigestParts single = digest_parts(one, {{{"u", 0, 0, 4, 4}}, {}, false}, 0);
  EXPECT_EQ(vote(parts).digest, combine_digest(single.common, single.partial))
      << "four boxes, one slab: one state";
  for (StateDict& f : files) f.set(runner_entry::state_digest, to_hex64(vote(parts).digest));
  const std::optional<CheckpointDigest> clean = checkpoint_digest(files, "test");
  ASSERT_TRUE(clean.has_value());
  EXPECT_TRUE(clean->matches());
  Tensor changed = files[3].tensor("workload/u").clone();
  static_cast<unsigned char*>(changed.data())[0] ^= 1;
  files[3].set("workload/u", changed);
  EXPECT_FALSE(checkpoint_digest(files, "test")->matches());
}

}  // namespace
}  // namespace tenax::io
