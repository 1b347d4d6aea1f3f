#include "watch_command.hpp"
#include "terminal_text.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <system_error>
#include <thread>

#include "command_status.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/core/text.hpp"
#include "tenax/runtime/run_events.hpp"
#include "time_text.hpp"

namespace tenax::tools {

namespace event = runtime::event;
namespace {

constexpr std::size_t kRateWindow = 50;  // steps the rate and the median step time cover
constexpr std::size_t kMaxEvents = 100;
constexpr double kSilentSeconds = 300.0;  // a running job this long without a line is suspect

std::string mib(double bytes) { return fmt::format("{:.2f} MiB", bytes / 1048576.0); }

// Statuses after which nothing resumes the job by itself.
bool final_status(const std::string& status) {
  return status == "completed" || status == "out_of_memory" || status == "anomaly" ||
         status == "overflow" || status == "corrupted" || status == "failed";
}

}  // namespace

bool LogFollower::exists() const {
  // As every reader of a run directory: a regular file, not through a symbolic link.
  return file_kind(path_) == FileKind::regular;
}

std::vector<std::string> LogFollower::new_lines() {
  std::vector<std::string> lines;
  // Not (or no longer) a regular file -- a symbolic link, a FIFO -- is nothing to follow: not
  // behind either, so that read_all_new_lines stops (it spun on a linked log, whose size the
  // link's target gave but which is never opened).
  size_seen_ = offset_;
  if (!exists()) return lines;
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path_, ec);
  if (ec) return lines;
  size_seen_ = size;
  if (size < offset_) {  // replaced or truncated: start again
    offset_ = 0;
    partial_.clear();
  }
  if (size == offset_) return lines;
  // Never blocking, never through a link, a regular file only (see tenax/core/regular_file.hpp).
  const OpenedFile in = try_open_regular_file(path_, O_RDONLY, Symlinks::refuse);
  if (!in.ok()) {
    size_seen_ = offset_;
    return lines;
  }
  const std::uintmax_t want = std::min<std::uintmax_t>(size - offset_, max_read_);
  std::string chunk(static_cast<std::size_t>(want), '\0');
  ssize_t got;
  do {
    got = ::pread(in.fd.get(), chunk.data(), chunk.size(), static_cast<off_t>(offset_));
  } while (got < 0 && errno == EINTR);
  chunk.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  if (chunk.empty()) size_seen_ = offset_;  // shrunk meanwhile: the next call starts again
  offset_ += chunk.size();
  partial_ += chunk;
  std::size_t start = 0;
  for (std::size_t nl = partial_.find('\n'); nl != std::string::npos;
       nl = partial_.find('\n', start)) {
    if (nl > start) lines.emplace_back(partial_, start, nl - start);
    start = nl + 1;
  }
  partial_.erase(0, start);
  if (partial_.size() > (std::size_t{16} << 20)) partial_.clear();  // no line is that long
  return lines;
}

void read_all_new_lines(LogFollower& follower,
                        const std::function<void(const std::string&)>& consume) {
  do {
    for (const std::string& line : follower.new_lines()) consume(line);
  } while (follower.behind());
}

