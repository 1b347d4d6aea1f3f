// The shard table of a checkpoint: its JSON round trip, the strict parser against hostile text,
// and the slab copy that rebuilds a rank's part from the parts of another number of ranks.
#include "tenax/io/shard_layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
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

// A slab is written exactly as before boxes existed (the bytes of every slab checkpoint).
TEST(ShardTable, SlabsAreWrittenAsBeforeBoxes) {
  EXPECT_EQ(format_shard_table(two_ranks()),
            R"({"ranks":[[{"axis":0,"begin":0,"end":18,"extent":37,"name":"workload/u"},)"
            R"({"axis":1,"begin":0,"end":4096,"extent":5000,"name":"workload/solver/basis"}],)"
            R"([{"axis":0,"begin":18,"end":37,"extent":37,"name":"workload/u"},)"
            R"({"axis":1,"begin":4096,"end":5000,"extent":5000,"name":"workload/solver/basis"}]],)"
            R"("world_size":2})");
}

// A [37, 40] field split 2 x 2 (rows 0..18 | 18..37, columns 0..20 | 20..40), beside a slab.
ShardTable four_boxes() {
  ShardTable table;
  for (int r = 0; r < 4; ++r) {
    const std::int64_t row = r / 2 == 0 ? 0 : 18;
    const std::int64_t column = r % 2 == 0 ? 0 : 20;
    table.ranks.push_back(
        {{"workload/u", 0, row, row == 0 ? 18 : 37, 37, {{1, column, column + 20, 40}}},
         {"workload/t", 0, 3 * r, 3 * r + 3, 12}});
  }
  return table;
}

TEST(ShardTable, BoxesRoundTripThroughTheirText) {
  const ShardTable table = four_boxes();
  const std::string text = format_shard_table(table);
  EXPECT_NE(
      text.find(R"({"axis":0,"begin":18,"end":37,"extent":37,)"
                R"("more":[{"axis":1,"begin":20,"end":40,"extent":40}],"name":"workload/u"})"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find(R"("more":[],)"), std::string::npos) << "a slab is written without more";
  const ShardTable back = parse_shard_table(text, "test");
  EXPECT_EQ(back.ranks, table.ranks);
  EXPECT_EQ(format_shard_table(back), text);
  // Boxes tile in any order of the ranks, and a box may be empty.
  ShardTable shuffled = table;
  std::swap(shuffled.ranks[0], shuffled.ranks[3]);
  for (std::size_t r = 0; r < 4; ++r) shuffled.ranks[r][1] = table.ranks[r][1];
  EXPECT_EQ(parse_shard_table(format_shard_table(shuffled), "test").ranks, shuffled.ranks);
  ShardTable with_empty = table;
  with_empty.ranks.push_back(
      {{"workload/u", 0, 37, 37, 37, {{1, 0, 40, 40}}}, {"workload/t", 0, 12, 12, 12}});
  EXPECT_NO_THROW((void)parse_shard_table(format_shard_table(with_empty), "test"));
}

TEST(ShardTable, HostileBoxesAreRefusedNamingWhatIsWrong) {
  // A [4, 6] tensor `u` on two ranks, rank 1's shard given.
  const auto two = [](const std::string& rank0, const std::string& rank1) {
    return R"({"world_size":2,"ranks":[[)" + rank0 + "],[" + rank1 + "]]}";
  };
  const std::string top =
      R"({"name":"u","axis":0,"begin":0,"end":2,"extent":4,"more":[{"axis":1,"begin":0,"end":6,"extent":6}]})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      // overlapping boxes (rows 0..3 and 2..4)
      {two(R"({"name":"u","axis":0,"begin":0,"end":3,"extent":4,"more":[{"axis":1,"begin":0,"end":6,"extent":6}]})",
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":1,"begin":0,"end":6,"extent":6}]})"),
       "ranks 0 and 1 hold overlapping boxes of 'u'"},
      // a gap: rank 1 holds columns 0..5 of rows 2..4
      {two(top,
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":1,"begin":0,"end":5,"extent":6}]})"),
       "cover 22 of the 24 elements"},
      // a box beside a slab, other split axes, other extents
      {two(top, R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4})"), "differently"},
      {two(top,
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":2,"begin":0,"end":6,"extent":6}]})"),
       "differently"},
      {two(top,
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":1,"begin":0,"end":6,"extent":7}]})"),
       "differently"},
      // further axes not ascending or not above `axis`, ranges outside their axis
      {two(top,
           R"({"name":"u","axis":1,"begin":0,"end":6,"extent":6,"more":[{"axis":0,"begin":2,"end":4,"extent":4}]})"),
       "impossible"},
      {two(top,
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":1,"begin":0,"end":6,"extent":6},{"axis":1,"begin":0,"end":6,"extent":6}]})"),
       "impossible"},
      {two(top,
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":1,"begin":4,"end":3,"extent":6}]})"),
       "impossible"},
      {two(top,
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":1,"begin":0,"end":7,"extent":6}]})"),
       "impossible"},
      {two(top,
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":9,"begin":0,"end":6,"extent":6}]})"),
       "impossible"},
      {two(top,
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":1,"begin":-1,"end":6,"extent":6}]})"),
       "impossible"},
      // wrong types
      {two(top, R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":5})"), "\"more\""},
      {two(top, R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[]})"), "\"more\""},
      {two(top, R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[3]})"), "\"more\""},
      {two(top,
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":"1","begin":0,"end":6,"extent":6}]})"),
       "\"axis\""},
      {two(top,
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":1,"begin":0,"end":6}]})"),
       "\"extent\""},
      {two(top,
           R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":1,"begin":0,"end":6.5,"extent":6}]})"),
       "\"end\""},
      // the box of the split axes holds more than 2^63 elements
      {R"({"world_size":1,"ranks":[[{"name":"u","axis":0,"begin":0,"end":4000000000,"extent":4000000000,"more":[{"axis":1,"begin":0,"end":4000000000,"extent":4000000000},{"axis":2,"begin":0,"end":4000000000,"extent":4000000000}]}]]})",
       "more than 2^63"},
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
  const std::string bottom =
      R"({"name":"u","axis":0,"begin":2,"end":4,"extent":4,"more":[{"axis":1,"begin":0,"end":6,"extent":6}]})";
  EXPECT_NO_THROW((void)parse_shard_table(two(top, bottom), "x"));
}

