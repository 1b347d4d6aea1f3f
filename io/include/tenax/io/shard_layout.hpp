/// How the tensors of a state are split across the ranks that wrote it, stored with every
/// checkpoint so that a job resumes on another number of ranks (elastic resume) and so that
/// `tenax ckpt show` can say which rank holds what.
/// @file
/// A TensorShard is one rank's part of one global tensor: the slab [begin, end) along `axis` of a
/// row-major tensor whose extent along that axis is `extent`, or, with further split axes in
/// `more` (each an AxisRange, their axes greater than `axis` and ascending), the box that is the
/// product of those ranges (rows [r0, r1) of axis 0 and columns [c0, c1) of axis 1 of a 2-D block
/// decomposition). The axes that are not split have the rank's own tensor's extents (they may
/// change during a run, as a GMRES basis grows). A ShardTable lists, for every rank of a world,
/// its shards (the same names, split axes and extents on every rank; the slabs of one name tile
/// the axis in rank order, the boxes of one name tile the box of the split axes, in any order,
/// without overlapping). The table is stored as JSON text (the runner keeps it in the state entry
/// "runner/shards" of every rank file), e.g.
/// ```
/// {"ranks":[[{"axis":0,"begin":0,"end":18,"extent":37,"name":"workload/u"}],
///           [{"axis":0,"begin":18,"end":37,"extent":37,"name":"workload/u"}]],"world_size":2}
/// ```
/// a box adding its further ranges under "more" (a slab is written without that key):
/// ```
/// {"axis":0,"begin":0,"end":18,"extent":37,
///  "more":[{"axis":1,"begin":0,"end":20,"extent":40}],"name":"workload/u"}
/// ```
/// and parsed strictly: parse_shard_table rejects anything else (wrong types, negative extents,
/// ranges outside their axis, ranks that disagree on a tensor or its split axes, slabs that do
/// not tile their axis, boxes that overlap or leave a gap) with IoError naming what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tenax/core/tensor.hpp"

namespace tenax::io {

/// One further split axis of a shard: indices [begin, end) of an axis of `extent` points.
struct AxisRange {
  int axis = 0;             ///< the split axis, in [0, Shape::kMaxRank)
  std::int64_t begin = 0;   ///< first index along `axis` the rank holds
  std::int64_t end = 0;     ///< one past the last index it holds (begin <= end <= extent)
  std::int64_t extent = 0;  ///< of the global tensor along `axis`
  /// Member-wise equality.
  friend bool operator==(const AxisRange&, const AxisRange&) = default;
};

/// One rank's slab (or box) of one global tensor (see this file).
struct TensorShard {
  std::string name;         ///< the state entry
  int axis = 0;             ///< the (first) split axis, in [0, Shape::kMaxRank)
  std::int64_t begin = 0;   ///< first index along `axis` this rank holds
  std::int64_t end = 0;     ///< one past the last index it holds (begin <= end <= extent)
  std::int64_t extent = 0;  ///< of the global tensor along `axis`
  /// Further split axes, each > axis and ascending (empty: a slab, as before). With them the
  /// shard is a box.
  std::vector<AxisRange> more = {};

  /// Every split axis' range, `axis` first and then `more`, in ascending axis order.
  [[nodiscard]] std::vector<AxisRange> ranges() const;
  /// The shard of the whole tensor: every split axis' range [0, extent). Its part_shape() of a
  /// rank's tensor is the global shape.
  [[nodiscard]] TensorShard whole() const;
  /// Whether `part` can be this rank's tensor: its rank exceeds every split axis and its extent
  /// along each split axis is that axis' end - begin.
  [[nodiscard]] bool holds(const Shape& part) const noexcept;
  /// The shape of this rank's tensor when another rank's part has shape `other`: `other` with
  /// every split axis' extent replaced by its end - begin. Throws UsageError when the shard fails
  /// check_shard or `other` lacks a split axis.
  [[nodiscard]] Shape part_shape(const Shape& other) const;
  /// Member-wise equality.
  friend bool operator==(const TensorShard&, const TensorShard&) = default;
};

/// How the state of a world is split: the shards of every rank.
struct ShardTable {
  std::vector<std::vector<TensorShard>> ranks;  ///< ranks[r]: rank r's shards, in one name order
};

/// UsageError when `shard` is not a slab or box of its axes (an empty name, an axis < 0 or >= 8,
/// a begin/end outside [0, extent], begin > end, `more` axes not ascending or not above `axis`).
void check_shard(const TensorShard& shard);

/// The table as compact JSON text (the format above), world_size being ranks.size(). Throws
/// UsageError for a shard that fails check_shard; does not check that the ranks agree or tile
/// (parse_shard_table does). A shard without `more` is written without the "more" key.
[[nodiscard]] std::string format_shard_table(const ShardTable& table);
/// The inverse of format_shard_table, checked as described above (a table needs at least one
/// rank); `where` names the source in errors (a file path). Throws IoError for any text that is
/// not such a table.
[[nodiscard]] ShardTable parse_shard_table(std::string_view text, std::string_view where);

/// Copies the elements that `from` (holding `source`) and `to` (holding `destination`) have in
/// common, each a slab or a box of the same tensor, possibly split along different axes (a
/// checkpoint of slabs read back as boxes, and the reverse). Both tensors are contiguous CPU
/// tensors of one dtype, of one rank, that their shards hold(); an axis split by both has one
/// extent in both shards, an axis split by one only is whole in the other tensor (its extent
/// there is the shard's `extent`), an axis split by neither has one extent in both tensors.
/// UsageError otherwise, naming the shards and the tensors.
void copy_shard_overlap(const TensorShard& from, const Tensor& source, const TensorShard& to,
                        const Tensor& destination);

/// Whether two shards of the same tensor share elements: their ranges intersect on every axis
/// both split, and an axis split by only one of them (whole in the other) is non-empty there.
[[nodiscard]] bool shards_overlap(const TensorShard& a, const TensorShard& b) noexcept;

}  // namespace tenax::io