void WatchState::consume(const std::string& text) {
  ++lines_;
  std::optional<HistoryLine> line = parse_history_line(text, 0);
  if (!line) {
    ++skipped_;
    return;
  }
  if (auto* step = std::get_if<StepRecord>(&*line)) {
    recent_.emplace_back(step->time, step->step);
    recent_seconds_.push_back(step->seconds);
    if (recent_.size() > kRateWindow) recent_.erase(recent_.begin());
    if (recent_seconds_.size() > kRateWindow) recent_seconds_.erase(recent_seconds_.begin());
    const auto skipped = step->metrics.find("skipped");
    if (skipped != step->metrics.end() && skipped->second != 0.0) ++skipped_steps_;
    last_step_ = std::move(*step);
    return;
  }
  if (auto* sample = std::get_if<TelemetryRecord>(&*line)) {
    telemetry_ = std::move(*sample);
    return;
  }
  RunEvent& event = std::get<RunEvent>(*line);
  const std::string& kind = event.kind;
  if (kind == event::started || kind == event::resumed) {
    ++processes_;
    open_ = true;
    ended_ = false;
    status_ = "running";
    detail_.clear();
    recent_.clear();
    recent_seconds_.clear();
    if (kind == event::resumed) ++resumes_;
    const std::string total = event.field("total_steps");
    // A field that is not a count (a torn or edited line) is left out, not thrown.
    if (const auto n = parse_whole<std::int64_t>(total); n && *n >= 0) total_steps_ = *n;
    const std::string ranks = event.field("ranks");
    if (const auto n = parse_whole<int>(ranks); n && *n >= 1) world_ = *n;
  } else if (kind == event::oom_retry || kind == event::backoff) {
    ++ooms_;
  } else if (kind == event::step_skipped) {
    ++skipped_steps_;  // (a log of an earlier tenax marks it by a step metric instead)
  } else if (kind == event::rollback) {
    ++rollbacks_;
    recent_.clear();
  } else if (kind == event::fault) {
    ++faults_;
  } else if (kind == event::warning) {
    ++warnings_;
  } else if (kind == event::exit) {
    open_ = false;
    status_ = event.field("status");
    detail_ = event.field("message");
    ended_ = final_status(status_);
  } else if (kind == event::supervisor_exit) {
    ended_ = true;
    if (open_ || status_ == "restart" || status_ == "interrupted") {
      status_ = "the supervisor stopped restarting";
      detail_ = event.field("reason");
    }
    open_ = false;
  }
  if (kind != event::step && kind != event::telemetry) {
    events_.push_back(std::move(event));
    if (events_.size() > kMaxEvents) events_.erase(events_.begin());
  }
}

void WatchState::consume_rank(int rank, const std::string& text) {
  std::optional<HistoryLine> line = parse_history_line(text, rank);
  if (!line) {
    ++skipped_;
    return;
  }
  OtherRank& other = other_ranks_[rank];
  if (auto* step = std::get_if<StepRecord>(&*line)) {
    other.step = step->step;
    other.recent_seconds.push_back(step->seconds);
    if (other.recent_seconds.size() > kRateWindow) {
      other.recent_seconds.erase(other.recent_seconds.begin());
    }
    return;
  }
  auto* event = std::get_if<RunEvent>(&*line);
  if (event == nullptr) return;
  if (event->kind == event::started || event->kind == event::resumed ||
      event->kind == event::rollback) {
    other.recent_seconds.clear();
  }
  // Warnings are what only this rank saw (its device, its memory, its speed); the run's own
  // events, faults included (every rank logs the fault it agreed to restart for), are in rank 0's
  // log too.
  if (event->kind != event::warning) return;
  ++warnings_;
  if (event->field("rank").empty()) {
    event->fields.emplace(event->fields.begin(), "rank", std::to_string(rank));
  }
  events_.push_back(std::move(*event));
  if (events_.size() > kMaxEvents) events_.erase(events_.begin());
}