TEST(ShardCheck, BoxesAreCheckedRangeByRange) {
  EXPECT_NO_THROW(check_shard({"u", 0, 0, 2, 4, {{1, 0, 6, 6}, {3, 1, 2, 2}}}));
  for (const TensorShard& bad :
       {TensorShard{"u", 1, 0, 2, 4, {{1, 0, 6, 6}}}, TensorShard{"u", 1, 0, 2, 4, {{0, 0, 6, 6}}},
        TensorShard{"u", 0, 0, 2, 4, {{2, 0, 6, 6}, {1, 0, 6, 6}}},
        TensorShard{"u", 0, 0, 2, 4, {{8, 0, 6, 6}}}, TensorShard{"u", 0, 0, 2, 4, {{1, 3, 2, 6}}},
        TensorShard{"u", 0, 0, 2, 4, {{1, 0, 7, 6}}}}) {
    try {
      check_shard(bad);
      ADD_FAILURE() << "accepted a box of axes " << bad.axis << " and " << bad.more[0].axis;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("'u'"), std::string::npos) << e.what();
    }
  }
}

TEST(ShardShape, ABoxHoldsItsRangesAlongEverySplitAxis) {
  const TensorShard box{"u", 0, 2, 5, 5, {{1, 3, 7, 7}}};
  EXPECT_TRUE(box.holds(Shape{3, 4, 3}));
  EXPECT_TRUE(box.holds(Shape{3, 4}));
  EXPECT_FALSE(box.holds(Shape{3, 7, 3})) << "whole along the second split axis";
  EXPECT_FALSE(box.holds(Shape{5, 4, 3}));
  EXPECT_FALSE(box.holds(Shape{3})) << "no second split axis";
  EXPECT_EQ(box.part_shape(Shape{5, 7, 3}), (Shape{3, 4, 3}));
  EXPECT_EQ(box.part_shape(Shape{1, 1, 9}), (Shape{3, 4, 9}));
  EXPECT_THROW((void)box.part_shape(Shape{5}), UsageError);
  EXPECT_EQ(box.whole(), (TensorShard{"u", 0, 0, 5, 5, {{1, 0, 7, 7}}}));
  EXPECT_EQ(box.whole().part_shape(Shape{3, 4, 3}), (Shape{5, 7, 3}));
  const std::vector<AxisRange> ranges = {{0, 2, 5, 5}, {1, 3, 7, 7}};
  EXPECT_EQ(box.ranges(), ranges);
  // A slab is what it was.
  const TensorShard slab{"u", 1, 3, 7, 7};
  EXPECT_TRUE(slab.holds(Shape{5, 4, 3}));
  EXPECT_EQ(slab.part_shape(Shape{5, 7, 3}), (Shape{5, 4, 3}));
}

