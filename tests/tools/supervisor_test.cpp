// The supervisor: its pure rules (delay schedule, status wording) in-process, and `tenax run`
// end to end, running the built binary with small sh scripts as the job. A script counts its
// attempts in a file under $WORK, the test's own directory.
#include "supervisor.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tenax/core/error.hpp"

extern char** environ;

namespace tenax::tools {
namespace {

namespace fs = std::filesystem;

// ---- The rules, in-process -------------------------------------------------------------------

TEST(SupervisorRules, DelayDoublesFromTheFirstAndIsCapped) {
  const SupervisorOptions options{.max_restarts = 100, .restart_delay = 1.0, .max_delay = 60.0};
  EXPECT_EQ(restart_delay(options, 1), 1.0);
  EXPECT_EQ(restart_delay(options, 2), 2.0);
  EXPECT_EQ(restart_delay(options, 6), 32.0);
  EXPECT_EQ(restart_delay(options, 7), 60.0);
  EXPECT_EQ(restart_delay(options, 100000), 60.0);  // no overflow to inf
  EXPECT_EQ(restart_delay({.restart_delay = 0.0}, 5), 0.0);
  EXPECT_EQ(restart_delay({.restart_delay = 5.0, .max_delay = 0.0}, 1), 0.0);
}

TEST(SupervisorRules, RestartsOnlyOnExit75OrASignal) {
  EXPECT_TRUE(wants_restart({.signaled = false, .value = kRestartExitCode}));
  EXPECT_TRUE(wants_restart({.signaled = true, .value = SIGKILL}));
  EXPECT_TRUE(wants_restart({.signaled = true, .value = SIGSEGV}));
  EXPECT_FALSE(wants_restart({.signaled = false, .value = 0}));
  EXPECT_FALSE(wants_restart({.signaled = false, .value = 1}));
  // mpirun, srun and shells report a process killed by signal s as exit status 128 + s.
  EXPECT_TRUE(wants_restart({.signaled = false, .value = 137}));
  EXPECT_TRUE(wants_restart({.signaled = false, .value = 139}));
  EXPECT_FALSE(wants_restart({.signaled = false, .value = 128}));
  EXPECT_FALSE(wants_restart({.signaled = false, .value = 193}));
  EXPECT_FALSE(wants_restart({.signaled = false, .value = 2}));
}

TEST(SupervisorRules, DescribesAndConvertsLikeAShell) {
  EXPECT_EQ(describe({false, 75}), "exit 75 (restart requested)");
  EXPECT_EQ(describe({false, 3}), "exit 3");
  EXPECT_EQ(describe({true, SIGKILL}), "killed by SIGKILL");
  EXPECT_EQ(describe({false, 137}), "exit 137 (a process was killed by SIGKILL)");
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGRTMIN + 1), "signal " + std::to_string(SIGRTMIN + 1));
  EXPECT_EQ(shell_status({true, SIGKILL}), 137);
  EXPECT_EQ(shell_status({false, 75}), 75);
}

TEST(SupervisorRules, RejectsNegativeAndNonFiniteNumbers) {
  EXPECT_THROW(validate({.max_restarts = -1}), UsageError);
  EXPECT_THROW(validate({.restart_delay = -0.5}), UsageError);
  EXPECT_THROW(validate({.max_delay = std::numeric_limits<double>::infinity()}), UsageError);
  EXPECT_THROW(validate({.restart_delay = std::nan("")}), UsageError);
  EXPECT_NO_THROW(validate({.max_restarts = 0, .restart_delay = 0, .max_delay = 0}));
  std::ostringstream log;
  Supervisor supervisor({}, log);
  EXPECT_THROW(static_cast<void>(supervisor.run({})), UsageError);
}

