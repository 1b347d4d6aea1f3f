// `tenax report`: the history read from hand-written logs (every fault kind, the work each cost,
// a torn line, a second rank, a run still going), the page's content, the command's errors, and
// whole runs of heat2d and train_mlp with injected out-of-memory, NaN, kill and overflow whose
// pages are rendered by headless Chromium and checked pixel by pixel (the screenshots are kept in
// the build directory's test-artefacts/).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "report_command.hpp"
#include "run_history.hpp"
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
  EXPECT_EQ(anomaly.steps_recomputed, 4) << "steps 21-24 were committed and thrown away";
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

  EXPECT_EQ(run.steps_recomputed(), 9);
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
    EXPECT_NE(html.find(std::string("class=\"marker marker-") + marker + "\""), std::string::npos)
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

TEST(ReportCommand, WritesThePageAndSaysWhatHappened) {
  const fs::path dir = write_eventful_run();
  const CliRun run = run_shell(std::string("'") + TENAX_CLI_PATH + "' report " + quote(dir));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("status: running, or ended without an exit line; step 60 of 80"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("9 steps recomputed"), std::string::npos) << run.output;
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
  EXPECT_NE(run.output.find("cannot write the report"), std::string::npos) << run.output;
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
  const CliRun report = run_shell(std::string("'") + TENAX_CLI_PATH + "' report " + quote(out.dir));
  EXPECT_EQ(report.exit_code, 0) << report.output;
  out.summary = report.output;
  out.html = read_text(out.dir / "report.html");
  return out;
}

void expect_whole_run_report(const WholeRun& run, const std::vector<std::string>& markers,
                             const std::string& metric) {
  EXPECT_NE(run.summary.find("status: completed"), std::string::npos) << run.summary;
  // Faults injected just after a checkpoint: nothing committed is thrown away.
  EXPECT_NE(run.summary.find(" 0 steps recomputed"), std::string::npos) << run.summary;
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