// The [5, 7, 3] tensor whose elements are their global row-major indices.
constexpr std::int64_t kRows = 5;
constexpr std::int64_t kColumns = 7;
constexpr std::int64_t kDepth = 3;

// The part of that tensor that `s` describes, filled from the global indices.
Tensor part_of(const TensorShard& s) {
  std::int64_t lo[3] = {0, 0, 0};
  std::int64_t hi[3] = {kRows, kColumns, kDepth};
  for (const AxisRange& r : s.ranges()) {
    lo[r.axis] = r.begin;
    hi[r.axis] = r.end;
  }
  Tensor t = Tensor::empty({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]}, DType::f64);
  double* out = t.data_as<double>();
  for (std::int64_t i = lo[0]; i < hi[0]; ++i) {
    for (std::int64_t j = lo[1]; j < hi[1]; ++j) {
      for (std::int64_t k = lo[2]; k < hi[2]; ++k) {
        *out++ = static_cast<double>((i * kColumns + j) * kDepth + k);
      }
    }
  }
  return t;
}

// Ways of splitting that tensor over ranks: 2 x 2 boxes of axes 0 and 1 (two cuts), boxes of
// axes 1 and 2, 2 x 2 x 2 boxes, slabs along each axis, and the whole.
std::vector<std::vector<TensorShard>> splits() {
  const auto boxes = [](std::int64_t row, std::int64_t column) {
    std::vector<TensorShard> ranks;
    for (const auto& [r0, r1] : {std::pair{std::int64_t{0}, row}, std::pair{row, kRows}}) {
      for (const auto& [c0, c1] :
           {std::pair{std::int64_t{0}, column}, std::pair{column, kColumns}}) {
        ranks.push_back({"x", 0, r0, r1, kRows, {{1, c0, c1, kColumns}}});
      }
    }
    return ranks;
  };
  std::vector<std::vector<TensorShard>> all = {boxes(2, 4), boxes(3, 1), boxes(0, 6)};
  all.push_back({{"x", 1, 0, 3, kColumns, {{2, 0, 1, kDepth}}},
                 {"x", 1, 0, 3, kColumns, {{2, 1, 3, kDepth}}},
                 {"x", 1, 3, 7, kColumns, {{2, 0, 2, kDepth}}},
                 {"x", 1, 3, 7, kColumns, {{2, 2, 3, kDepth}}}});
  std::vector<TensorShard> cube;
  for (int b = 0; b < 8; ++b) {
    const std::int64_t i = b / 4 == 0 ? 0 : 2;
    const std::int64_t j = (b / 2) % 2 == 0 ? 0 : 5;
    const std::int64_t k = b % 2 == 0 ? 0 : 1;
    cube.push_back(
        {"x",
         0,
         i,
         i == 0 ? 2 : kRows,
         kRows,
         {{1, j, j == 0 ? 5 : kColumns, kColumns}, {2, k, k == 0 ? 1 : kDepth, kDepth}}});
  }
  all.push_back(cube);
  all.push_back({{"x", 0, 0, 3, kRows}, {"x", 0, 3, 5, kRows}});
  all.push_back({{"x", 1, 0, 2, kColumns}, {"x", 1, 2, 2, kColumns}, {"x", 1, 2, 7, kColumns}});
  all.push_back({{"x", 2, 0, 1, kDepth}, {"x", 2, 1, 3, kDepth}});
  all.push_back({{"x", 0, 0, kRows, kRows}});
  return all;
}