TEST(SupervisorRules, RunsInProcessAndGivesUpAfterTheBudget) {
  std::ostringstream log;
  Supervisor supervisor({.max_restarts = 1, .restart_delay = 0.0}, log);
  EXPECT_EQ(supervisor.run({"sh", "-c", "exit 75"}), 75);
  EXPECT_NE(log.str().find("restart 1/1"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("restart budget is exhausted"), std::string::npos) << log.str();
}

// ---- `tenax run`, end to end -----------------------------------------------------------------

struct Result {
  int exit_code = -1;  // -1 when the supervisor itself did not exit normally
  std::string err;     // what it wrote to stderr
};

class TenaxRun : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    work_ = fs::temp_directory_path() /
            ("tenax-supervisor-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(work_);
    fs::create_directories(work_);
  }
  void TearDown() override { fs::remove_all(work_); }

  // Starts `tenax ARGS...` with WORK=<this test's directory> (and `extra_env`) added to its
  // environment, stdout and stderr going to files; returns its pid.
  pid_t start(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {},
              bool run_dir_from_env_allowed = false) {
    std::vector<std::string> argv{TENAX_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry(*e);
      // The developer's own settings must not leak into what the test checks.
      if (entry.starts_with("TENAX_RESTART_COUNT=")) continue;
      if (!run_dir_from_env_allowed && entry.starts_with("TENAX_RUN_DIR=")) continue;
      env.push_back(entry);
    }
    env.push_back("WORK=" + work_.string());
    env.insert(env.end(), extra_env.begin(), extra_env.end());

    std::vector<char*> argv_p, env_p;
    for (auto& s : argv) argv_p.push_back(s.data());
    argv_p.push_back(nullptr);
    for (auto& s : env) env_p.push_back(s.data());
    env_p.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, (work_ / "stdout").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, (work_ / "stderr").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int error = posix_spawn(&pid, argv_p[0], &actions, nullptr, argv_p.data(), env_p.data());
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(error, 0) << "cannot start " << TENAX_CLI_PATH;
    return pid;
  }

  // Waits for the supervisor; after 60 s kills it, and the job whose pid `job_pid_file` holds,
  // so that a supervisor that never returns fails the test instead of hanging it.
  Result wait(pid_t pid, const fs::path& job_pid_file = {}) {
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool killed = false;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (!killed && std::chrono::steady_clock::now() > deadline) {
        killed = true;
        ADD_FAILURE() << "tenax run did not exit within 60 s; killing it";
        ::kill(pid, SIGKILL);
        int job = 0;
        if (!job_pid_file.empty() && (std::ifstream(job_pid_file) >> job) && job > 0) {
          ::kill(-job, SIGKILL);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read(work_ / "stderr")};
  }

  Result run(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {}) {
    return wait(start(args, extra_env));
  }

  // `tenax run --restart-delay 0 [flags] -- sh -c SCRIPT`.
  Result run_script(const std::string& script, const std::vector<std::string>& flags = {},
                    const std::vector<std::string>& extra_env = {}) {
    std::vector<std::string> args{"run", "--restart-delay", "0"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "sh", "-c", script});
    return run(args, extra_env);
  }

  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  // How many attempts a script that starts with kCountAttempt made.
  int attempts() const {
    std::ifstream in(work_ / "count");
    int n = 0;
    in >> n;
    return n;
  }

  std::vector<nlohmann::json> events(const std::string& type) const {
    std::vector<nlohmann::json> out;
    std::ifstream in(work_ / "run" / "events.jsonl");
    for (std::string line; std::getline(in, line);) {
      nlohmann::json event = nlohmann::json::parse(line);
      if (type.empty() || event.at("event") == type) out.push_back(std::move(event));
    }
    return out;
  }

  bool wait_for_file(const fs::path& path) const {
    for (int i = 0; i < 1000 && !fs::exists(path); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return fs::exists(path);
  }

  // Sets $n to the number of earlier attempts and counts this one.
  static constexpr const char* kCountAttempt =
      "n=$(cat \"$WORK/count\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$WORK/count\"; ";

  fs::path work_;
};

#define EXPECT_CONTAINS(haystack, needle)                                                    \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "no \"" << (needle) << "\" in:\n" \
                                                        << (haystack)

TEST_F(TenaxRun, RestartsOnExit75UntilTheJobSucceeds) {
  const Result r = run_script(std::string(kCountAttempt) + "[ \"$n\" -ge 2 ] && exit 0; exit 75",
                              {"--run-dir", (work_ / "run").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(attempts(), 3);
  EXPECT_CONTAINS(r.err, "exit 75 (restart requested); restart 1/3");
  EXPECT_CONTAINS(r.err, "restart 2/3");

  const auto all = events("");
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all.front().at("event"), "supervisor_start");
  EXPECT_EQ(all.back().at("event"), "supervisor_exit");
  EXPECT_EQ(all.back().at("exit_code"), 0);
  EXPECT_EQ(all.back().at("restarts"), 2);
  const auto restarts = events("restart");
  ASSERT_EQ(restarts.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(restarts[k].at("attempt"), k + 1);
    EXPECT_EQ(restarts[k].at("reason"), "exit 75 (restart requested)");
    EXPECT_EQ(restarts[k].at("exit_code"), 75);
    EXPECT_GT(restarts[k].at("time").get<double>(), 1.7e9);
  }
}

TEST_F(TenaxRun, RestartsAfterTheJobIsKilled) {
  const Result r = run_script(std::string(kCountAttempt) + "[ \"$n\" -eq 0 ] && kill -9 $$; exit 0",
                              {"--run-dir", (work_ / "run").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(attempts(), 2);
  EXPECT_CONTAINS(r.err, "killed by SIGKILL; restart 1/3");
  const auto restarts = events("restart");
  ASSERT_EQ(restarts.size(), 1u);
  EXPECT_EQ(restarts[0].at("signal"), SIGKILL);
  EXPECT_EQ(restarts[0].at("signal_name"), "SIGKILL");
  EXPECT_EQ(restarts[0].at("reason"), "killed by SIGKILL");
}

TEST_F(TenaxRun, NeverRestartsOnOtherExitCodes) {
  const Result r = run_script(std::string(kCountAttempt) + "exit 1");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(attempts(), 1);
  EXPECT_EQ(r.err.find("restart 1/"), std::string::npos) << r.err;
  EXPECT_CONTAINS(r.err, "exit 1, which is final");
}

TEST_F(TenaxRun, GivesUpWithTheLastStatusWhenTheBudgetIsSpent) {
  Result r = run_script(std::string(kCountAttempt) + "exit 75",
                        {"--max-restarts", "2", "--run-dir", (work_ / "run").string()});
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_EQ(attempts(), 3);
  EXPECT_CONTAINS(r.err, "restart budget is exhausted");
  EXPECT_CONTAINS(r.err, "--max-restarts");
  ASSERT_EQ(events("restart").size(), 2u);
  EXPECT_EQ(events("supervisor_exit").at(0).at("reason"), "budget_exhausted");

  // A job that keeps getting killed: 128 + the signal, as a shell reports it.
  fs::remove(work_ / "count");
  r = run_script(std::string(kCountAttempt) + "kill -9 $$", {"--max-restarts", "1"});
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  EXPECT_EQ(attempts(), 2);
  EXPECT_CONTAINS(r.err, "restart budget is exhausted");
}

// A budget beyond what an int holds was "Could not convert"; beyond the supervisor's ceiling it
// is refused naming the flag, the ceiling and the fix, before the job starts.
TEST_F(TenaxRun, AHugeMaxRestartsIsRefusedWithTheCeiling) {
  const Result result = run_script("touch \"$WORK/ran\"", {"--max-restarts", "99999999999"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("--max-restarts is 99999999999, more than the 1000000"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("fix: pass a count up to 1000000"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(work_ / "ran"));
}

TEST_F(TenaxRun, MaxRestartsZeroNeverRestarts) {
  const Result r = run_script(std::string(kCountAttempt) + "exit 75", {"--max-restarts", "0"});
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_EQ(attempts(), 1);
}

TEST_F(TenaxRun, ForwardsSigtermAndDoesNotRestart) {
  // The trap exits 75, which would normally mean "restart me": a supervisor that is shutting down
  // must exit with it instead.
  const pid_t pid = start(
      {"run", "--restart-delay", "0", "--run-dir", (work_ / "run").string(), "--", "sh", "-c",
       std::string(kCountAttempt) + "trap 'touch \"$WORK/got_term\"; exit 75' TERM; "
                                    "echo $$ > \"$WORK/ready\"; while :; do sleep 0.05; done"});
  ASSERT_TRUE(wait_for_file(work_ / "ready"));
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const Result r = wait(pid, work_ / "ready");
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_TRUE(fs::exists(work_ / "got_term"));
  EXPECT_EQ(attempts(), 1);
  EXPECT_CONTAINS(r.err, "received SIGTERM; not restarting");
  EXPECT_TRUE(events("restart").empty());
  EXPECT_EQ(events("supervisor_exit").at(0).at("reason"), "shutdown");
}

TEST_F(TenaxRun, ALauncherThatEndsWith1AfterItsRanksStoppedWithACheckpointExits75) {
  // mpirun ends with 1 when its ranks exit 75 on SIGTERM; the ranks' log says they stopped with a
  // checkpoint ("interrupted"), so the supervisor exits 75: resume by running again.
  const fs::path run = work_ / "run";
  fs::create_directories(run);
  const auto script = [&](const std::string& name, const std::string& first_event,
                          const std::string& on_term) {
    std::ofstream(work_ / name) << kCountAttempt << "echo '" << first_event
                                << "' >> \"$RUN/events.jsonl\"\n"
                                << "trap '" << on_term << "' TERM\n"
                                << "echo $$ > \"$WORK/ready\"\nwhile :; do sleep 0.05; done\n";
    return (work_ / name).string();
  };
  const std::string stops = script(
      "stops.sh", R"({"event":"started","time":1})",
      R"(echo "{\"event\":\"exit\",\"status\":\"interrupted\"}" >> "$RUN/events.jsonl"; exit 1)");
  const pid_t pid =
      start({"run", "--restart-delay", "0", "--run-dir", run.string(), "--", "sh", stops},
            {"RUN=" + run.string()});
  ASSERT_TRUE(wait_for_file(work_ / "ready"));
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const Result r = wait(pid, work_ / "ready");
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_CONTAINS(r.err, "but the job stopped with a checkpoint");
  // A launcher that failed without its ranks saying so (no exit line after the resume): its own
  // status.
  fs::remove(work_ / "ready");
  const std::string fails = script("fails.sh", R"({"event":"resumed","time":2})", "exit 1");
  const pid_t other =
      start({"run", "--restart-delay", "0", "--run-dir", run.string(), "--", "sh", fails},
            {"RUN=" + run.string()});
  ASSERT_TRUE(wait_for_file(work_ / "ready"));
  ASSERT_EQ(::kill(other, SIGTERM), 0);
  EXPECT_EQ(wait(other, work_ / "ready").exit_code, 1);
}

TEST_F(TenaxRun, AJobKilledByTheForwardedSignalReportsItLikeAShell) {
  const pid_t pid = start(
      {"run", "--restart-delay", "0", "--", "sh", "-c",
       std::string(kCountAttempt) + "echo $$ > \"$WORK/ready\"; while :; do sleep 0.05; done"});
  ASSERT_TRUE(wait_for_file(work_ / "ready"));
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const Result r = wait(pid, work_ / "ready");
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_EQ(attempts(), 1);
}

TEST_F(TenaxRun, ASignalDuringTheRestartDelayEndsItAtOnce) {
  const pid_t pid = start(
      {"run", "--restart-delay", "30", "--", "sh", "-c", std::string(kCountAttempt) + "exit 75"});
  for (int i = 0; i < 1000 && read(work_ / "stderr").find("restart 1/3") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto signaled = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const Result r = wait(pid);
  EXPECT_LT(std::chrono::steady_clock::now() - signaled, std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_EQ(attempts(), 1);
  EXPECT_CONTAINS(r.err, "received SIGTERM; not restarting");
}

TEST_F(TenaxRun, TellsTheJobHowOftenItWasRestarted) {
  // A stale value in the supervisor's own environment must not reach the job.
  const Result r = run_script(std::string(kCountAttempt) +
                                  "echo \"$TENAX_RESTART_COUNT\" >> \"$WORK/seen\"; "
                                  "[ \"$n\" -ge 2 ] && exit 0; exit 75",
                              {}, {"TENAX_RESTART_COUNT=7"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read(work_ / "seen"), "0\n1\n2\n");
}

TEST_F(TenaxRun, TakesTheRunDirectoryFromTheEnvironment) {
  const pid_t pid =
      start({"run", "--", "sh", "-c", "exit 0"}, {"TENAX_RUN_DIR=" + (work_ / "run").string()},
            /*run_dir_from_env_allowed=*/true);
  EXPECT_EQ(wait(pid).exit_code, 0);
  EXPECT_EQ(events("supervisor_start").size(), 1u);
  EXPECT_EQ(events("supervisor_exit").size(), 1u);
}

TEST_F(TenaxRun, KillsStrayProcessesOfAFailedAttemptBeforeRestarting) {
  // The first attempt leaves a background process behind in its process group, then asks to be
  // restarted; that process must be gone once the supervisor has restarted the job.
  const Result r = run_script(std::string(kCountAttempt) +
                              "if [ \"$n\" -eq 0 ]; then sleep 60 & echo $! > \"$WORK/stray\"; "
                              "exit 75; fi; exit 0");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  int stray = 0;
  std::ifstream(work_ / "stray") >> stray;
  ASSERT_GT(stray, 0);
  // Gone, or a zombie waiting for init to reap it.
  const auto alive = [stray] {
    std::ifstream stat("/proc/" + std::to_string(stray) + "/stat");
    std::string pid, name, state;
    return static_cast<bool>(stat >> pid >> name >> state) && state != "Z";
  };
  for (int i = 0; i < 500 && alive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(alive()) << "pid " << stray;
}

TEST_F(TenaxRun, BadArgumentsAreUsageErrors) {
  Result r = run({"run"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_CONTAINS(r.err, "no command to supervise");
  EXPECT_CONTAINS(r.err, "tenax run -- ");

  r = run({"run", "--max-restarts", "2", "--"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_CONTAINS(r.err, "no command to supervise");

  r = run({"run", "--max-restarts", "-1", "--", "true"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_CONTAINS(r.err, "--max-restarts is -1");

  r = run({"run", "--restart-delay", "-2", "--", "true"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_CONTAINS(r.err, "--restart-delay is -2");

  r = run({"run", "--max-delay", "-1", "--", "true"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_CONTAINS(r.err, "--max-delay is -1");

  r = run({"run", "--max-restarts", "many", "--", "true"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_CONTAINS(r.err, "--max-restarts");
}

TEST_F(TenaxRun, AnUnusableRunDirectoryStopsItBeforeTheJobStarts) {
  const Result r = run_script(std::string(kCountAttempt) + "exit 0",
                              {"--run-dir", "/proc/tenax-cannot-create-this/run"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(attempts(), 0);
  EXPECT_CONTAINS(r.err, "event log");
  EXPECT_CONTAINS(r.err, "fix:");
}

TEST_F(TenaxRun, AMissingCommandExitsLikeAShell) {
  const Result r = run({"run", "--", "tenax-no-such-command-anywhere"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_CONTAINS(r.err, "cannot start 'tenax-no-such-command-anywhere'");
  EXPECT_CONTAINS(r.err, "PATH");
}

TEST_F(TenaxRun, PassesTheJobsOwnFlagsThrough) {
  // Everything after CMD belongs to CMD, including flags that look like the supervisor's.
  const Result r = run({"run", "--restart-delay", "0", "--", "sh", "-c",
                        "[ \"$1\" = --max-restarts ] && [ \"$2\" = 9 ] && exit 0; exit 2", "sh",
                        "--max-restarts", "9"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace tenax::tools
