// The Runner's checkpoints: the state a checkpoint holds (the workload's and the Runner's own),
// writing it (synchronously across the ranks, or in the background on one), and loading the
// newest valid one at a resume or a rollback, with the configuration check of a resume.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "collective_checkpoint.hpp"
#include "runner_impl.hpp"
#include "tenax/core/memory/history_resource.hpp"
#include "tenax/core/profiler.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/run_config.hpp"
#include "tenax/runtime/run_events.hpp"

namespace tenax::runtime {
namespace {

// At resume (not at a rollback): the configuration stored with the checkpoint against this
// run's. Accepted changes are printed and logged; a refused one is logged and thrown before the
// checkpoint's state is loaded, so the run directory keeps the run it holds.
void check_resumed_config(const io::LoadedCheckpoint& loaded, const RunnerOptions& options,
                          EventLog& events, const detail::RunConsole& console) {
  if (options.config.empty()) return;
  std::vector<io::ConfigChange> changes;
  try {
    changes = io::check_resume_config(loaded.metadata.config, options.config, options.config_policy,
                                      options.run_dir);
  } catch (const UsageError& e) {
    events.append(event::config_refused, {{"step", loaded.step}, {"reason", e.cause()}});
    throw;
  }
  for (const io::ConfigChange& change : changes) {
    console.say("resuming with %s changed %s -> %s%s", change.key.c_str(), change.old_value.c_str(),
                change.new_value.c_str(), change.allowed ? " (--allow-config-change)" : "");
    events.append(event::config_changed, {{"step", loaded.step},
                                          {"key", change.key},
                                          {"old", change.old_value},
                                          {"new", change.new_value},
                                          {"allowed", change.allowed}});
  }
}

}  // namespace

std::vector<io::TensorShard> prefixed(std::vector<io::TensorShard> shards) {
  for (io::TensorShard& s : shards) s.name = "workload/" + s.name;
  return shards;
}

StateDict Runner::Impl::checkpoint_state() const {
  StateDict state;
  state.merge("workload", workload.save_state());
  state.set(io::runner_entry::step, step);
  state.set("runner/micro_batch", micro.micro_batch());
  state.set("runner/regrow_clean_steps", micro.clean_steps());
  state.set("runner/total_steps", options.total_steps);
  if (!shard_table.empty()) state.set(detail::kShardTableEntry, shard_table);
  if (digested_step == step) {
    // What `tenax ckpt verify --deep` needs to compute the digest again from the files.
    state.set(io::runner_entry::state_digest, io::to_hex64(agreed_digest));
    std::string rank_local;
    for (const std::string& name : digest_layout.rank_local) rank_local += name + "\n";
    state.set(io::runner_entry::digest_rank_local, rank_local);
    state.set(io::runner_entry::digest_per_rank, std::int64_t{digest_layout.per_rank ? 1 : 0});
  }
  return state;
}

// Writes a checkpoint of the current state, which the ranks agreed is healthy. A failure on
// any rank is reported on every rank and the run goes on (the previous checkpoint is intact);
// three failures in a row end the run.
void Runner::Impl::checkpoint(bool wait_for_it) {
  // A checkpoint holds a state whose digest the ranks agreed on: a rollback never lands on a
  // corrupted one.
  if (!agree_on_digest()) {
    schedule.checkpointed(step);
    console.say(
        "checkpoint of step %lld not written: the ranks' states differ (the checkpoint of "
        "step %lld is kept)",
        static_cast<long long>(step), static_cast<long long>(saved_step));
    return;
  }
  const profiling::Span span("checkpoint", step);
  const AllocationTag tag("checkpoint");
  io::FileMetadata metadata;
  metadata.config = options.config;
  const auto start = std::chrono::steady_clock::now();
  bool written = true;
  std::string reason;
  StateDict state;
  {
    const profiling::Span snapshot("checkpoint.state");
    state = checkpoint_state();
  }
  if (async) {
    try {
      metadata.rank = rank;
      metadata.world_size = world;
      async->save(step, state, metadata);
      if (wait_for_it) async->wait();
    } catch (const IoError& e) {
      written = false;
      reason = detail::say_error(e);
    }
  } else {
    const detail::CheckpointOutcome outcome =
        detail::write_collective_checkpoint(*store, *communicator, step, state, metadata);
    written = outcome.committed;
    if (!written) reason = outcome.reason + on_rank(outcome.failed_rank);
  }
  schedule.checkpointed(step);
  if (written) {
    checkpoint_failures = 0;
    saved_step = step;
    events->append(
        event::checkpoint_written,
        {{"step", step},
         {"seconds",
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()},
         {"async", async.has_value() && !wait_for_it}});
    return;
  }
  ++checkpoint_failures;
  ++counted.checkpoint_failures;
  events->append(event::checkpoint_failed, {{"step", step}, {"reason", reason}});
  const std::string kept = saved_step >= 0
                               ? "the checkpoint of step " + std::to_string(saved_step) + " is kept"
                               : std::string("there is no earlier checkpoint");
  console.say("checkpoint of step %lld failed, %s: %s", static_cast<long long>(step), kept.c_str(),
              reason.c_str());
  if (checkpoint_failures >= 3) {
    throw IoError("3 checkpoints in a row failed; the last: " + reason,
                  "free space in or fix " + options.run_dir.string() +
                      ", then run again: the job resumes from the newest valid checkpoint");
  }
}

void Runner::Impl::settle_async_write() {
  if (!async) return;
  try {
    async->wait();
  } catch (const IoError& e) {
    // The newest valid checkpoint on disk is what counts; the failed one never committed.
    ++counted.checkpoint_failures;
    events->append(event::checkpoint_failed,
                   {{"step", saved_step}, {"reason", detail::say_error(e)}});
    console.say("background checkpoint of step %lld failed: %s", static_cast<long long>(saved_step),
                detail::say_error(e).c_str());
    throw;
  }
}

// The digest recorded with a checkpoint against that of the state loaded from it (collective):
// a state corrupted between the agreement and the write (in memory, on its way to the disk) is
// refused before the run goes on from it. Checkpoints written before digests existed have none.
void Runner::Impl::check_loaded_digest(const io::LoadedCheckpoint& loaded) {
  if (!loaded.state.contains(io::runner_entry::state_digest)) return;
  std::uint64_t recorded = 0;
  const bool parsed = io::parse_hex64(loaded.state.text(io::runner_entry::state_digest), recorded);
  // The state as the files hold it (resharded to this rank): load_state() may go on from it in
  // its own way (a solve whose limit was raised), which is no corruption.
  StepProposal proposal;
  proposal.step = step;
  digest_into(proposal, loaded.state.scope("workload"));
  const StepAgreement agreed = communicator->agree(proposal);
  if (parsed && agreed.digest_suspects.empty() && agreed.state_digest == recorded) {
    digested_step = step;
    agreed_digest = recorded;
    return;
  }
  const std::string found = agreed.digest_suspects.empty()
                                ? "has the digest " + io::to_hex64(agreed.state_digest)
                                : "differs between the ranks (" +
                                      std::to_string(agreed.digest_suspects.size()) + " suspect)";
  throw IoError("the checkpoint of step " + std::to_string(step) + " holds a state that " + found +
                    ", not the digest " + loaded.state.text(io::runner_entry::state_digest) +
                    " recorded when it was written: it was corrupted on its way to the disk",
                "run `tenax ckpt verify --deep " + options.run_dir.string() +
                    "`; move that checkpoint's directory out of checkpoints/ and run again to "
                    "resume from the one before");
}

// Loads the newest checkpoint valid on every rank; false when there is none. On a rollback
// the micro-batch learned since that checkpoint is kept when it is not larger, with its count
// of clean steps (the two go together: a regrowth since the checkpoint is undone).
bool Runner::Impl::restore(std::string_view kind) {
  const profiling::Span span("checkpoint.load");
  const AllocationTag tag("checkpoint_load");
  try {
    settle_async_write();
  } catch (const IoError&) {
    // Said and counted; the newest checkpoint on disk is loaded below.
  }
  const bool resuming = kind == event::resumed;
  const std::int64_t learned_micro_batch = micro.micro_batch();
  const std::int64_t learned_clean_steps = micro.clean_steps();
  detail::AgreedCheckpoint agreed =
      detail::load_agreed_checkpoint(*store, *communicator,
                                     {.replicated = workload.replicated_state(),
                                      .shards = prefixed(layout.shards),
                                      .rank_local = layout.rank_local});
  for (const auto& skipped : agreed.skipped) {
    ++counted.checkpoints_skipped;
    events->append(event::checkpoint_skipped, {{"step", skipped.step}, {"reason", skipped.reason}});
    console.say("skipped checkpoint of step %lld: %s", static_cast<long long>(skipped.step),
                skipped.reason.c_str());
  }
  if (!agreed.found) return false;
  const io::LoadedCheckpoint& loaded = agreed.loaded;
  if (resuming) check_resumed_config(loaded, options, *events, console);
  workload.load_state(loaded.state.scope("workload"));
  step = loaded.state.integer(io::runner_entry::step);
  check_loaded_digest(loaded);
  std::int64_t micro_batch =
      std::min(loaded.state.integer("runner/micro_batch"), full_micro_batch());
  // Checkpoints written before the regrowth policy existed lack the count.
  std::int64_t clean_steps = loaded.state.contains("runner/regrow_clean_steps")
                                 ? loaded.state.integer("runner/regrow_clean_steps")
                                 : 0;
  if (!resuming && learned_micro_batch <= micro_batch) {
    micro_batch = learned_micro_batch;
    clean_steps = learned_clean_steps;
  }
  micro.reset(micro_batch, clean_steps);
  schedule.restored(step);
  saved_step = step;
  scanned_step = step;
  if (resuming) {
    events->append(
        kind,
        {{"step", step}, {"micro_batch", micro_batch}, {"device", to_string(workload.device())}});
    ++counted.resumes;
    if (loaded.world_size != world) {
      console.say("resumed from the checkpoint of step %lld, written by %d rank(s), on %d rank(s)",
                  static_cast<long long>(step), loaded.world_size, world);
      events->append(event::resharded, {{"step", step},
                                        {"from_ranks", std::int64_t{loaded.world_size}},
                                        {"to_ranks", std::int64_t{world}}});
    } else {
      console.say("resumed from the checkpoint of step %lld", static_cast<long long>(step));
    }
  }
  return true;
}

}  // namespace tenax::runtime
