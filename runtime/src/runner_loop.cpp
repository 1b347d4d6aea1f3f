// The Runner's step loop: it only sequences. The run starts (resume or a fresh step 0), then
// each step is a transaction across ranks:
//   1. each rank computes the step (Workload::step stages the result; nothing visible changes);
//   2. the ranks agree on its outcome (one collective): proceed, or the most severe fault any
//      rank met, with that rank and the reason;
//   3. proceed: the ranks combine their staged results (Workload::combine_step) and every rank
//      commits (Workload::commit_step, in which nothing may allocate); otherwise every rank
//      discards its staged result and all act on the same decision (runner_step.cpp);
//   4. after the commit, the ranks agree on the state (one collective): its health (the NaN
//      scan and Workload::check), a stop signal seen by any rank, the checkpoint trigger of any
//      rank, finished(), and the slowest rank's compute time.
// The step's time is taken whole, every phase and the Runner's own work in it (StepClock).
#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "collective_checkpoint.hpp"
#include "profile_session.hpp"
#include "runner_impl.hpp"
#include "stop_signals.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/history_resource.hpp"
#include "tenax/core/memory/pool_resource.hpp"
#include "tenax/core/profiler.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/run_directory_lock.hpp"
#include "tenax/runtime/run_events.hpp"

namespace tenax::runtime {
namespace {

// events.jsonl for rank 0 (and a single rank); events-rank-<r>.jsonl for the others, so that no
// rank ever writes into another's log.
std::filesystem::path event_log_path(const std::filesystem::path& run_dir, int rank) {
  return rank == 0 ? run_dir / "events.jsonl"
                   : run_dir / ("events-rank-" + std::to_string(rank) + ".jsonl");
}

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal " + std::to_string(signal_number);
  }
}

// "SIGTERM (signal 15)".
std::string describe_signal(int signal_number) {
  return signal_name(signal_number) + " (signal " + std::to_string(signal_number) + ")";
}

// The event-log field of a step metric: "metric_<name>", the name checked against the rule of
// Workload::step_metrics.
std::string metric_field(const std::string& name) {
  const bool valid =
      !name.empty() && name.size() <= 32 && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
      });
  TENAX_EXPECTS(valid, UsageError,
                "the workload's step_metrics() named a metric '" + name +
                    "'; names are 1 to 32 characters of a-z, 0-9 and _",
                "rename the metric in step_metrics()");
  return std::string(event::metric_prefix) + name;
}

}  // namespace

// Runs `action` (building or loading the state), retrying it once after emptying the device
// cache when it runs out of memory; there is no micro-batch to back off outside a step.
template <class Action>
bool Runner::Impl::with_cache_retry(Action&& action) {
  try {
    return action();
  } catch (const OutOfMemoryError& e) {
    ++counted.oom_retries;
    events->append(event::oom_retry, {{"step", step}, {"reason", detail::say_error(e)}});
    console.say(
        "out of memory while building or loading the state; device cache emptied, "
        "retrying: %s",
        e.cause().c_str());
    empty_cache(workload.device());
    record_telemetry("oom_retry");
    return action();
  }
}

