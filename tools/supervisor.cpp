#include "supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <utility>

#include "tenax/core/error.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/runtime/run_events.hpp"

extern char** environ;

namespace tenax::tools {

namespace event = runtime::event;

void validate(const SupervisorOptions& options) {
  TENAX_EXPECTS(options.max_restarts >= 0, UsageError,
                fmt::format("--max-restarts is {}, but a restart budget cannot be negative",
                            options.max_restarts),
                "pass --max-restarts 0 (never restart) or a positive count");
  TENAX_EXPECTS(options.max_restarts <= kMaxRestarts, UsageError,
                fmt::format("--max-restarts is {}, more than the {} restarts a supervisor allows",
                            options.max_restarts, kMaxRestarts),
                fmt::format("pass a count up to {}; a job that fails that often has a fault to "
                            "fix (its events.jsonl says which)",
                            kMaxRestarts));
  const auto check_seconds = [](const char* flag, double value) {
    TENAX_EXPECTS(
        std::isfinite(value) && value >= 0, UsageError,
        fmt::format("{} is {}, but a delay must be a finite number of seconds >= 0", flag, value),
        fmt::format("pass {} 0 (no delay) or a positive number of seconds", flag));
  };
  check_seconds("--restart-delay", options.restart_delay);
  check_seconds("--max-delay", options.max_delay);
  TENAX_EXPECTS(options.restart_delay <= options.max_delay, UsageError,
                fmt::format("--restart-delay {} is longer than --max-delay {}: the first restart "
                            "would wait less than asked",
                            options.restart_delay, options.max_delay),
                "pass a --restart-delay up to --max-delay, or raise --max-delay");
}

// Whether the run directory's rank-0 log ends with the Runner's exit line of a stop with a
// checkpoint (status "interrupted") written after the last start or resume: this attempt's.
// Read as every reader of a run directory reads: a regular file, never through a link.
bool log_ends_interrupted(const std::filesystem::path& run_dir) {
  const std::filesystem::path log = run_dir / "events.jsonl";
  if (file_kind(log) != FileKind::regular) return false;
  std::ifstream in(log);
  std::string line;
  bool interrupted = false;
  while (std::getline(in, line)) {
    if (line.find("\"event\":\"started\"") != std::string::npos ||
        line.find("\"event\":\"resumed\"") != std::string::npos) {
      interrupted = false;
    } else if (line.find("\"event\":\"exit\"") != std::string::npos) {
      interrupted = line.find("\"status\":\"interrupted\"") != std::string::npos;
    }
  }
  return interrupted;
}

double restart_delay(const SupervisorOptions& options, int restart) {
  // Exponent capped so that 2^k stays finite; the cap on the delay applies long before that.
  const int doublings = std::clamp(restart - 1, 0, 1000);
  return std::min(std::ldexp(options.restart_delay, doublings), options.max_delay);
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    case SIGXCPU:
      return "SIGXCPU";
    case SIGXFSZ:
      return "SIGXFSZ";
    case SIGSYS:
      return "SIGSYS";
    default:
      return fmt::format("signal {}", signal);
  }
}

namespace {

// Launchers (mpirun, srun, a shell running CMD) report a process killed by signal s as their own
// exit status 128 + s.
constexpr int kLowestSignalStatus = 129;
constexpr int kHighestSignalStatus = 128 + 64;

bool reports_signal(const JobEnd& end) noexcept {
  return !end.signaled && end.value >= kLowestSignalStatus && end.value <= kHighestSignalStatus;
}

}  // namespace

std::string describe(const JobEnd& end) {
  if (end.signaled) return "killed by " + signal_name(end.value);
  if (end.value == kRestartExitCode) return fmt::format("exit {} (restart requested)", end.value);
  if (reports_signal(end)) {
    return fmt::format("exit {} (a process was killed by {})", end.value,
                       signal_name(end.value - 128));
  }
  return fmt::format("exit {}", end.value);
}

int shell_status(const JobEnd& end) noexcept { return end.signaled ? 128 + end.value : end.value; }

bool wants_restart(const JobEnd& end) noexcept {
  return end.signaled || end.value == kRestartExitCode || reports_signal(end);
}

namespace {

constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP};

