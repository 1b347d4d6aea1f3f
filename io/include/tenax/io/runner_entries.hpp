/// The entries the Runner stores beside the workload's state (`workload/...`) in every rank file
/// of a checkpoint: written by the Runner, read by the resume and by `tenax ckpt`. Written once
/// here. @file
#pragma once

#include <string_view>

namespace tenax::io::runner_entry {

/// The step of the state (integer).
inline constexpr std::string_view step = "runner/step";
/// The checkpoint's io::ShardTable as JSON text (shard_layout.hpp); absent without shards.
inline constexpr std::string_view shards = "runner/shards";
/// The state digest the ranks agreed on for this state (state_digest.hpp), 16 hex digits; absent
/// in checkpoints written before digests existed.
inline constexpr std::string_view state_digest = "runner/state_digest";
/// The workload entries the digest leaves out (io::DigestLayout::rank_local), each followed by a
/// newline.
inline constexpr std::string_view digest_rank_local = "runner/digest_rank_local";
/// 1 when the entries that are not sharded are each rank's own (io::DigestLayout::per_rank).
inline constexpr std::string_view digest_per_rank = "runner/digest_per_rank";

}  // namespace tenax::io::runner_entry