RunResult Runner::Impl::run() {
  // The run directory belongs to this job until run() returns. Taken before anything in it is
  // opened, so a second job on the same directory is refused before it reads or writes anything.
  // Every rank learns whether every rank holds its lock before any rank writes anything: a
  // rank refused (the directory is another job's) would otherwise leave its peers to open their
  // event logs in that directory and wait out the communicator's timeout at the first collective.
  io::RunDirectoryLock lock;
  std::exception_ptr refused;
  try {
    lock = io::RunDirectoryLock::acquire(options.run_dir, rank, options.program);
  } catch (const Error&) {
    refused = std::current_exception();
  }
  if (world > 1) {
    std::vector<std::byte> held(static_cast<std::size_t>(world));
    const std::byte mine = refused ? std::byte{0} : std::byte{1};
    communicator->all_gather_bytes(std::span<const std::byte>(&mine, 1), held);
    const auto first = std::find(held.begin(), held.end(), std::byte{0});
    if (!refused && first != held.end()) {
      lock.release();
      const auto other = static_cast<int>(first - held.begin());
      throw UsageError("run directory " + options.run_dir.string() + " cannot be locked by rank " +
                           std::to_string(other) +
                           " (it is in use by another job, or unusable; that rank's error says "
                           "which): this rank writes nothing into it",
                       "wait for that job to end or stop it, or pass another --run-dir");
    }
  }
  if (refused) std::rethrow_exception(refused);
  events.emplace(event_log_path(options.run_dir, rank));
  io::CheckpointOptions checkpoint_options;
  checkpoint_options.keep_last = options.keep_last;
  checkpoint_options.fault_plan = &faults.checkpoint_plan();
  store.emplace(options.run_dir, checkpoint_options);
  if (options.async_checkpoints) {
    TENAX_EXPECTS(world == 1, UsageError,
                  "asynchronous checkpoints with " + std::to_string(world) + " ranks",
                  "drop --async: a job of several ranks writes its checkpoints synchronously "
                  "(every rank's file must be durable before rank 0 commits)");
    async.emplace(*store);
  }
  const detail::StopSignals signals;
  const detail::ProfileSession profile(options.profile_path, rank);
  try {
    return run_steps();
  } catch (const CommFaultError& e) {
    return comm_failure(e);
  } catch (const Error& e) {
    // An error the Runner does not handle goes on to the program, but the log still ends with
    // an exit line, so that `tenax watch` and `tenax report` see that the run ended and why.
    try {
      events->append(event::exit, {{"status", std::string("failed")},
                                   {"exit_code", std::int64_t{1}},
                                   {"step", step},
                                   {"message", detail::say_error(e)}});
    } catch (const Error&) {  // the log itself unwritable (a full disk): the error says enough
    }
    throw;
  }
}

