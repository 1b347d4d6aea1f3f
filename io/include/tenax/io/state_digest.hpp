/// The digest of a state: one 64-bit value that names a state's contents whatever the number of
/// ranks that hold it, so that a wrong bit is detectable -- between the ranks of a data-parallel
/// job (their replicated states must be equal), between a state and the checkpoint written from
/// it, and between a run and its replay on another device or number of ranks. @file
///
/// The rule, written once here:
///  - every element of a tensor contributes mix(seed of its entry, its global row-major index,
///    its bits), and an entry's value is the sum (mod 2^64) of its elements' contributions. A sum
///    does not depend on the order of its terms, so a tensor split into slabs or boxes over any
///    number of ranks (io::TensorShard) gives the same value as the whole tensor on one: each rank
///    sums its own elements over their global indices (for a box, the index from every split
///    axis' begin and extent) and the ranks' partial sums add up;
///  - the entries that are the same on every rank (all of a replicated state; the entries of a
///    sharded state that are not sharded) form the *common* part: XXH64 over, in order, each
///    entry's name, kind, dtype, (global) shape and value. Ranks compare it: a rank whose common
///    part differs from the others' holds a corrupted state;
///  - the sharded entries (and, for a state that is neither replicated nor sharded on several
///    ranks, every entry, seeded with the rank) form the *partial* part, summed over the ranks;
///  - the state digest is combine_digest(common, sum of the partials).
/// Entries named in `rank_local` (a rank's own timings) are left out: they may differ without
/// changing any result.
///
/// A single flipped bit changes the digest for certain (each element's contribution is a
/// bijection of its bits); two faults cancel with probability 2^-64. The digest detects
/// accidental corruption, not tampering.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tenax/core/state_dict.hpp"
#include "tenax/io/shard_layout.hpp"

namespace tenax::io {

/// How a state is split across the ranks, as the digest needs it.
struct DigestLayout {
  /// This rank's slabs or boxes of the sharded tensors (names as in the state digested).
  std::vector<TensorShard> shards;
  /// Entries left out of the digest (names as in the state digested).
  std::vector<std::string> rank_local;
  /// True when the entries that are not sharded are this rank's own (a state that is neither
  /// replicated nor sharded, on several ranks): they then go to the partial part, seeded with
  /// the rank, and nothing is compared between ranks.
  bool per_rank = false;
};

/// One rank's two parts of a state digest (see the file).
struct DigestParts {
  std::uint64_t common = 0;   ///< equal on every rank of a healthy job
  std::uint64_t partial = 0;  ///< summed over the ranks (mod 2^64)
};

/// This rank's parts of the digest of `state` (see the file). Tensors on a device are copied to
/// the host first. Throws UsageError when a shard names a tensor that it does not hold() (another
/// extent along a split axis), or an entry that is not a tensor.
[[nodiscard]] DigestParts digest_parts(const StateDict& state, const DigestLayout& layout,
                                       int rank);

/// The state digest from the common part and the sum over the ranks of the partial parts.
[[nodiscard]] std::uint64_t combine_digest(std::uint64_t common,
                                           std::uint64_t partial_sum) noexcept;

/// What the ranks' digest parts say together.
struct DigestVote {
  /// combine_digest of the common part most ranks hold and the sum of every rank's partial part.
  std::uint64_t digest = 0;
  /// The ranks whose common part differs from that of a strict majority; every rank when the
  /// ranks disagree and no value has a strict majority (two ranks that differ); empty when all
  /// agree.
  std::vector<int> suspects;
};
/// The vote over every rank's parts (index = rank); the rule the step agreement applies.
[[nodiscard]] DigestVote vote(std::span<const DigestParts> ranks);

/// What one rank file of a checkpoint records of the state digest: the digest the ranks agreed
/// on and the layout that rank computed its parts with (its shards, from the shard table, and
/// the entries left out), names relative to the workload's state (`workload/` taken off).
struct RecordedDigest {
  std::uint64_t digest = 0;  ///< the digest the ranks agreed on for the state
  DigestLayout layout;       ///< how this rank computed its parts
};
/// Reads those entries (runner_entries.hpp) of rank `rank`'s file; nullopt for a checkpoint
/// that records no digest (written before digests existed). Throws IoError naming `where` when
/// they are malformed.
[[nodiscard]] std::optional<RecordedDigest> recorded_digest(const StateDict& rank_file, int rank,
                                                            std::string_view where);

/// What a checkpoint's files say of its state digest (checkpoint_digest).
struct CheckpointDigest {
  std::uint64_t recorded = 0;  ///< the digest the Runner recorded when it wrote the checkpoint
  std::uint64_t computed = 0;  ///< the digest of the state the files hold
  std::vector<int> suspects;   ///< ranks whose files hold a state unlike the others' (vote)
  /// Whether the files hold the state the digest was recorded for.
  [[nodiscard]] bool matches() const noexcept { return suspects.empty() && recorded == computed; }
};
/// The digest of the state held by a checkpoint's rank files, each read whole (`ranks[r]`: rank
/// r's file), computed as the Runner computed it (recorded_digest, digest_parts of each file's
/// `workload` scope, vote), against the one it recorded; nullopt when none is recorded. Throws
/// IoError naming `where` when the runner's entries are malformed or do not fit the state.
[[nodiscard]] std::optional<CheckpointDigest> checkpoint_digest(std::span<const StateDict> ranks,
                                                                std::string_view where);

}  // namespace tenax::io
