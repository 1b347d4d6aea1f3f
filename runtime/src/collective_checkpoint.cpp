#include "collective_checkpoint.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <variant>

#include "tenax/core/error.hpp"
#include "tenax/core/profiler.hpp"

namespace tenax::runtime::detail {
namespace {

// One rank's part of a checkpoint as the ranks gather it: fixed size, the reason cut at 999
// bytes -- room for a long run directory's path twice, the errno text and the fix (232 bytes had
// cut off the cause, "No space left on device").
struct RankPart {
  std::uint64_t ok = 0;
  std::uint64_t size = 0;
  std::uint64_t digest = 0;
  std::array<char, 1000> reason{};
};
static_assert(sizeof(RankPart) == 1024);

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

// Whether two state values are the same, bit for bit.
bool same_value(const StateDict::Value& a, const StateDict::Value& b) {
  if (a.index() != b.index()) return false;
  if (const auto* ta = std::get_if<Tensor>(&a)) {
    const Tensor& tb = std::get<Tensor>(b);
    if (ta->dtype() != tb.dtype() || !(ta->shape() == tb.shape())) return false;
    const Tensor ha = ta->to(Device::cpu());
    const Tensor hb = tb.to(Device::cpu());
    return std::memcmp(ha.data(), hb.data(), ha.nbytes()) == 0;
  }
  if (const auto* da = std::get_if<double>(&a)) {
    const double db = std::get<double>(b);
    return std::memcmp(da, &db, sizeof(double)) == 0;
  }
  if (const auto* ia = std::get_if<std::int64_t>(&a)) return *ia == std::get<std::int64_t>(b);
  return std::get<std::string>(a) == std::get<std::string>(b);
}

// Whether two shards can be parts of one tensor: an axis split by both has one extent in both (an
// axis split by one only is whole in the other's parts; copy_shard_overlap checks it against the
// tensors).
bool same_extents(const io::TensorShard& a, const io::TensorShard& b) {
  const std::vector<io::AxisRange> theirs = b.ranges();
  for (const io::AxisRange& r : a.ranges()) {
    for (const io::AxisRange& t : theirs) {
      if (t.axis == r.axis && t.extent != r.extent) return false;
    }
  }
  return true;
}

// Rebuilds `loaded` (the file of old rank `source`, written by a world of another size) for this
// rank's shards: each shard from the files of the old ranks that held part of it, every other
// workload entry checked equal in each file read. Returns why the checkpoint cannot be resharded
// here (a refusal, the same on a retry), or nothing; a file that fails to load makes `loaded`
// not found, with the reason in its skipped list (an older checkpoint may still do).
std::optional<std::string> reshard(const io::CheckpointStore& store, const ResumeLayout& layout,
                                   int source, io::LoadedCheckpoint& loaded) {
  const std::string where = (store.step_dir(loaded.step) / io::rank_file_name(source)).string();
  if (!loaded.state.contains(kShardTableEntry)) {
    return "the checkpoint of step " + std::to_string(loaded.step) + " (" +
           std::to_string(loaded.world_size) +
           " ranks) holds no shard table, so its split state cannot be divided among " +
           "another number of ranks";
  }
  io::ShardTable table;
  try {
    table = io::parse_shard_table(loaded.state.text(kShardTableEntry), where);
  } catch (const IoError& e) {
    return std::string(e.cause());
  }
  if (table.ranks.size() != static_cast<std::size_t>(loaded.world_size)) {
    return where + ": the shard table lists " + std::to_string(table.ranks.size()) +
           " ranks where the commit record has " + std::to_string(loaded.world_size);
  }
  const std::vector<io::TensorShard>& theirs = table.ranks.front();
  const auto describe = [](const io::TensorShard& s) {
    std::string text = "'" + s.name + "' split along axis " + std::to_string(s.axis) +
                       " of extent " + std::to_string(s.extent);
    for (const io::AxisRange& r : s.more) {
      text += " and axis " + std::to_string(r.axis) + " of extent " + std::to_string(r.extent);
    }
    return text;
  };
  std::vector<std::size_t> column(layout.shards.size());
  for (std::size_t k = 0; k < layout.shards.size(); ++k) {
    const io::TensorShard& mine = layout.shards[k];
    const auto it = std::find_if(theirs.begin(), theirs.end(),
                                 [&](const io::TensorShard& t) { return t.name == mine.name; });
    if (it == theirs.end() || !same_extents(mine, *it)) {
      return "this run holds " + describe(mine) + ", the checkpoint " +
             (it == theirs.end() ? std::string("does not split it") : describe(*it));
    }
    column[k] = static_cast<std::size_t>(it - theirs.begin());
  }
  if (theirs.size() != layout.shards.size()) {
    return "the checkpoint splits " + std::to_string(theirs.size()) + " tensors, this run " +
           std::to_string(layout.shards.size());
  }
  const auto sharded = [&](const std::string& name) {
    return std::any_of(layout.shards.begin(), layout.shards.end(),
                       [&](const io::TensorShard& s) { return s.name == name; });
  };
  const auto rank_local = [&](const std::string& name) {
    return std::any_of(layout.rank_local.begin(), layout.rank_local.end(),
                       [&](const std::string& n) { return "workload/" + n == name; });
  };

  // This rank's tensors (those the checkpoint holds: a method saves some vectors only in some
  // configurations), filled from every old rank whose slabs or boxes overlap them.
  std::vector<Tensor> assembled(layout.shards.size());
  for (std::size_t k = 0; k < layout.shards.size(); ++k) {
    if (!loaded.state.contains(layout.shards[k].name)) continue;
    const Tensor& like = loaded.state.tensor(layout.shards[k].name);
    const io::TensorShard& held = table.ranks[static_cast<std::size_t>(source)][column[k]];
    if (!held.holds(like.shape())) {
      std::string part;
      for (const io::AxisRange& r : held.ranges()) {
        part += (part.empty() ? "[" : " x [") + std::to_string(r.begin) + ", " +
                std::to_string(r.end) + ")";
      }
      return io::rank_file_name(source) + " of step " + std::to_string(loaded.step) + " holds '" +
             held.name + "' as " + like.describe() + ", not the " +
             (held.more.empty() ? "slab " : "box ") + part + " its shard table lists";
    }
    // The global shape (every axis the checkpoint splits whole), then this rank's part of it.
    const Shape global = held.whole().part_shape(like.shape());
    assembled[k] = Tensor::empty(layout.shards[k].part_shape(global), like.dtype());
  }
  for (int old = 0; old < loaded.world_size; ++old) {
    const std::vector<io::TensorShard>& held = table.ranks[static_cast<std::size_t>(old)];
    bool needed = false;
    for (std::size_t k = 0; k < layout.shards.size(); ++k) {
      needed = needed ||
               (assembled[k].defined() && io::shards_overlap(held[column[k]], layout.shards[k]));
    }
    if (!needed) continue;
    io::LoadedCheckpoint other;
    if (old != source) {
      other = store.load(loaded.step, old);
      if (!other.found) {
        loaded.found = false;
        for (auto& skipped : other.skipped) loaded.skipped.push_back(std::move(skipped));
        return std::nullopt;
      }
      for (const auto& [name, value] : loaded.state.entries()) {
        if (name.rfind("workload/", 0) != 0 || sharded(name) || rank_local(name)) continue;
        if (!other.state.contains(name) || !same_value(value, other.state.at(name))) {
          return "entry '" + name + "' differs between " + io::rank_file_name(source) + " and " +
                 io::rank_file_name(old) + " of step " + std::to_string(loaded.step) +
                 ": it is neither split nor the same on every rank, so it cannot be divided "
                 "among another number of ranks";
        }
      }
    }
    const StateDict& state = old == source ? loaded.state : other.state;
    for (std::size_t k = 0; k < layout.shards.size(); ++k) {
      const io::TensorShard& from = held[column[k]];
      if (!assembled[k].defined() || !io::shards_overlap(from, layout.shards[k])) continue;
      try {
        TENAX_EXPECTS(state.contains(from.name), UsageError, "no entry '" + from.name + "'", "");
        io::copy_shard_overlap(from, state.tensor(from.name).to(Device::cpu()), layout.shards[k],
                               assembled[k]);
      } catch (const UsageError& e) {
        return io::rank_file_name(old) + " of step " + std::to_string(loaded.step) +
               " does not hold its part of '" + from.name + "' as its shard table says (" +
               e.cause() + ")";
      }
    }
  }
  for (std::size_t k = 0; k < layout.shards.size(); ++k) {
    if (assembled[k].defined()) loaded.state.set(layout.shards[k].name, assembled[k]);
  }
  return std::nullopt;
}

// Whether the checkpoint, written by as many ranks as this run has, splits this rank's tensors
// otherwise than this run does (slabs written, boxes resumed, or the reverse): its table parses
// and lists for rank `source` another part of a tensor of the same global extents. A table that
// does not parse, or tensors of other extents or names (another problem: the configuration check
// names what changed), are left to the load, as before.
bool split_otherwise(const io::LoadedCheckpoint& loaded, const ResumeLayout& layout, int source) {
  if (!loaded.state.contains(kShardTableEntry)) return false;
  io::ShardTable table;
  try {
    table = io::parse_shard_table(loaded.state.text(kShardTableEntry), "");
  } catch (const Error&) {
    return false;
  }
  if (source < 0 || static_cast<std::size_t>(source) >= table.ranks.size()) return false;
  const std::vector<io::TensorShard>& theirs = table.ranks[static_cast<std::size_t>(source)];
  return std::any_of(layout.shards.begin(), layout.shards.end(), [&](const io::TensorShard& s) {
    const auto it = std::find_if(theirs.begin(), theirs.end(), [&](const io::TensorShard& t) {
      return t.name == s.name && same_extents(s, t);
    });
    return it != theirs.end() && !(*it == s);
  });
}

// reshard(), with any error it meets on this rank turned into its refusal, so that the ranks
// answer together instead of one rank leaving the others waiting.
std::optional<std::string> reshard_or_refuse(const io::CheckpointStore& store,
                                             const ResumeLayout& layout, int source,
                                             io::LoadedCheckpoint& loaded) {
  try {
    return reshard(store, layout, source, loaded);
  } catch (const CommFaultError&) {
    throw;
  } catch (const Error& e) {
    return std::string(e.cause());
  }
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
    const profiling::Span span("checkpoint.write", step);
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
      const profiling::Span span("checkpoint.commit", step);
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

io::ShardTable gather_shard_table(Communicator& communicator,
                                  const std::vector<io::TensorShard>& mine) {
  const auto count = static_cast<std::int64_t>(mine.size());
  const std::vector<std::int64_t> counts = gather_steps(communicator, count);
  for (std::size_t r = 0; r < counts.size(); ++r) {
    TENAX_EXPECTS(counts[r] == count, UsageError,
                  "state layout: rank " + std::to_string(r) + " splits " +
                      std::to_string(counts[r]) + " tensors, rank " +
                      std::to_string(communicator.rank()) + " " + std::to_string(count),
                  "every rank's Workload::state_layout must list the same tensors");
  }
  if (mine.empty()) return {};
  // Every split axis of every shard: its axis, begin, end and extent, so that ranks that split
  // another axis or extent are told too.
  std::vector<std::int64_t> ranges;
  for (const io::TensorShard& s : mine) {
    for (const io::AxisRange& r : s.ranges()) {
      ranges.insert(ranges.end(), {r.axis, r.begin, r.end, r.extent});
    }
  }
  const auto width = static_cast<std::int64_t>(ranges.size());
  const std::vector<std::int64_t> widths = gather_steps(communicator, width);
  for (std::size_t r = 0; r < widths.size(); ++r) {
    TENAX_EXPECTS(widths[r] == width, UsageError,
                  "state layout: rank " + std::to_string(r) + " splits its tensors along " +
                      std::to_string(widths[r] / 4) + " axes in all, rank " +
                      std::to_string(communicator.rank()) + " along " + std::to_string(width / 4),
                  "every rank's Workload::state_layout must split each tensor along the same "
                  "axes");
  }
  std::vector<std::int64_t> all(ranges.size() * counts.size());
  communicator.all_gather_bytes(std::as_bytes(std::span(ranges)),
                                std::as_writable_bytes(std::span(all)));
  io::ShardTable table;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    std::vector<io::TensorShard> theirs = mine;
    const std::int64_t* at = all.data() + r * ranges.size();
    const auto next = [&] { return *at++; };
    for (io::TensorShard& s : theirs) {
      s.axis = static_cast<int>(next());
      s.begin = next();
      s.end = next();
      s.extent = next();
      for (io::AxisRange& m : s.more) {
        m.axis = static_cast<int>(next());
        m.begin = next();
        m.end = next();
        m.extent = next();
      }
    }
    table.ranks.push_back(std::move(theirs));
  }
  try {
    // The parser's checks: the ranks split every tensor alike, its slabs tile its axis in rank
    // order, its boxes tile the box of its split axes.
    (void)io::parse_shard_table(io::format_shard_table(table), "this run's state layout");
  } catch (const IoError& e) {
    throw UsageError(e.cause(),
                     "give each rank a slab of every split tensor, in rank order, covering the "
                     "axis, or a box, the ranks' boxes covering the split axes without "
                     "overlapping (Workload::state_layout)");
  }
  return table;
}

AgreedCheckpoint load_agreed_checkpoint(const io::CheckpointStore& store,
                                        Communicator& communicator, const ResumeLayout& layout) {
  const bool replicated = layout.elastic();
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
                        "), or start a new run with another --run-dir: this job's state is split "
                        "across the ranks in a way it cannot divide anew");
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
    if (!layout.shards.empty()) {
      // Resharding is decided on every rank, so a refusal on one is a refusal on all.
      std::optional<std::string> refusal;
      if (loaded.found &&
          (loaded.world_size != communicator.size() || split_otherwise(loaded, layout, source))) {
        refusal = reshard_or_refuse(store, layout, source, loaded);
      }
      const std::vector<RankPart> answers =
          gather(communicator, refusal ? failed_part(*refusal) : RankPart{.ok = 1});
      if (auto failure = first_failure(answers)) {
        throw UsageError(
            "cannot resume the checkpoint of step " + std::to_string(lowest) + " in " +
                store.run_dir().string() + " on " + std::to_string(communicator.size()) +
                " ranks (rank " + std::to_string(failure->failed_rank) + "): " + failure->reason,
            "resume with the number of ranks that wrote it (mpirun -np " + std::to_string(world) +
                "), or start a new run with another "
                "--run-dir");
      }
    }
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