// State shared with the signal handler; only async-signal-safe types and calls.
volatile std::sig_atomic_t g_child_group = 0;      // process group of the running job, 0: none
volatile std::sig_atomic_t g_shutdown_signal = 0;  // the first forwarded signal, 0: none
int g_wake_fd = -1;                                // write end of the self-pipe
bool g_active = false;                             // a Supervisor::run() is in progress

extern "C" void forward_signal(int signal) {
  const int saved_errno = errno;
  if (g_shutdown_signal == 0) g_shutdown_signal = signal;
  // Every signal is forwarded, not just the first: a second Ctrl-C is how a user insists.
  const pid_t group = g_child_group;
  if (group > 0) ::kill(-group, signal);
  // Wakes a restart delay in poll(); the pipe is non-blocking, so a full pipe loses nothing.
  if (g_wake_fd >= 0) [[maybe_unused]]
    const ssize_t n = ::write(g_wake_fd, "", 1);
  errno = saved_errno;
}

// Installs the forwarding handlers and the self-pipe for one run(); restores everything after.
class SignalForwarding {
 public:
  SignalForwarding() {
    TENAX_EXPECTS(!g_active, UsageError,
                  "a tenax::tools::Supervisor is already running in this process",
                  "run one supervisor per process; its signal handlers are process-wide");
    if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw EnvironmentError(
          fmt::format("cannot create the supervisor's signal pipe: {}", std::strerror(errno)),
          "raise the open-file limit (ulimit -n) or free file descriptors");
    }
    g_active = true;
    g_shutdown_signal = 0;
    g_child_group = 0;
    g_wake_fd = pipe_[1];
    sigemptyset(&handled_);
    struct sigaction action {};
    action.sa_handler = forward_signal;
    sigemptyset(&action.sa_mask);
    for (int signal : kForwardedSignals) sigaddset(&action.sa_mask, signal);
    for (std::size_t i = 0; i < std::size(kForwardedSignals); ++i) {
      const int signal = kForwardedSignals[i];
      ::sigaction(signal, nullptr, &previous_[i]);
      // Ignored at start means whoever started us wants it ignored (nohup, `&` in a script).
      if (previous_[i].sa_handler == SIG_IGN) continue;
      ::sigaction(signal, &action, nullptr);
      sigaddset(&handled_, signal);
    }
    // With SIGCHLD ignored the kernel reaps the job itself and its status is lost.
    struct sigaction child_default {};
    child_default.sa_handler = SIG_DFL;
    ::sigaction(SIGCHLD, &child_default, &previous_child_);
  }

  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

  ~SignalForwarding() {
    ::sigaction(SIGCHLD, &previous_child_, nullptr);
    for (std::size_t i = 0; i < std::size(kForwardedSignals); ++i) {
      if (sigismember(&handled_, kForwardedSignals[i])) {
        ::sigaction(kForwardedSignals[i], &previous_[i], nullptr);
      }
    }
    g_wake_fd = -1;
    g_child_group = 0;
    g_active = false;
    ::close(pipe_[0]);
    ::close(pipe_[1]);
  }

  // The signals that have the forwarding handler (the job gets their default action back).
  [[nodiscard]] const sigset_t& handled() const noexcept { return handled_; }

  // Sleeps for `seconds` or until a forwarded signal arrives, whichever comes first.
  void sleep_unless_signaled(double seconds) const {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(seconds));
    while (g_shutdown_signal == 0) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return;
      pollfd wake{pipe_[0], POLLIN, 0};
      if (::poll(&wake, 1, static_cast<int>(std::min<std::int64_t>(left, 1'000'000))) > 0) {
        char drain[64];
        while (::read(pipe_[0], drain, sizeof drain) > 0) {
        }
      }
    }
  }

 private:
  int pipe_[2] = {-1, -1};
  sigset_t handled_;
  struct sigaction previous_[std::size(kForwardedSignals)] = {};
  struct sigaction previous_child_ = {};
};