// Every part of every split rebuilt from the parts of every other split (box -> box, slab -> box,
// box -> slab): every element is its global index.
TEST(ShardCopy, RebuildsBoxesAndSlabsFromAnySplit) {
  for (const std::vector<TensorShard>& old : splits()) {
    std::vector<Tensor> parts;
    for (const TensorShard& s : old) parts.push_back(part_of(s));
    for (const std::vector<TensorShard>& split : splits()) {
      for (const TensorShard& mine : split) {
        SCOPED_TRACE(format_shard_table({{old}}) + " -> " + format_shard_table({{{mine}}}));
        Tensor built = Tensor::empty(mine.part_shape(Shape{kRows, kColumns, kDepth}), DType::f64);
        double* out = built.data_as<double>();
        for (std::int64_t k = 0; k < built.numel(); ++k) out[k] = -1.0;
        std::int64_t touched = 0;
        for (std::size_t r = 0; r < old.size(); ++r) {
          touched += shards_overlap(old[r], mine) ? 1 : 0;
          copy_shard_overlap(old[r], parts[r], mine, built);
        }
        EXPECT_GE(touched, built.numel() > 0 ? 1 : 0);
        const Tensor expected = part_of(mine);
        ASSERT_EQ(built.shape(), expected.shape());
        for (std::int64_t k = 0; k < built.numel(); ++k) {
          ASSERT_EQ(out[k], expected.data_as<double>()[k]) << "element " << k;
        }
      }
    }
  }
}

TEST(ShardCopy, RefusesPartsThatDoNotFitTheirShards) {
  const TensorShard box{"x", 0, 0, 2, kRows, {{1, 0, 4, kColumns}}};
  const TensorShard slab{"x", 0, 0, 3, kRows};
  const Tensor source = part_of(box);  // [2, 4, 3]
  // The slab holds axis 1 whole: 7 columns, not 6.
  Tensor narrow = Tensor::empty({3, 6, kDepth}, DType::f64);
  EXPECT_THROW(copy_shard_overlap(box, source, slab, narrow), UsageError);
  EXPECT_THROW(copy_shard_overlap(slab, narrow, box, Tensor::empty({2, 4, 3}, DType::f64)),
               UsageError);
  // An axis both split has one extent.
  const TensorShard other{"x", 0, 0, 3, kRows, {{1, 0, 4, kColumns + 1}}};
  EXPECT_THROW(copy_shard_overlap(box, source, other, Tensor::empty({3, 4, 3}, DType::f64)),
               UsageError);
  // An axis neither splits has one extent in both tensors; the ranks agree.
  EXPECT_THROW(copy_shard_overlap(box, source, box, Tensor::empty({2, 4, 2}, DType::f64)),
               UsageError);
  EXPECT_THROW(copy_shard_overlap(box, source, box, Tensor::empty({2, 4}, DType::f64)), UsageError);
  try {
    copy_shard_overlap(box, source, slab, narrow);
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("axes 0 x 1 [0, 2) x [0, 4) of 5 x 7"), std::string::npos) << what;
    EXPECT_NE(what.find("axis 0 [0, 3) of 5"), std::string::npos) << what;
  }
}

TEST(ShardOverlap, SplitsAlongDifferentAxesMeetWhereEveryRangeMeets) {
  const TensorShard top_left{"x", 0, 0, 2, 5, {{1, 0, 4, 7}}};
  const TensorShard bottom_right{"x", 0, 2, 5, 5, {{1, 4, 7, 7}}};
  const TensorShard rows_0_3{"x", 0, 0, 3, 5};
  const TensorShard rows_2_5{"x", 0, 2, 5, 5};
  const TensorShard rows_none{"x", 0, 2, 2, 5};
  const TensorShard columns_4_7{"x", 1, 4, 7, 7};
  const TensorShard columns_0_4{"x", 1, 0, 4, 7};
  const TensorShard columns_none{"x", 1, 3, 3, 7};
  const TensorShard depth_1{"x", 2, 0, 1, 3};
  struct Case {
    const TensorShard& a;
    const TensorShard& b;
    bool overlap;
  };
  const std::vector<Case> cases = {
      {top_left, top_left, true},
      {top_left, bottom_right, false},
      {top_left, rows_0_3, true},
      {top_left, rows_2_5, false},
      {bottom_right, rows_2_5, true},
      {bottom_right, rows_0_3, true},
      {top_left, columns_4_7, false},
      {top_left, columns_0_4, true},
      {bottom_right, columns_4_7, true},
      {top_left, depth_1, true},
      {rows_0_3, columns_4_7, true},
      {rows_0_3, rows_2_5, true},
      {rows_none, top_left, false},
      {rows_none, columns_0_4, false},
      {columns_none, rows_0_3, false},
      {columns_none, top_left, false},
      {rows_0_3, TensorShard{"x", 0, 3, 5, 5}, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(shards_overlap(c.a, c.b), c.overlap)
        << format_shard_table({{{c.a}}}) << " " << format_shard_table({{{c.b}}});
    EXPECT_EQ(shards_overlap(c.b, c.a), c.overlap) << "symmetric";
  }
}

}  // namespace
}  // namespace tenax::io