std::vector<std::string> WatchState::render(double now, int events) const {
  std::vector<std::string> out;
  const auto row = [&](const char* label, const std::string& text) {
    out.push_back(fmt::format("{:<9} {}", label, text));
  };
  std::string status = status_;
  if (open_) {
    status = fmt::format("running (process {} of this run, {} rank{})", processes_, world_,
                         world_ == 1 ? "" : "s");
    const double last = last_step_ ? last_step_->time : 0.0;
    if (last > 0.0 && now - last > kSilentSeconds) {
      status += fmt::format("; no step for {}: stalled, or killed without an exit line",
                            duration_text(now - last));
    }
  } else if (!ended_ && (status_ == "restart" || status_ == "interrupted")) {
    status = "exited (" + status_ + "): waiting for a resume";
  } else if (ended_) {
    status = "ended: " + status_;
  }
  row("status", status + (detail_.empty() ? "" : " -- " + detail_));

  if (last_step_) {
    std::string step = std::to_string(last_step_->step);
    double rate = 0.0;
    if (recent_.size() >= 2 && recent_.back().first > recent_.front().first) {
      rate = static_cast<double>(recent_.back().second - recent_.front().second) /
             (recent_.back().first - recent_.front().first);
    }
    if (total_steps_ && *total_steps_ > 0) {
      step += fmt::format(
          " / {}  ({:.1f} %)", *total_steps_,
          100.0 * static_cast<double>(last_step_->step) / static_cast<double>(*total_steps_));
    }
    if (rate > 0.0) step += fmt::format("   {:.4g} steps/s", rate);
    if (rate > 0.0 && total_steps_ && open_) {
      step +=
          "   ETA " + duration_text(static_cast<double>(*total_steps_ - last_step_->step) / rate);
    }
    row("step", step);
    row("timing", fmt::format("step {} (median of the last {}: {}), micro-batch {}",
                              duration_text(last_step_->seconds), recent_seconds_.size(),
                              duration_text(median_of(recent_seconds_)), last_step_->micro_batch));
    if (!other_ranks_.empty()) {
      // A lane per rank: its step and the median of its last step times, the slowest marked.
      std::vector<std::pair<int, std::pair<std::string, double>>> lanes{
          {0, {std::to_string(last_step_->step), median_of(recent_seconds_)}}};
      for (const auto& [rank, other] : other_ranks_) {
        lanes.push_back({rank,
                         {other.step ? std::to_string(*other.step) : "none yet",
                          // -1 (shown as "-") for a rank with no step since its start
                          other.recent_seconds.empty() ? -1.0 : median_of(other.recent_seconds)}});
      }
      const auto slowest = std::max_element(lanes.begin(), lanes.end(), [](auto& a, auto& b) {
        return a.second.second < b.second.second;
      });
      for (const auto& lane : lanes) {
        out.push_back(fmt::format(
            "{:<9} rank {:<4} step {:<10} median step {}{}", &lane == &lanes.front() ? "ranks" : "",
            lane.first, lane.second.first, duration_text(lane.second.second),
            &lane == &*slowest && lane.second.second > 0.0 ? "  (slowest)" : ""));
      }
    }
    if (!last_step_->metrics.empty()) {
      std::string metrics;
      for (const auto& [name, value] : last_step_->metrics) {
        if (name == "skipped") continue;
        metrics += fmt::format("{}{} {:.6g}", metrics.empty() ? "" : "  ", name, value);
      }
      row("metrics", metrics);
    }
    std::string memory = "pool " + mib(last_step_->allocated) + " allocated, " +
                         mib(last_step_->reserved) + " reserved";
    if (telemetry_) {
      const auto rss = telemetry_->values.find("host_rss");
      if (rss != telemetry_->values.end()) memory += "; host RSS " + mib(rss->second);
    }
    row("memory", memory);
  } else {
    row("step", "no step yet");
  }
  std::string device = "no device readings (CPU run, or NVML not loaded)";
  if (telemetry_) {
    std::vector<std::string> parts;
    const auto add = [&](const char* field, const char* format) {
      const auto it = telemetry_->values.find(field);
      if (it != telemetry_->values.end())
        parts.push_back(fmt::format(fmt::runtime(format), it->second));
    };
    add("gpu_temperature", "{:.0f} °C");
    add("gpu_utilization", "{:.0f} % busy");
    add("gpu_power_watts", "{:.0f} W");
    add("gpu_sm_clock_mhz", "{:.0f} MHz");
    const auto used = telemetry_->values.find("gpu_memory_used");
    if (used != telemetry_->values.end()) parts.push_back(mib(used->second) + " used");
    if (!parts.empty()) {
      device.clear();
      for (const std::string& p : parts) device += (device.empty() ? "" : ", ") + p;
    }
  }
  row("device", device);
  row("faults",
      fmt::format("{} out of memory, {} rollback{}, {} resume{}, {} fault{}, {} skipped "
                  "step{}, {} warning{}",
                  ooms_, rollbacks_, rollbacks_ == 1 ? "" : "s", resumes_, resumes_ == 1 ? "" : "s",
                  faults_, faults_ == 1 ? "" : "s", skipped_steps_, skipped_steps_ == 1 ? "" : "s",
                  warnings_, warnings_ == 1 ? "" : "s"));
  if (skipped_ > 0) row("log", fmt::format("{} torn or unreadable line(s) skipped", skipped_));
  if (events > 0) {
    out.push_back("last events");
    const std::size_t shown =
        std::min<std::size_t>(events_.size(), static_cast<std::size_t>(events));
    if (shown == 0) out.push_back("  none");
    for (std::size_t k = events_.size() - shown; k < events_.size(); ++k) {
      const RunEvent& e = events_[k];
      std::string details;
      for (const auto& [key, value] : e.fields) {
        if (key == "command" || key == "pid") continue;
        details += (details.empty() ? "" : " ") + key + "=" + value;
      }
      if (details.size() > 90) details = details.substr(0, 87) + "...";
      out.push_back(fmt::format("  {}  {:<18} {:<10} {}",
                                e.time > 0 ? utc_text(e.time, "%H:%M:%S") : "--", e.kind,
                                e.step ? "step " + std::to_string(*e.step) : "", details));
    }
  }
  return out;
}