bool Runner::Impl::start() {
  layout = workload.state_layout();
  digest_layout = {.shards = layout.shards,
                   .rank_local = layout.rank_local,
                   .per_rank = world > 1 && layout.shards.empty() && !workload.replicated_state()};
  const io::ShardTable table = detail::gather_shard_table(*communicator, prefixed(layout.shards));
  if (!table.ranks.empty()) shard_table = io::format_shard_table(table);
  const bool resumed = with_cache_retry([&] { return restore(event::resumed); });
  if (!resumed && !store->committed_steps().empty()) {
    // Every committed checkpoint is damaged: starting afresh would overwrite the run's work (its
    // retention removes them). Stopped before anything is written, on every rank alike (the
    // ranks agreed on the checkpoints above).
    const std::string what = "every committed checkpoint in " + options.run_dir.string() +
                             " is damaged (each skipped above): nothing was written";
    events->append(event::error, {{"step", std::int64_t{0}}, {"reason", what}});
    throw IoError(what, "run `tenax ckpt verify " + options.run_dir.string() +
                            "` to see what is wrong; restore the checkpoints from a copy, or move "
                            "checkpoints/ aside to start the run afresh");
  }
  if (!resumed) {
    with_cache_retry([&] {
      workload.init();
      return true;
    });
    // A state that starts unhealthy (a NaN in a file it was initialised from) has no checkpoint
    // to roll back to: refused before anything is written, naming the tensor. The ranks agree
    // on it first, so that a NaN on one rank stops every rank at once.
    {
      const AllocationTag tag("nan_scan");
      const std::optional<std::string> problem = scan_tensors(workload.save_state());
      StepProposal proposal;
      if (problem) {
        proposal.decision = StepDecision::stop;
        proposal.reason = StepReason::anomaly;
      }
      const StepAgreement agreed = communicator->agree(proposal);
      if (agreed.decision != StepDecision::proceed) {
        const std::string what = problem ? *problem
                                         : "non-finite values on rank " +
                                               std::to_string(agreed.asking_rank) +
                                               " (its log has the details)";
        events->append(event::error, {{"step", std::int64_t{0}},
                                      {"rank", std::int64_t{agreed.asking_rank}},
                                      {"reason", "the initial state holds " + what}});
        throw AnomalyError(
            "the initial state (Workload::init) holds " + what + "; nothing was written",
            "check what the workload starts from (its initial condition, an "
            "initial parameters file, the data it reads)");
      }
    }
    // What the ranks must hold alike (a replicated state; the entries of a sharded one that are
    // not sharded) is alike from the start, or the workload breaks its contract.
    {
      StepProposal proposal;
      digest_into(proposal, workload.save_state());
      const StepAgreement agreed = communicator->agree(proposal);
      if (!agreed.digest_suspects.empty()) {
        std::string ranks;
        for (int r : agreed.digest_suspects) {
          ranks += ranks.empty() ? "" : ", ";
          ranks += std::to_string(r);
        }
        const std::string what =
            "the initial states of the ranks differ in what they must hold "
            "alike (state digests; suspect ranks: " +
            ranks + ")";
        events->append(event::error, {{"step", std::int64_t{0}}, {"reason", what}});
        throw UsageError(what + "; nothing was written",
                         "every entry of save_state() that is not sharded must be the same on "
                         "every rank (or, for a state that is not replicated_state(), be "
                         "sharded): list a rank's own entries in state_layout().rank_local");
      }
      digested_step = 0;
      agreed_digest = agreed.state_digest;
    }
    step = 0;
    micro.reset(full_micro_batch(), 0);
    events->append(event::started, {{"total_steps", options.total_steps},
                                    {"micro_batch", micro.micro_batch()},
                                    {"ranks", std::int64_t{world}},
                                    {"device", to_string(workload.device())}});
    checkpoint(/*wait_for_it=*/true);  // there is always a state to roll back to
  }
  progress.emplace(rank == 0 ? options.progress : ProgressMode::quiet, options.total_steps, step);
  console.attach(&*progress);
  // Metric names are checked before the first step, not after it.
  for (const StepMetric& metric : workload.step_metrics()) (void)metric_field(metric.name);
  record_telemetry(resumed ? "resumed" : "started");
  if (resumed && step > options.total_steps) {
    console.say(
        "the run in %s is at step %lld, past the %lld steps asked for: nothing to do (its "
        "state stays that of step %lld; a run is never taken back to an earlier step)",
        options.run_dir.string().c_str(), static_cast<long long>(step),
        static_cast<long long>(options.total_steps), static_cast<long long>(step));
  } else if (resumed && step == options.total_steps) {
    console.say("the run in %s is already at step %lld of %lld: nothing to do",
                options.run_dir.string().c_str(), static_cast<long long>(step),
                static_cast<long long>(options.total_steps));
  }
  return resumed;
}

