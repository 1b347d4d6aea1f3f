#include "collective_checkpoint.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>

#include "tenax/core/error.hpp"

namespace tenax::runtime::detail {
namespace {

// One rank's part of a checkpoint as the ranks gather it: fixed size, the reason cut short.
struct RankPart {
  std::uint64_t ok = 0;
  std::uint64_t size = 0;
  std::uint64_t digest = 0;
  std::array<char, 232> reason{};
};
static_assert(sizeof(RankPart) == 256);

std::vector<RankPart> gather(Communicator& communicator, const RankPart& mine) {
  std::vector<RankPart> all(static_cast<std::size_t>(communicator.size()));
  communicator.all_gather_bytes(std::as_bytes(std::span(&mine, 1)),
                                std::as_writable_bytes(std::span(all.data(), all.size())));
  return all;
}

RankPart failed_part(const std::string& reason) {
  RankPart part;
  const std::size_t n = std::min(reason.size(), part.reason.size() - 1);
  std::memcpy(part.reason.data(), reason.data(), n);
  return part;
}

std::optional<CheckpointOutcome> first_failure(const std::vector<RankPart>& parts) {
  for (std::size_t r = 0; r < parts.size(); ++r) {
    if (parts[r].ok == 0) {
      return CheckpointOutcome{false, static_cast<int>(r), std::string(parts[r].reason.data())};
    }
  }
  return std::nullopt;
}

std::vector<std::int64_t> gather_steps(Communicator& communicator, std::int64_t mine) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(communicator.size()));
  communicator.all_gather_bytes(std::as_bytes(std::span(&mine, 1)),
                                std::as_writable_bytes(std::span(all.data(), all.size())));
  return all;
}

}  // namespace

CheckpointOutcome write_collective_checkpoint(io::CheckpointStore& store,
                                              Communicator& communicator, std::int64_t step,
                                              const StateDict& state, io::FileMetadata metadata) {
  const int rank = communicator.rank();
  const int size = communicator.size();
  metadata.step = step;
  metadata.rank = rank;
  metadata.world_size = size;
  RankPart mine;
  try {
    const io::CheckpointFile file = store.write_rank_file(step, state, metadata);
    mine.ok = 1;
    mine.size = file.size;
    mine.digest = file.digest;
  } catch (const IoError& e) {
    mine = failed_part(e.what());
  }
  const std::vector<RankPart> parts = gather(communicator, mine);
  if (auto failure = first_failure(parts)) return *failure;

  RankPart committed;
  if (rank == 0) {
    std::vector<io::CheckpointFile> files;
    files.reserve(parts.size());
    for (int r = 0; r < size; ++r) {
      files.push_back({io::rank_file_name(r), parts[static_cast<std::size_t>(r)].size,
                       parts[static_cast<std::size_t>(r)].digest});
    }
    try {
      store.commit(step, size, files);
      committed.ok = 1;
    } catch (const IoError& e) {
      committed = failed_part(e.what());
    }
  } else {
    committed.ok = 1;
  }
  // Rank 0's answer reaches every rank: the checkpoint exists for all or for none.
  const std::vector<RankPart> answers = gather(communicator, committed);
  if (auto failure = first_failure(answers)) return *failure;
  return CheckpointOutcome{true, -1, {}};
}

AgreedCheckpoint load_agreed_checkpoint(const io::CheckpointStore& store,
                                        Communicator& communicator, bool replicated) {
  AgreedCheckpoint agreed;
  std::optional<std::int64_t> bound;
  // The rank whose file this rank reads: its own, or with a replicated state written by another
  // number of ranks, rank r % (that number): every file holds the same state.
  auto source_rank = [&](std::optional<std::int64_t> at_most) {
    if (!replicated) return communicator.rank();
    for (const std::int64_t step : store.committed_steps()) {
      if (at_most && step > *at_most) continue;
      if (const std::optional<int> size = store.committed_world_size(step)) {
        return communicator.rank() % std::max(1, *size);
      }
    }
    return communicator.rank();
  };
  // Each round either ends or lowers the bound below a step some rank cannot use, so the loop
  // ends after at most as many rounds as there are checkpoints.
  while (true) {
    const int source = source_rank(bound);
    const io::ValidCheckpoint mine = store.newest_valid_step(source, bound);
    for (const auto& s : mine.skipped) {
      if (std::none_of(agreed.skipped.begin(), agreed.skipped.end(),
                       [&](const io::SkippedCheckpoint& k) { return k.step == s.step; })) {
        agreed.skipped.push_back(s);
      }
    }
    // The world size first: ranks beyond an older, smaller world find no file of their own
    // and would otherwise make the job start afresh over the old run.
    std::int64_t world = mine.step ? mine.world_size : 0;
    if (!mine.step) {
      for (const std::int64_t step : store.committed_steps()) {
        if (bound && step > *bound) continue;
        if (const std::optional<int> size = store.committed_world_size(step)) {
          world = *size;
          break;
        }
      }
    }
    for (const std::int64_t size : gather_steps(communicator, world)) {
      TENAX_EXPECTS(replicated || size == 0 || size == communicator.size(), UsageError,
                    "the checkpoints in " + store.run_dir().string() + " were written by " +
                        std::to_string(size) + " rank(s), and this job has " +
                        std::to_string(communicator.size()),
                    "resume with the same number of ranks (mpirun -np " + std::to_string(size) +
                        "), or start a new run with another --run-dir; resuming on another "
                        "number of ranks needs resharding, which this version does not do");
    }
    const std::int64_t proposal = mine.step.value_or(-1);
    const std::vector<std::int64_t> steps = gather_steps(communicator, proposal);
    const std::int64_t lowest = *std::min_element(steps.begin(), steps.end());
    if (lowest < 0) return agreed;  // some rank has no valid checkpoint: none is common
    if (std::any_of(steps.begin(), steps.end(), [&](std::int64_t s) { return s != lowest; })) {
      bound = lowest;
      continue;
    }
    io::LoadedCheckpoint loaded = store.load(lowest, source);
    const std::vector<std::int64_t> loaded_steps =
        gather_steps(communicator, loaded.found ? lowest : -1);
    if (std::all_of(loaded_steps.begin(), loaded_steps.end(),
                    [&](std::int64_t s) { return s == lowest; })) {
      agreed.found = true;
      agreed.loaded = std::move(loaded);
      return agreed;
    }
    for (const auto& s : loaded.skipped) agreed.skipped.push_back(s);
    if (lowest == 0) return agreed;
    bound = lowest - 1;
  }
}

}  // namespace tenax::runtime::detail
