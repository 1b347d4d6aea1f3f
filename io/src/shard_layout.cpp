// ShardTable (shard_layout.hpp): the JSON text, its strict parser, and the slab and box copy.
#include "tenax/io/shard_layout.hpp"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tenax/core/error.hpp"

namespace tenax::io {
namespace {

using nlohmann::json;

[[noreturn]] void corrupt(std::string_view where, const std::string& what) {
  throw IoError(std::string(where) + ": the shard table " + what,
                "the checkpoint was not written by this version of tenax or is damaged; resume "
                "on the number of ranks that wrote it, or from another checkpoint");
}

std::int64_t integer_field(const json& object, const char* key, std::string_view where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) {
    corrupt(where, std::string("has a shard without an integer \"") + key + "\"");
  }
  return it->get<std::int64_t>();
}

// An axis as read: out-of-range values clamped to an impossible axis that check_shard refuses.
int axis_field(const json& object, std::string_view where) {
  return static_cast<int>(
      std::clamp<std::int64_t>(integer_field(object, "axis", where), -1, Shape::kMaxRank));
}

std::string range_text(const AxisRange& r) {
  return "[" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ") along axis " +
         std::to_string(r.axis) + " of extent " + std::to_string(r.extent);
}

bool range_valid(const AxisRange& r) noexcept {
  return r.axis >= 0 && r.axis < Shape::kMaxRank && r.begin >= 0 && r.begin <= r.end &&
         r.end <= r.extent;
}

// The range of `shard` along `axis`, or nullptr when the shard does not split it.
const AxisRange* range_along(const std::vector<AxisRange>& ranges, int axis) noexcept {
  for (const AxisRange& r : ranges) {
    if (r.axis == axis) return &r;
  }
  return nullptr;
}

// How a shard's split axes are described in errors: "axis 0 [0, 18) of 37" or, for a box,
// "axes 0 x 1 [0, 18) x [0, 20) of 37 x 40".
std::string describe_ranges(const TensorShard& shard) {
  std::string axes;
  std::string ranges;
  std::string extents;
  for (const AxisRange& r : shard.ranges()) {
    if (!axes.empty()) {
      axes.append(" x ");
      ranges.append(" x ");
      extents.append(" x ");
    }
    axes.append(std::to_string(r.axis));
    ranges.append("[").append(std::to_string(r.begin)).append(", ");
    ranges.append(std::to_string(r.end)).append(")");
    extents.append(std::to_string(r.extent));
  }
  std::string text = shard.more.empty() ? "axis " : "axes ";
  return text.append(axes).append(" ").append(ranges).append(" of ").append(extents);
}

// The product of `factors`, or nullopt when it overflows 64 bits.
std::optional<std::int64_t> checked_product(const std::vector<std::int64_t>& factors) {
  std::int64_t product = 1;
  for (const std::int64_t f : factors) {
    if (__builtin_mul_overflow(product, f, &product)) return std::nullopt;
  }
  return product;
}

}  // namespace

std::vector<AxisRange> TensorShard::ranges() const {
  std::vector<AxisRange> all;
  all.reserve(1 + more.size());
  all.push_back({axis, begin, end, extent});
  all.insert(all.end(), more.begin(), more.end());
  return all;
}

TensorShard TensorShard::whole() const {
  TensorShard all{name, axis, 0, extent, extent, more};
  for (AxisRange& r : all.more) {
    r.begin = 0;
    r.end = r.extent;
  }
  return all;
}

bool TensorShard::holds(const Shape& part) const noexcept {
  const auto fits = [&](int a, std::int64_t b, std::int64_t e) {
    return a >= 0 && a < part.rank() && part.extents()[static_cast<std::size_t>(a)] == e - b;
  };
  if (!fits(axis, begin, end)) return false;
  return std::all_of(more.begin(), more.end(),
                     [&](const AxisRange& r) { return fits(r.axis, r.begin, r.end); });
}

Shape TensorShard::part_shape(const Shape& other) const {
  check_shard(*this);
  std::vector<std::int64_t> extents(other.extents().begin(), other.extents().end());
  for (const AxisRange& r : ranges()) {
    TENAX_EXPECTS(r.axis < other.rank(), UsageError,
                  "shard of '" + name + "' along axis " + std::to_string(r.axis) + " of a tensor " +
                      to_string(other),
                  "split an axis the tensor has");
    extents[static_cast<std::size_t>(r.axis)] = r.end - r.begin;
  }
  return Shape(std::span<const std::int64_t>(extents));
}