RunResult Runner::Impl::run_steps() {
  start();
  std::optional<std::string> anomaly;
  StepAgreement state = agree_on_state(false, nullptr, anomaly);
  while (true) {
    if (state.decision == StepDecision::rollback) {
      const std::string reason =
          anomaly.value_or(std::string("an anomaly") + on_rank(state.asking_rank));
      if (auto stopped = roll_back(step, reason, "")) return *stopped;
      state = agree_on_state(false, nullptr, anomaly);
      continue;
    }
    if (state.signal != 0) {
      // Rewriting a committed step would uncommit it first; skip it when it is known to be on
      // disk (an asynchronous write may still fail, so it is written again then).
      const std::string who = describe_signal(state.signal) + on_rank(state.signal_rank);
      events->append(event::signal, {{"step", step},
                                     {"signal", std::int64_t{state.signal}},
                                     {"rank", std::int64_t{state.signal_rank}}});
      console.say("%s: finishing with a checkpoint of step %lld", who.c_str(),
                  static_cast<long long>(step));
      if (async || saved_step != step) checkpoint(/*wait_for_it=*/true);
      return finish(RunStatus::interrupted, "stopped by " + who + " after checkpointing step " +
                                                std::to_string(step) +
                                                "; run again (or under `tenax run`) to resume");
    }
    if (step >= options.total_steps || state.finished) break;

    const profiling::Span step_span("step", step + 1);
    const detail::StepClock clock(*communicator);
    const detail::StepContext::Scope in_step(context, step + 1);
    set_allocation_step(step + 1);
    communicator->set_step(step + 1);
    micro.begin_step();
    StepAgreement outcome;
    Outcome mine;
    while (true) {
      mine = compute_step();
      {
        const profiling::Span span("wait.agree_step", step + 1);
        outcome = communicator->agree(mine.proposal);
      }
      if (outcome.decision == StepDecision::proceed) break;
      if (mine.computed) workload.discard_step();
      if (outcome.decision != StepDecision::retry && outcome.decision != StepDecision::backoff) {
        break;
      }
      prepare_retry(outcome, mine);
    }

    if (outcome.decision == StepDecision::proceed) {
      // The ranks' staged results combined (collective); an anomaly in the combined data is
      // found alike on every rank.
      std::optional<std::string> combined;
      try {
        const profiling::Span span("step.combine", step + 1);
        combined = workload.combine_step();
      } catch (const OverflowError& e) {
        // Found in the combined data (a loss scale at its minimum), hence alike on every rank:
        // the overflow stop, without another agreement.
        workload.discard_step();
        Outcome found;
        found.report = detail::say_error(e) + " (found alike on every rank in the combined data)";
        found.where = detail::where(e);
        StepAgreement stop;
        stop.step = step + 1;
        stop.decision = StepDecision::stop;
        stop.reason = StepReason::overflow;
        stop.asking_rank = rank;
        return end_step(stop, found);
      }
      if (combined) {
        workload.discard_step();
        anomaly = combined;
        if (auto stopped = roll_back(step + 1, *anomaly, "", /*staged=*/true)) return *stopped;
        state = agree_on_state(false, nullptr, anomaly);
        continue;
      }
    } else if (outcome.decision == StepDecision::rollback) {
      const bool mine_asked = mine.proposal.decision == StepDecision::rollback;
      anomaly = mine_asked ? mine.report : peer_report(outcome, mine);
      if (auto stopped =
              roll_back(step + 1, *anomaly, mine_asked ? mine.where : "", /*staged=*/true)) {
        return *stopped;
      }
      state = agree_on_state(false, nullptr, anomaly);
      continue;
    } else {
      return end_step(outcome, mine);  // restart or stop
    }

    // Every rank computed the step: apply it everywhere.
    {
      const profiling::Span span("step.commit", step + 1);
      const NoAllocationScope no_allocation("Workload::commit_step()");
      workload.commit_step();
    }
    ++step;
    const bool checkpoint_ahead = schedule.due(step);
    state =
        agree_on_state(scan_due(checkpoint_ahead), &clock, anomaly, digest_due(checkpoint_ahead));
    if (state.decision == StepDecision::rollback) continue;
    if (!state.digest_suspects.empty()) {
      if (auto stopped = on_corruption(state)) return *stopped;
      state = agree_on_state(false, nullptr, anomaly);
      continue;
    }
    anomalies.on_healthy(step);
    record_step(clock, state);
    // The scan before a checkpoint is part of the agreement just taken, so an unhealthy state
    // is never written (a rollback is taken above instead).
    if (state.checkpoint_due && scanned_step != step) {
      std::optional<std::string> late;
      state = agree_on_state(true, &clock, late, digested_step != step);
      anomaly = late;
      if (state.decision == StepDecision::rollback) continue;
      if (!state.digest_suspects.empty()) {
        if (auto stopped = on_corruption(state)) return *stopped;
        state = agree_on_state(false, nullptr, anomaly);
        continue;
      }
    }
    if (state.checkpoint_due) checkpoint(/*wait_for_it=*/false);
  }
  if (saved_step != step) checkpoint(/*wait_for_it=*/true);
  return finish(RunStatus::completed, "");
}

