// The step transaction: each rank computes the step (Workload::step stages the result), the ranks
// agree on its outcome in one collective (proceed, or the most severe fault any rank met, with
// that rank and the reason), and all act on the same decision; after the commit they agree on
// the state's health. This file holds what a step's faults make the ranks do: retry, back off,
// roll back, restart or stop.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <limits>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "runner_impl.hpp"
#include "stop_signals.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/history_resource.hpp"
#include "tenax/core/profiler.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/run_events.hpp"

namespace tenax::runtime {

Runner::Impl::Outcome Runner::Impl::compute_step() {
  Outcome outcome;
  outcome.proposal.step = step + 1;
  const auto start = std::chrono::steady_clock::now();
  auto propose = [&](StepDecision decision, StepReason reason, const std::exception& e) {
    outcome.proposal.decision = decision;
    outcome.proposal.reason = reason;
    outcome.report = detail::say_error(e);
    outcome.where = detail::where(e);
  };
  try {
    if (faults.fires(FaultKind::kill, step + 1)) {
      events->append(event::fault, {{"kind", std::string("kill")}, {"step", step + 1}});
      console.say("injected kill (SIGKILL) at step %lld", static_cast<long long>(step + 1));
      std::raise(SIGKILL);
    }
    if (faults.fires(FaultKind::hang, step + 1)) hang();
    if (faults.fires(FaultKind::device, step + 1)) {
      throw DeviceFaultError("injected device fault at step " + std::to_string(step + 1),
                             "none needed: the fault was requested by TENAX_FAULTS");
    }
    if (faults.fires(FaultKind::comm, step + 1)) {
      throw CommFaultError("injected communication fault at step " + std::to_string(step + 1),
                           "none needed: the fault was requested by TENAX_FAULTS");
    }
    if (faults.fires(FaultKind::oom, step + 1)) {
      throw OutOfMemoryError("injected out-of-memory at step " + std::to_string(step + 1),
                             "none needed: the fault was requested by TENAX_FAULTS");
    }
    {
      const profiling::Span span("step.compute", step + 1);
      const AllocationTag tag("step");
      workload.step(step, micro.micro_batch());
    }
    outcome.computed = true;
  } catch (const Error& e) {
    switch (e.fault_class()) {
      case FaultClass::out_of_memory:
        propose(micro.on_out_of_memory(), StepReason::out_of_memory, e);
        break;
      case FaultClass::anomaly:
        // The step met a NaN/Inf it could not go on with (a non-finite loss, an anomaly-mode
        // report) and left the state as it was: roll back, as for an unhealthy state.
        propose(StepDecision::rollback, StepReason::anomaly, e);
        break;
      case FaultClass::overflow:
        propose(StepDecision::stop, StepReason::overflow, e);
        break;
      case FaultClass::device_fault:
        propose(StepDecision::restart, StepReason::device_fault, e);
        break;
      case FaultClass::comm_fault:
        // A collective of the step failed (a peer hung or died): the communicator is unusable
        // and the peers learn it from their own collective's timeout or abort.
        if (communicator->aborted()) throw;
        propose(StepDecision::restart, StepReason::comm_fault, e);
        break;
      default:
        propose(StepDecision::stop, StepReason::usage, e);
        outcome.error = std::current_exception();
        break;
    }
  } catch (const std::exception& e) {
    propose(StepDecision::stop, StepReason::usage, e);
    outcome.error = std::current_exception();
  }
  outcome.proposal.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

void Runner::Impl::prepare_retry(const StepAgreement& outcome, const Outcome& mine) {
  if (mine.proposal.reason == StepReason::out_of_memory) {
    const char* kind = micro.apply(mine.proposal.decision);
    events->append(kind, {{"step", step + 1}, {"micro_batch", micro.micro_batch()}});
    if (mine.proposal.decision == StepDecision::retry) {
      ++counted.oom_retries;
      empty_cache(workload.device());
      console.say("out of memory at step %lld; device cache emptied, retrying",
                  static_cast<long long>(step + 1));
    } else {
      ++counted.backoffs;
      console.say("out of memory at step %lld; micro-batch halved to %lld",
                  static_cast<long long>(step + 1), static_cast<long long>(micro.micro_batch()));
    }
    record_telemetry(kind);
    return;
  }
  ++counted.peer_retries;
  console.say("%s at step %lld on rank %d; computing the step again (%s)",
              std::string(to_string(outcome.reason)).c_str(), static_cast<long long>(step + 1),
              outcome.asking_rank, std::string(to_string(outcome.decision)).c_str());
  events->append(event::peer_retry, {{"step", step + 1},
                                     {"rank", std::int64_t{outcome.asking_rank}},
                                     {"decision", std::string(to_string(outcome.decision))}});
}

std::string Runner::Impl::peer_report(const StepAgreement& agreed, const Outcome& mine) const {
  if (agreed.asking_rank == rank && !mine.report.empty()) return mine.report;
  return std::string(to_string(agreed.reason)) + " on rank " + std::to_string(agreed.asking_rank) +
         " (its log has the details)";
}

RunResult Runner::Impl::end_step(const StepAgreement& outcome, const Outcome& mine) {
  const std::string report = peer_report(outcome, mine);
  if (outcome.decision == StepDecision::restart) {
    std::string kind(to_string(outcome.reason));
    std::replace(kind.begin(), kind.end(), ' ', '_');
    events->append(event::fault, {{"kind", kind},
                                  {"step", step + 1},
                                  {"rank", std::int64_t{outcome.asking_rank}},
                                  {"reason", report},
                                  {"where", mine.where}});
    console.say("%s at step %lld%s; exiting for a restart",
                std::string(to_string(outcome.reason)).c_str(), static_cast<long long>(step + 1),
                on_rank(outcome.asking_rank).c_str());
    record_telemetry("fault");
    if (outcome.reason == StepReason::comm_fault) communicator->abort(report);
    // Nothing derived from device memory is written after a device fault.
    if (async) async.reset();
    return finish(RunStatus::restart, report +
                                          "; exiting for a restart from the checkpoint of step " +
                                          std::to_string(saved_step));
  }
  // StepDecision::stop
  if (outcome.reason == StepReason::usage) {
    events->append(event::error, {{"step", step + 1},
                                  {"rank", std::int64_t{outcome.asking_rank}},
                                  {"reason", report},
                                  {"where", mine.where}});
    if (mine.error) std::rethrow_exception(mine.error);
    throw UsageError("step " + std::to_string(step + 1) + " failed" + on_rank(outcome.asking_rank) +
                         ": " + report,
                     "read that rank's message; this rank stopped with it");
  }
  if (async || saved_step != step) checkpoint(/*wait_for_it=*/true);
  if (outcome.reason == StepReason::overflow) {
    events->append(event::overflow, {{"step", step + 1},
                                     {"rank", std::int64_t{outcome.asking_rank}},
                                     {"reason", report},
                                     {"where", mine.where}});
    return finish(RunStatus::overflow, report + on_rank(outcome.asking_rank) +
                                           "\nstate checkpointed at step " + std::to_string(step) +
                                           "; the run resumes from it once the cause is fixed");
  }
  write_memory_history();
  return finish(RunStatus::out_of_memory,
                "out of memory at step " + std::to_string(step + 1) + on_rank(outcome.asking_rank) +
                    " even with the smallest micro-batch (" + std::to_string(micro.micro_batch()) +
                    "); state checkpointed at step " + std::to_string(step) + ". " + report + "\n" +
                    memory_summary(workload.device()) +
                    "\nfix: run on a device with more memory, lower the problem size, "
                    "or raise TENAX_MEMORY_LIMIT; the run resumes from its checkpoint");
}

std::optional<RunResult> Runner::Impl::roll_back(std::int64_t anomalous_step,
                                                 const std::string& reason,
                                                 const std::string& where, bool staged) {
  events->append(event::anomaly, {{"step", anomalous_step}, {"reason", reason}, {"where", where}});
  record_telemetry("anomaly");
  using Verdict = detail::AnomalyPolicy::Verdict;
  const Verdict verdict = anomalies.on_anomaly(anomalous_step);
  if (verdict == Verdict::exhausted) {
    console.say("anomaly at step %lld (%s), the %d rollbacks allowed are spent; stopping",
                static_cast<long long>(anomalous_step), reason.c_str(), anomalies.max_retries());
    return finish(RunStatus::anomaly,
                  "anomaly at step " + std::to_string(anomalous_step) + " (" + reason + ") after " +
                      std::to_string(anomalies.max_retries()) +
                      " rollbacks; the last good checkpoint is kept. fix: lower the time "
                      "step or learning rate, or check the input data");
  }
  if (verdict == Verdict::repeated) return on_repeated_anomaly(anomalous_step, reason, staged);
  console.say("anomaly at step %lld (%s); rolling back", static_cast<long long>(anomalous_step),
              reason.c_str());
  rewind(anomalous_step);
  return std::nullopt;
}

std::optional<RunResult> Runner::Impl::on_repeated_anomaly(std::int64_t anomalous_step,
                                                           const std::string& reason, bool staged) {
  const std::string inputs = workload.describe_step(anomalous_step - 1);
  const std::string what = "step " + std::to_string(anomalous_step) +
                           (inputs.empty() ? std::string() : " (" + inputs + ")") +
                           " failed again after a rollback, with the same inputs: " + reason;
  const bool skip = options.repeated_anomaly == RepeatedAnomaly::skip;
  if (skip && staged && workload.skip_step(anomalous_step - 1)) {
    ++counted.anomalous_steps_skipped;
    ++step;  // the step counts as taken; the state is still that of the step before
    anomalies.on_skipped();
    events->append(event::anomalous_step_skipped,
                   {{"step", anomalous_step}, {"reason", reason}, {"inputs", inputs}});
    console.say(
        "%s; skipped it (RunnerOptions::repeated_anomaly = skip): the state stays that of "
        "step %lld",
        what.c_str(), static_cast<long long>(anomalous_step - 1));
    return std::nullopt;
  }
  const std::string why =
      !staged ? "the state turned unhealthy after the step was applied, the same way every time, "
                "so the run stops rather than roll back again"
              : (!skip ? "it would fail the same way every time, so the run stops rather than "
                         "roll back again"
                       : "the workload cannot skip a step (Workload::skip_step)");
  console.say("%s; %s", what.c_str(), why.c_str());
  const std::string fix =
      staged && !skip ? "clean the input data, or skip the step: RunnerOptions::repeated_anomaly "
                        "= skip"
                      : "check the input data, or lower the time step or learning rate";
  return finish(RunStatus::anomaly,
                what + "; " + why + ". The last good checkpoint is kept. fix: " + fix);
}

void Runner::Impl::rewind(std::int64_t bad_step) {
  if (!restore(event::rollback)) {
    throw AnomalyError("step " + std::to_string(bad_step) +
                           " cannot be rolled back: no valid checkpoint to roll back to",
                       "check the run directory " + options.run_dir.string());
  }
  // The steps computed again: from the checkpoint through the bad step, which is computed again
  // too (the step it replaces was never committed as good).
  const std::int64_t recompute = bad_step - step;
  ++counted.rollbacks;
  counted.steps_recomputed += recompute;
  events->append(event::rollback,
                 {{"step", step}, {"micro_batch", micro.micro_batch()}, {"recompute", recompute}});
  console.say("rolled back to the checkpoint of step %lld (%lld step%s to compute again)",
              static_cast<long long>(step), static_cast<long long>(recompute),
              recompute == 1 ? "" : "s");
}

StepAgreement Runner::Impl::agree_on_state(bool scan, const detail::StepClock* clock,
                                           std::optional<std::string>& anomaly, bool digest) {
  if (faults.fires(FaultKind::bitflip, step)) {
    const std::string what = detail::InjectedFaults::flip_bit(workload.save_state());
    events->append(event::fault,
                   {{"kind", std::string("bitflip")}, {"step", step}, {"what", what}});
    console.say("injected bit flip after step %lld: %s", static_cast<long long>(step),
                what.c_str());
  }
  anomaly = find_anomaly(scan);
  StepProposal proposal;
  proposal.step = step;
  if (anomaly) {
    proposal.decision = StepDecision::rollback;
    proposal.reason = StepReason::anomaly;
  }
  proposal.signal = detail::StopSignals::pending();
  proposal.checkpoint_due = schedule.due(step);
  proposal.finished = workload.finished();
  proposal.seconds = clock != nullptr ? clock->compute() : 0.0;
  if (digest) digest_into(proposal, workload.save_state());
  proposal.digest_every = digest_every_wish();
  StepAgreement agreed;
  {
    const profiling::Span span("wait.agree_state", step);
    agreed = communicator->agree(proposal);
  }
  if (agreed.digest_every > 0) auto_digest_every = agreed.digest_every;
  if (agreed.digested && agreed.digest_suspects.empty()) {
    digested_step = step;
    agreed_digest = agreed.state_digest;
  }
  return agreed;
}

void Runner::Impl::digest_into(StepProposal& proposal, const StateDict& state) {
  const profiling::Span span("digest", step);
  const AllocationTag tag("digest");
  const auto start = std::chrono::steady_clock::now();
  const io::DigestParts parts = io::digest_parts(state, digest_layout, rank);
  digest_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  proposal.digested = true;
  proposal.digest_common = parts.common;
  proposal.digest_partial = parts.partial;
}

bool Runner::Impl::digest_due(bool checkpoint_ahead) const {
  if (checkpoint_ahead || step == options.total_steps || workload.finished()) return true;
  if (options.digest_every > 0) return step % options.digest_every == 0;
  return options.digest_every < 0 && step - digested_step >= auto_digest_every;
}

std::int32_t Runner::Impl::digest_every_wish() const {
  if (options.digest_every >= 0 || step_seconds <= 0) return 0;
  // Digests every N steps cost digest / (N step) of the time: about 1% at N = 100 digest / step.
  const double steps = std::ceil(100.0 * digest_seconds / step_seconds);
  return static_cast<std::int32_t>(
      std::clamp(steps, 1.0, static_cast<double>(kMaxAutoDigestEvery)));
}

bool Runner::Impl::agree_on_digest() {
  if (digested_step == step) return true;
  StepProposal proposal;
  proposal.step = step;
  digest_into(proposal, workload.save_state());
  const StepAgreement agreed = communicator->agree(proposal);
  if (agreed.digest_suspects.empty()) {
    digested_step = step;
    agreed_digest = agreed.state_digest;
    return true;
  }
  report_corruption(agreed);
  return false;
}

namespace {

// "rank 1", "ranks 0 and 1", "ranks 0, 2 and 3".
std::string name_ranks(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text += i + 1 == ranks.size() ? " and " : ", ";
    text += std::to_string(ranks[i]);
  }
  return text;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown host";
  return name;
}

}  // namespace

void Runner::Impl::report_corruption(const StepAgreement& state) {
  const std::vector<int>& suspects = state.digest_suspects;
  const bool majority = static_cast<int>(suspects.size()) < world;
  std::string list;
  for (int r : suspects) {
    if (!list.empty()) list += ',';
    list += std::to_string(r);
  }
  StepProposal mine;
  mine.step = step;
  digest_into(mine, workload.save_state());
  ++counted.corruptions;
  events->append(event::digest_mismatch, {{"step", step},
                                          {"suspects", list},
                                          {"digest", io::to_hex64(mine.digest_common)},
                                          {"majority", io::to_hex64(state.state_digest)}});
  const std::string who =
      majority ? name_ranks(suspects) + " computed a state that differs from the other " +
                     std::to_string(world - static_cast<int>(suspects.size())) + " ranks'"
               : "the ranks' states differ and no majority tells which is right (" +
                     name_ranks(suspects) + " are suspect)";
  console.say("silent data corruption at step %lld: %s (state digests)",
              static_cast<long long>(step), who.c_str());
  record_telemetry("digest_mismatch");
}

std::optional<RunResult> Runner::Impl::on_corruption(const StepAgreement& state) {
  report_corruption(state);
  const std::vector<int>& suspects = state.digest_suspects;
  // A rank that differs a second time is faulty hardware, not a passing upset: the run stops,
  // naming where that rank runs.
  if (suspect_steps.empty()) suspect_steps.assign(static_cast<std::size_t>(world), -1);
  std::vector<int> repeated;
  for (int r : suspects) {
    auto& first = suspect_steps[static_cast<std::size_t>(r)];
    if (first >= 0) repeated.push_back(r);
    if (first < 0) first = step;
  }
  if (!repeated.empty()) {
    // Every rank's host and device, for the message (a collective: every rank is here).
    constexpr std::size_t kWidth = 128;
    std::string here = host_name() + "\n" + to_string(workload.device());
    here.resize(kWidth, '\0');
    std::vector<std::byte> all(kWidth * static_cast<std::size_t>(world));
    communicator->all_gather_bytes(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(here.data()), kWidth), all);
    std::string places;
    std::string hosts;
    for (int r : repeated) {
      std::string record(reinterpret_cast<const char*>(all.data()) + kWidth * r, kWidth);
      record.resize(record.find('\0') == std::string::npos ? kWidth : record.find('\0'));
      const std::size_t cut = record.find('\n');
      const std::string host = record.substr(0, cut);
      const std::string device = cut == std::string::npos ? "?" : record.substr(cut + 1);
      if (!places.empty()) places += "; ";
      places += "rank " + std::to_string(r) + " on host " + host + ", device " + device +
                ", first at step " + std::to_string(suspect_steps[static_cast<std::size_t>(r)]);
      if (!hosts.empty()) hosts += ',';
      hosts += host;
    }
    console.say("silent data corruption again at step %lld on %s: stopping",
                static_cast<long long>(step), name_ranks(repeated).c_str());
    return finish(RunStatus::corrupted,
                  name_ranks(repeated) + " computed a wrong state twice (" + places +
                      "): its hardware is suspect; the checkpoint of step " +
                      std::to_string(saved_step) +
                      " is kept (its digests agreed)\nfix: exclude that node from the job "
                      "(Slurm: --exclude=" +
                      hosts +
                      ") and run again: the job resumes from that checkpoint; `tenax replay` "
                      "on another device checks the steps since");
  }
  rewind(step);
  return std::nullopt;
}