// Blocks the forwarded signals for a scope, so that the handler never sees a half-started job.
class BlockSignals {
 public:
  explicit BlockSignals(const sigset_t& signals) {
    ::pthread_sigmask(SIG_BLOCK, &signals, &previous_);
  }
  BlockSignals(const BlockSignals&) = delete;
  BlockSignals& operator=(const BlockSignals&) = delete;
  ~BlockSignals() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  [[nodiscard]] const sigset_t& previous() const noexcept { return previous_; }

 private:
  sigset_t previous_;
};

// The supervisor's environment with TENAX_RESTART_COUNT=restarts, so the job can tell.
std::vector<std::string> job_environment(int restarts) {
  constexpr std::string_view kName = "TENAX_RESTART_COUNT=";
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (std::string_view(*entry).starts_with(kName)) continue;
    env.emplace_back(*entry);
  }
  env.push_back(fmt::format("{}{}", kName, restarts));
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct SpawnResult {
  pid_t pid = -1;
  int error = 0;  // errno from posix_spawnp when pid is -1
};

// Starts the job as the leader of a new process group, with the forwarded signals at their
// default action and the signal mask the supervisor had before blocking them.
SpawnResult spawn(std::vector<std::string> argv, int restarts, const sigset_t& default_signals,
                  const sigset_t& mask) {
  std::vector<std::string> env = job_environment(restarts);
  std::vector<char*> argv_pointers = pointers(argv);
  std::vector<char*> env_pointers = pointers(env);

  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setsigdefault(&attributes, &default_signals);
  posix_spawnattr_setsigmask(&attributes, &mask);
  SpawnResult result;
  result.error = ::posix_spawnp(&result.pid, argv_pointers[0], nullptr, &attributes,
                                argv_pointers.data(), env_pointers.data());
  posix_spawnattr_destroy(&attributes);
  if (result.error != 0) result.pid = -1;
  return result;
}

// Waits until the job's leader has ended, without reaping it: while it is a zombie its pid, and
// so its process group id, cannot be reused, so signalling the group stays safe.
JobEnd wait_for_end(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0) {
    if (errno != EINTR) {
      throw EnvironmentError(
          fmt::format("cannot wait for the job (pid {}): {}", pid, std::strerror(errno)),
          "make sure nothing else in this process reaps children (SIGCHLD set to SIG_IGN)");
    }
  }
  JobEnd end;
  end.signaled = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
  end.value = info.si_status;
  return end;
}

void reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

std::int64_t i64(int value) { return value; }

}  // namespace

Supervisor::Supervisor(SupervisorOptions options, std::ostream& log)
    : options_(std::move(options)), log_(log) {}

void Supervisor::record(std::string_view event,
                        std::initializer_list<runtime::EventLog::Field> fields) {
  if (!events_ || events_failed_) return;
  try {
    events_->append(event, fields);
  } catch (const Error& e) {
    events_failed_ = true;
    log_ << "tenax run: warning: " << e.cause() << "; no more events are recorded, the job is "
         << "still supervised\n  fix: " << e.fix() << std::endl;
  }
}

int Supervisor::finish(int status, std::string_view reason, int restarts, const std::string& job) {
  record(event::supervisor_exit, {{"exit_code", i64(status)},
                                  {"reason", std::string(reason)},
                                  {"restarts", i64(restarts)},
                                  {"job", job}});
  return status;
}

