// The shard table of a checkpoint: its JSON round trip, the strict parser against hostile text,
// and the slab copy that rebuilds a rank's part from the parts of another number of ranks.
#include "tenax/io/shard_layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"

namespace tenax::io {
namespace {

ShardTable two_ranks() {
  return {{{{"workload/u", 0, 0, 18, 37}, {"workload/solver/basis", 1, 0, 4096, 5000}},
           {{"workload/u", 0, 18, 37, 37}, {"workload/solver/basis", 1, 4096, 5000, 5000}}}};
}

TEST(ShardTable, RoundTripsThroughItsText) {
  const ShardTable table = two_ranks();
  const ShardTable back = parse_shard_table(format_shard_table(table), "test");
  ASSERT_EQ(back.ranks.size(), 2u);
  EXPECT_EQ(back.ranks, table.ranks);
}

TEST(ShardTable, HostileTextIsRefusedNamingWhatIsWrong) {
  const std::string good = format_shard_table(two_ranks());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not JSON"},
      {"{", "not JSON"},
      {"[]", "no \"ranks\""},
      {R"({"ranks":[]})", "world_size"},
      {R"({"world_size":2,"ranks":[[]]})", "world_size"},
      {R"({"world_size":1,"ranks":[[{"name":"u","axis":0,"begin":0,"end":5}]]})", "\"extent\""},
      {R"({"world_size":1,"ranks":[[{"name":"u","axis":"0","begin":0,"end":5,"extent":5}]]})",
       "\"axis\""},
      {R"({"world_size":1,"ranks":[[{"axis":0,"begin":0,"end":5,"extent":5}]]})", "name"},
      {R"({"world_size":1,"ranks":[[{"name":"u","axis":-1,"begin":0,"end":5,"extent":5}]]})",
       "impossible"},
      {R"({"world_size":1,"ranks":[[{"name":"u","axis":99,"begin":0,"end":5,"extent":5}]]})",
       "impossible"},
      {R"({"world_size":1,"ranks":[[{"name":"u","axis":0,"begin":3,"end":2,"extent":5}]]})",
       "impossible"},
      {R"({"world_size":1,"ranks":[[{"name":"u","axis":0,"begin":0,"end":6,"extent":5}]]})",
       "impossible"},
      {R"({"world_size":1,"ranks":[[{"name":"u","axis":0,"begin":0,"end":4,"extent":5}]]})",
       "up to 4 of 5"},
      {R"({"world_size":1,"ranks":[[{"name":"u","axis":0,"begin":0,"end":5,
           "extent":99999999999999999999}]]})",
       "\"extent\""},
      {R"({"world_size":2,"ranks":[[{"name":"u","axis":0,"begin":0,"end":2,"extent":5}],
                                   [{"name":"u","axis":0,"begin":3,"end":5,"extent":5}]]})",
       "from 3 where 2"},
      {R"({"world_size":2,"ranks":[[{"name":"u","axis":0,"begin":0,"end":2,"extent":5}],
                                   [{"name":"v","axis":0,"begin":2,"end":5,"extent":5}]]})",
       "differently"},
      {R"({"world_size":2,"ranks":[[{"name":"u","axis":0,"begin":0,"end":2,"extent":5}],[]]})",
       "differently"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      (void)parse_shard_table(text, "rank-0.h5");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const IoError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(expected), std::string::npos) << text << "\n" << what;
      EXPECT_NE(what.find("rank-0.h5"), std::string::npos) << what;
    }
  }
  EXPECT_NO_THROW((void)parse_shard_table(good, "x"));
}

// A [3, 10] tensor split along axis 1 over 3 ranks, rebuilt on 2 ranks: every element lands
// where the whole tensor has it.
TEST(ShardCopy, RebuildsEachPartFromTheOverlappingPartsOfAnotherSplit) {
  const std::int64_t rows = 3;
  const std::int64_t extent = 10;
  auto global = [&](std::int64_t r, std::int64_t c) { return static_cast<double>(100 * r + c); };
  auto part_of = [&](const TensorShard& s) {
    Tensor t = Tensor::empty({rows, s.end - s.begin}, DType::f64);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = s.begin; c < s.end; ++c) {
        t.data_as<double>()[r * (s.end - s.begin) + c - s.begin] = global(r, c);
      }
    }
    return t;
  };
  const std::vector<TensorShard> old = {
      {"b", 1, 0, 4, extent}, {"b", 1, 4, 7, extent}, {"b", 1, 7, 10, extent}};
  for (const TensorShard& mine :
       {TensorShard{"b", 1, 0, 5, extent}, TensorShard{"b", 1, 5, 10, extent},
        TensorShard{"b", 1, 3, 3, extent}}) {
    Tensor built = Tensor::empty(mine.part_shape(Shape{rows, 4}), DType::f64);
    for (const TensorShard& from : old) copy_shard_overlap(from, part_of(from), mine, built);
    const Tensor expected = part_of(mine);
    ASSERT_EQ(built.shape(), expected.shape());
    for (std::int64_t k = 0; k < built.numel(); ++k) {
      EXPECT_EQ(built.data_as<double>()[k], expected.data_as<double>()[k]) << k;
    }
  }
  // Parts that are not what the shards say are refused.
  Tensor wrong = Tensor::empty({rows, 3}, DType::f64);
  Tensor out = Tensor::empty({rows, 5}, DType::f64);
  EXPECT_THROW(copy_shard_overlap(old[0], wrong, TensorShard{"b", 1, 0, 5, extent}, out),
               UsageError);
  EXPECT_THROW(copy_shard_overlap(old[1], part_of(old[1]), TensorShard{"c", 1, 0, 5, extent}, out),
               UsageError);
  Tensor f32 = Tensor::empty({rows, 5}, DType::f32);
  EXPECT_THROW(copy_shard_overlap(old[1], part_of(old[1]), TensorShard{"b", 1, 0, 5, extent}, f32),
               UsageError);
}

}  // namespace
}  // namespace tenax::io