void check_shard(const TensorShard& shard) {
  TENAX_EXPECTS(
      !shard.name.empty() && range_valid({shard.axis, shard.begin, shard.end, shard.extent}),
      UsageError,
      "shard of '" + shard.name + "': slab [" + std::to_string(shard.begin) + ", " +
          std::to_string(shard.end) + ") along axis " + std::to_string(shard.axis) + " of extent " +
          std::to_string(shard.extent),
      "name the entry, split one of its axes (0.." + std::to_string(Shape::kMaxRank - 1) +
          ") and give a slab inside it, begin <= end");
  int previous = shard.axis;
  for (const AxisRange& r : shard.more) {
    TENAX_EXPECTS(range_valid(r), UsageError,
                  "shard of '" + shard.name + "': further range " + range_text(r),
                  "split one of its axes (0.." + std::to_string(Shape::kMaxRank - 1) +
                      ") and give a range inside it, 0 <= begin <= end <= extent");
    TENAX_EXPECTS(r.axis > previous, UsageError,
                  "shard of '" + shard.name + "': further split axis " + std::to_string(r.axis) +
                      " after axis " + std::to_string(previous),
                  "list the further split axes (`more`) in ascending order, each greater than "
                  "`axis` and named once");
    previous = r.axis;
  }
}

std::string format_shard_table(const ShardTable& table) {
  json ranks = json::array();
  for (const std::vector<TensorShard>& shards : table.ranks) {
    json list = json::array();
    for (const TensorShard& s : shards) {
      check_shard(s);
      json entry = {{"name", s.name},
                    {"axis", s.axis},
                    {"begin", s.begin},
                    {"end", s.end},
                    {"extent", s.extent}};
      if (!s.more.empty()) {
        json more = json::array();
        for (const AxisRange& r : s.more) {
          more.push_back(
              {{"axis", r.axis}, {"begin", r.begin}, {"end", r.end}, {"extent", r.extent}});
        }
        entry["more"] = std::move(more);
      }
      list.push_back(std::move(entry));
    }
    ranks.push_back(std::move(list));
  }
  return json{{"world_size", table.ranks.size()}, {"ranks", std::move(ranks)}}.dump();
}

namespace {

// The slabs of shard k tile its axis in rank order (the table's rule before boxes, its messages
// unchanged).
void check_slabs_tile(const ShardTable& table, std::size_t k, std::string_view where) {
  const TensorShard& first = table.ranks.front()[k];
  std::int64_t next = 0;
  for (std::size_t r = 0; r < table.ranks.size(); ++r) {
    const TensorShard& mine = table.ranks[r][k];
    if (mine.begin != next) {
      corrupt(where, "has rank " + std::to_string(r) + " hold '" + first.name + "' from " +
                         std::to_string(mine.begin) + " where " + std::to_string(next) +
                         " was expected");
    }
    next = mine.end;
  }
  if (next != first.extent) {
    corrupt(where, "covers '" + first.name + "' up to " + std::to_string(next) + " of " +
                       std::to_string(first.extent));
  }
}

// The boxes of shard k do not overlap and fill the box of the split axes: with every box inside
// it, their volumes add up to its volume exactly when they tile it.
void check_boxes_tile(const ShardTable& table, std::size_t k, std::string_view where) {
  const TensorShard& first = table.ranks.front()[k];
  const std::vector<AxisRange> axes = first.ranges();
  std::vector<std::vector<AxisRange>> boxes;
  boxes.reserve(table.ranks.size());
  for (const std::vector<TensorShard>& rank : table.ranks) boxes.push_back(rank[k].ranges());
  std::vector<std::int64_t> extents;
  for (const AxisRange& r : axes) extents.push_back(r.extent);
  const std::optional<std::int64_t> total = checked_product(extents);
  if (!total) {
    corrupt(where, "splits '" + first.name + "' into a box of more than 2^63 elements");
  }
  std::int64_t covered = 0;
  for (std::size_t r = 0; r < boxes.size(); ++r) {
    for (std::size_t q = 0; q < r; ++q) {
      bool overlap = true;
      for (std::size_t a = 0; a < axes.size() && overlap; ++a) {
        overlap = std::max(boxes[q][a].begin, boxes[r][a].begin) <
                  std::min(boxes[q][a].end, boxes[r][a].end);
      }
      if (overlap) {
        corrupt(where, "has ranks " + std::to_string(q) + " and " + std::to_string(r) +
                           " hold overlapping boxes of '" + first.name + "' (" +
                           describe_ranges(table.ranks[q][k]) + " and " +
                           describe_ranges(table.ranks[r][k]) + ")");
      }
    }
    // Boxes inside the total box that do not overlap: neither a volume nor their sum exceeds
    // the total, so neither overflows.
    std::vector<std::int64_t> sides;
    for (const AxisRange& range : boxes[r]) sides.push_back(range.end - range.begin);
    covered += *checked_product(sides);
  }
  if (covered != *total) {
    corrupt(where, "has the boxes of '" + first.name + "' on ranks 0 to " +
                       std::to_string(table.ranks.size() - 1) + " cover " +
                       std::to_string(covered) + " of the " + std::to_string(*total) +
                       " elements of its split axes, leaving a gap");
  }
}

}  // namespace

