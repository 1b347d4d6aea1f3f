// `tenax watch`: the view built from log lines (running, waiting for a resume, ended), the
// follower that reads a growing log, the command's errors, and the live view in a real terminal:
// tmux runs `tenax watch` while the test appends a run's lines, and reads the screen back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/command_output.hpp"
#include "watch_command.hpp"

namespace tenax::tools {
namespace {

namespace fs = std::filesystem;

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

std::string step_line(std::int64_t step, double time) {
  return R"({"event":"step","time":)" + std::to_string(time) + R"(,"step":)" +
         std::to_string(step) +
         R"(,"micro_batch":16,"seconds":0.5,"slowest_seconds":0.5,"slowest_rank":0,)"
         R"("allocated":1048576,"reserved":4194304,"metric_loss":0.25})";
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("tenax-watch-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(WatchState, RunningThenWaitingForAResumeThenCompleted) {
  WatchState state;
  state.consume(R"({"event":"started","time":100,"total_steps":100,"micro_batch":16,"ranks":1})");
  for (int s = 1; s <= 40; ++s) state.consume(step_line(s, 100.0 + s));
  state.consume(R"({"event":"telemetry","time":140.5,"step":40,"host_rss":10485760,)"
                R"("gpu_temperature":71,"gpu_utilization":97})");
  std::string view = joined(state.render(141.0, 8));
  EXPECT_NE(view.find("running (process 1 of this run, 1 rank)"), std::string::npos) << view;
  EXPECT_NE(view.find("40 / 100  (40.0 %)   1 steps/s   ETA 60 s"), std::string::npos) << view;
  EXPECT_NE(view.find("loss 0.25"), std::string::npos) << view;
  EXPECT_NE(view.find("host RSS 10.00 MiB"), std::string::npos) << view;
  EXPECT_NE(view.find("71 °C, 97 % busy"), std::string::npos) << view;
  EXPECT_FALSE(state.ended());
  // Silent for longer than five minutes: said, not hidden.
  view = joined(state.render(140.0 + 400.0, 8));
  EXPECT_NE(view.find("stalled, or killed without an exit line"), std::string::npos) << view;

  state.consume(R"({"event":"signal","time":141,"step":40,"signal":15,"rank":0})");
  state.consume(R"({"event":"exit","time":141.5,"status":"interrupted","exit_code":75,)"
                R"("step":40,"message":"stopped by SIGTERM"})");
  view = joined(state.render(142.0, 8));
  EXPECT_NE(view.find("exited (interrupted): waiting for a resume"), std::string::npos) << view;
  EXPECT_FALSE(state.ended());

  state.consume(R"({"event":"resumed","time":150,"step":40,"micro_batch":16})");
  state.consume(R"({"event":"oom_retry","time":150.5,"step":41,"micro_batch":16})");
  for (int s = 41; s <= 100; ++s) state.consume(step_line(s, 110.0 + s));
  state.consume(R"({"event":"exit","time":211,"status":"completed","exit_code":0,"step":100,)"
                R"("message":""})");
  view = joined(state.render(212.0, 3));
  EXPECT_TRUE(state.ended());
  EXPECT_TRUE(state.completed());
  EXPECT_NE(view.find("ended: completed"), std::string::npos) << view;
  EXPECT_NE(view.find("1 out of memory, 0 rollbacks, 1 resume"), std::string::npos) << view;
  EXPECT_NE(view.find("exit "), std::string::npos) << view;
  EXPECT_EQ(view.find("signal "), std::string::npos) << "only the last 3 events: " << view;

  // A garbage line is counted, not fatal.
  state.consume("{\"event\":\"st");
  EXPECT_NE(joined(state.render(212.0, 0)).find("1 torn or unreadable line"), std::string::npos);
}

TEST(WatchState, StopsForGoodOnAFailedExitOrWhenTheSupervisorGivesUp) {
  WatchState anomaly;
  anomaly.consume(R"({"event":"started","time":1,"total_steps":10,"micro_batch":1,"ranks":1})");
  anomaly.consume(R"({"event":"exit","time":2,"status":"anomaly","exit_code":1,"step":3,)"
                  R"("message":"anomaly at step 4"})");
  EXPECT_TRUE(anomaly.ended());
  EXPECT_FALSE(anomaly.completed());

  WatchState restarts;
  restarts.consume(R"({"event":"started","time":1,"total_steps":10,"micro_batch":1,"ranks":1})");
  restarts.consume(R"({"event":"exit","time":2,"status":"restart","exit_code":75,"step":3})");
  EXPECT_FALSE(restarts.ended());
  restarts.consume(R"({"event":"supervisor_exit","time":3,"exit_code":75,)"
                   R"("reason":"5 restarts spent","restarts":5})");
  EXPECT_TRUE(restarts.ended());
  EXPECT_NE(joined(restarts.render(4, 0)).find("5 restarts spent"), std::string::npos);
}

std::string rank_step_line(std::int64_t step, double time, double seconds) {
  return R"({"event":"step","time":)" + std::to_string(time) + R"(,"step":)" +
         std::to_string(step) + R"(,"micro_batch":16,"seconds":)" + std::to_string(seconds) +
         R"(,"slowest_seconds":1.5,"slowest_rank":1,"allocated":0,"reserved":0})";
}

TEST(WatchState, EveryRankHasALaneAndItsOwnWarnings) {
  WatchState state;
  state.consume(R"({"event":"started","time":100,"total_steps":50,"micro_batch":16,"ranks":3})");
  for (int s = 1; s <= 10; ++s) state.consume(step_line(s, 100.0 + s));
  for (int s = 1; s <= 9; ++s) state.consume_rank(1, rank_step_line(s, 100.0 + s, 1.5));
  state.consume_rank(2, R"({"event":"started","time":100,"total_steps":50,"micro_batch":16})");
  state.consume_rank(1, R"({"event":"warning","time":105,"step":5,"kind":"thermal_throttle",)"
                        R"("cause":"hot","fix":"cool it"})");
  state.consume_rank(1, R"({"event":"fault","time":106,"step":6,"kind":"hang","rank":1})");
  state.consume_rank(1, "{\"event\":\"ste");
  const std::string view = joined(state.render(111.0, 8));
  EXPECT_NE(view.find("rank 0    step 10"), std::string::npos) << view;
  EXPECT_NE(view.find("rank 1    step 9          median step 1.5 s  (slowest)"), std::string::npos)
      << view;
  EXPECT_NE(view.find("rank 2    step none yet   median step -\n"), std::string::npos) << view;
  EXPECT_EQ(view.find("rank 0    step 10         median step 500 ms  (slowest)"), std::string::npos)
      << view;
  EXPECT_NE(view.find("rank=1 cause=hot fix=cool it kind=thermal_throttle"), std::string::npos)
      << view;
  EXPECT_NE(view.find("1 warning"), std::string::npos) << view;
  // A fault every rank logs is counted from rank 0's log only.
  EXPECT_NE(view.find("0 faults"), std::string::npos) << view;
  EXPECT_NE(view.find("1 torn or unreadable line"), std::string::npos) << view;
}

TEST(WatchCommand, FollowsTheLogOfEveryRank) {
  const fs::path dir = fresh_dir("ranks");
  {
    std::ofstream rank0(dir / "events.jsonl");
    rank0 << R"({"event":"started","time":100,"total_steps":50,"micro_batch":16,"ranks":2})"
          << "\n";
    for (int s = 1; s <= 4; ++s) rank0 << step_line(s, 100.0 + s) << "\n";
    std::ofstream rank1(dir / "events-rank-1.jsonl");
    for (int s = 1; s <= 3; ++s) rank1 << rank_step_line(s, 100.0 + s, 2.0) << "\n";
  }
  const testing::CommandOutput run = testing::run_command(
      std::string("'") + TENAX_CLI_PATH + "' watch " + dir.string() + " --once 2>&1");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("rank 1    step 3          median step 2 s  (slowest)"),
            std::string::npos)
      << run.output;
  fs::remove_all(dir);
}

TEST(LogFollower, WholeLinesOnlyAndALogReplacedIsReadAgain) {
  const fs::path dir = fresh_dir("follower");
  LogFollower follower(dir / "events.jsonl");
  EXPECT_FALSE(follower.exists());
  EXPECT_TRUE(follower.new_lines().empty());
  {
    std::ofstream out(dir / "events.jsonl");
    out << "{\"a\":1}\n{\"b\":";  // the second line is still being written
  }
  EXPECT_EQ(follower.new_lines(), std::vector<std::string>{"{\"a\":1}"});
  {
    std::ofstream out(dir / "events.jsonl", std::ios::app);
    out << "2}\n";
  }
  EXPECT_EQ(follower.new_lines(), std::vector<std::string>{"{\"b\":2}"});
  EXPECT_TRUE(follower.new_lines().empty());
  {
    std::ofstream out(dir / "events.jsonl", std::ios::trunc);
    out << "{\"c\":3}\n";
  }
  EXPECT_EQ(follower.new_lines(), std::vector<std::string>{"{\"c\":3}"});
  fs::remove_all(dir);
}

TEST(LogFollower, ALogLongerThanOneReadIsReadToItsEnd) {
  // A follower that reads 100 bytes at a time over a log of 200 step lines: one new_lines()
  // call sees the start only; read_all_new_lines reaches the last step (a 200 MB log and the
  // 64 MiB read of `tenax watch --once` showed step 303681 of 954501 and "stalled").
  const fs::path dir = fresh_dir("long");
  {
    std::ofstream out(dir / "events.jsonl");
    out << R"({"event":"started","time":100,"total_steps":400,"micro_batch":16,"ranks":1})"
        << "\n";
    for (int s = 1; s <= 200; ++s) out << step_line(s, 100.0 + s) << "\n";
  }
  LogFollower first(dir / "events.jsonl", 100);
  EXPECT_LT(first.new_lines().size(), 5u);
  EXPECT_TRUE(first.behind());
  LogFollower all(dir / "events.jsonl", 100);
  WatchState state;
  int lines = 0;
  read_all_new_lines(all, [&](const std::string& line) {
    ++lines;
    state.consume(line);
  });
  EXPECT_EQ(lines, 201);
  EXPECT_FALSE(all.behind());
  std::string view;
  for (const std::string& line : state.render(301.0, 0)) view += line + "\n";
  EXPECT_NE(view.find("200 / 400  (50.0 %)"), std::string::npos) << view;
  fs::remove_all(dir);
}

TEST(WatchCommand, RefusesBadDirectoriesAndValues) {
  const fs::path dir = fresh_dir("bad");
  const std::string tenax = std::string("'") + TENAX_CLI_PATH + "' watch ";
  for (const std::string& args : std::vector<std::string>{
           (dir / "missing").string(), dir.string() + " --interval 0",
           dir.string() + " --interval nan", dir.string() + " --interval 1e300",
           dir.string() + " --events 101", dir.string() + " --events -3",
           // Values that are not numbers at all: CLI11's conversion errors (exit 104 before).
           dir.string() + " --interval abc", dir.string() + " --events x", "--bogus"}) {
    const testing::CommandOutput run = testing::run_command(tenax + args + " 2>&1");
    EXPECT_EQ(run.exit_code, 2) << args << "\n" << run.output;
    EXPECT_NE(run.output.find("fix:"), std::string::npos) << args << "\n" << run.output;
  }
  fs::remove_all(dir);
}

// The live view in a terminal: tmux runs the watch; the test plays a job by appending lines.
class TmuxWatch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/tmux"))
      GTEST_SKIP() << "no /usr/bin/tmux (scripts/test.sh installs it)";
    socket_ = "tenax-watch-test-" + std::to_string(::getpid());
    dir_ = fresh_dir("tmux");
  }
  void TearDown() override {
    if (!socket_.empty()) (void)tmux("kill-server");
    fs::remove_all(dir_);
  }
  testing::CommandOutput tmux(const std::string& args) const {
    return testing::run_command("tmux -L " + socket_ + " " + args + " 2>&1");
  }
  std::string screen() const { return tmux("capture-pane -p -t watch").output; }
  // Waits up to `seconds` for `text` on the screen; returns the last screen.
  std::string wait_for(const std::string& text, double seconds = 15.0) const {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::string shown;
    while (std::chrono::steady_clock::now() < give_up) {
      shown = screen();
      if (shown.find(text) != std::string::npos) return shown;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "'" << text << "' did not appear; the screen:\n" << shown;
    return shown;
  }
  void append(const std::string& lines) const {
    std::ofstream out(dir_ / "events.jsonl", std::ios::app);
    out << lines;
  }

  std::string socket_;
  fs::path dir_;
};

TEST_F(TmuxWatch, FollowsARunLiveAndEndsWithIt) {
  const std::string command = std::string("'") + TENAX_CLI_PATH + "' watch '" + dir_.string() +
                              "' --interval 0.1; echo WATCH-EXIT=$?; sleep 60";
  ASSERT_EQ(tmux("new-session -d -s watch -x 120 -y 40 \"" + command + "\"").exit_code, 0);
  wait_for("waiting for");

  std::string lines =
      R"({"event":"started","time":1000,"total_steps":100,"micro_batch":16,"ranks":1})"
      "\n";
  for (int s = 1; s <= 40; ++s) lines += step_line(s, 1000.0 + s) + "\n";
  append(lines);
  std::string shown = wait_for("40 / 100");
  EXPECT_NE(shown.find("running (process 1"), std::string::npos) << shown;
  EXPECT_NE(shown.find("loss 0.25"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("WATCH-EXIT"), std::string::npos) << "the watch ended with the run going";

  lines = R"({"event":"oom_retry","time":1040.5,"step":41,"micro_batch":16})"
          "\n";
  for (int s = 41; s <= 100; ++s) lines += step_line(s, 1000.5 + s) + "\n";
  lines += R"({"event":"exit","time":1101,"status":"completed","exit_code":0,"step":100,)"
           R"("message":""})"
           "\n";
  append(lines);
  shown = wait_for("WATCH-EXIT=0");
  EXPECT_NE(shown.find("ended: completed"), std::string::npos) << shown;
  EXPECT_NE(shown.find("100 / 100"), std::string::npos) << shown;
  EXPECT_NE(shown.find("1 out of memory"), std::string::npos) << shown;
  EXPECT_NE(shown.find("oom_retry"), std::string::npos) << shown;
}

TEST_F(TmuxWatch, FollowsARealHeat2dRunToItsEnd) {
  const std::string watch = std::string("'") + TENAX_CLI_PATH + "' watch '" + dir_.string() +
                            "' --interval 0.1; echo WATCH-EXIT=$?; sleep 60";
  ASSERT_EQ(tmux("new-session -d -s watch -x 120 -y 40 \"" + watch + "\"").exit_code, 0);
  wait_for("waiting for");
  const testing::CommandOutput job = testing::run_command(
      std::string("'") + HEAT2D_PATH + "' --n 256 --steps 400 --checkpoint-every 100 " +
      "--device cpu --progress quiet --inject oom@alloc=20 --run-dir '" + dir_.string() + "' 2>&1");
  ASSERT_EQ(job.exit_code, 0) << job.output;
  const std::string shown = wait_for("WATCH-EXIT=0");
  EXPECT_NE(shown.find("400 / 400"), std::string::npos) << shown;
  EXPECT_NE(shown.find("1 out of memory"), std::string::npos) << shown;
  EXPECT_NE(shown.find("simulated_time"), std::string::npos) << shown;
}

}  // namespace
}  // namespace tenax::tools
