// ShardTable (shard_layout.hpp): the JSON text, its strict parser, and the slab copy.
#include "tenax/io/shard_layout.hpp"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
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

}  // namespace

bool TensorShard::holds(const Shape& part) const noexcept {
  return axis >= 0 && axis < part.rank() &&
         part.extents()[static_cast<std::size_t>(axis)] == end - begin;
}

Shape TensorShard::part_shape(const Shape& other) const {
  check_shard(*this);
  TENAX_EXPECTS(axis < other.rank(), UsageError,
                "shard of '" + name + "' along axis " + std::to_string(axis) + " of a tensor " +
                    to_string(other),
                "split an axis the tensor has");
  std::vector<std::int64_t> extents(other.extents().begin(), other.extents().end());
  extents[static_cast<std::size_t>(axis)] = end - begin;
  return Shape(std::span<const std::int64_t>(extents));
}

void check_shard(const TensorShard& shard) {
  TENAX_EXPECTS(!shard.name.empty() && shard.axis >= 0 && shard.axis < Shape::kMaxRank &&
                    shard.begin >= 0 && shard.begin <= shard.end && shard.end <= shard.extent,
                UsageError,
                "shard of '" + shard.name + "': slab [" + std::to_string(shard.begin) + ", " +
                    std::to_string(shard.end) + ") along axis " + std::to_string(shard.axis) +
                    " of extent " + std::to_string(shard.extent),
                "name the entry, split one of its axes (0.." + std::to_string(Shape::kMaxRank - 1) +
                    ") and give a slab inside it, begin <= end");
}

std::string format_shard_table(const ShardTable& table) {
  json ranks = json::array();
  for (const std::vector<TensorShard>& shards : table.ranks) {
    json list = json::array();
    for (const TensorShard& s : shards) {
      check_shard(s);
      list.push_back({{"name", s.name},
                      {"axis", s.axis},
                      {"begin", s.begin},
                      {"end", s.end},
                      {"extent", s.extent}});
    }
    ranks.push_back(std::move(list));
  }
  return json{{"world_size", table.ranks.size()}, {"ranks", std::move(ranks)}}.dump();
}

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
      const std::int64_t axis = integer_field(entry, "axis", where);
      TensorShard s{entry["name"].get<std::string>(),
                    static_cast<int>(std::clamp<std::int64_t>(axis, -1, Shape::kMaxRank)),
                    integer_field(entry, "begin", where), integer_field(entry, "end", where),
                    integer_field(entry, "extent", where)};
      try {
        check_shard(s);
      } catch (const UsageError& e) {
        corrupt(where, "holds an impossible " + e.cause());
      }
      shards.push_back(std::move(s));
    }
    table.ranks.push_back(std::move(shards));
  }
  // Every rank names the same tensors in the same order, and their slabs tile each axis.
  const std::vector<TensorShard>& first = table.ranks.front();
  for (std::size_t k = 0; k < first.size(); ++k) {
    std::int64_t next = 0;
    for (std::size_t r = 0; r < table.ranks.size(); ++r) {
      const std::vector<TensorShard>& mine = table.ranks[r];
      if (mine.size() != first.size() || mine[k].name != first[k].name ||
          mine[k].extent != first[k].extent || mine[k].axis != first[k].axis) {
        corrupt(where, "has rank " + std::to_string(r) +
                           " describe its tensors differently from "
                           "rank 0");
      }
      if (mine[k].begin != next) {
        corrupt(where, "has rank " + std::to_string(r) + " hold '" + first[k].name + "' from " +
                           std::to_string(mine[k].begin) + " where " + std::to_string(next) +
                           " was expected");
      }
      next = mine[k].end;
    }
    if (next != first[k].extent) {
      corrupt(where, "covers '" + first[k].name + "' up to " + std::to_string(next) + " of " +
                         std::to_string(first[k].extent));
    }
  }
  return table;
}

bool shards_overlap(const TensorShard& a, const TensorShard& b) noexcept {
  return std::max(a.begin, b.begin) < std::min(a.end, b.end);
}

void copy_shard_overlap(const TensorShard& from, const Tensor& source, const TensorShard& to,
                        const Tensor& destination) {
  TENAX_EXPECTS(
      from.name == to.name && from.extent == to.extent && from.axis == to.axis, UsageError,
      "copy_shard_overlap: shards of '" + from.name + "' (axis " + std::to_string(from.axis) +
          ", extent " + std::to_string(from.extent) + ") and '" + to.name + "' (axis " +
          std::to_string(to.axis) + ", extent " + std::to_string(to.extent) + ")",
      "copy between shards of one tensor split along one axis");
  TENAX_EXPECTS(source.device().is_cpu() && destination.device().is_cpu() &&
                    source.dtype() == destination.dtype() && from.holds(source.shape()) &&
                    to.holds(destination.shape()) &&
                    destination.shape() == to.part_shape(source.shape()),
                UsageError,
                "copy_shard_overlap: '" + from.name + "' from " + source.describe() + " to " +
                    destination.describe(),
                "pass CPU tensors of one dtype, alike but along the split axis");
  const std::int64_t lo = std::max(from.begin, to.begin);
  const std::int64_t hi = std::min(from.end, to.end);
  if (lo >= hi) return;
  const std::span<const std::int64_t> extents = source.shape().extents();
  const auto axis = static_cast<std::size_t>(from.axis);
  // Both tensors exist, so these products of their extents cannot overflow.
  std::size_t outer = 1;
  for (std::size_t k = 0; k < axis; ++k) outer *= static_cast<std::size_t>(extents[k]);
  std::size_t inner = size_of(source.dtype());
  for (std::size_t k = axis + 1; k < extents.size(); ++k) {
    inner *= static_cast<std::size_t>(extents[k]);
  }
  const std::size_t run = static_cast<std::size_t>(hi - lo) * inner;
  const auto* in = static_cast<const std::byte*>(source.data());
  auto* out = static_cast<std::byte*>(destination.data());
  const auto from_extent = static_cast<std::size_t>(from.end - from.begin);
  const auto to_extent = static_cast<std::size_t>(to.end - to.begin);
  for (std::size_t o = 0; o < outer; ++o) {
    std::memcpy(out + (o * to_extent + static_cast<std::size_t>(lo - to.begin)) * inner,
                in + (o * from_extent + static_cast<std::size_t>(lo - from.begin)) * inner, run);
  }
}

}  // namespace tenax::io
