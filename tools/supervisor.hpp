// `tenax run -- CMD ARGS...`: the supervisor. It starts CMD, and when CMD asks to be restarted
// (exit status 75, kRestartExitCode) or dies from a signal (a crash, the OOM killer, `kill -9`),
// starts it again after a growing delay, up to a restart budget; the job resumes from its last
// checkpoint. Any other exit status is final: 0 means done, anything else is a bug or misuse that
// a restart would only repeat.
//
// Signals: CMD runs in a process group of its own, and SIGTERM, SIGINT and SIGHUP received by the
// supervisor are forwarded to that whole group. The group, not just the direct child, because CMD
// is often a launcher or wrapper (`mpirun ...`, `sh -c ...`, `srun ...`) that does not pass
// signals on to its local ranks or children; with the group, every local process of the job gets
// the signal and can checkpoint (a rank that also gets it from its launcher sees it twice, which
// a job that sets a "stop after this step" flag tolerates). The group of its own also means a
// Ctrl-C on the terminal reaches the supervisor only, which forwards it once. After such a
// signal the supervisor is shutting down: it waits for CMD, does not restart it, whatever its
// status, and exits with CMD's status. Signals the supervisor was started with ignored (nohup,
// `&` in a script) stay ignored, for it and for CMD. The price of the group of its own: CMD is not
// in the terminal's foreground group, so it cannot read from the terminal (batch jobs do not).
//
// Before a restart the rest of the failed attempt's process group gets SIGKILL, so that no stray
// process of the old attempt (a rank whose launcher died) runs next to its replacement and writes
// to the same checkpoint files.
//
// Exit status, like a shell's: CMD's exit status, or 128 + s when CMD was killed by signal s;
// 127 (126) when CMD cannot be found (executed).
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tenax/runtime/event_log.hpp"

namespace CLI {
class App;
}

namespace tenax::tools {

// The largest --max-restarts: a job that needs more restarts than this has a fault to fix.
inline constexpr std::int64_t kMaxRestarts = 1'000'000;

struct SupervisorOptions {
  // Restarts allowed after the first attempt; 0 never restarts; at most kMaxRestarts.
  std::int64_t max_restarts = 3;
  double restart_delay = 1.0;  // seconds before the first restart; doubles for each next one
  double max_delay = 60.0;     // seconds: the cap of the growing delay
  // Where events.jsonl is appended (supervisor_start, restart, supervisor_exit); empty: nowhere.
  std::filesystem::path run_dir;
};

// Throws UsageError (with the flag, the value and the fix) for a negative or non-finite value.
void validate(const SupervisorOptions& options);

// Seconds to wait before restart number `restart` (1 for the first):
// min(restart_delay * 2^(restart - 1), max_delay).
[[nodiscard]] double restart_delay(const SupervisorOptions& options, int restart);

// How one attempt of CMD ended.
struct JobEnd {
  bool signaled = false;  // killed by a signal (`value` is the signal), else exited
  int value = 0;          // exit status or signal number
};

// "SIGKILL", or "signal 42" for a signal without a well-known name.
[[nodiscard]] std::string signal_name(int signal);
// "exit 0", "exit 75 (restart requested)", "killed by SIGKILL".
[[nodiscard]] std::string describe(const JobEnd& end);
// The status a shell would report: the exit status, or 128 + signal.
[[nodiscard]] int shell_status(const JobEnd& end) noexcept;
// Whether the supervisor restarts after this end, budget permitting: exit 75, death by any
// signal, or an exit status 129..192, which is how mpirun, srun and shells report a process of
// theirs killed by signal status - 128 (so `tenax run -- mpirun ...` restarts a killed rank).
[[nodiscard]] bool wants_restart(const JobEnd& end) noexcept;

// Runs CMD under supervision. Installs signal handlers for the duration of run(), so only one
// Supervisor may run at a time in a process (a second concurrent run() throws UsageError).
class Supervisor {
 public:
  // `log` receives one line per decision (restart, shutdown, giving up), for humans.
  Supervisor(SupervisorOptions options, std::ostream& log);

  // Runs `command` (argv; argv[0] is looked up on PATH) until it is done, fails for good, or the
  // restart budget is spent; returns the exit status for the supervisor (see the file comment).
  // Throws UsageError for an empty command or bad options and IoError when the run directory's
  // event log cannot be opened; both before starting anything.
  [[nodiscard]] int run(const std::vector<std::string>& command);

 private:
  // Appends to events.jsonl when there is a run directory. A failure to write is reported once
  // and otherwise ignored: losing an event line must not stop the supervision of the job.
  void record(std::string_view event, std::initializer_list<runtime::EventLog::Field> fields);
  int finish(int status, std::string_view reason, int restarts, const std::string& job);

  SupervisorOptions options_;
  std::ostream& log_;
  std::unique_ptr<runtime::EventLog> events_;
  bool events_failed_ = false;
};

// Adds the `run` subcommand to the CLI; running it stores the supervisor's exit status in
// `exit_code`. The run directory defaults to $TENAX_RUN_DIR.
void add_run_command(CLI::App& app, int& exit_code);

}  // namespace tenax::tools