int run_watch(const std::filesystem::path& run_dir, const WatchOptions& options,
              std::ostream& out) {
  std::error_code ec;
  TENAX_EXPECTS(std::filesystem::is_directory(run_dir, ec), UsageError,
                "'" + run_dir.string() + "' is not a directory",
                "pass the run directory of a job (its --run-dir); it must exist, its events.jsonl "
                "may come later");
  TENAX_EXPECTS(std::isfinite(options.interval_seconds) && options.interval_seconds >= 0.05 &&
                    options.interval_seconds <= 3600.0,
                UsageError,
                "--interval " + fmt::format("{}", options.interval_seconds) +
                    " is outside [0.05, 3600] seconds",
                "use --interval 1 (the default) or another number of seconds in that range");
  TENAX_EXPECTS(options.events >= 0 && options.events <= static_cast<int>(kMaxEvents), UsageError,
                "--events " + std::to_string(options.events) + " is outside [0, 100]",
                "use --events 8 (the default) or another count in that range");

  LogFollower log(run_dir / "events.jsonl");
  // A log that is there but is not a regular file would be waited for forever.
  const FileKind log_kind = file_kind(log.path());
  TENAX_EXPECTS(
      log_kind == FileKind::missing || log_kind == FileKind::regular, UsageError,
      log.path().string() + " is " + std::string(describe(log_kind)) + ", not a regular file",
      "watch a run directory that tenax wrote (its events.jsonl is a regular file)");
  std::map<int, LogFollower> rank_logs;  // events-rank-<r>.jsonl, r >= 1, as they appear
  WatchState state;
  std::string previous;
  const auto header = [&](double now) {
    return fmt::format("tenax watch  {}   {} UTC, every {} s; Ctrl-C stops the watch, not the job",
                       run_dir.string(), utc_text(now, "%H:%M:%S"), options.interval_seconds);
  };
  for (;;) {
    read_all_new_lines(log, [&](const std::string& line) { state.consume(line); });
    for (const auto& [rank, path] : event_logs(run_dir)) {
      if (rank > 0) rank_logs.try_emplace(rank, path);
    }
    for (auto& [rank, follower] : rank_logs) {
      const int r = rank;
      read_all_new_lines(follower, [&](const std::string& line) { state.consume_rank(r, line); });
    }
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::string body;
    if (!log.exists()) {
      body = "waiting for " + log.path().string() + " (the job has not started)\n";
    } else {
      for (const std::string& line : state.render(now, options.events)) body += line + "\n";
    }
    // The log's text as text: only the screen's own clear-and-home sequence is a control.
    if (options.terminal) {
      out << "\x1b[H\x1b[J" << terminal_safe(header(now)) << "\n\n"
          << terminal_safe(body) << std::flush;
    } else if (body != previous || options.once) {
      out << terminal_safe(header(now)) << "\n" << terminal_safe(body) << "\n" << std::flush;
    }
    previous = body;
    if (options.once) return state.completed() ? 0 : state.ended() ? 1 : 0;
    if (state.ended()) return state.completed() ? 0 : 1;
    std::this_thread::sleep_for(std::chrono::duration<double>(options.interval_seconds));
  }
}

void add_watch_command(CLI::App& app, int& exit_code) {
  struct Arguments {
    std::string run_dir;
    WatchOptions options;
  };
  auto args = std::make_shared<Arguments>();
  CLI::App* watch = app.add_subcommand(
      "watch",
      "A live view of a run from its event log: step, rate, ETA, metrics, memory, device "
      "temperature and utilisation, faults and the last events; ends when the run ends");
  watch->add_option("RUN_DIR", args->run_dir, "The job's --run-dir")->required();
  watch
      ->add_option("--interval", args->options.interval_seconds,
                   "Seconds between refreshes, 0.05 to 3600")
      ->capture_default_str();
  watch->add_option("--events", args->options.events, "Last events listed, 0 to 100")
      ->capture_default_str();
  watch->add_flag("--once", args->options.once, "Draw the view once and exit");
  watch->callback([args, &exit_code] {
    args->options.terminal = !args->options.once && ::isatty(STDOUT_FILENO) == 1;
    exit_code = run_reporting_errors(
        "watch", [&] { return run_watch(args->run_dir, args->options, std::cout); });
  });
}

}  // namespace tenax::tools