int Supervisor::run(const std::vector<std::string>& command) {
  validate(options_);
  TENAX_EXPECTS(!command.empty() && !command.front().empty(), UsageError, "no command to supervise",
                "put the job after `--`: tenax run -- ./my_job ARGS...");
  if (!options_.run_dir.empty()) {
    events_ = std::make_unique<runtime::EventLog>(options_.run_dir / "events.jsonl");
  }

  SignalForwarding signals;
  record(event::supervisor_start, {{"command", join(command)},
                                   {"pid", i64(::getpid())},
                                   {"max_restarts", i64(options_.max_restarts)},
                                   {"restart_delay_s", options_.restart_delay},
                                   {"max_delay_s", options_.max_delay}});

  JobEnd last;
  for (int restarts = 0;; ++restarts) {
    pid_t pid = -1;
    {
      const BlockSignals blocked(signals.handled());
      if (g_shutdown_signal != 0) {
        // The signal came before the job started or during a restart delay: there is no job to
        // forward it to, so the status is that of the last attempt.
        if (restarts == 0) last = JobEnd{true, static_cast<int>(g_shutdown_signal)};
        log_ << "tenax run: received " << signal_name(g_shutdown_signal)
             << "; not restarting, exiting with status " << shell_status(last) << std::endl;
        return finish(shell_status(last), "shutdown", std::max(restarts - 1, 0), describe(last));
      }
      const SpawnResult started = spawn(command, restarts, signals.handled(), blocked.previous());
      if (started.pid < 0) {
        const bool missing = started.error == ENOENT;
        log_ << "tenax run: cannot start '" << command.front()
             << "': " << std::strerror(started.error) << "\n  fix: "
             << (missing ? "check the command's spelling, and give its path or add its folder "
                           "to PATH"
                         : "check that the file is an executable program or a script with a "
                           "#! line and that you may execute it")
             << std::endl;
        return finish(missing ? 127 : 126, "spawn_failed", restarts, std::strerror(started.error));
      }
      pid = started.pid;
      // Set while the signals are blocked: a signal pending from before is forwarded to the job
      // as soon as they are unblocked.
      g_child_group = pid;
    }

    const JobEnd end = wait_for_end(pid);
    g_child_group = 0;
    last = end;
    const std::string what = describe(end);
    const int status = shell_status(end);

    if (g_shutdown_signal != 0) {
      reap(pid);
      // A launcher (mpirun) may end with its own status (1) after its ranks stopped with a
      // checkpoint and exit 75: the run directory tells, and the supervisor says what they did.
      int shutdown_status = status;
      if (status != 0 && status != kRestartExitCode && !end.signaled && !options_.run_dir.empty() &&
          log_ends_interrupted(options_.run_dir)) {
        shutdown_status = kRestartExitCode;
        log_ << "tenax run: the job's launcher ended with " << what
             << ", but the job stopped with a checkpoint (its events.jsonl ends \"interrupted\")"
             << std::endl;
      }
      log_ << "tenax run: the job ended: " << what << ", after the supervisor received "
           << signal_name(g_shutdown_signal) << "; not restarting, exiting with status "
           << shutdown_status << std::endl;
      return finish(shutdown_status, "shutdown", restarts, what);
    }
    if (!wants_restart(end)) {
      reap(pid);
      if (status != 0) {
        log_ << "tenax run: the job ended: " << what
             << ", which is final (only exit 75 or a signal means restart); exiting with status "
             << status << std::endl;
      }
      return finish(status, status == 0 ? "done" : "job_failed", restarts, what);
    }
    // Stray members of the failed attempt must not overlap with the next one. The leader is
    // still a zombie here, so the group id cannot belong to anyone else.
    ::kill(-pid, SIGKILL);
    reap(pid);

    if (restarts >= options_.max_restarts) {
      log_ << "tenax run: the job ended: " << what << "; the restart budget is exhausted ("
           << options_.max_restarts << " restart" << (options_.max_restarts == 1 ? "" : "s")
           << " used); exiting with status " << status
           << "\n  fix: read the job's output above for why it keeps failing and fix that, then "
              "run the same `tenax run` command again (the job resumes from its last checkpoint), "
              "or allow more restarts with --max-restarts"
           << std::endl;
      return finish(status, "budget_exhausted", restarts, what);
    }

    const int attempt = restarts + 1;
    const double delay = restart_delay(options_, attempt);
    log_ << "tenax run: the job ended: " << what << "; restart " << attempt << "/"
         << options_.max_restarts << " in " << fmt::format("{:g}", delay) << " s" << std::endl;
    if (end.signaled) {
      record(event::restart, {{"attempt", i64(attempt)},
                              {"max_restarts", i64(options_.max_restarts)},
                              {"reason", what},
                              {"signal", i64(end.value)},
                              {"signal_name", signal_name(end.value)},
                              {"delay_s", delay}});
    } else {
      record(event::restart, {{"attempt", i64(attempt)},
                              {"max_restarts", i64(options_.max_restarts)},
                              {"reason", what},
                              {"exit_code", i64(end.value)},
                              {"delay_s", delay}});
    }
    signals.sleep_unless_signaled(delay);
  }
}

}  // namespace tenax::tools