void Runner::Impl::record_step(const detail::StepClock& clock, const StepAgreement& state) {
  // The whole step, every phase and the Runner's own work in it; its compute leaves out the
  // waits in collectives, so that ranks compare what they computed.
  const detail::StepTimes times{.seconds = clock.elapsed(),
                                .compute_seconds = clock.compute(),
                                .slowest_compute_seconds = state.slowest_seconds,
                                .slowest_rank = state.slowest_rank};
  // The step's own time (its digest taken out), averaged: the automatic digest cadence's base.
  const double own = std::max(0.0, times.seconds - (state.digested ? digest_seconds : 0.0));
  step_seconds = step_seconds <= 0 ? own : 0.9 * step_seconds + 0.1 * own;
  const MemoryStats memory = memory_stats(workload.device());
  const std::vector<StepMetric> metrics = workload.step_metrics();
  std::vector<std::string> metric_names;
  metric_names.reserve(metrics.size());
  for (const StepMetric& metric : metrics) metric_names.push_back(metric_field(metric.name));
  std::vector<EventLog::Field> fields{
      {"step", step},
      {"micro_batch", micro.micro_batch()},
      {"seconds", times.seconds},
      {"compute_seconds", times.compute_seconds},
      {"slowest_compute_seconds", times.slowest_compute_seconds},
      {"slowest_rank", std::int64_t{times.slowest_rank}},
      {"allocated", static_cast<std::int64_t>(memory.allocated_bytes.current)},
      {"reserved", static_cast<std::int64_t>(memory.reserved_bytes.current)}};
  for (std::size_t k = 0; k < metrics.size(); ++k) {
    fields.emplace_back(metric_names[k], metrics[k].value);
  }
  if (state.digested) fields.emplace_back("digest", io::to_hex64(state.state_digest));
  events->append(event::step, fields, /*durable=*/false);
  record_notices();
  progress->update(step, memory.reserved_bytes.current);
  telemetry.after_step(times, step, *events, console);
  std::int64_t previous = 0;
  if (micro.after_clean_step(full_micro_batch(), step >= options.total_steps, previous)) {
    events->append(event::regrow, {{"step", step + 1},
                                   {"micro_batch", micro.micro_batch()},
                                   {"previous_micro_batch", previous},
                                   {"clean_steps", micro.clean_steps()}});
    ++counted.regrowths;
    console.say("%lld steps without running out of memory; micro-batch doubled to %lld",
                static_cast<long long>(micro.clean_steps()),
                static_cast<long long>(micro.micro_batch()));
    micro.grown();
  }
}

// What the library's components told the run while the step was taken (StepContext): each an
// event, a console line (the first rank speaks for the job: the ranks took the same decision)
// and a count for the closing line.
void Runner::Impl::record_notices() {
  for (const detail::StepNotice& notice : context.notices()) {
    const char* injected = notice.injected ? " (injected by overflow@step)" : "";
    switch (notice.kind) {
      case detail::StepNotice::Kind::step_skipped:
        ++counted.steps_skipped;
        events->append(event::step_skipped, {{"step", step},
                                             {"loss_scale", notice.loss_scale},
                                             {"previous_loss_scale", notice.previous_loss_scale},
                                             {"injected", notice.injected}});
        if (rank == 0) {
          console.say(
              "step %lld skipped: the gradients overflowed%s; loss scale %g -> %g, "
              "nothing else changed",
              static_cast<long long>(step), injected, notice.previous_loss_scale,
              notice.loss_scale);
        }
        break;
      case detail::StepNotice::Kind::loss_scale_changed:
        ++counted.loss_scale_changes;
        events->append(event::loss_scale_changed,
                       {{"step", step},
                        {"loss_scale", notice.loss_scale},
                        {"previous_loss_scale", notice.previous_loss_scale}});
        if (rank == 0) {
          console.say(
              "step %lld: loss scale raised %g -> %g after a run of steps without "
              "overflow",
              static_cast<long long>(step), notice.previous_loss_scale, notice.loss_scale);
        }
        break;
    }
  }
}

