// `tenax report`: the history read from hand-written logs (every fault kind, the work each cost,
// a torn line, a second rank, a run still going), the page's content, the command's errors, and
// whole runs of heat2d and train_mlp with injected out-of-memory, NaN, kill and overflow whose
// pages are rendered by headless Chromium and checked pixel by pixel (the screenshots are kept in
// the build directory's test-artefacts/).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "report_command.hpp"
#include "run_history.hpp"
#include "svg_chart.hpp"
#include "tenax/core/error.hpp"
#include "tools/command_output.hpp"
#include "tools/png_pixels.hpp"

namespace tenax::tools {
namespace {

namespace fs = std::filesystem;

using CliRun = testing::CommandOutput;

CliRun run_shell(const std::string& command) { return testing::run_command(command + " 2>&1"); }

std::string quote(const fs::path& path) { return "'" + path.string() + "'"; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("tenax-report-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A log written line by line with explicit times.
class Log {
 public:
  explicit Log(const fs::path& path) : out_(path) {}
  void line(const std::string& json) { out_ << json << '\n'; }
  // Steps [first, last], `gap` seconds apart after `time`, each taking `seconds`; returns the
  // time of the last one.
  double steps(std::int64_t first, std::int64_t last, double time, double gap, double seconds,
               const std::string& extra = "") {
    for (std::int64_t s = first; s <= last; ++s) {
      time += gap;
      char text[512];
      std::snprintf(text, sizeof text,
                    R"({"event":"step","time":%.3f,"step":%lld,"micro_batch":64,"seconds":%.3f,)"
                    R"("slowest_seconds":%.3f,"slowest_rank":1,"allocated":1048576,)"
                    R"("reserved":2097152,"metric_loss":%.6f%s})",
                    time, static_cast<long long>(s), seconds, seconds * 2,
                    1.0 / static_cast<double>(s), extra.c_str());
      out_ << text << '\n';
    }
    return time;
  }
  void raw(const std::string& text) { out_ << text; }

 private:
  std::ofstream out_;
};

// The <figure> of the chart `id` in a page ("" when it has none).
std::string figure_of(const std::string& html, const std::string& id) {
  const std::size_t begin = html.find("id=\"" + id + "\"");
  if (begin == std::string::npos) return {};
  return html.substr(begin, html.find("</figure>", begin) - begin);
}

// The value of the attribute `name` of the element that starts at `at` ("" when it has none).
std::string attribute(const std::string& svg, std::size_t at, const std::string& name) {
  const std::size_t end = svg.find('>', at);
  const std::size_t found = svg.find(" " + name + "=\"", at);
  if (found == std::string::npos || found > end) return {};
  const std::size_t open = found + name.size() + 3;
  return svg.substr(open, svg.find('"', open) - open);
}

// Every element of an SVG that starts with `opening` (e.g. "<line class=\"marker "): where.
std::vector<std::size_t> elements(const std::string& svg, const std::string& opening) {
  std::vector<std::size_t> at;
  for (std::size_t k = svg.find(opening); k != std::string::npos; k = svg.find(opening, k + 1)) {
    at.push_back(k);
  }
  return at;
}

// The tick labels of a chart's y axis (anchored at their end) or x axis (at their middle).
std::vector<std::string> tick_labels(const std::string& svg, bool y_axis) {
  std::vector<std::string> labels;
  for (const std::size_t at : elements(svg, "<text class=\"tick\"")) {
    if ((attribute(svg, at, "text-anchor") == "end") != y_axis) continue;
    const std::size_t open = svg.find('>', at) + 1;
    labels.push_back(svg.substr(open, svg.find('<', open) - open));
  }
  return labels;
}

// The top and bottom of a chart's plot area.
std::pair<double, double> plot_top_bottom(const std::string& svg) {
  const std::size_t at = svg.find("<rect class=\"plot\"");
  if (at == std::string::npos) return {0.0, 0.0};
  const double top = std::stod(attribute(svg, at, "y"));
  return {top, top + std::stod(attribute(svg, at, "height"))};
}

// The y coordinates of every point of every line and dot of a chart's series.
std::vector<double> series_ys(const std::string& svg) {
  std::vector<double> ys;
  for (const std::size_t at : elements(svg, "<polyline class=\"series\"")) {
    std::istringstream points(attribute(svg, at, "points"));
    std::string point;
    while (points >> point) ys.push_back(std::stod(point.substr(point.find(',') + 1)));
  }
  for (const std::size_t at : elements(svg, "<circle class=\"series\"")) {
    ys.push_back(std::stod(attribute(svg, at, "cy")));
  }
  return ys;
}

// A chart of one series of (x, y) points.
Chart chart_of(const std::vector<std::pair<double, double>>& points, bool log_y = false) {
  Chart chart;
  chart.id = "test";
  chart.title = "t";
  chart.x_label = "step";
  chart.y_label = "value";
  chart.log_y = log_y;
  chart.series.push_back({"value", "#1f77b4", {points}, false});
  return chart;
}

// A run of 60 steps with every kind of fault, and a rank 1 twice as slow. Times in seconds from
// 1000: steps 1 s apart, each taking 0.25 s.
fs::path write_eventful_run() {
  const fs::path dir = fresh_dir("eventful");
  {
    Log log(dir / "events.jsonl");
    log.line(R"({"event":"supervisor_start","time":999.0,"command":"job","pid":1})");
    log.line(R"({"event":"started","time":1000.0,"total_steps":80,"micro_batch":64,"ranks":2})");
    log.line(R"({"event":"checkpoint_written","time":1000.1,"step":0,"seconds":0.01})");
    double t = log.steps(1, 10, 1000.0, 1.0, 0.25);  // t = 1010
    log.line(R"({"event":"oom_retry","time":1010.5,"step":11,"micro_batch":64})");
    log.line(R"({"event":"backoff","time":1010.75,"step":11,"micro_batch":32})");
    t = log.steps(11, 20, 1010.75, 1.0, 0.25);  // t = 1020.75
    log.line(R"({"event":"checkpoint_written","time":1020.8,"step":20,"seconds":0.01})");
    t = log.steps(21, 24, 1020.8, 1.0, 0.25);  // t = 1024.8
    log.line(R"({"event":"anomaly","time":1025.3,"step":25,"reason":"1 non-finite value"})");
    log.line(R"({"event":"rollback","time":1025.4,"step":20,"micro_batch":32})");
    t = log.steps(21, 30, 1025.4, 1.0, 0.25);  // t = 1035.4
    log.line(R"({"event":"signal","time":1035.5,"step":30,"signal":15,"rank":0})");
    log.line(R"({"event":"checkpoint_written","time":1035.6,"step":30,"seconds":0.01})");
    log.line(R"({"event":"exit","time":1035.7,"status":"interrupted","exit_code":75,"step":30,)"
             R"("message":"stopped by SIGTERM"})");
    log.line(R"({"event":"resumed","time":1135.7,"step":30,"micro_batch":32})");
    t = log.steps(31, 40, 1135.7, 1.0, 0.25);  // t = 1145.7
    log.line(R"({"event":"checkpoint_written","time":1145.8,"step":40,"seconds":0.01})");
    t = log.steps(41, 45, 1145.8, 1.0, 0.25);  // t = 1150.8
    log.line(R"({"event":"fault","time":1151.0,"kind":"kill","step":46})");
    log.line(R"({"event":"restart","time":1151.5,"attempt":1,"max_restarts":5,)"
             R"("reason":"killed by SIGKILL","signal":9,"signal_name":"SIGKILL","delay_s":1})");
    log.line(R"({"event":"resumed","time":1153.0,"step":40,"micro_batch":32})");
    t = log.steps(41, 46, 1153.0, 1.0, 0.25, R"(,"metric_skipped":0,"metric_loss_scale":65536)");
    t = log.steps(47, 47, t, 1.0, 0.25, R"(,"metric_skipped":1,"metric_loss_scale":32768)");
    t = log.steps(48, 50, t, 1.0, 0.25, R"(,"metric_skipped":0,"metric_loss_scale":32768)");
    log.line(R"({"event":"warning","time":1160.1,"step":50,"kind":"memory_growth",)"
             R"("cause":"pool grew","fix":"look for a leak"})");
    log.line(R"({"event":"checkpoint_failed","time":1160.2,"step":50,"reason":"disk full"})");
    log.line(R"({"event":"regrow","time":1160.3,"step":51,"micro_batch":64,)"
             R"("previous_micro_batch":32,"clean_steps":30})");
    log.line(R"({"event":"telemetry","time":1160.4,"step":50,"trigger":"interval",)"
             R"("host_rss":52428800,"pool_reserved":2097152})");
    t = log.steps(51, 60, 1160.4, 1.0, 0.25);
    log.raw(R"({"event":"step","time":1171.4,"step":61,"micro)");  // torn: the disk filled
  }
  {
    Log rank1(dir / "events-rank-1.jsonl");
    rank1.line(R"({"event":"started","time":1000.0,"total_steps":80,"micro_batch":64,"ranks":2})");
    rank1.steps(1, 60, 1000.0, 1.0, 0.5);
  }
  return dir;
}

TEST(RunHistory, EveryFaultWithTheWorkItCost) {
  const fs::path dir = write_eventful_run();
  const RunHistory run = read_run_history(dir);
  EXPECT_EQ(run.world_size, 2);
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[0].skipped_lines, 1) << "the torn last line";
  EXPECT_EQ(run.ranks[1].steps.size(), 60u);
  EXPECT_EQ(run.processes, 3);
  EXPECT_EQ(run.last_step, 60);
  ASSERT_TRUE(run.total_steps.has_value());
  EXPECT_EQ(*run.total_steps, 80);
  EXPECT_FALSE(run.ended) << "the last process wrote no exit line";
  EXPECT_EQ(run.status, "running, or ended without an exit line");
  EXPECT_EQ(run.metric_names, (std::vector<std::string>{"loss", "loss_scale", "skipped"}));

  ASSERT_EQ(run.faults.size(), 7u);
  const SurvivedFault& oom = run.faults[0];
  EXPECT_EQ(oom.marker, "oom");
  EXPECT_EQ(oom.what, "out of memory at step 11");
  EXPECT_EQ(oom.steps_recomputed, 0);
  EXPECT_NEAR(oom.compute_lost_seconds, 0.5, 1e-9) << "from step 10's line to the failure";
  const SurvivedFault& backoff = run.faults[1];
  EXPECT_NE(backoff.action.find("halved the micro-batch to 32"), std::string::npos);
  EXPECT_NEAR(backoff.compute_lost_seconds, 0.25, 1e-9);

  const SurvivedFault& anomaly = run.faults[2];
  EXPECT_EQ(anomaly.marker, "anomaly");
  EXPECT_NE(anomaly.what.find("step 25"), std::string::npos);
  EXPECT_EQ(anomaly.action, "rolled back to the checkpoint of step 20");
  EXPECT_EQ(anomaly.steps_recomputed, 5)
      << "steps 21-25: the committed 21-24 and the anomalous 25, as the Runner counts them";
  EXPECT_NEAR(anomaly.compute_lost_seconds, 4 * 0.25 + 0.5, 1e-9);
  EXPECT_TRUE(anomaly.recovered);

  const SurvivedFault& signal = run.faults[3];
  EXPECT_EQ(signal.marker, "signal");
  EXPECT_EQ(signal.what, "signal 15 at step 30");
  EXPECT_EQ(signal.steps_recomputed, 0) << "the signal was answered with a checkpoint";
  EXPECT_NEAR(signal.downtime_seconds, 100.0, 1e-9);
  EXPECT_EQ(signal.action, "resumed from the checkpoint of step 30");

  const SurvivedFault& kill = run.faults[4];
  EXPECT_EQ(kill.marker, "fault");
  EXPECT_EQ(kill.what, "injected kill at step 46");
  ASSERT_TRUE(kill.step.has_value());
  EXPECT_EQ(*kill.step, 46) << "at the step the fault line names, not the last committed one";
  EXPECT_EQ(kill.steps_recomputed, 5) << "steps 41-45 after the checkpoint of step 40";
  EXPECT_NEAR(kill.compute_lost_seconds, 5 * 0.25, 1e-9);
  EXPECT_NEAR(kill.downtime_seconds, 1153.0 - 1151.0, 1e-9)
      << "the process's last line (the kill) to the resume";
  EXPECT_EQ(kill.action,
            "restarted by tenax run (attempt 1) and resumed from the checkpoint of step 40");

  const SurvivedFault& skipped = run.faults[5];
  EXPECT_EQ(skipped.marker, "skipped");
  EXPECT_EQ(skipped.what, "gradient overflow at step 47");
  EXPECT_NE(skipped.action.find("32768"), std::string::npos);

  const SurvivedFault& checkpoint = run.faults[6];
  EXPECT_EQ(checkpoint.marker, "checkpoint_failed");
  EXPECT_NE(checkpoint.what.find("disk full"), std::string::npos);

  EXPECT_EQ(run.steps_recomputed(), 10);
  EXPECT_NEAR(run.downtime_seconds(), 102.0, 1e-9);
  fs::remove_all(dir);
}

TEST(RunHistory, ExitsThatEndTheRunAndFaultsNotResumed) {
  const fs::path dir = fresh_dir("stopped");
  {
    Log log(dir / "events.jsonl");
    log.line(R"({"event":"started","time":10.0,"total_steps":5,"micro_batch":8,"ranks":1})");
    log.steps(1, 3, 10.0, 1.0, 0.5);
    log.line(R"({"event":"fault","time":13.5,"kind":"device_fault","step":4,"rank":0,)"
             R"("reason":"an illegal memory access"})");
    log.line(R"({"event":"exit","time":13.6,"status":"restart","exit_code":75,"step":3,)"
             R"("message":"exiting for a restart"})");
  }
  const RunHistory run = read_run_history(dir);
  EXPECT_TRUE(run.ended);
  EXPECT_EQ(run.status, "restart");
  ASSERT_EQ(run.faults.size(), 1u);
  EXPECT_FALSE(run.faults[0].recovered);
  EXPECT_NE(run.faults[0].what.find("device_fault at step 4"), std::string::npos);
  EXPECT_NE(run.faults[0].action.find("not resumed yet"), std::string::npos);
  const std::string html = render_report_html(run);
  EXPECT_NE(html.find("id=\"chart-step-time\""), std::string::npos);
  EXPECT_EQ(html.find("chart-step-time-rank-"), std::string::npos) << "no lanes for one rank";
  fs::remove_all(dir);
}

// What the Trainer tells the Runner (a skipped step, a raised loss scale) and the Runner's own
// count of a rollback's steps reach the report from their events.
TEST(RunHistory, SkippedStepsAndTheRollbackCountComeFromTheirEvents) {
  const fs::path dir = fresh_dir("told");
  {
    Log log(dir / "events.jsonl");
    log.line(R"({"event":"started","time":1000.0,"total_steps":20,"micro_batch":8,"ranks":1})");
    double t = log.steps(1, 4, 1000.0, 1.0, 0.25, R"(,"metric_loss_scale":65536)");
    log.line(R"({"event":"loss_scale_changed","time":1004.1,"step":4,"loss_scale":131072.0,)"
             R"("previous_loss_scale":65536.0})");
    t = log.steps(5, 5, t, 1.0, 0.25, R"(,"metric_loss_scale":65536)");
    log.line(R"({"event":"step_skipped","time":1005.1,"step":5,"loss_scale":65536.0,)"
             R"("previous_loss_scale":131072.0,"injected":true})");
    t = log.steps(6, 7, t, 1.0, 0.25);
    log.line(R"({"event":"anomaly","time":1008.0,"step":8,"reason":"NaN","where":"a.cpp:1"})");
    log.line(R"({"event":"rollback","time":1008.1,"step":0,"micro_batch":8,"recompute":8})");
    t = log.steps(1, 20, 1008.1, 1.0, 0.25);
    log.line(R"({"event":"exit","time":1030.0,"status":"completed","exit_code":0,"step":20,)"
             R"("message":""})");
  }
  const RunHistory run = read_run_history(dir);
  ASSERT_EQ(run.faults.size(), 2u);
  EXPECT_EQ(run.faults[0].marker, "skipped");
  EXPECT_EQ(run.faults[0].what, "gradient overflow at step 5 (injected)");
  EXPECT_EQ(run.faults[0].action,
            "the loss scaler skipped the update and lowered the loss scale from 131072 to 65536");
  EXPECT_EQ(run.faults[1].marker, "anomaly");
  EXPECT_EQ(run.faults[1].steps_recomputed, 8) << "the Runner's count, as its console said";
  const std::string html = render_report_html(run);
  EXPECT_NE(html.find("loss scale raised"), std::string::npos) << "its marker in the legend";
  EXPECT_NE(html.find("loss_scale_changed"), std::string::npos) << "its row in the events table";
  fs::remove_all(dir);
}

TEST(RunHistory, RefusesWhatIsNotARunDirectory) {
  const fs::path dir = fresh_dir("empty");
  EXPECT_THROW((void)read_run_history(dir), UsageError);
  EXPECT_THROW((void)read_run_history(dir / "missing"), UsageError);
  // A log of nothing but garbage and torn lines is a run with no process, not a crash.
  {
    std::ofstream out(dir / "events.jsonl");
    out << "not json\n{\"event\":\n\x01\x02\n";
  }
  const RunHistory run = read_run_history(dir);
  EXPECT_EQ(run.status, "no process started");
  EXPECT_EQ(run.ranks.front().skipped_lines, 3);
  EXPECT_TRUE(run.faults.empty());
  EXPECT_NE(render_report_html(run).find("No values recorded"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ReportHtml, HasEveryMarkerChartAndFaultRowAndNothingExternal) {
  const fs::path dir = write_eventful_run();
  const std::string html = render_report_html(read_run_history(dir));
  for (const char* marker : {"oom", "regrow", "skipped", "anomaly", "rollback", "checkpoint",
                             "checkpoint_failed", "signal", "fault", "resumed", "warning"}) {
    const std::string line_class = std::string(marker) == "checkpoint" ? "marker-tick" : "marker";
    EXPECT_NE(html.find("class=\"" + line_class + " marker-" + marker + "\""), std::string::npos)
        << "no chart marker of kind " << marker;
    EXPECT_NE(html.find(std::string("class=\"legend-") + marker + "\""), std::string::npos)
        << "no legend entry for " << marker;
  }
  for (const char* chart : {"chart-metric-loss", "chart-metric-loss_scale", "chart-step-time",
                            "chart-micro-batch", "chart-memory", "chart-telemetry-memory"}) {
    EXPECT_NE(html.find(std::string("id=\"") + chart + "\""), std::string::npos) << chart;
  }
  EXPECT_EQ(html.find("id=\"chart-metric-skipped\""), std::string::npos) << "skips are markers";
  EXPECT_EQ(occurrences(html, "<tr class=\"fault "), 7u);
  EXPECT_NE(html.find("rank 1 (slowest)"), std::string::npos);
  // One lane per rank besides the chart of all ranks, on one scale: the same tick labels.
  const auto figure = [&](const std::string& id) {
    const std::size_t begin = html.find("id=\"" + id + "\"");
    if (begin == std::string::npos) return std::string();
    return html.substr(begin, html.find("</figure>", begin) - begin);
  };
  const std::string lane0 = figure("chart-step-time-rank-0");
  const std::string lane1 = figure("chart-step-time-rank-1");
  ASSERT_FALSE(lane0.empty());
  ASSERT_FALSE(lane1.empty());
  EXPECT_NE(lane1.find("Step time, rank 1 (slowest)"), std::string::npos);
  EXPECT_EQ(lane0.find("(slowest)"), std::string::npos);
  const auto ticks = [](const std::string& svg) {
    std::vector<std::string> labels;
    for (std::size_t at = svg.find("class=\"tick\""); at != std::string::npos;
         at = svg.find("class=\"tick\"", at + 1)) {
      const std::size_t open = svg.find('>', at) + 1;
      labels.push_back(svg.substr(open, svg.find('<', open) - open));
    }
    return labels;
  };
  EXPECT_FALSE(ticks(lane0).empty());
  EXPECT_EQ(ticks(lane0), ticks(lane1)) << "lanes of one quantity share the axes";
  EXPECT_EQ(occurrences(html, "id=\"chart-step-time-rank-"), 2u);
  EXPECT_NE(html.find("1 torn or unreadable log line"), std::string::npos);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  // Self-contained: no script, no fetched resource.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  fs::remove_all(dir);
}

TEST(ReportHtml, EscapesWhatTheLogSays) {
  const fs::path dir = fresh_dir("escape");
  {
    Log log(dir / "events.jsonl");
    log.line(R"({"event":"started","time":1.0,"total_steps":2,"micro_batch":1,"ranks":1})");
    log.line(R"({"event":"checkpoint_failed","time":2.0,"step":1,)"
             R"("reason":"<script>alert(1)</script> & \"quotes\""})");
  }
  const std::string html = render_report_html(read_run_history(dir));
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp;"), std::string::npos);
  fs::remove_all(dir);
}

// Checkpoints come every few steps: drawn as full-height lines they hid the faults. They are a
// row of short ticks rising from the x axis; what changed the run still crosses the whole plot.
TEST(ReportHtml, CheckpointsAreARowOfTicksAndWhatChangedTheRunCrossesThePlot) {
  const fs::path dir = write_eventful_run();
  const std::string html = render_report_html(read_run_history(dir));
  EXPECT_EQ(html.find("class=\"marker marker-checkpoint\""), std::string::npos)
      << "no checkpoint drawn across the plot";
  for (const char* id : {"chart-metric-loss", "chart-step-time", "chart-memory"}) {
    const std::string svg = figure_of(html, id);
    ASSERT_FALSE(svg.empty()) << id;
    const auto [top, bottom] = plot_top_bottom(svg);
    const std::vector<std::size_t> ticks =
        elements(svg, "<line class=\"marker-tick marker-checkpoint\"");
    EXPECT_EQ(ticks.size(), 4u) << id << ": the checkpoints of steps 0, 20, 30 and 40";
    for (const std::size_t at : ticks) {
      const double y1 = std::stod(attribute(svg, at, "y1"));
      const double y2 = std::stod(attribute(svg, at, "y2"));
      EXPECT_DOUBLE_EQ(y2, bottom) << id << ": a tick rises from the x axis";
      EXPECT_GT(y1, bottom - 12.0) << id << ": a tick is short";
      EXPECT_LT(y1, y2);
    }
    const std::vector<std::size_t> full = elements(svg, "<line class=\"marker ");
    EXPECT_GE(full.size(), 8u) << id;
    for (const std::size_t at : full) {
      EXPECT_DOUBLE_EQ(std::stod(attribute(svg, at, "y1")), top) << id;
      EXPECT_DOUBLE_EQ(std::stod(attribute(svg, at, "y2")), bottom) << id;
    }
    for (const char* kind : {"oom", "anomaly", "rollback", "fault", "resumed", "signal"}) {
      EXPECT_NE(svg.find(std::string("<line class=\"marker marker-") + kind + "\""),
                std::string::npos)
          << id << ": " << kind << " crosses the plot";
    }
    // The ticks are drawn first: no full-height marker is ever under one.
    ASSERT_FALSE(ticks.empty());
    ASSERT_FALSE(full.empty());
    EXPECT_LT(ticks.back(), full.front()) << id;
  }
  EXPECT_NE(html.find("<span class=\"legend-checkpoint\"><i class=\"tick\""), std::string::npos)
      << "the legend shows a tick for checkpoints";
  fs::remove_all(dir);
}

// The events table says what happened to the run: a run of checkpoints is one row.
TEST(ReportHtml, EventsTableCollapsesRunsOfCheckpoints) {
  const fs::path dir = fresh_dir("checkpoint-rows");
  {
    Log log(dir / "events.jsonl");
    log.line(R"({"event":"started","time":1.0,"total_steps":500,"micro_batch":8,"ranks":1})");
    for (int k = 1; k <= 8; ++k) {
      log.line(R"({"event":"checkpoint_written","time":)" + std::to_string(1 + k) + R"(,"step":)" +
               std::to_string(50 * k) + R"(,"seconds":0.5})");
    }
    log.line(R"({"event":"fault","time":10.0,"kind":"kill","step":400})");
    log.line(R"({"event":"resumed","time":11.0,"step":350,"micro_batch":8})");
    log.line(R"({"event":"checkpoint_written","time":12.0,"step":400,"seconds":0.5})");
    log.line(R"({"event":"warning","time":13.0,"step":420,"kind":"memory_growth"})");
    log.line(R"({"event":"checkpoint_written","time":14.0,"step":450,"seconds":0.5})");
    log.line(R"({"event":"checkpoint_written","time":15.0,"step":500,"seconds":0.5})");
    log.line(R"({"event":"exit","time":16.0,"status":"completed","exit_code":0,"step":500})");
  }
  const std::string html = render_report_html(read_run_history(dir));
  const std::size_t section = html.find("<section id=\"events\">");
  ASSERT_NE(section, std::string::npos);
  const std::string table = html.substr(section, html.find("</section>", section) - section);
  // Each row's cells as text.
  std::vector<std::vector<std::string>> rows;
  for (const std::size_t at : elements(table, "<tr class=\"event ")) {
    const std::string row = table.substr(at, table.find("</tr>", at) - at);
    std::vector<std::string> cells;
    for (const std::size_t td : elements(row, "<td")) {
      const std::size_t open = row.find('>', td) + 1;
      cells.push_back(row.substr(open, row.find("</td>", open) - open));
    }
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), 8u) << table;
  const auto event = [&](std::size_t k) { return rows[k].at(2); };
  const auto step = [&](std::size_t k) { return rows[k].at(3); };
  const auto details = [&](std::size_t k) { return rows[k].at(4); };
  EXPECT_EQ(event(0), "started");
  EXPECT_EQ(event(1), "checkpoint_written \u00d7 8");
  EXPECT_EQ(step(1), "50\u2013400");
  EXPECT_EQ(details(1), "8 checkpoints, at steps 50, 100, 150 \u2026 400; 4 s of writing in all");
  EXPECT_EQ(event(2), "fault") << "other events keep their rows, in order";
  EXPECT_EQ(event(3), "resumed");
  EXPECT_EQ(event(4), "checkpoint_written") << "a lone checkpoint is a row as before";
  EXPECT_EQ(step(4), "400");
  EXPECT_EQ(event(5), "warning");
  EXPECT_EQ(event(6), "checkpoint_written \u00d7 2");
  EXPECT_EQ(details(6), "2 checkpoints, at steps 450, 500; 1 s of writing in all");
  EXPECT_EQ(event(7), "exit");
  EXPECT_EQ(occurrences(table, "marker-checkpoint checkpoints\""), 2u);
  fs::remove_all(dir);
}

// A loss scale that halves once and stays: its two values are padded off the plot's border and
// the axis has round, short labels.
TEST(SvgChart, ALossScaleThatHalvesOnceIsPaddedWithRoundLabels) {
  std::vector<std::pair<double, double>> points;
  for (int x = 1; x <= 100; ++x) points.emplace_back(x, x < 47 ? 65536.0 : 32768.0);
  const std::string svg = render_chart(chart_of(points, /*log_y=*/true));
  const auto [top, bottom] = plot_top_bottom(svg);
  const std::vector<double> ys = series_ys(svg);
  ASSERT_EQ(ys.size(), 100u);
  EXPECT_GT(*std::min_element(ys.begin(), ys.end()), top + 4.0) << "65536 on the top border";
  EXPECT_LT(*std::max_element(ys.begin(), ys.end()), bottom - 4.0) << "32768 on the bottom border";
  EXPECT_EQ(tick_labels(svg, true), (std::vector<std::string>{"40000", "50000", "60000"}));
}

// A constant series is drawn across the middle of its chart, with distinct, plain labels.
TEST(SvgChart, AConstantSeriesIsCentredWithPlainLabels) {
  for (const double c : {96.0, 0.0, -3.5, 32768.0, 1e-9, 2.5e9}) {
    std::vector<std::pair<double, double>> points;
    for (int x = 0; x < 10; ++x) points.emplace_back(x, c);
    const std::string svg = render_chart(chart_of(points));
    const auto [top, bottom] = plot_top_bottom(svg);
    for (const double y : series_ys(svg)) EXPECT_NEAR(y, (top + bottom) / 2, 0.11) << c;
    const std::vector<std::string> labels = tick_labels(svg, true);
    EXPECT_GE(labels.size(), 3u) << c;
    for (std::size_t k = 1; k < labels.size(); ++k) {
      EXPECT_NE(labels[k], labels[k - 1]) << c;
    }
    if (std::fabs(c) >= 1e-3 && std::fabs(c) < 1e6) {
      for (const std::string& label : labels) {
        EXPECT_EQ(label.find('e'), std::string::npos) << c << ": " << label;
        EXPECT_EQ(label.find(".000"), std::string::npos) << c << ": " << label;
      }
    }
  }
  std::vector<std::pair<double, double>> zeros;
  for (int x = 0; x < 10; ++x) zeros.emplace_back(x, 0.0);
  EXPECT_EQ(tick_labels(render_chart(chart_of(zeros)), true),
            (std::vector<std::string>{"-1", "-0.5", "0", "0.5", "1"}));
}

// No value breaks a chart: none crashes or hangs it, none puts NaN or an infinity in the SVG or a
// coordinate off it, and no two neighbouring tick labels read alike.
TEST(SvgChart, DegenerateValuesNeitherBreakTheChartNorItsLabels) {
  constexpr double kMax = std::numeric_limits<double>::max();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kDenormal = std::numeric_limits<double>::denorm_min();
  struct Case {
    const char* what;
    std::vector<std::pair<double, double>> points;
    bool log_y = false;
    std::vector<double> marker_xs = {};
    std::vector<double> y_span = {};
  };
  const std::vector<Case> cases = {
      {"one point", {{5.0, 1.0}}},
      {"one point, log", {{5.0, 1.0}}, true},
      {"two values", {{1.0, 1.0}, {2.0, 2.0}}},
      {"NaN and infinities among values",
       {{1, kNaN}, {2, kInf}, {3, 1.0}, {4, -kInf}, {kNaN, 2.0}, {kInf, 3.0}, {5, 2.0}}},
      {"huge constant", {{1, 1e308}, {2, 1e308}}},
      {"largest constant", {{1, kMax}, {2, kMax}}},
      {"lowest constant", {{1, -kMax}, {2, -kMax}}},
      {"-1e308 to 1e308", {{1, -1e308}, {2, 1e308}}},
      {"the whole range of doubles", {{1, -kMax}, {2, kMax}}},
      {"denormal constant", {{1, kDenormal}, {2, kDenormal}}},
      {"denormal to huge, log", {{1, kDenormal}, {2, 1e308}}, true},
      {"tiny values", {{1, 1e-300}, {2, 2e-300}}},
      {"a hair apart at 1e16", {{1, 1e16}, {2, 1e16 + 2}}},
      {"steps of a long run", {{123456, 1.0}, {123457, 2.0}, {123458, 1.5}, {123460, 1.0}}},
      {"one huge x", {{1e308, 1.0}}},
      {"the largest x", {{kMax, 1.0}}},
      {"x over every double", {{-kMax, 1.0}, {kMax, 2.0}}},
      {"markers off any axis", {{1, 1.0}, {2, 2.0}}, false, {kNaN, kInf, -kInf, 1e308}},
      {"a non-finite span", {{1, 1.0}, {2, 2.0}}, false, {}, {kNaN, kInf, -kInf}},
      {"nothing finite", {{kNaN, 1.0}, {1.0, kInf}}},
  };
  for (const Case& c : cases) {
    Chart chart = chart_of(c.points, c.log_y);
    for (const double x : c.marker_xs) chart.markers.push_back({x, "fault", "#000000", "m"});
    chart.y_span = c.y_span;
    const std::string svg = render_chart(chart);
    std::string lower = svg;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    EXPECT_EQ(lower.find("nan"), std::string::npos) << c.what << "\n" << svg;
    EXPECT_EQ(lower.find("inf"), std::string::npos) << c.what << "\n" << svg;
    if (std::string(c.what) == "nothing finite") {
      EXPECT_NE(svg.find("No values recorded"), std::string::npos) << c.what;
      continue;
    }
    // Every coordinate is a number on the chart.
    for (const char* name : {"x", "y", "x1", "x2", "y1", "y2", "cx", "cy"}) {
      for (std::size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at + 1)) {
        if (svg.compare(at, 4, "<svg") == 0) continue;
        const std::string value = attribute(svg, at, name);
        if (value.empty()) continue;
        const double v = std::stod(value);
        EXPECT_TRUE(std::isfinite(v)) << c.what << ": " << name << "=" << value;
        EXPECT_GE(v, 0.0) << c.what << ": " << name << "=" << value;
        EXPECT_LE(v, 1180.0) << c.what << ": " << name << "=" << value;
      }
    }
    const auto [top, bottom] = plot_top_bottom(svg);
    const std::vector<double> ys = series_ys(svg);
    EXPECT_FALSE(ys.empty()) << c.what;
    for (const double y : ys) {
      EXPECT_GE(y, top) << c.what;
      EXPECT_LE(y, bottom) << c.what;
    }
    for (const bool y_axis : {true, false}) {
      const std::vector<std::string> labels = tick_labels(svg, y_axis);
      EXPECT_FALSE(labels.empty()) << c.what << (y_axis ? ": y" : ": x");
      for (std::size_t k = 1; k < labels.size(); ++k) {
        EXPECT_NE(labels[k], labels[k - 1]) << c.what << (y_axis ? ": y" : ": x");
      }
    }
  }
}

// The labels of round ticks: short, in the notation that reads best, never alike; no ticks for
// an axis that is not one.
TEST(SvgChart, TickLabelsAreShortRoundAndDistinct) {
  constexpr double kMax = std::numeric_limits<double>::max();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(axis_ticks(0.0, 1.0, 5).labels,
            (std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1"}));
  EXPECT_EQ(axis_ticks(123455.5, 123460.5, 5).labels,
            (std::vector<std::string>{"123456", "123457", "123458", "123459", "123460"}));
  EXPECT_EQ(axis_ticks(1.15e6, 1.45e6, 3).labels,
            (std::vector<std::string>{"1.2e+06", "1.3e+06", "1.4e+06"}));
  EXPECT_EQ(axis_ticks(0.0, 4e-5, 4).labels,
            (std::vector<std::string>{"0", "1e-05", "2e-05", "3e-05", "4e-05"}));
  EXPECT_TRUE(axis_ticks(1.0, 1.0, 5).values.empty());
  EXPECT_TRUE(axis_ticks(kNaN, 1.0, 5).values.empty());
  EXPECT_TRUE(axis_ticks(0.0, kInf, 5).values.empty());
  EXPECT_EQ(axis_ticks(-kMax, kMax, 5).labels,
            (std::vector<std::string>{"-1e+308", "0", "1e+308"}));
}

// Text from a run directory is shown as text: escape sequences in a log line (a retitle, a
// clear, a bell) reach neither the report's summary nor tenax watch as control bytes.
TEST(ReportCommand, EscapeSequencesInTheLogAreShownAsText) {
  const fs::path dir = fresh_dir("escapes");
  {
    Log log(dir / "events.jsonl");
    log.line(R"({"event":"started","time":1000.0,"total_steps":4,"micro_batch":8,"ranks":1})");
    log.steps(1, 2, 1000.0, 1.0, 0.25);
    log.line(R"({"event":"exit","time":1003.0,"status":"anomaly","exit_code":1,"step":2,)"
             R"("message":"\u001b]0;pwned\u0007\u001b[2J\u009b31m gone"})");
  }
  for (const std::string command : {"report", "watch --once"}) {
    const CliRun run =
        run_shell(std::string("'") + TENAX_CLI_PATH + "' " + command + " " + quote(dir));
    EXPECT_EQ(run.output.find('\x1b'), std::string::npos) << command << ": " << run.output;
    EXPECT_EQ(run.output.find('\x07'), std::string::npos) << command;
    EXPECT_EQ(run.output.find("\xc2\x9b"), std::string::npos) << command;
  }
  // watch shows the exit's message: as text.
  const CliRun watch =
      run_shell(std::string("'") + TENAX_CLI_PATH + "' watch --once " + quote(dir));
  EXPECT_NE(watch.output.find("?]0;pwned??[2J?31m gone"), std::string::npos) << watch.output;
  fs::remove_all(dir);
}

TEST(ReportCommand, WritesThePageAndSaysWhatHappened) {
  const fs::path dir = write_eventful_run();
  const CliRun run = run_shell(std::string("'") + TENAX_CLI_PATH + "' report " + quote(dir));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("status: running, or ended without an exit line; step 60 of 80"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("10 steps recomputed"), std::string::npos) << run.output;
  EXPECT_TRUE(fs::exists(dir / "report.html"));
  // -o elsewhere; nothing half-written is left beside it.
  const fs::path other = dir / "elsewhere.html";
  EXPECT_EQ(run_shell(std::string("'") + TENAX_CLI_PATH + "' report " + quote(dir) + " -o " +
                      quote(other))
                .exit_code,
            0);
  EXPECT_GT(fs::file_size(other), 10000u);
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().string().find(".tmp-"), std::string::npos) << entry.path();
  }
  fs::remove_all(dir);
}

// `tenax report RUN -o /dev/full` (or /dev/stdout, a link) replaced the device node or the link
// with the page, rc 0. A FIFO, a symbolic link to a file of the test's own and a directory stand
// for them here: each is refused before anything is written and left as it was.
TEST(ReportCommand, AnOutputThatIsNotARegularFileIsRefusedAndLeftAlone) {
  const fs::path dir = write_eventful_run();
  const fs::path fifo = dir / "out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  { std::ofstream(dir / "victim") << "precious"; }
  fs::create_symlink(dir / "victim", dir / "link.html");
  fs::create_directory(dir / "folder");
  for (const auto& [path, kind] :
       std::vector<std::pair<fs::path, std::string>>{{fifo, "a FIFO"},
                                                     {dir / "link.html", "a symbolic link"},
                                                     {dir / "folder", "a directory"}}) {
    const CliRun run = run_shell("timeout 60 '" + std::string(TENAX_CLI_PATH) + "' report " +
                                 quote(dir) + " -o " + quote(path));
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_NE(run.output.find("-o " + path.string() + " is " + kind + ", not a regular file"),
              std::string::npos)
        << run.output;
    EXPECT_NE(run.output.find("fix: give the path of a regular file"), std::string::npos)
        << run.output;
  }
  struct stat info {};
  ASSERT_EQ(::lstat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  EXPECT_TRUE(fs::is_symlink(dir / "link.html"));
  std::ifstream in(dir / "victim");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "precious");
  EXPECT_TRUE(fs::is_empty(dir / "folder"));
  fs::remove_all(dir);
}

// `ln -s /dev/zero RUN/events.jsonl; tenax report RUN` grew without bound, a FIFO never returned.
// A link to a FIFO of the test's own stands for both (the command runs under `timeout`).
TEST(ReportCommand, AnEventLogThatIsNotARegularFileIsRefusedAtOnce) {
  const fs::path dir = fresh_dir("fifo-log");
  fs::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  fs::create_symlink(dir / "pipe", dir / "events.jsonl");
  const CliRun run =
      run_shell("timeout 60 '" + std::string(TENAX_CLI_PATH) + "' report " + quote(dir));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("events.jsonl' is a symbolic link, not a regular file"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(dir / "report.html"));
  fs::remove_all(dir);
}

TEST(ReportCommand, BadPathsAreUsageErrorsAndAnUnwritablePageAnIoError) {
  const fs::path dir = fresh_dir("bad");
  CliRun run = run_shell(std::string("'") + TENAX_CLI_PATH + "' report " + quote(dir / "nope"));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("is not a directory"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("fix:"), std::string::npos) << run.output;
  run = run_shell(std::string("'") + TENAX_CLI_PATH + "' report " + quote(dir));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("has no events.jsonl"), std::string::npos) << run.output;
  {
    Log log(dir / "events.jsonl");
    log.line(R"({"event":"started","time":1.0,"total_steps":2,"micro_batch":1,"ranks":1})");
  }
  run = run_shell(std::string("'") + TENAX_CLI_PATH + "' report " + quote(dir) + " -o " +
                  quote(dir / "no-such-dir" / "page.html"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("cannot write " + (dir / "no-such-dir" / "page.html").string()),
            std::string::npos)
      << run.output;
  run = run_shell(std::string("'") + TENAX_CLI_PATH + "' report");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("RUN_DIR"), std::string::npos) << run.output;
  fs::remove_all(dir);
}

// ---- whole runs, rendered in a real browser ----

constexpr std::uint32_t kSeriesBlue = 0x1f77b4;  // the first series of every chart
constexpr std::uint32_t kCheckpointGreen = 0x2ca02c;
constexpr std::uint32_t kOomRed = 0xd62728;
constexpr std::uint32_t kAnomalyPurple = 0x9467bd;

// Renders `page` with headless Chromium at 1280 px into the test artefacts; empty when there is
// no Chromium here.
fs::path screenshot(const fs::path& page, const std::string& name) {
  const char* browser = "/usr/bin/chromium";
  if (!fs::exists(browser)) return {};
  fs::create_directories(TENAX_TEST_ARTEFACTS);
  const fs::path png = fs::path(TENAX_TEST_ARTEFACTS) / (name + ".png");
  fs::remove(png);
  const CliRun run =
      run_shell(std::string("timeout 120 ") + browser +
                " --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run"
                " --user-data-dir=" +
                quote(page.parent_path() / "chromium-profile") +
                " --window-size=1280,4000 --screenshot=" + quote(png) + " " +
                quote("file://" + fs::absolute(page).string()));
  EXPECT_TRUE(fs::exists(png)) << run.output;
  return png;
}

struct WholeRun {
  std::string name;
  fs::path dir;
  std::string console;  // what the job and `tenax run` said
  std::string summary;
  std::string html;
};

// `job` under `tenax run` (so that the injected kill is restarted), then `tenax report`.
WholeRun run_and_report(const std::string& name, const std::string& job) {
  WholeRun out;
  out.name = name;
  out.dir = fresh_dir(name);
  const CliRun run =
      run_shell(std::string("'") + TENAX_CLI_PATH + "' run --run-dir " + quote(out.dir) +
                " --max-restarts 2 --restart-delay 0.1 -- " + job + " --run-dir " + quote(out.dir) +
                " --progress log --telemetry-seconds 0.02");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  out.console = run.output;
  const CliRun report = run_shell(std::string("'") + TENAX_CLI_PATH + "' report " + quote(out.dir));
  EXPECT_EQ(report.exit_code, 0) << report.output;
  out.summary = report.output;
  out.html = read_text(out.dir / "report.html");
  return out;
}

void expect_whole_run_report(const WholeRun& run, const std::vector<std::string>& markers,
                             const std::string& metric) {
  EXPECT_NE(run.summary.find("status: completed"), std::string::npos) << run.summary;
  // Faults injected just after a checkpoint: nothing committed is thrown away; the NaN's step is
  // computed again, as the console says.
  EXPECT_NE(run.console.find("(1 step to compute again)"), std::string::npos) << run.console;
  EXPECT_NE(run.summary.find(" 1 step recomputed"), std::string::npos) << run.summary;
  for (const std::string& marker : markers) {
    EXPECT_NE(run.html.find("class=\"marker marker-" + marker + "\""), std::string::npos)
        << "no marker " << marker;
    EXPECT_NE(run.html.find("<tr class=\"fault fault-" + marker), std::string::npos)
        << "no survived-fault row " << marker;
  }
  EXPECT_NE(run.html.find("id=\"chart-metric-" + metric + "\""), std::string::npos);
  EXPECT_EQ(run.html.find("not recovered"), std::string::npos);
  const fs::path png = screenshot(run.dir / "report.html", "report-" + run.name);
  if (png.empty()) {
    std::cout << "[  NOTE    ] no /usr/bin/chromium: the page was not rendered "
                 "(scripts/test.sh installs it)\n";
    return;
  }
  const testing::Pixels pixels = testing::read_png(png);
  EXPECT_EQ(pixels.width, 1280u);
  // The curves, the checkpoint and fault markers and the table are drawn, not only written.
  EXPECT_GT(pixels.count(kSeriesBlue), 3000u) << png;
  EXPECT_GT(pixels.count(kCheckpointGreen), 500u) << png;
  EXPECT_GT(pixels.count(kOomRed), 200u) << png;
  EXPECT_GT(pixels.count(kAnomalyPurple), 100u) << png;
}

TEST(ReportWholeRun, Heat2dWithOomNanAndKill) {
  const WholeRun run =
      run_and_report("heat2d", std::string("'") + HEAT2D_PATH +
                                   "' --n 96 --steps 120 --checkpoint-every 10 --device cpu"
                                   " --inject oom@alloc=30,nan@step=41,kill@step=81");
  expect_whole_run_report(run, {"oom", "anomaly", "fault"}, "simulated_time");
  fs::remove_all(run.dir);
}

TEST(ReportWholeRun, TrainMlpWithOomNanKillAndOverflow) {
  const WholeRun run = run_and_report(
      "train_mlp", std::string("'") + TRAIN_MLP_PATH +
                       "' --precision f16 --steps 120 --checkpoint-every 10 --device cpu"
                       " --inject oom@alloc=300,nan@step=31,overflow@step=55,kill@step=91");
  expect_whole_run_report(run, {"oom", "anomaly", "fault", "skipped"}, "loss");
  EXPECT_NE(run.html.find("id=\"chart-metric-loss_scale\""), std::string::npos);
  fs::remove_all(run.dir);
}

// The report counts the work a run lost as the run itself does: a rollback's steps as its console
// line says, a kill at the step it was injected at, with the steps its process committed after
// the checkpoint the next one resumed from (they are in the log twice).
TEST(ReportWholeRun, TheReportCountsTheWorkLostAsTheConsoleDoes) {
  const fs::path dir = fresh_dir("work-lost");
  const std::string job = std::string("'") + HEAT2D_PATH +
                          "' --n 64 --steps 120 --checkpoint-every 50 --device cpu"
                          " --progress log --run-dir " +
                          quote(dir);
  const CliRun killed = run_shell(job + " --inject nan@step=45,kill@step=100");
  EXPECT_NE(killed.exit_code, 0) << "the injected kill ends the process: " << killed.output;
  const std::string said = "rolled back to the checkpoint of step 0 (45 steps to compute again)";
  EXPECT_NE(killed.output.find(said), std::string::npos) << killed.output;
  const CliRun resumed = run_shell(job);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from the checkpoint of step 50"), std::string::npos)
      << resumed.output;

  const RunHistory run = read_run_history(dir);
  ASSERT_EQ(run.faults.size(), 2u);
  const SurvivedFault& anomaly = run.faults[0];
  EXPECT_EQ(anomaly.marker, "anomaly");
  EXPECT_EQ(anomaly.action, "rolled back to the checkpoint of step 0");
  EXPECT_EQ(anomaly.steps_recomputed, 45) << "as the console said: " << said;
  const SurvivedFault& kill = run.faults[1];
  EXPECT_EQ(kill.what, "injected kill at step 100");
  ASSERT_TRUE(kill.step.has_value());
  EXPECT_EQ(*kill.step, 100) << "where the kill was injected, not the step before";
  EXPECT_EQ(kill.action, "resumed from the checkpoint of step 50");
  EXPECT_EQ(kill.steps_recomputed, 49)
      << "steps 51-99, committed before the kill and computed again after the resume; step 100 "
         "had not begun";
  // The log agrees: every step computed twice has two lines, but for the NaN's step 45, which
  // was computed and found bad before its line was written.
  std::map<std::int64_t, int> lines;
  for (const StepRecord& s : run.ranks.front().steps) ++lines[s.step];
  std::int64_t twice = 0;
  for (const auto& [step, count] : lines) twice += count - 1;
  EXPECT_EQ(lines.size(), 120u);
  EXPECT_EQ(twice + 1, run.steps_recomputed());
  EXPECT_EQ(lines.at(45), 1);

  const CliRun report = run_shell(std::string("'") + TENAX_CLI_PATH + "' report " + quote(dir));
  EXPECT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("; 94 steps recomputed"), std::string::npos) << report.output;
  const std::string html = read_text(dir / "report.html");
  EXPECT_NE(html.find("<td>step 100, "), std::string::npos) << "the kill's row is at step 100";
  EXPECT_NE(html.find("<td class=\"num\">45</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">49</td>"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ReportWholeRun, AnOutOfMemoryStopShowsTheAllocationsThatLedToIt) {
  const fs::path dir = fresh_dir("oom-stop");
  const CliRun job =
      run_shell(std::string("'") + HEAT2D_PATH + "' --n 128 --steps 20 --device cpu" +
                " --progress quiet --inject oom@alloc=12x1000000 --run-dir " + quote(dir));
  EXPECT_EQ(job.exit_code, 1) << job.output;
  EXPECT_NE(job.output.find("the allocations that led to the out-of-memory stop are in"),
            std::string::npos)
      << job.output;
  ASSERT_TRUE(fs::exists(dir / "memory-history.json"));
  const CliRun report = run_shell(std::string("'") + TENAX_CLI_PATH + "' report " + quote(dir));
  EXPECT_EQ(report.exit_code, 0) << report.output;
  const std::string html = read_text(dir / "report.html");
  const std::size_t section = html.find("<section id=\"memory-history\">");
  ASSERT_NE(section, std::string::npos);
  const std::string memory = html.substr(section, html.find("</section>", section) - section);
  EXPECT_NE(memory.find("id=\"chart-memory-history\""), std::string::npos);
  EXPECT_NE(memory.find("class=\"marker marker-oom\""), std::string::npos)
      << "the failed requests are marked";
  EXPECT_NE(memory.find("<tr class=\"record record-failed\">"), std::string::npos);
  EXPECT_NE(memory.find("id=\"chart-block-map\""), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"fault fault-oom"), std::string::npos);
  EXPECT_NE(html.find("not recovered"), std::string::npos) << "the stop itself";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tenax::tools
