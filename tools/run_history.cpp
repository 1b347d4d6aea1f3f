#include "run_history.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <set>
#include <string_view>
#include <system_error>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"
#include "tenax/runtime/event_log.hpp"
#include "tenax/runtime/run_events.hpp"

namespace tenax::tools {

namespace event = runtime::event;
namespace {

using nlohmann::json;

constexpr std::string_view kMetricPrefix = "metric_";

double number_or(const json& line, const char* name, double fallback) {
  const auto it = line.find(name);
  return it != line.end() && it->is_number() ? it->get<double>() : fallback;
}

std::optional<std::int64_t> integer_field(const json& line, const char* name) {
  const auto it = line.find(name);
  if (it == line.end() || !it->is_number()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  // A real only where it is a whole number in range (1e30 is no step: a cast would be undefined).
  const double value = it->get<double>();
  if (!(value >= -0x1p63 && value < 0x1p63) || value != std::trunc(value)) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

// A number as printf's %g writes it (32768, 0.5, 1e-05).
std::string shortest(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string text_of(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

// A number field as the report writes numbers ("65536", not "65536.0"); the text itself when it
// is not a number.
std::string number_text(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) return text;
  return shortest(value);
}

// A count field (>= 0), or nothing when it is absent or not one.
std::optional<std::int64_t> count_of(const std::string& text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

RankHistory read_rank(int rank, const std::filesystem::path& log) {
  RankHistory history;
  history.rank = rank;
  history.log = log;
  const runtime::EventLines lines = runtime::read_events(log);
  history.skipped_lines = lines.skipped;
  int process = -1;
  for (const std::string& text : lines.lines) {
    std::optional<HistoryLine> line = parse_history_line(text, rank);
    if (!line) {
      ++history.skipped_lines;
      continue;
    }
    if (auto* step = std::get_if<StepRecord>(&*line)) {
      step->process = std::max(process, 0);
      history.steps.push_back(std::move(*step));
    } else if (auto* sample = std::get_if<TelemetryRecord>(&*line)) {
      history.telemetry.push_back(std::move(*sample));
    } else {
      RunEvent& event = std::get<RunEvent>(*line);
      if (event.kind == event::started || event.kind == event::resumed) ++process;
      history.events.push_back(std::move(event));
    }
  }
  return history;
}

// Walks rank 0's log in order and pairs every fault with what followed it.
class FaultWalk {
 public:
  explicit FaultWalk(RunHistory& run) : run_(run) {}

  void walk(const RankHistory& rank0) {
    for (const RunEvent& event : rank0.events) {
      if (event.kind == event::step_skipped) told_skips_ = true;
    }
    // Steps and events interleave in file order: merge them by time (stable: steps first on a
    // tie, as a step line is written before the events it triggers).
    std::size_t s = 0;
    std::size_t e = 0;
    while (s < rank0.steps.size() || e < rank0.events.size()) {
      const bool take_step =
          e == rank0.events.size() ||
          (s < rank0.steps.size() && rank0.steps[s].time <= rank0.events[e].time);
      if (take_step) {
        on_step(rank0.steps[s++]);
      } else {
        on_event(rank0.events[e++]);
      }
    }
    finish();
  }

 private:
  void on_step(const StepRecord& step) {
    last_step_ = step.step;
    last_time_ = step.time;
    seconds_[step.step] = step.seconds;
    run_.last_step = std::max(run_.last_step, step.step);
    // A log written before the Trainer told the Runner marks a skipped step by a metric.
    const auto skipped = step.metrics.find("skipped");
    if (!told_skips_ && skipped != step.metrics.end() && skipped->second != 0.0) {
      SurvivedFault fault;
      fault.what = "gradient overflow at step " + std::to_string(step.step);
      const auto scale = step.metrics.find("loss_scale");
      fault.action =
          "the loss scaler skipped the update" +
          (scale != step.metrics.end() ? " and lowered the loss scale to " + shortest(scale->second)
                                       : std::string());
      fault.step = step.step;
      fault.time = step.time;
      fault.marker = "skipped";
      run_.faults.push_back(std::move(fault));
    }
  }

  void on_event(const RunEvent& event) {
    const std::string& kind = event.kind;
    const double since_last = last_time_ > 0.0 ? std::max(0.0, event.time - last_time_) : 0.0;
    if (kind == event::started || kind == event::resumed) {
      if (open_) end_abruptly();
      const std::int64_t from = event.step.value_or(0);
      if (pending_) resume_pending(from, event.time);
      open_ = true;
      ++run_.processes;
      last_step_ = from;
      if (kind == event::started) {
        const std::string total = event.field("total_steps");
        if (const auto n = parse_whole<std::int64_t>(total); n && *n >= 0) run_.total_steps = *n;
        const std::string ranks = event.field("ranks");
        if (const auto n = parse_whole<int>(ranks); n && *n >= 1) {
          run_.world_size = std::max(run_.world_size, *n);
        }
      } else {
        const std::string total = event.field("total_steps");
        if (const auto n = parse_whole<std::int64_t>(total); n && *n >= 0) run_.total_steps = *n;
      }
    } else if (kind == event::oom_retry || kind == event::backoff) {
      SurvivedFault fault;
      fault.step = event.step;
      fault.time = event.time;
      fault.what = "out of memory at step " + step_text(event);
      fault.action = kind == event::oom_retry
                         ? "emptied the cache and took the step again (micro-batch " +
                               event.field("micro_batch") + ")"
                         : "halved the micro-batch to " + event.field("micro_batch") +
                               " and took the step again (same bits)";
      fault.compute_lost_seconds = since_last;
      fault.marker = "oom";
      run_.faults.push_back(std::move(fault));
    } else if (kind == event::step_skipped) {
      SurvivedFault fault;
      fault.what = "gradient overflow at step " + step_text(event) +
                   (event.field("injected") == "true" ? " (injected)" : "");
      fault.action = "the loss scaler skipped the update and lowered the loss scale from " +
                     number_text(event.field("previous_loss_scale")) + " to " +
                     number_text(event.field("loss_scale"));
      fault.step = event.step;
      fault.time = event.time;
      fault.marker = "skipped";
      run_.faults.push_back(std::move(fault));
    } else if (kind == event::anomaly || kind == event::digest_mismatch) {
      anomaly_ = event;
      anomaly_lost_ = since_last;
    } else if (kind == event::rollback) {
      const std::int64_t to = event.step.value_or(0);
      SurvivedFault fault;
      fault.marker = "anomaly";
      if (anomaly_) {
        fault.what = bad_step_text(*anomaly_);
        fault.marker = marker_of(*anomaly_);
        fault.step = anomaly_->step;
        fault.time = anomaly_->time;
        // Every step after the checkpoint up to the anomalous one is computed again, the
        // anomalous one included (as the Runner counts them: "N steps to compute again"), whether
        // its line was written (a state found unhealthy by the scan before a checkpoint) or not
        // (a step that failed, or whose state was found unhealthy before its line). The time
        // lost is that of the committed ones (their lines) and of the failed attempt.
        const std::int64_t bad = anomaly_->step.value_or(last_step_ + 1);
        // The Runner's own count when the log has it (the console said the same number).
        const std::optional<std::int64_t> told = count_of(event.field("recompute"));
        fault.steps_recomputed = told ? *told : std::max<std::int64_t>(0, bad - to);
        fault.compute_lost_seconds = seconds_between(to, std::min(bad, last_step_)) + anomaly_lost_;
      } else {
        fault.what = "a rollback at step " + std::to_string(last_step_);
        fault.step = last_step_;
        fault.time = event.time;
        fault.steps_recomputed = std::max<std::int64_t>(0, last_step_ - to);
        fault.compute_lost_seconds = seconds_between(to, last_step_);
      }
      fault.action = "rolled back to the checkpoint of step " + std::to_string(to);
      run_.faults.push_back(std::move(fault));
      anomaly_.reset();
      last_step_ = to;
    } else if (kind == event::anomalous_step_skipped) {
      SurvivedFault fault;
      const std::string inputs = event.field("inputs");
      fault.what = "step " + step_text(event) + " failed again after a rollback, with the same " +
                   "inputs" + (inputs.empty() ? std::string() : " (" + inputs + ")") + ": " +
                   event.field("reason");
      fault.action =
          "skipped the step for good (the repeated-anomaly policy: skip); the run "
          "went on from the state before it";
      fault.step = event.step;
      fault.time = event.time;
      fault.compute_lost_seconds = anomaly_lost_;
      fault.marker = "skipped";
      run_.faults.push_back(std::move(fault));
      anomaly_.reset();
    } else if (kind == event::checkpoint_failed) {
      SurvivedFault fault;
      fault.what =
          "the checkpoint of step " + step_text(event) + " failed (" + event.field("reason") + ")";
      fault.action = "kept the previous checkpoint and went on";
      fault.step = event.step;
      fault.time = event.time;
      fault.marker = "checkpoint_failed";
      run_.faults.push_back(std::move(fault));
    } else if (kind == event::peer_retry) {
      SurvivedFault fault;
      fault.what = "rank " + event.field("rank") + " could not take step " + step_text(event);
      fault.action = "every rank took the step again (" + event.field("decision") + ")";
      fault.step = event.step;
      fault.time = event.time;
      fault.compute_lost_seconds = since_last;
      fault.marker = "oom";
      run_.faults.push_back(std::move(fault));
    } else if (kind == event::fault || kind == event::signal || kind == event::overflow ||
               kind == event::error || kind == event::config_refused) {
      cause_ = event;  // what ends this process, said by its exit (or by its silence)
    } else if (kind == event::restart) {
      restart_ = event;
      if (open_) end_abruptly();
    } else if (kind == event::exit) {
      open_ = false;
      run_.ended = true;
      run_.status = event.field("status");
      run_.status_message = event.field("message");
      if (run_.status != "completed") end_with_exit(event);
      cause_.reset();
    } else if (kind == event::program_exit) {
      // The steps completed, the job did not: the program's own verdict (a solve that broke
      // down) comes after the Runner's exit line.
      const std::string code = event.field("exit_code");
      run_.status = "failed";
      run_.status_message = "the run's steps completed, then " + event.field("program") +
                            " exited with status " + code +
                            " (its own verdict: its output "
                            "says why)";
      SurvivedFault fault;
      fault.what = event.field("program") + " exited with status " + code + " after its steps";
      fault.action = "none: the program's verdict ends the job";
      fault.time = event.time;
      fault.recovered = false;
      fault.marker = "fault";
      run_.faults.push_back(std::move(fault));
    }
    if (kind != event::supervisor_exit && kind != event::supervisor_start) last_time_ = event.time;
  }

  // The process ended without an exit line (killed, or the machine went down).
  void end_abruptly() {
    open_ = false;
    run_.ended = false;
    SurvivedFault fault;
    fault.marker = "fault";
    fault.step = last_step_;
    fault.time = last_time_;
    if (cause_ && cause_->kind == event::fault) {
      // At the step it names (the one under way: the last committed is the one before).
      fault.what = "injected " + cause_->field("kind") + " at step " + step_text(*cause_);
      if (cause_->step) fault.step = cause_->step;
    } else if (restart_ && !restart_->field("signal_name").empty()) {
      fault.what = "the process died (" + restart_->field("signal_name") + ") after step " +
                   std::to_string(last_step_);
    } else {
      fault.what = "the process ended without an exit line after step " +
                   std::to_string(last_step_) + " (killed, or the machine went down)";
    }
    pending_ = std::move(fault);
    pending_last_step_ = last_step_;
    pending_last_time_ = last_time_;
    cause_.reset();
  }

  void end_with_exit(const RunEvent& exit) {
    SurvivedFault fault;
    // The step of the line that said why (a fault or an overflow names the step under way; the
    // exit, the last committed one), else the exit's.
    fault.step = cause_ && cause_->step ? cause_->step : exit.step;
    fault.time = exit.time;
    const RunEvent& at = cause_ && cause_->step ? *cause_ : exit;
    const std::string status = exit.field("status");
    if (status == "interrupted") {
      fault.what = cause_ && cause_->kind == event::signal
                       ? "signal " + cause_->field("signal") + " at step " + step_text(*cause_)
                       : "stopped by a signal at step " + step_text(exit);
      fault.marker = "signal";
    } else if (status == "restart") {
      fault.what = cause_ ? cause_->field("kind") + " at step " + step_text(*cause_) + " (" +
                                cause_->field("reason") + ")"
                          : "a device or communication fault at step " + step_text(exit);
      fault.marker = "fault";
    } else if (status == "anomaly" && anomaly_) {
      fault.what = bad_step_text(*anomaly_);
      fault.marker = marker_of(*anomaly_);
    } else {
      // The message's first line: the rest (a memory table) is in the exit line and the page.
      const std::string message = exit.field("message");
      const std::string first_line = message.substr(0, message.find('\n'));
      fault.what =
          status + " at step " + step_text(at) + (first_line.empty() ? "" : ": " + first_line);
      fault.marker = status == "overflow"        ? "overflow"
                     : status == "out_of_memory" ? "oom"
                     : status == "corrupted"     ? "corruption"
                                                 : "fault";
    }
    pending_ = std::move(fault);
    pending_last_step_ = last_step_;
    pending_last_time_ = exit.time;
  }

  void resume_pending(std::int64_t from, double time) {
    SurvivedFault fault = std::move(*pending_);
    pending_.reset();
    fault.steps_recomputed = std::max<std::int64_t>(0, pending_last_step_ - from);
    fault.compute_lost_seconds = seconds_between(from, pending_last_step_);
    fault.downtime_seconds = std::max(0.0, time - pending_last_time_);
    fault.action = (restart_ ? "restarted by tenax run (attempt " + restart_->field("attempt") +
                                   ") and resumed"
                             : std::string("resumed")) +
                   " from the checkpoint of step " + std::to_string(from);
    restart_.reset();
    run_.faults.push_back(std::move(fault));
  }

  void finish() {
    if (open_) {
      run_.ended = false;
      run_.status = "running, or ended without an exit line";
    }
    if (pending_) {
      SurvivedFault fault = std::move(*pending_);
      fault.recovered = false;
      fault.action = run_.status == "interrupted" ? "checkpointed and stopped; not resumed yet"
                     : run_.status.empty()
                         ? "not resumed yet"
                         : "the run stopped (" + run_.status + "); not resumed yet";
      run_.faults.push_back(std::move(fault));
    }
    if (anomaly_) {
      SurvivedFault fault;
      fault.what = bad_step_text(*anomaly_);
      fault.action = "no rollback followed";
      fault.step = anomaly_->step;
      fault.time = anomaly_->time;
      fault.recovered = false;
      fault.marker = marker_of(*anomaly_);
      run_.faults.push_back(std::move(fault));
    }
  }

  // Seconds of the steps (first, last], as their latest step lines say.
  double seconds_between(std::int64_t first, std::int64_t last) const {
    double total = 0.0;
    for (auto it = seconds_.upper_bound(first); it != seconds_.end() && it->first <= last; ++it) {
      total += it->second;
    }
    return total;
  }

  static std::string step_text(const RunEvent& event) {
    return event.step ? std::to_string(*event.step) : std::string("?");
  }

  // What made a step bad: non-finite values, or ranks whose state digests differed.
  static std::string bad_step_text(const RunEvent& event) {
    if (event.kind == event::digest_mismatch) {
      const std::string suspects = event.field("suspects");
      return "silent data corruption at step " + step_text(event) +
             " (state digests differed; suspect rank" +
             (suspects.find(',') == std::string::npos ? " " : "s ") + suspects + ")";
    }
    return "non-finite values at step " + step_text(event) + " (" + event.field("reason") + ")";
  }

  RunHistory& run_;
  bool open_ = false;
  bool told_skips_ = false;  // the log has step_skipped events (the step metric is older)
  std::int64_t last_step_ = 0;
  double last_time_ = 0.0;
  std::map<std::int64_t, double> seconds_;
  std::optional<RunEvent> anomaly_;
  double anomaly_lost_ = 0.0;
  std::optional<RunEvent> cause_;
  std::optional<RunEvent> restart_;
  std::optional<SurvivedFault> pending_;
  std::int64_t pending_last_step_ = 0;
  double pending_last_time_ = 0.0;
};

}  // namespace

std::string RunEvent::field(const std::string& name) const {
  for (const auto& [key, value] : fields) {
    if (key == name) return value;
  }
  return {};
}

std::int64_t RunHistory::steps_recomputed() const {
  std::int64_t total = 0;
  for (const SurvivedFault& f : faults) total += f.steps_recomputed;
  return total;
}

double RunHistory::compute_lost_seconds() const {
  double total = 0.0;
  for (const SurvivedFault& f : faults) total += f.compute_lost_seconds;
  return total;
}

double RunHistory::downtime_seconds() const {
  double total = 0.0;
  for (const SurvivedFault& f : faults) total += f.downtime_seconds;
  return total;
}

std::optional<HistoryLine> parse_history_line(std::string_view text, int rank) {
  const json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!line.is_object() || !line.contains("event") || !line["event"].is_string()) {
    return std::nullopt;
  }
  const std::string kind = line["event"].get<std::string>();
  const double time = number_or(line, "time", 0.0);
  if (kind == event::step) {
    StepRecord step;
    step.step = integer_field(line, "step").value_or(0);
    step.time = time;
    step.seconds = number_or(line, "seconds", 0.0);
    // The slowest rank's compute time (logs before it was measured apart: its step time).
    step.slowest_seconds = number_or(line, "slowest_compute_seconds",
                                     number_or(line, "slowest_seconds", step.seconds));
    step.slowest_rank = static_cast<int>(integer_field(line, "slowest_rank").value_or(rank));
    step.micro_batch = integer_field(line, "micro_batch").value_or(0);
    step.allocated = number_or(line, "allocated", 0.0);
    step.reserved = number_or(line, "reserved", 0.0);
    if (line.contains("digest") && line["digest"].is_string()) {
      step.digest = line["digest"].get<std::string>();
    }
    for (const auto& [name, value] : line.items()) {
      if (name.size() > kMetricPrefix.size() && name.starts_with(kMetricPrefix) &&
          value.is_number()) {
        step.metrics[name.substr(kMetricPrefix.size())] = value.get<double>();
      }
    }
    return step;
  }
  if (kind == event::telemetry) {
    TelemetryRecord sample;
    sample.time = time;
    sample.step = integer_field(line, "step").value_or(0);
    if (line.contains("trigger")) sample.trigger = text_of(line["trigger"]);
    for (const auto& [name, value] : line.items()) {
      if (value.is_number() && name != "time" && name != "step") {
        sample.values[name] = value.get<double>();
      }
    }
    return sample;
  }
  RunEvent event;
  event.kind = kind;
  event.time = time;
  event.step = integer_field(line, "step");
  for (const auto& [name, value] : line.items()) {
    if (name != "event" && name != "time" && name != "step") {
      event.fields.emplace_back(name, text_of(value));
    }
  }
  return event;
}

std::vector<std::pair<int, std::filesystem::path>> event_logs(const std::filesystem::path& dir) {
  std::vector<std::pair<int, std::filesystem::path>> logs{{0, dir / "events.jsonl"}};
  const std::regex rank_log(R"(events-rank-([0-9]{1,6})\.jsonl)");
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, rank_log)) logs.emplace_back(std::stoi(m[1]), entry.path());
  }
  std::sort(logs.begin(), logs.end());
  return logs;
}

RunHistory read_run_history(const std::filesystem::path& run_dir) {
  std::error_code ec;
  TENAX_EXPECTS(std::filesystem::is_directory(run_dir, ec), UsageError,
                "'" + run_dir.string() + "' is not a directory",
                "pass the run directory of a job (its --run-dir)");
  TENAX_EXPECTS(std::filesystem::exists(run_dir / "events.jsonl", ec), UsageError,
                "'" + run_dir.string() +
                    "' has no events.jsonl: it is not a run directory, or "
                    "its job has not started yet",
                "pass the --run-dir of a job that has run");
  RunHistory run;
  run.run_dir = run_dir;
  for (const auto& [rank, log] : event_logs(run_dir)) run.ranks.push_back(read_rank(rank, log));
  run.world_size = static_cast<int>(run.ranks.size());

  const RankHistory& rank0 = run.ranks.front();
  std::set<std::string> names;
  for (const StepRecord& step : rank0.steps) {
    for (const auto& [name, value] : step.metrics) names.insert(name);
  }
  run.metric_names.assign(names.begin(), names.end());
  const auto earliest = [](double a, double b) { return a == 0.0 ? b : std::min(a, b); };
  for (const RankHistory& rank : run.ranks) {
    for (const StepRecord& s : rank.steps) {
      run.first_time = earliest(run.first_time, s.time);
      run.last_time = std::max(run.last_time, s.time);
    }
    for (const RunEvent& e : rank.events) {
      if (e.time <= 0.0) continue;
      run.first_time = earliest(run.first_time, e.time);
      run.last_time = std::max(run.last_time, e.time);
    }
  }
  FaultWalk(run).walk(rank0);
  if (run.status.empty()) run.status = "no process started";
  return run;
}

const std::vector<MarkerKind>& marker_kinds() {
  static const std::vector<MarkerKind> kinds{
      {"oom", "out of memory (retry, backoff)", "#d62728"},
      {"regrow", "micro-batch regrown", "#8c564b"},
      {"skipped", "step skipped (gradient overflow)", "#ff7f0e"},
      {"loss_scale", "loss scale raised", "#c49c94"},
      {"anomaly", "non-finite values", "#9467bd"},
      {"corruption", "silent data corruption (state digests)", "#393b79"},
      {"rollback", "rollback to a checkpoint", "#e377c2"},
      {"checkpoint", "checkpoint written", "#2ca02c"},
      {"checkpoint_failed", "checkpoint failed or skipped", "#bcbd22"},
      {"signal", "signal (stopped with a checkpoint)", "#17becf"},
      {"fault", "fault or crash", "#000000"},
      {"resumed", "resumed or restarted", "#1f77b4"},
      {"overflow", "stopped on overflow", "#7f7f7f"},
      {"warning", "telemetry warning", "#aec7e8"},
  };
  return kinds;
}

std::string marker_of(const RunEvent& event) {
  const std::string& k = event.kind;
  if (k == event::oom_retry || k == event::backoff || k == event::peer_retry) return "oom";
  if (k == event::regrow) return "regrow";
  if (k == event::loss_scale_changed) return "loss_scale";
  if (k == event::anomaly) return "anomaly";
  if (k == event::digest_mismatch) return "corruption";
  if (k == event::rollback) return "rollback";
  if (k == event::checkpoint_written) return "checkpoint";
  if (k == event::checkpoint_failed || k == event::checkpoint_skipped) return "checkpoint_failed";
  if (k == event::signal) return "signal";
  if (k == event::fault || k == event::error) return "fault";
  if (k == event::resumed || k == event::restart || k == event::resharded) return "resumed";
  if (k == event::overflow) return "overflow";
  if (k == event::warning) return "warning";
  return {};
}

}  // namespace tenax::tools