ShardTable parse_shard_table(std::string_view text, std::string_view where) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception&) {
    corrupt(where, "is not JSON");
  }
  if (!document.is_object() || !document.contains("ranks") || !document["ranks"].is_array()) {
    corrupt(where, "has no \"ranks\" list");
  }
  const json& ranks = document["ranks"];
  const std::int64_t world =
      document.contains("world_size") && document["world_size"].is_number_integer()
          ? document["world_size"].get<std::int64_t>()
          : -1;
  if (world < 1 || static_cast<std::size_t>(world) != ranks.size()) {
    corrupt(where, "lists " + std::to_string(ranks.size()) + " ranks for a world_size of " +
                       std::to_string(world));
  }
  ShardTable table;
  for (const json& list : ranks) {
    if (!list.is_array()) corrupt(where, "has a rank whose shards are not a list");
    std::vector<TensorShard> shards;
    for (const json& entry : list) {
      if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) {
        corrupt(where, "has a shard without a name");
      }
      TensorShard s{entry["name"].get<std::string>(), axis_field(entry, where),
                    integer_field(entry, "begin", where), integer_field(entry, "end", where),
                    integer_field(entry, "extent", where)};
      if (const auto more = entry.find("more"); more != entry.end()) {
        if (!more->is_array() || more->empty()) {
          corrupt(where, "has a shard whose \"more\" is not a non-empty list of ranges");
        }
        for (const json& range : *more) {
          if (!range.is_object()) corrupt(where, "has a shard whose \"more\" holds a non-object");
          s.more.push_back({axis_field(range, where), integer_field(range, "begin", where),
                            integer_field(range, "end", where),
                            integer_field(range, "extent", where)});
        }
      }
      try {
        check_shard(s);
      } catch (const UsageError& e) {
        corrupt(where, "holds an impossible " + e.cause());
      }
      shards.push_back(std::move(s));
    }
    table.ranks.push_back(std::move(shards));
  }
  // Every rank names the same tensors in the same order, split along the same axes of the same
  // extents; their slabs tile each axis in rank order, their boxes the box of the split axes.
  const std::vector<TensorShard>& first = table.ranks.front();
  for (std::size_t r = 0; r < table.ranks.size(); ++r) {
    const std::vector<TensorShard>& mine = table.ranks[r];
    bool alike = mine.size() == first.size();
    for (std::size_t k = 0; alike && k < first.size(); ++k) {
      const std::vector<AxisRange> a = mine[k].ranges();
      const std::vector<AxisRange> b = first[k].ranges();
      alike = mine[k].name == first[k].name && a.size() == b.size();
      for (std::size_t d = 0; alike && d < a.size(); ++d) {
        alike = a[d].axis == b[d].axis && a[d].extent == b[d].extent;
      }
    }
    if (!alike) {
      corrupt(where, "has rank " + std::to_string(r) +
                         " describe its tensors differently from "
                         "rank 0");
    }
  }
  for (std::size_t k = 0; k < first.size(); ++k) {
    if (first[k].more.empty()) {
      check_slabs_tile(table, k, where);
    } else {
      check_boxes_tile(table, k, where);
    }
  }
  return table;
}

bool shards_overlap(const TensorShard& a, const TensorShard& b) noexcept {
  const auto meets = [](const TensorShard& s, const TensorShard& t) {
    const auto along = [&](int axis, std::int64_t begin, std::int64_t end) {
      if (begin >= end) return false;
      if (axis == t.axis) return std::max(begin, t.begin) < std::min(end, t.end);
      for (const AxisRange& r : t.more) {
        if (r.axis == axis) return std::max(begin, r.begin) < std::min(end, r.end);
      }
      return true;  // whole in t
    };
    return along(s.axis, s.begin, s.end) &&
           std::all_of(s.more.begin(), s.more.end(),
                       [&](const AxisRange& r) { return along(r.axis, r.begin, r.end); });
  };
  // Each axis split by a is checked against b, and each split by b against a: an axis split by
  // both is tested twice, alike.
  return meets(a, b) && meets(b, a);
}

