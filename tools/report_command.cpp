#include "report_command.hpp"
#include "terminal_text.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <system_error>

#include "command_status.hpp"
#include "svg_chart.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/io/checkpoint_layout.hpp"
#include "tenax/runtime/run_events.hpp"
#include "time_text.hpp"

namespace tenax::tools {

namespace event = runtime::event;
namespace {

// Series colours for ranks and for several lines on one chart.
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string colour(std::size_t k) { return kPalette[k % std::size(kPalette)]; }

// Marker kinds drawn as a row of small ticks along the x axis rather than across the plot: routine
// events that come every few steps, which would hide the ones that changed the run.
bool routine_marker(const std::string& kind) { return kind == "checkpoint"; }

const MarkerKind* find_marker(const std::string& kind) {
  for (const MarkerKind& m : marker_kinds()) {
    if (kind == m.kind) return &m;
  }
  return nullptr;
}

// The step a line happened at: its own, or the last step committed before it.
std::int64_t step_at(const RankHistory& rank, const RunEvent& event) {
  if (event.step) return *event.step;
  std::int64_t step = 0;
  for (const StepRecord& s : rank.steps) {
    if (s.time > event.time) break;
    step = s.step;
  }
  return step;
}

std::string event_title(const RunEvent& event) {
  std::string title = event.kind;
  if (event.step) title += " at step " + std::to_string(*event.step);
  for (const auto& [key, value] : event.fields) {
    if (key == "reason" || key == "kind" || key == "micro_batch" || key == "signal_name" ||
        key == "status") {
      title += "; " + key + " " + value;
    }
  }
  return title;
}

// The unit of a wall-time axis: seconds, minutes or hours, by the run's span.
struct TimeAxis {
  double divisor = 1.0;
  std::string label;
};
TimeAxis time_axis(const RunHistory& run) {
  const double span = run.last_time - run.first_time;
  if (span < 120.0) return {1.0, "seconds since the first line"};
  if (span < 7200.0) return {60.0, "minutes since the first line"};
  return {3600.0, "hours since the first line"};
}

// Markers over steps (x = step) or over wall time (x in time_axis units since the first line).
std::vector<ChartMarker> markers(const RunHistory& run, bool over_time) {
  const double divisor = time_axis(run).divisor;
  std::vector<ChartMarker> out;
  const RankHistory& rank0 = run.ranks.front();
  for (const RunEvent& event : rank0.events) {
    const MarkerKind* kind = find_marker(marker_of(event));
    if (kind == nullptr) continue;
    const double x = over_time ? (event.time - run.first_time) / divisor
                               : static_cast<double>(step_at(rank0, event));
    out.push_back({x, kind->kind, kind->colour, event_title(event), routine_marker(kind->kind)});
  }
  for (const SurvivedFault& fault : run.faults) {
    if (fault.marker != "skipped" || !fault.step) continue;
    const MarkerKind* kind = find_marker("skipped");
    const double x =
        over_time ? (fault.time - run.first_time) / divisor : static_cast<double>(*fault.step);
    out.push_back({x, kind->kind, kind->colour, fault.what});
  }
  return out;
}

// Points of one rank's steps, broken into segments where the step count does not go up (a
// rollback, a resume) or another process took over.
template <class Value>
std::vector<std::vector<std::pair<double, double>>> step_segments(const RankHistory& rank,
                                                                  Value value) {
  std::vector<std::vector<std::pair<double, double>>> segments;
  const StepRecord* previous = nullptr;
  for (const StepRecord& s : rank.steps) {
    const std::optional<double> y = value(s);
    if (!y) continue;
    if (previous == nullptr || s.step <= previous->step || s.process != previous->process) {
      segments.emplace_back();
    }
    segments.back().emplace_back(static_cast<double>(s.step), *y);
    previous = &s;
  }
  return segments;
}

bool decades_apart(const std::string& name) {
  return name.find("residual") != std::string::npos || name.find("loss") != std::string::npos ||
         name == "grad_norm" || name == "lr";
}

std::vector<Chart> charts(const RunHistory& run) {
  std::vector<Chart> out;
  const RankHistory& rank0 = run.ranks.front();
  const std::vector<ChartMarker> step_markers = markers(run, false);

  // A chart over steps with these series and every event's marker.
  const auto step_chart = [&](std::string id, std::string title, std::string y_label,
                              std::vector<ChartSeries> series, bool log_y = false) {
    Chart chart;
    chart.id = std::move(id);
    chart.title = std::move(title);
    chart.x_label = "step";
    chart.y_label = std::move(y_label);
    chart.series = std::move(series);
    chart.log_y = log_y;
    chart.markers = step_markers;
    out.push_back(std::move(chart));
  };
  // One series of a rank's steps: value(step) in segments (nullopt leaves a step out).
  const auto rank_series = [](const RankHistory& rank, std::string label, std::size_t k, auto value,
                              bool dashed = false) {
    return ChartSeries{std::move(label), colour(k), step_segments(rank, value), dashed};
  };

  // The figure a user watches first (the loss, the residual) leads.
  std::vector<std::string> names = run.metric_names;
  std::stable_partition(names.begin(), names.end(), [](const std::string& name) {
    return name == "loss" || name == "relative_residual";
  });
  for (const std::string& name : names) {
    if (name == "skipped") continue;  // shown as markers
    const auto metric = [&](const StepRecord& s) -> std::optional<double> {
      const auto it = s.metrics.find(name);
      if (it == s.metrics.end()) return std::nullopt;
      return it->second;
    };
    step_chart("metric-" + name, name + " by step", name, {rank_series(rank0, name, 0, metric)},
               decades_apart(name));
  }

  // Step time, one line per rank; the slowest by median named in its label.
  std::size_t slowest = 0;
  double slowest_median = -1.0;
  for (std::size_t k = 0; k < run.ranks.size(); ++k) {
    std::vector<double> times;
    for (const StepRecord& s : run.ranks[k].steps) times.push_back(s.seconds);
    const double m = median_of(times);
    if (m > slowest_median) {
      slowest_median = m;
      slowest = k;
    }
  }
  std::vector<ChartSeries> step_times;
  for (std::size_t k = 0; k < run.ranks.size(); ++k) {
    std::string label = "rank " + std::to_string(run.ranks[k].rank);
    if (run.ranks.size() > 1 && k == slowest) label += " (slowest)";
    step_times.push_back(
        rank_series(run.ranks[k], label, k,
                    [](const StepRecord& s) -> std::optional<double> { return s.seconds; }));
  }
  step_chart("step-time", run.ranks.size() > 1 ? "Step time by rank" : "Step time", "seconds",
             std::move(step_times));
  if (run.ranks.size() > 1) {
    // Then one lane per rank on the scale of the chart above, so that a rank's own stalls are not
    // hidden under the others' lines; the slowest rank's lane says so.
    const std::vector<ChartSeries> lanes = out.back().series;  // copied: out grows below
    std::vector<double> xs;
    std::vector<double> ys;
    for (const ChartSeries& series : lanes) {
      for (const auto& segment : series.segments) {
        for (const auto& [x, y] : segment) {
          xs.push_back(x);
          ys.push_back(y);
        }
      }
    }
    const auto [x_lo, x_hi] = std::minmax_element(xs.begin(), xs.end());
    const auto [y_lo, y_hi] = std::minmax_element(ys.begin(), ys.end());
    for (std::size_t k = 0; k < run.ranks.size(); ++k) {
      const std::string rank = std::to_string(run.ranks[k].rank);
      step_chart("step-time-rank-" + rank,
                 "Step time, rank " + rank + (k == slowest ? " (slowest)" : ""), "seconds",
                 {lanes[k]});
      Chart& lane = out.back();
      lane.height = 150;
      if (!xs.empty()) {
        lane.x_span = {*x_lo, *x_hi};
        lane.y_span = {*y_lo, *y_hi};
      }
    }
  }

  step_chart(
      "micro-batch", "Micro-batch", "work units",
      {rank_series(rank0, "micro-batch", 2, [](const StepRecord& s) -> std::optional<double> {
        return static_cast<double>(s.micro_batch);
      })});
  step_chart(
      "memory", "Memory pool of rank 0", "MiB",
      {rank_series(
           rank0, "allocated", 0,
           [](const StepRecord& s) -> std::optional<double> { return s.allocated / 1048576.0; }),
       rank_series(
           rank0, "reserved", 1,
           [](const StepRecord& s) -> std::optional<double> { return s.reserved / 1048576.0; },
           true)});

  // Telemetry over wall time: memory, then each GPU reading NVML gave.
  const std::vector<ChartMarker> time_markers = markers(run, true);
  const TimeAxis axis = time_axis(run);
  const auto telemetry_series = [&](const std::string& field, double scale,
                                    const std::string& label, std::size_t k) {
    ChartSeries series{label, colour(k), {}, false};
    for (const RankHistory& rank : run.ranks) {
      std::vector<std::pair<double, double>> points;
      for (const TelemetryRecord& t : rank.telemetry) {
        const auto it = t.values.find(field);
        if (it != t.values.end()) {
          points.emplace_back((t.time - run.first_time) / axis.divisor, it->second * scale);
        }
      }
      if (!points.empty()) series.segments.push_back(std::move(points));
      if (run.ranks.size() > 1) break;  // rank 0's samples; the step-time lanes compare ranks
    }
    return series;
  };
  {
    Chart chart;
    chart.id = "telemetry-memory";
    chart.title = "Memory over time (telemetry samples)";
    chart.x_label = axis.label;
    chart.y_label = "MiB";
    chart.series.push_back(telemetry_series("host_rss", 1.0 / 1048576.0, "host RSS", 3));
    chart.series.push_back(telemetry_series("pool_reserved", 1.0 / 1048576.0, "pool reserved", 1));
    chart.series.push_back(telemetry_series("gpu_memory_used", 1.0 / 1048576.0, "GPU used", 4));
    std::erase_if(chart.series, [](const ChartSeries& s) { return s.segments.empty(); });
    chart.markers = time_markers;
    out.push_back(std::move(chart));
  }
  const struct {
    const char* field;
    const char* title;
    const char* unit;
  } gpu[] = {{"gpu_utilization", "GPU utilisation", "%"},
             {"gpu_temperature", "GPU temperature", "°C"},
             {"gpu_power_watts", "GPU power", "W"},
             {"gpu_sm_clock_mhz", "GPU SM clock", "MHz"}};
  for (std::size_t k = 0; k < std::size(gpu); ++k) {
    Chart chart;
    chart.id = std::string("telemetry-") + gpu[k].field;
    chart.title = gpu[k].title;
    chart.x_label = axis.label;
    chart.y_label = gpu[k].unit;
    ChartSeries series = telemetry_series(gpu[k].field, 1.0, gpu[k].title, k);
    if (series.segments.empty()) continue;
    chart.series.push_back(std::move(series));
    chart.markers = time_markers;
    out.push_back(std::move(chart));
  }
  return out;
}

constexpr const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b;
       margin: 0 auto; padding: 16px 24px; max-width: 1240px; }
h1 { font-size: 22px; margin: 4px 0; } h2 { font-size: 17px; margin: 22px 0 8px; }
.muted { color: #666; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 130px; }
.card b { display: block; font-size: 18px; }
.status-ok b { color: #1a7f37; } .status-bad b { color: #b42318; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { border-bottom: 1px solid #e5e5e5; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.lost td.num { color: #b42318; font-weight: 600; }
figure.chart { margin: 14px 0; page-break-inside: avoid; break-inside: avoid; }
figure.chart figcaption { font-weight: 600; margin-bottom: 2px; }
svg { width: 100%; height: auto; display: block; }
svg .plot { fill: #fcfcfc; stroke: #ccc; } svg .grid { stroke: #ececec; stroke-width: 1; }
svg .tick { font-size: 11px; fill: #555; } svg .axis { font-size: 12px; fill: #333; }
svg .series { stroke-width: 1.6; } svg .marker, svg .marker-tick { stroke-width: 1.5; }
.legend { font-size: 12px; display: flex; flex-wrap: wrap; gap: 14px; margin-top: 2px; }
.legend i { display: inline-block; width: 14px; height: 3px; margin: 0 5px 3px 0;
            vertical-align: middle; }
.legend.markers i { width: 3px; height: 12px; } .legend.markers i.tick { width: 2px; height: 6px; }
.empty { color: #888; font-style: italic; }
pre.message { font-size: 12px; background: #f6f6f6; padding: 8px; overflow-x: auto;
              white-space: pre-wrap; }
@media print { body { max-width: none; padding: 0; font-size: 11px; } h2 { break-after: avoid; } }
)css";

std::string cell(const std::string& text, bool number = false) {
  return std::string(number ? "<td class=\"num\">" : "<td>") + escape_html(text) + "</td>";
}

std::string faults_table(const RunHistory& run) {
  std::string out = "<section id=\"faults\">\n<h2>What the run survived</h2>\n";
  if (run.faults.empty()) {
    out += "<p>No fault, no out-of-memory, no anomaly, no restart: nothing to recover from.</p>\n";
    return out + "</section>\n";
  }
  out +=
      "<table>\n<tr><th>#</th><th>when</th><th>what happened</th><th>what tenax did</th>"
      "<th>steps recomputed</th><th>compute lost</th><th>downtime</th><th>result</th></tr>\n";
  for (std::size_t k = 0; k < run.faults.size(); ++k) {
    const SurvivedFault& f = run.faults[k];
    const bool lost = f.steps_recomputed > 0;
    out += "<tr class=\"fault fault-" + escape_html(f.marker) + (lost ? " lost" : "") + "\">";
    out += cell(std::to_string(k + 1), true);
    out += cell((f.step ? "step " + std::to_string(*f.step) + ", " : std::string()) +
                utc_text(f.time));
    out += cell(f.what) + cell(f.action);
    out += cell(std::to_string(f.steps_recomputed), true);
    out += cell(duration_text(f.compute_lost_seconds), true);
    out += cell(duration_text(f.downtime_seconds), true);
    out += cell(f.recovered ? "recovered" : "not recovered");
    out += "</tr>\n";
  }
  out += "<tr><th colspan=\"4\">in all</th>" + cell(std::to_string(run.steps_recomputed()), true) +
         cell(duration_text(run.compute_lost_seconds()), true) +
         cell(duration_text(run.downtime_seconds()), true) + "<td></td></tr>\n</table>\n";
  out +=
      "<p class=\"muted\">Steps recomputed are steps taken again after going back to a "
      "checkpoint (after a rollback, the anomalous step too, as the run's console counts them; "
      "after a kill, the steps committed before it); tenax's runs are deterministic, so they end "
      "with the bits of a run that "
      "never failed. Compute lost is the time those steps (and failed attempts) took; downtime "
      "runs from a process's last line to the next process's first.</p>\n";
  return out + "</section>\n";
}

// The steps of a run of checkpoints, as a short list: "0, 10, 20" or "50, 100, 150 … 400".
std::string step_list(const std::vector<const RunEvent*>& events) {
  std::vector<std::string> steps;
  for (const RunEvent* e : events) steps.push_back(e->step ? std::to_string(*e->step) : "?");
  std::string out;
  const std::size_t n = steps.size();
  for (std::size_t k = 0; k < n; ++k) {
    if (n > 5 && k == 3) {
      out += " \u2026 " + steps.back();
      break;
    }
    out += (k == 0 ? "" : ", ") + steps[k];
  }
  return out;
}

std::string events_table(const RunHistory& run) {
  constexpr std::size_t kMaxRows = 1000;
  std::string out = "<section id=\"events\">\n<h2>Events</h2>\n";
  std::vector<std::pair<int, const RunEvent*>> lines;
  for (const RankHistory& rank : run.ranks) {
    for (const RunEvent& e : rank.events) lines.emplace_back(rank.rank, &e);
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto& a, const auto& b) { return a.second->time < b.second->time; });
  if (lines.empty()) return out + "<p class=\"empty\">No events.</p>\n</section>\n";
  // A row per event, but one row for each run of consecutive checkpoints of a rank: routine,
  // they would otherwise fill the table and hide what happened to the run.
  struct Row {
    int rank = 0;
    std::vector<const RunEvent*> events;
  };
  std::vector<Row> rows;
  for (const auto& [rank, event] : lines) {
    if (event->kind == event::checkpoint_written && !rows.empty() && rows.back().rank == rank &&
        rows.back().events.back()->kind == event::checkpoint_written) {
      rows.back().events.push_back(event);
    } else {
      rows.push_back({rank, {event}});
    }
  }
  out +=
      "<table>\n<tr><th>time</th><th>rank</th><th>event</th><th>step</th><th>details</th></tr>\n";
  const std::size_t shown = std::min(rows.size(), kMaxRows);
  for (std::size_t k = rows.size() - shown; k < rows.size(); ++k) {
    const Row& row = rows[k];
    const RunEvent& e = *row.events.front();
    const std::string marker = marker_of(e);
    const std::string classes = "event event-" + escape_html(e.kind) +
                                (marker.empty() ? "" : " marker-" + escape_html(marker));
    if (row.events.size() > 1) {
      const RunEvent& last = *row.events.back();
      double seconds = 0.0;
      for (const RunEvent* c : row.events) {
        const std::string text = c->field("seconds");
        if (!text.empty()) seconds += std::strtod(text.c_str(), nullptr);
      }
      const std::string first_time = utc_text(e.time);
      const std::string last_time = utc_text(last.time);
      const std::string count = std::to_string(row.events.size());
      out += "<tr class=\"" + classes + " checkpoints\">" +
             cell(first_time + (last_time == first_time ? "" : " to " + last_time)) +
             cell(std::to_string(row.rank), true) + cell(e.kind + " \u00d7 " + count) +
             cell((e.step ? std::to_string(*e.step) : "?") + "\u2013" +
                      (last.step ? std::to_string(*last.step) : "?"),
                  true) +
             cell(count + " checkpoints, at steps " + step_list(row.events) +
                  (seconds > 0.0 ? "; " + duration_text(seconds) + " of writing in all" : "")) +
             "</tr>\n";
      continue;
    }
    std::string details;
    for (const auto& [key, value] : e.fields) {
      if (!details.empty()) details += "; ";
      details += key + "=" + value;
    }
    out += "<tr class=\"" + classes + "\">" + cell(utc_text(e.time)) +
           cell(std::to_string(row.rank), true) + cell(e.kind) +
           cell(e.step ? std::to_string(*e.step) : "", true) + cell(details) + "</tr>\n";
  }
  out += "</table>\n";
  if (shown < rows.size()) {
    out += "<p class=\"muted\">The last " + std::to_string(shown) + " of " +
           std::to_string(rows.size()) + " rows (" + std::to_string(lines.size()) +
           " events).</p>\n";
  }
  return out + "</section>\n";
}

std::string ranks_table(const RunHistory& run) {
  if (run.ranks.size() < 2) return {};
  std::string out =
      "<section id=\"ranks\">\n<h2>Ranks</h2>\n<table>\n<tr><th>rank</th><th>steps</th>"
      "<th>median step</th><th>slowest step</th><th>torn lines</th></tr>\n";
  double worst = -1.0;
  int worst_rank = 0;
  std::vector<double> medians;
  for (const RankHistory& rank : run.ranks) {
    std::vector<double> times;
    for (const StepRecord& s : rank.steps) times.push_back(s.seconds);
    medians.push_back(median_of(times));
    if (medians.back() > worst) {
      worst = medians.back();
      worst_rank = rank.rank;
    }
  }
  for (std::size_t k = 0; k < run.ranks.size(); ++k) {
    const RankHistory& rank = run.ranks[k];
    double slowest = 0.0;
    for (const StepRecord& s : rank.steps) slowest = std::max(slowest, s.seconds);
    out += std::string("<tr") + (rank.rank == worst_rank ? " class=\"slowest\"" : "") + ">" +
           cell(std::to_string(rank.rank) + (rank.rank == worst_rank ? " (slowest)" : ""), true) +
           cell(std::to_string(rank.steps.size()), true) + cell(duration_text(medians[k]), true) +
           cell(duration_text(slowest), true) + cell(std::to_string(rank.skipped_lines), true) +
           "</tr>\n";
  }
  return out + "</table>\n</section>\n";
}

std::string marker_legend(const RunHistory& run) {
  std::set<std::string> present;
  for (const RunEvent& e : run.ranks.front().events) present.insert(marker_of(e));
  for (const SurvivedFault& f : run.faults) {
    if (f.marker == "skipped") present.insert("skipped");
  }
  std::string out = "<div class=\"legend markers\">Markers: ";
  bool any = false;
  for (const MarkerKind& m : marker_kinds()) {
    if (!present.contains(m.kind)) continue;
    any = true;
    const bool tick = routine_marker(m.kind);
    out += std::string("<span class=\"legend-") + m.kind + "\"><i" +
           (tick ? " class=\"tick\"" : "") + " style=\"background:" + m.colour + "\"></i>" +
           escape_html(m.label) + (tick ? " (ticks along the axis)" : "") + "</span>";
  }
  if (!any) out += "<span>none</span>";
  return out + "</div>\n";
}

bool status_ok(const RunHistory& run) { return run.status == "completed"; }

// RUN_DIR/memory-history.json, written by an out-of-memory stop: the allocations that led to it
// as a timeline with the failed requests marked, the last records, and the pool's block map.
std::string memory_history_section(const std::filesystem::path& run_dir) {
  const std::filesystem::path path = run_dir / "memory-history.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return {};
  std::ifstream in(path);
  const nlohmann::json history = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  std::string out =
      "<section id=\"memory-history\">\n<h2>Memory before the out-of-memory stop</h2>\n";
  if (!history.is_object() || !history.contains("records") || !history["records"].is_array()) {
    return out + "<p class=\"empty\">" + escape_html(path.string()) +
           " could not be read (torn or not tenax's).</p>\n</section>\n";
  }
  const nlohmann::json& records = history["records"];
  Chart chart;
  chart.id = "memory-history";
  chart.title = "Bytes allocated, allocation by allocation (the last " +
                std::to_string(records.size()) + " of " +
                std::to_string(history.value("total_records", std::int64_t{0})) + ")";
  chart.x_label = "record";
  chart.y_label = "MiB";
  ChartSeries series{"allocated", colour(0), {{}}, false};
  const MarkerKind* oom = find_marker("oom");
  for (std::size_t k = 0; k < records.size(); ++k) {
    const nlohmann::json& r = records[k];
    const double mib = r.value("outstanding", 0.0) / 1048576.0;
    series.segments.front().emplace_back(static_cast<double>(k), mib);
    if (r.value("kind", std::string()) == "failed") {
      chart.markers.push_back({static_cast<double>(k), "oom", oom->colour,
                               "failed request of " + std::to_string(r.value("bytes", 0LL)) +
                                   " bytes at step " + std::to_string(r.value("step", -1LL))});
    }
  }
  chart.series.push_back(std::move(series));
  out += render_chart(chart);

  out +=
      "<table>\n<tr><th>#</th><th>kind</th><th>bytes</th><th>step</th><th>tag</th>"
      "<th>allocated after</th></tr>\n";
  const std::size_t first = records.size() > 12 ? records.size() - 12 : 0;
  for (std::size_t k = first; k < records.size(); ++k) {
    const nlohmann::json& r = records[k];
    const std::string kind = r.value("kind", std::string());
    out += std::string("<tr class=\"record record-") + escape_html(kind) + "\">" +
           cell(std::to_string(k), true) + cell(kind) +
           cell(std::to_string(r.value("bytes", 0LL)), true) +
           cell(std::to_string(r.value("step", -1LL)), true) + cell(r.value("tag", std::string())) +
           cell(fmt::format("{:.2f} MiB", r.value("outstanding", 0.0) / 1048576.0), true) +
           "</tr>\n";
  }
  out += "</table>\n";

  // The block map up to the end of the last live block: live blocks dark, free ones light.
  if (history.contains("blocks") && history["blocks"].is_array() && !history["blocks"].empty()) {
    const nlohmann::json& blocks = history["blocks"];
    double end = 0.0;
    std::size_t live = 0;
    std::size_t free_count = 0;
    for (const nlohmann::json& b : blocks) {
      if (!b.value("free", true)) end = b.value("offset", 0.0) + b.value("size", 0.0);
    }
    if (end <= 0.0) end = blocks.front().value("size", 1.0);
    std::string rects;
    for (const nlohmann::json& b : blocks) {
      const double offset = b.value("offset", 0.0);
      if (offset >= end) break;
      const double size = std::min(b.value("size", 0.0), end - offset);
      const bool is_free = b.value("free", true);
      (is_free ? free_count : live) += 1;
      rects += fmt::format(
          "<rect class=\"block block-{}\" x=\"{:.2f}\" y=\"0\" width=\"{:.2f}\" height=\"24\" "
          "fill=\"{}\"/>",
          is_free ? "free" : "live", 1180.0 * offset / end, std::max(0.5, 1180.0 * size / end),
          is_free ? "#dfe7f0" : "#1f77b4");
    }
    out +=
        "<figure class=\"chart\" id=\"chart-block-map\"><figcaption>The pool's blocks up to "
        "the last live one (" +
        std::to_string(live) + " live, " + std::to_string(free_count) +
        " free; free ones between live ones are fragmentation)</figcaption>"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 1180 24\">" +
        rects + "</svg></figure>\n";
  }
  return out + "</section>\n";
}

}  // namespace

std::string render_report_html(const RunHistory& run) {
  const std::string name = run.run_dir.filename().empty() ? run.run_dir.parent_path().string()
                                                          : run.run_dir.filename().string();
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<title>tenax report: " + escape_html(name) + "</title>\n<style>" + std::string(kStyle) +
          "</style>\n</head>\n<body>\n";
  page += "<header>\n<h1>tenax run report: " + escape_html(name) + "</h1>\n";
  page += "<p class=\"muted\">" + escape_html(std::filesystem::absolute(run.run_dir).string()) +
          " &middot; from its event logs, " + escape_html(utc_text(run.first_time)) + " to " +
          escape_html(utc_text(run.last_time)) + "</p>\n</header>\n";

  // Summary cards.
  page += "<section id=\"summary\" class=\"cards\">\n";
  const auto card = [&](const std::string& label, const std::string& value,
                        const std::string& cls = "") {
    page += "<div class=\"card " + cls + "\"><b>" + escape_html(value) + "</b>" +
            escape_html(label) + "</div>\n";
  };
  card("status", run.status, status_ok(run) ? "status-ok" : "status-bad");
  card("steps", std::to_string(run.last_step) +
                    (run.total_steps ? " of " + std::to_string(*run.total_steps) : std::string()));
  card("processes", std::to_string(run.processes));
  card("ranks", std::to_string(run.world_size));
  card("wall time", duration_text(run.last_time - run.first_time));
  card("faults survived",
       std::to_string(std::count_if(run.faults.begin(), run.faults.end(),
                                    [](const SurvivedFault& f) { return f.recovered; })));
  card("steps recomputed", std::to_string(run.steps_recomputed()),
       run.steps_recomputed() > 0 ? "status-bad" : "status-ok");
  card("compute lost + downtime",
       duration_text(run.compute_lost_seconds() + run.downtime_seconds()));
  page += "</section>\n";
  if (!run.status_message.empty()) {
    page += "<pre class=\"message\">" + escape_html(run.status_message) + "</pre>\n";
  }
  std::int64_t torn = 0;
  for (const RankHistory& rank : run.ranks) torn += rank.skipped_lines;
  if (torn > 0) {
    page += "<p class=\"muted\">" + std::to_string(torn) +
            " torn or unreadable log line(s) skipped (a full disk or a crash mid-write).</p>\n";
  }

  page += faults_table(run);
  page += "<section id=\"charts\">\n<h2>Charts</h2>\n" + marker_legend(run);
  for (const Chart& chart : charts(run)) page += render_chart(chart);
  page += "</section>\n";
  page += memory_history_section(run.run_dir);
  page += ranks_table(run);
  page += events_table(run);
  page +=
      "<footer class=\"muted\"><p>Written by <code>tenax report</code>; a self-contained "
      "page (no script, no network).</p></footer>\n</body>\n</html>\n";
  return page;
}

void print_report_summary(const RunHistory& run, const std::filesystem::path& page,
                          std::ostream& out) {
  out << "tenax report: " << run.run_dir.string() << '\n';
  out << "  status: " << run.status << "; step " << run.last_step;
  if (run.total_steps) out << " of " << *run.total_steps;
  out << "; " << run.processes << (run.processes == 1 ? " process" : " processes") << ", "
      << run.world_size << (run.world_size == 1 ? " rank" : " ranks") << ", "
      << duration_text(run.last_time - run.first_time) << " of wall time\n";
  std::map<std::string, int> kinds;
  int unrecovered = 0;
  for (const SurvivedFault& f : run.faults) {
    const MarkerKind* kind = find_marker(f.marker);
    ++kinds[kind != nullptr ? kind->label : f.marker];
    if (!f.recovered) ++unrecovered;
  }
  if (run.faults.empty()) {
    out << "  faults: none\n";
  } else {
    out << "  faults: ";
    bool first = true;
    for (const auto& [label, count] : kinds) {
      out << (first ? "" : ", ") << count << " x " << label;
      first = false;
    }
    out << "; " << run.steps_recomputed()
        << (run.steps_recomputed() == 1 ? " step recomputed, " : " steps recomputed, ")
        << duration_text(run.compute_lost_seconds()) << " of compute lost, "
        << duration_text(run.downtime_seconds()) << " of downtime";
    if (unrecovered > 0) out << "; " << unrecovered << " not recovered";
    out << '\n';
  }
  out << "  report: " << page.string() << '\n';
}

int run_report(const std::filesystem::path& run_dir, const std::filesystem::path& output,
               std::ostream& out) {
  const std::filesystem::path page = output.empty() ? run_dir / "report.html" : output;
  // Refused before anything is read or written: -o /dev/full or /dev/stdout was replaced by the
  // page (a device node or link renamed over).
  require_output_path(page, output.empty() ? "the report" : "-o");
  TENAX_EXPECTS(!io::is_run_directory_file(run_dir, page), UsageError,
                "-o " + page.string() + " is a file of the run directory " + run_dir.string() +
                    " (its event log, a checkpoint or a lock), which the report would replace",
                "leave -o out (the report goes to " + (run_dir / "report.html").string() +
                    ") or give a path outside the run's events*.jsonl, checkpoints/ and locks/");
  const RunHistory run = read_run_history(run_dir);
  const std::string html = render_report_html(run);
  // Written beside its final name and renamed: a reader never sees half a page, and a failure
  // leaves an earlier report as it was.
  replace_file_contents(page, output.empty() ? "the report" : "-o", html);
  print_report_summary(run, page, out);
  return 0;
}

void add_report_command(CLI::App& app, int& exit_code) {
  struct Arguments {
    std::string run_dir;
    std::string output;
  };
  auto args = std::make_shared<Arguments>();
  CLI::App* report = app.add_subcommand(
      "report",
      "One self-contained HTML page (charts, survived faults, events) from a run directory's "
      "event logs, and a summary on stdout. Works on running, crashed and finished runs");
  report->add_option("RUN_DIR", args->run_dir, "The job's --run-dir")->required();
  report->add_option("-o,--output", args->output,
                     "Where to write the page (default: RUN_DIR/report.html)");
  report->callback([args, &exit_code] {
    exit_code = run_reporting_errors("report", [&] {
      return print_terminal_safe(std::cout, [&](std::ostream& out) {
        return run_report(args->run_dir, args->output, out);
      });
    });
  });
}

}  // namespace tenax::tools
