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
// Resume: see CheckpointStore::newest_valid_step; a checkpoint of another world size is refused
// (UsageError naming both sizes) before anything is loaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tenax/io/checkpoint_store.hpp"
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

// Collective: the newest checkpoint valid on every rank, loaded on each. Throws UsageError when
// it was written by a different number of ranks.
// `replicated`: every rank's state is the same (Workload::replicated_state), so a checkpoint of
// another number of ranks resumes here: rank r reads the file of rank r % (its world size).
[[nodiscard]] AgreedCheckpoint load_agreed_checkpoint(const io::CheckpointStore& store,
                                                      Communicator& communicator,
                                                      bool replicated = false);

}  // namespace tenax::runtime::detail