void copy_shard_overlap(const TensorShard& from, const Tensor& source, const TensorShard& to,
                        const Tensor& destination) {
  check_shard(from);
  check_shard(to);
  const std::vector<AxisRange> from_ranges = from.ranges();
  const std::vector<AxisRange> to_ranges = to.ranges();
  bool alike = from.name == to.name;
  for (const AxisRange& r : from_ranges) {
    const AxisRange* other = range_along(to_ranges, r.axis);
    alike = alike && (other == nullptr || other->extent == r.extent);
  }
  TENAX_EXPECTS(alike, UsageError,
                "copy_shard_overlap: shards of '" + from.name + "' (" + describe_ranges(from) +
                    ") and '" + to.name + "' (" + describe_ranges(to) + ")",
                "copy between shards of one tensor: an axis both split has one extent");
  const Shape& in_shape = source.shape();
  const Shape& out_shape = destination.shape();
  const int rank = in_shape.rank();
  // The global box and where each part lies in it.
  std::vector<std::int64_t> from_lo(static_cast<std::size_t>(rank), 0);
  std::vector<std::int64_t> to_lo(static_cast<std::size_t>(rank), 0);
  std::vector<std::int64_t> lo(static_cast<std::size_t>(rank), 0);
  std::vector<std::int64_t> hi(static_cast<std::size_t>(rank), 0);
  bool fits = source.device().is_cpu() && destination.device().is_cpu() &&
              source.dtype() == destination.dtype() && out_shape.rank() == rank &&
              from.holds(in_shape) && to.holds(out_shape);
  for (int d = 0; fits && d < rank; ++d) {
    const auto u = static_cast<std::size_t>(d);
    const AxisRange* f = range_along(from_ranges, d);
    const AxisRange* t = range_along(to_ranges, d);
    const std::int64_t global = f ? f->extent : t ? t->extent : in_shape[d];
    // A part holds an axis it does not split whole.
    fits = (f != nullptr || in_shape[d] == global) && (t != nullptr || out_shape[d] == global);
    from_lo[u] = f ? f->begin : 0;
    to_lo[u] = t ? t->begin : 0;
    lo[u] = std::max(from_lo[u], to_lo[u]);
    hi[u] = std::min(f ? f->end : global, t ? t->end : global);
  }
  TENAX_EXPECTS(fits, UsageError,
                "copy_shard_overlap: '" + from.name + "' (" + describe_ranges(from) + ") from " +
                    source.describe() + " to (" + describe_ranges(to) + ") " +
                    destination.describe(),
                "pass CPU tensors of one dtype and rank that their shards hold, alike along the "
                "axes neither splits and whole along the axes only the other splits");
  for (int d = 0; d < rank; ++d) {
    if (lo[static_cast<std::size_t>(d)] >= hi[static_cast<std::size_t>(d)]) return;
  }
  // The innermost contiguous run: the box spans both parts whole along every axis after `split`,
  // so the run covers its range along `split` and everything after.
  int split = rank - 1;
  while (split > 0) {
    const auto u = static_cast<std::size_t>(split);
    const std::int64_t side = hi[u] - lo[u];
    if (side != in_shape[split] || side != out_shape[split]) break;
    --split;
  }
  const std::size_t width = size_of(source.dtype());
  // Row-major strides of both parts, in elements. Both tensors exist, so these products of
  // their extents cannot overflow.
  std::vector<std::int64_t> in_stride(static_cast<std::size_t>(rank), 1);
  std::vector<std::int64_t> out_stride(static_cast<std::size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) {
    const auto u = static_cast<std::size_t>(d);
    in_stride[u] = in_stride[u + 1] * in_shape[d + 1];
    out_stride[u] = out_stride[u + 1] * out_shape[d + 1];
  }
  const auto s = static_cast<std::size_t>(split);
  const std::size_t run = static_cast<std::size_t>((hi[s] - lo[s]) * in_stride[s]) * width;
  const auto* in = static_cast<const std::byte*>(source.data());
  auto* out = static_cast<std::byte*>(destination.data());
  // An odometer over the global indices of the axes before `split`.
  std::vector<std::int64_t> index(lo.begin(), lo.begin() + split);
  while (true) {
    std::int64_t in_at = (lo[s] - from_lo[s]) * in_stride[s];
    std::int64_t out_at = (lo[s] - to_lo[s]) * out_stride[s];
    for (std::size_t d = 0; d < s; ++d) {
      in_at += (index[d] - from_lo[d]) * in_stride[d];
      out_at += (index[d] - to_lo[d]) * out_stride[d];
    }
    std::memcpy(out + static_cast<std::size_t>(out_at) * width,
                in + static_cast<std::size_t>(in_at) * width, run);
    std::size_t d = s;
    while (d > 0) {
      --d;
      if (++index[d] < hi[d]) break;
      index[d] = lo[d];
      if (d == 0) return;
    }
    if (s == 0) return;
  }
}

}  // namespace tenax::io
