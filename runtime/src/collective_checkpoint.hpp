// Checkpoints of N ranks as one transaction, and resume on the newest step valid on every rank.
//
// Write: every rank writes rank-<r>.h5 (durable, digested); the ranks gather every rank's
// outcome (size, digest, or why it failed); only when all succeeded does rank 0 write the commit
// record listing every file, and the ranks then learn from rank 0 whether it committed. A rank
// whose write failed makes the checkpoint fail on every rank, with that rank and its reason in
// every rank's report; each rank removes only its own temporary files, and the previous
// checkpoint stays the newest valid one everywhere. Retention runs once, in rank 0's commit,
// after the new checkpoint verified.
//
// Resume: see CheckpointStore::newest_valid_step; a checkpoint of another world size is resharded
// (ResumeLayout) or refused (UsageError naming both sizes) before anything is loaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/runner_entries.hpp"
#include "tenax/io/shard_layout.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime::detail {

struct CheckpointOutcome {
  bool committed = false;
  int failed_rank = -1;  // lowest rank whose part failed (-1 when committed)
  std::string reason;    // that rank's reason (shortened), the same text on every rank
};

// Collective. IoError never escapes (it is the outcome); CommFaultError does.
[[nodiscard]] CheckpointOutcome write_collective_checkpoint(io::CheckpointStore& store,
                                                            Communicator& communicator,
                                                            std::int64_t step,
                                                            const StateDict& state,
                                                            io::FileMetadata metadata);

struct AgreedCheckpoint {
  bool found = false;  // false: no step is valid on every rank
  io::LoadedCheckpoint loaded;
  std::vector<io::SkippedCheckpoint> skipped;  // this rank's newer checkpoints it could not use
};

// What the resume may do with a checkpoint of another number of ranks.
struct ResumeLayout {
  // Every rank's state is the same (Workload::replicated_state): rank r reads the file of rank
  // r % (the writing world's size).
  bool replicated = false;
  // This rank's shards in this world (Workload::state_layout): when the checkpoint was written by
  // another number of ranks, or by as many ranks splitting the tensors otherwise (slabs and
  // boxes), rank r loads the file of rank r % (that size), rebuilds each shard from the files of
  // the ranks that held it (the table stored under kShardTableEntry) and checks every other entry
  // except `rank_local` equal in every file it read.
  std::vector<io::TensorShard> shards;
  std::vector<std::string> rank_local;

  [[nodiscard]] bool elastic() const noexcept { return replicated || !shards.empty(); }
};

// The state entry holding the checkpoint's io::ShardTable (JSON text).
inline constexpr std::string_view kShardTableEntry = io::runner_entry::shards;

// Collective: every rank's shards gathered into one table (all ranks list the same tensors,
// split along the same axes; each gives its slabs or boxes). Empty when the layout has no shards.
[[nodiscard]] io::ShardTable gather_shard_table(Communicator& communicator,
                                                const std::vector<io::TensorShard>& mine);

// Collective: the newest checkpoint valid on every rank, loaded on each (and resharded to this
// world, see ResumeLayout). Throws UsageError on every rank when it was written by a different
// number of ranks and the layout is not elastic, or when a rank finds that the checkpoint cannot
// be resharded here (tensors split differently, entries that should be replicated differ).
[[nodiscard]] AgreedCheckpoint load_agreed_checkpoint(const io::CheckpointStore& store,
                                                      Communicator& communicator,
                                                      const ResumeLayout& layout = {});

}  // namespace tenax::runtime::detail