std::optional<std::string> Runner::Impl::scan_tensors(const StateDict& state) {
  for (const auto& [name, entry] : state.entries()) {
    const Tensor* tensor = std::get_if<Tensor>(&entry);
    if (tensor == nullptr || !is_floating(tensor->dtype()) || tensor->numel() == 0) continue;
    const std::int64_t bad = ops::count_nonfinite(*tensor);
    if (bad > 0) {
      return std::to_string(bad) + " non-finite value(s) in state tensor '" + name + "'";
    }
  }
  return std::nullopt;
}

// Why the state is not healthy after a step, or nothing. The state's tensors are scanned when
// `scan` is set (anomaly_check_every, a checkpoint or the end ahead) or a fault is injected
// at this step; the workload's own check() runs after every step.
std::optional<std::string> Runner::Impl::find_anomaly(bool scan) {
  const bool nan = faults.fires(FaultKind::nan, step);
  const bool inf = faults.fires(FaultKind::inf, step);
  if (scan || nan || inf) {
    const profiling::Span span("nan_scan", step);
    const AllocationTag tag("nan_scan");
    const StateDict state = workload.save_state();
    if (nan) detail::InjectedFaults::poison(state, std::numeric_limits<double>::quiet_NaN());
    if (inf) detail::InjectedFaults::poison(state, std::numeric_limits<double>::infinity());
    scanned_step = step;
    if (auto problem = scan_tensors(state)) return problem;
  }
  return workload.check();
}

bool Runner::Impl::scan_due(bool checkpoint_ahead) const {
  return options.anomaly_check_every == 1 || checkpoint_ahead || step == options.total_steps ||
         detail::StopSignals::pending() != 0 || workload.finished() ||
         (options.anomaly_check_every > 1 && step % options.anomaly_check_every == 0);
}

// A rank told to hang (hang@step=S): it stops making progress, as a rank stuck in a driver call
// or a deadlocked kernel would. It leaves only when it can see that the job gave up on it
// (threads) or when the launcher kills it (MPI: the peers time out and exit).
void Runner::Impl::hang() {
  events->append(event::fault, {{"kind", std::string("hang")}, {"step", step + 1}});
  console.say("injected hang at step %lld", static_cast<long long>(step + 1));
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::hours(24);
  while (!communicator->abort_seen() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const std::string what = "rank " + std::to_string(rank) + " was hung at step " +
                           std::to_string(step + 1) + " and its peers gave up on it";
  communicator->abort(what);
  throw CommFaultError(what, "none needed: the hang was requested by TENAX_FAULTS");
}

}  // namespace tenax::runtime
