/// How the tensors of a state are split across the ranks that wrote it, stored with every
/// checkpoint so that a job resumes on another number of ranks (elastic resume) and so that
/// `tenax ckpt show` can say which rank holds what.
/// @file
/// A TensorShard is one rank's part of one global tensor: the slab [begin, end) along `axis` of a
/// row-major tensor whose extent along that axis is `extent`; the other extents are the rank's
/// own tensor's (they may change during a run, as a GMRES basis grows). A ShardTable lists, for
/// every rank of a world, its shards (the same names, axes and extents on every rank; the slabs of
/// one name tile the axis in rank order). The table is stored as JSON text (the runner keeps it
/// in the state entry "runner/shards" of every rank file), e.g.
/// ```
/// {"world_size":2,"ranks":[[{"name":"workload/u","axis":0,"begin":0,"end":18,"extent":37}],
///                          [{"name":"workload/u","axis":0,"begin":18,"end":37,"extent":37}]]}
/// ```
/// and parsed strictly: parse_shard_table rejects anything else (wrong types, negative extents,
/// slabs outside the axis, ranks that disagree on a tensor or do not tile it) with IoError naming
/// what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tenax/core/tensor.hpp"

namespace tenax::io {

/// One rank's slab of one global tensor (see this file).
struct TensorShard {
  std::string name;         ///< the state entry
  int axis = 0;             ///< the split axis, in [0, Shape::kMaxRank)
  std::int64_t begin = 0;   ///< first index along `axis` this rank holds
  std::int64_t end = 0;     ///< one past the last index it holds (begin <= end <= extent)
  std::int64_t extent = 0;  ///< of the global tensor along `axis`

  /// Whether `part` can be this rank's tensor: its rank exceeds the axis and its extent along the
  /// axis is end - begin.
  [[nodiscard]] bool holds(const Shape& part) const noexcept;
  /// The shape of this rank's tensor when another rank's part has shape `other`: `other` with the
  /// axis' extent replaced by end - begin. Throws UsageError when the shard fails check_shard or
  /// `other` has no such axis.
  [[nodiscard]] Shape part_shape(const Shape& other) const;
  /// Member-wise equality.
  friend bool operator==(const TensorShard&, const TensorShard&) = default;
};

/// How the state of a world is split: the shards of every rank.
struct ShardTable {
  std::vector<std::vector<TensorShard>> ranks;  ///< ranks[r]: rank r's shards, in one name order
};

/// UsageError when `shard` is not a slab of its axis (an empty name, axis < 0 or >= 8,
/// begin/end outside [0, extent], begin > end).
void check_shard(const TensorShard& shard);

/// The table as compact JSON text (the format above), world_size being ranks.size(). Throws
/// UsageError for a shard that fails check_shard; does not check that the ranks agree or tile
/// (parse_shard_table does).
[[nodiscard]] std::string format_shard_table(const ShardTable& table);
/// The inverse of format_shard_table, checked as described above (a table needs at least one
/// rank); `where` names the source in errors (a file path). Throws IoError for any text that is
/// not such a table.
[[nodiscard]] ShardTable parse_shard_table(std::string_view text, std::string_view where);

/// Copies the elements that `from` (holding `source`) and `to` (holding `destination`) have in
/// common. Both tensors are contiguous CPU tensors of one dtype that their shards hold(), alike
/// but along the axis; the shards describe the same tensor and axis. UsageError otherwise.
void copy_shard_overlap(const TensorShard& from, const Tensor& source, const TensorShard& to,
                        const Tensor& destination);

/// Whether two slabs of the same tensor share elements.
[[nodiscard]] bool shards_overlap(const TensorShard& a, const TensorShard& b) noexcept;

}  // namespace tenax::io