RunResult Runner::Impl::finish(RunStatus status, std::string message) {
  if (async && status != RunStatus::restart) {
    try {
      settle_async_write();
    } catch (const IoError&) {
      // The state in memory is still good (unless it is the anomaly that ends the run): write
      // it again, synchronously, so the run ends with it on disk.
      saved_step = -1;
      async.reset();
      if (status != RunStatus::anomaly && status != RunStatus::corrupted) {
        checkpoint(/*wait_for_it=*/true);
      }
    }
  }
  // The run directory is settled when run() returns: no removal of old checkpoints is left
  // running behind the caller (who may inspect, copy or resume it at once).
  // (After a device fault an asynchronous write may still be running on the store: it is
  // left alone, and the Runner's destructor joins it before the store goes.)
  if (store && !(async && status == RunStatus::restart)) store->wait_for_background_work();
  const int exit_code = status == RunStatus::completed ? 0
                        : status == RunStatus::interrupted || status == RunStatus::restart
                            ? kRestartExitCode
                            : 1;
  if (progress) progress->finish();
  record_telemetry("exit");
  events->append(event::exit, {{"status", std::string(to_string(status))},
                               {"exit_code", std::int64_t{exit_code}},
                               {"step", step},
                               {"message", message}});
  // The closing line counts what changed the run; the events were agreed on by all ranks, so
  // the first rank speaks for the job.
  if (rank == 0) {
    if (status == RunStatus::completed) {
      console.say("completed at step %lld: %s", static_cast<long long>(step),
                  describe(counted).c_str());
    } else {
      // The stop's own cause was said when it happened; the count is of what came before.
      console.say("stopped at step %lld (%s); before it in this process: %s",
                  static_cast<long long>(step), std::string(to_string(status)).c_str(),
                  describe(counted).c_str());
    }
  }
  return {status, exit_code, step, micro.micro_batch(), std::move(message), counted};
}

// The allocations, frees and failed requests that led to an out-of-memory stop, and the pool's
// block map, beside the checkpoints (tenax report draws them). A failure to write is said, never
// fatal: the stop's own report matters more.
void Runner::Impl::write_memory_history() {
  const std::filesystem::path path =
      options.run_dir / (rank == 0 ? std::string("memory-history.json")
                                   : "memory-history-rank-" + std::to_string(rank) + ".json");
  try {
    const std::string json = memory_history_json(workload.device());
    std::FILE* file = std::fopen(path.c_str(), "wb");
    const bool ok =
        file != nullptr && std::fwrite(json.data(), 1, json.size(), file) == json.size();
    if (file != nullptr && std::fclose(file) != 0) throw IoError("close failed", "");
    if (!ok) throw IoError("write failed", "");
    console.say("the allocations that led to the out-of-memory stop are in %s", path.c_str());
  } catch (const std::exception& e) {
    console.say("warning: could not write %s (%s)", path.c_str(), detail::say_error(e).c_str());
  }
}

// A communication fault (a hung or dead peer, an aborted communicator): nothing more is said to
// the peers; the job exits for a restart from the newest checkpoint every rank committed.
RunResult Runner::Impl::comm_failure(const Error& e) {
  communicator->abort(e.what());
  events->append(event::fault, {{"kind", std::string("comm_fault")},
                                {"step", step + 1},
                                {"reason", detail::say_error(e)},
                                {"where", detail::where(e)}});
  console.say("communication fault: %s", detail::say_error(e).c_str());
  if (async) async.reset();  // joins a write in flight; its failure is moot now
  return finish(RunStatus::restart, detail::say_error(e) +
                                        "; exiting for a restart from the checkpoint of step " +
                                        std::to_string(saved_step));
}

}  // namespace tenax::runtime
