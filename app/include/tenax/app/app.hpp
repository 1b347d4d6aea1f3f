/// App: a job's program around its Workload. It declares the job's settings once (setting.hpp)
/// beside the standard ones every tenax job has, reads them from the command line, the
/// environment and a file, checks them, answers `--help`, `--version` and `--print-config`,
/// builds the communicator and the device, runs the Workload under a Runner with the stored
/// configuration and resume policy the declarations give, and ends the program with one line and
/// the exit code of what happened. @file
///
/// A job's whole main():
/// @code
///   tenax::app::App app("cooling", "bodies cooling towards the room's temperature",
///                       {.steps = 2000, .checkpoint_every = 100});
///   auto& bodies = app.setting("bodies", std::int64_t{1000}, "bodies to cool").at_least(1);
///   auto& rate = app.setting("rate", 0.5, "cooling rate k per second").above(0.0);
///   return app.main(argc, argv, [&](tenax::app::Job& job) {
///     Cooling cooling(bodies(), rate());
///     return job.run(cooling).exit_code;
///   });
/// @endcode
///
/// The standard settings (App::Standard), with the meaning they have in every job:
/// `--run-dir`, `--steps`, `--checkpoint-every`, `--checkpoint-seconds`, `--keep-last`,
/// `--async`, `--inject`, `--progress`, `--anomaly-check-every`, `--digest-every`,
/// `--allow-config-change`, `--device`, `--comm`, `--comm-timeout`, `--telemetry-seconds`,
/// `--profile`; and `--help`,
/// `--version`, `--print-config`, `--config FILE`. Of them only `--steps` is recorded (free to
/// change on resume).
///
/// A switch (a bool setting) is set by `--NAME` and cleared by `--no-NAME` or `--NAME=false`.
///
/// Sources, later ones winning: the declared defaults; `--config FILE` (lines `name = value`,
/// `#` comments: the format `--print-config` writes); the environment variable TENAX_ARGS (flags
/// as on the command line, separated by spaces); the command line.
///
/// Thread-safety: one App per process, used from the thread that runs main().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenax/app/setting.hpp"
#include "tenax/core/device.hpp"
#include "tenax/io/run_config.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/runner.hpp"

namespace tenax::app {

/// A program's own defaults of the standard settings (App's constructor).
struct RunDefaults {
  /// `--steps`; 0: the program derives its step count itself (no `--steps` flag; it sets
  /// RunnerOptions::total_steps and calls Job::run(workload, options)).
  std::int64_t steps = 100;
  std::int64_t checkpoint_every = 0;  ///< `--checkpoint-every` (0: off)
  double checkpoint_seconds = 0;      ///< `--checkpoint-seconds` (0: off)
  int keep_last = 3;                  ///< `--keep-last`
  std::string run_dir;                ///< `--run-dir`; "" for `runs/<program>`
  /// Whether the program divides its work across ranks (uses Job::communicator()). One that does
  /// not refuses a launch of several processes, which would run the whole job once per rank.
  bool divides_work_across_ranks = false;
};

class App;

/// What the job's body is given: the settings read, the communicator and device made, and the
/// Runner to run its Workload under.
class Job {
 public:
  /// This process's rank's communicator (one rank unless launched by mpirun/srun or `--comm`).
  [[nodiscard]] runtime::Communicator& comm() const noexcept { return *communicator_; }
  /// The same, shared (for objects that keep it).
  [[nodiscard]] const std::shared_ptr<runtime::Communicator>& communicator() const noexcept {
    return communicator_;
  }
  /// Rank 0: the rank that prints results.
  [[nodiscard]] bool leader() const noexcept { return communicator_->rank() == 0; }
  /// The device of `--device`: `auto` picks a GPU when one answers, else the CPU; on several
  /// ranks of one host a GPU request without an index takes the GPU of the local rank.
  [[nodiscard]] Device device() const noexcept { return device_; }
  /// The configuration stored with each checkpoint (every recorded setting).
  [[nodiscard]] std::string config() const;
  /// The Runner's options from the standard settings and the declarations (configuration, resume
  /// policy, program name), for a job that sets more of them before run(workload, options).
  [[nodiscard]] runtime::RunnerOptions runner_options() const;
  /// Runs `workload` to completion under a Runner with runner_options(). A run that did not
  /// complete is said on stderr (`cooling: interrupted: ...`); the result's exit_code is the
  /// program's.
  runtime::RunResult run(runtime::Workload& workload) const;
  /// The same with options of the job's own (start from runner_options()).
  runtime::RunResult run(runtime::Workload& workload, runtime::RunnerOptions options) const;

 private:
  friend class App;
  Job(const App& app, std::shared_ptr<runtime::Communicator> communicator, Device device)
      : app_(app), communicator_(std::move(communicator)), device_(device) {}
  // After the program's body: a failure (exit_code != 0) after a run that completed is written
  // into the run's event log (event::program_exit), so the log and `tenax report` do not call
  // the job a success.
  void record_exit(int exit_code) const;
  const App& app_;
  std::shared_ptr<runtime::Communicator> communicator_;
  Device device_;
  mutable std::string completed_run_dir_;  // the run directory of a run that completed
};

/// A job's program (see the file).
class App {
 public:
  /// The handles of the standard settings, for a program that reads them (the step count) or
  /// changes a default after construction.
  struct Standard {
    Setting<std::string>* run_dir;            ///< `--run-dir`
    Setting<std::int64_t>* steps;             ///< `--steps` (nullptr when RunDefaults::steps is 0)
    Setting<std::int64_t>* checkpoint_every;  ///< `--checkpoint-every`
    Setting<double>* checkpoint_seconds;      ///< `--checkpoint-seconds`
    Setting<int>* keep_last;                  ///< `--keep-last`
    Setting<bool>* async;                     ///< `--async`
    Setting<std::string>* inject;             ///< `--inject`
    Setting<std::string>* progress;           ///< `--progress`
    Setting<std::int64_t>* anomaly_check_every;              ///< `--anomaly-check-every`
    Setting<std::string>* on_repeated_anomaly;               ///< `--on-repeated-anomaly`
    Setting<std::int64_t>* digest_every;                     ///< `--digest-every`
    Setting<std::vector<std::string>>* allow_config_change;  ///< `--allow-config-change`
    Setting<std::string>* device;                            ///< `--device`
    Setting<std::string>* comm;                              ///< `--comm`
    Setting<double>* comm_timeout;                           ///< `--comm-timeout`
    Setting<double>* telemetry_seconds;                      ///< `--telemetry-seconds`
    Setting<std::string>* profile;                           ///< `--profile`
  };

  /// A program named `program` (its lock, its stored configuration, its messages) that
  /// `description` says in one line for `--help`, with its own defaults of the standard settings.
  App(std::string program, std::string description, RunDefaults defaults = {});
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  /// Declares the job's setting `name` of the type of `default_value` (see setting.hpp), listed
  /// under the current section(). Throws UsageError for a name already declared or not of
  /// letters, digits, `-` and `.`, or a declaration after main() read the sources.
  template <class T>
  Setting<std::decay_t<T>>& setting(std::string name, T default_value, std::string help) {
    auto owned = std::make_unique<Setting<std::decay_t<T>>>(
        std::move(name), std::move(default_value), std::move(help), section_);
    Setting<std::decay_t<T>>& made = *owned;
    adopt(std::move(owned));
    return made;
  }
  /// A text setting from a string literal.
  Setting<std::string>& setting(std::string name, const char* default_value, std::string help) {
    return setting(std::move(name), std::string(default_value), std::move(help));
  }
  /// Settings declared from now on are listed under `title` in `--help` (a component's settings:
  /// "Linear solver (--solver.*)").
  void section(std::string title) { section_ = std::move(title); }

  /// Runs `hook` once the sources are read, before the values are checked against each other
  /// and before `--print-config` prints them: a component that reads a setting of its own to set
  /// others (the solver's `--solver.options key=value,...`) assigns them here
  /// (SettingBase::assign). Hooks run in the order added.
  void on_parsed(std::function<void()> hook) { parsed_hooks_.push_back(std::move(hook)); }
  /// Appends entries the settings do not hold to the stored configuration: values derived from
  /// them (the digest of an input file named by a setting). They must match on resume.
  void record_also(std::function<void(io::ConfigWriter&)> entries) {
    derived_entries_.push_back(std::move(entries));
  }
  /// Records, as `key`, the XXH64 of the file that `path` names (when it names one) beside the
  /// path itself, so that a file edited in place is a change on resume and a file moved is not
  /// (declare `path` free_to_change()). Each file is read once; one that cannot be read is
  /// recorded as "(unreadable)" and the program's reader says why. A path that names something
  /// other than a regular file (a FIFO, a directory, a device; a symbolic link is followed) is
  /// refused with a UsageError naming the flag, the path, what it is and the fix, before it is
  /// opened.
  void record_file_digest(const Setting<std::string>& path, std::string key);
  /// Declares `path` a file the program writes (its --output): once the settings are read, a
  /// path that exists and is not a regular file (a device such as /dev/null, a FIFO, a
  /// directory, a symbolic link such as /dev/stdout) is refused with a UsageError naming the
  /// flag, the path, what it is and the fix, before the job runs (require_output_path in
  /// tenax/core/regular_file.hpp; the writers replace a regular file whole), and so is a path
  /// in a directory that does not exist (but for the run directory, which the job makes), or the
  /// very file (the same inode: a hard or symbolic
  /// link to it too) of an input declared by record_file_digest, which the output would replace.
  void output_file(const Setting<std::string>& path);

  /// The standard settings.
  [[nodiscard]] const Standard& standard() const noexcept { return standard_; }
  /// The program's name.
  [[nodiscard]] const std::string& program() const noexcept { return program_; }
  /// Every setting, the job's first, in declaration order.
  [[nodiscard]] std::vector<const SettingBase*> settings() const;

  /// Reads the sources into the settings (see the file). Returns the exit code to end the
  /// program with at once (`--help`, `--version`, `--print-config`: 0), or -1 to go on. Throws
  /// UsageError for an unknown flag (naming the nearest known one), a missing or bad value, or an
  /// unreadable `--config` file. For main() and tests.
  int parse(int argc, const char* const* argv);

  /// The whole program: parse(), then `--inject` set for the process, the communicator of
  /// `--comm` and the device of `--device` made, and `body` run with them. Whatever escapes,
  /// the program ends with one line on stderr (`cooling: tenax usage error: ... -- fix: ...`)
  /// and the exit code of its fault class (usage 1, out of memory 1, restart 75; a host
  /// std::bad_alloc as out of memory); `body`'s return value otherwise.
  int main(int argc, const char* const* argv, const std::function<int(Job&)>& body);
  /// For `int main(int argc, char** argv)`.
  int main(int argc, char** argv, const std::function<int(Job&)>& body) {
    return main(argc, const_cast<const char* const*>(argv), body);
  }

  /// The `--help` text.
  [[nodiscard]] std::string help_text() const;
  /// The `--print-config` text: every setting as `name = value`, its source in a comment; a file
  /// with it given to `--config` sets them all again.
  [[nodiscard]] std::string config_text() const;
  /// The configuration stored with each checkpoint: "program" and every recorded setting.
  [[nodiscard]] std::string stored_config() const;
  /// The resume policy of the declarations, with `--allow-config-change`.
  [[nodiscard]] io::ConfigPolicy config_policy() const;
  /// The API options the settings set, each with its flag (Setting::sets_option): the messages
  /// of the Runner and the program's last line name the flag beside the option.
  [[nodiscard]] runtime::OptionFlags option_flags() const;

 private:
  void adopt(std::unique_ptr<SettingBase> setting);
  SettingBase* find(std::string_view name) const;
  void apply(const std::vector<std::string>& tokens, Source source, const std::string& origin);
  void read_file(const std::string& path);

  std::string program_;
  std::string description_;
  RunDefaults defaults_;
  std::string section_;
  std::vector<std::unique_ptr<SettingBase>> settings_;
  std::size_t standard_count_ = 0;  // settings_[0, standard_count_) are the standard ones
  Standard standard_{};
  std::vector<std::function<void()>> parsed_hooks_;
  std::vector<std::function<void(io::ConfigWriter&)>> derived_entries_;
  std::map<std::string, std::string> file_digests_;       // path -> XXH64 in hex
  std::vector<const Setting<std::string>*> input_files_;  // the record_file_digest paths
  bool parsed_ = false;
};

/// Runs `body` and turns what escapes it into one line on stderr, prefixed with `program`, and
/// the exit code of its fault class (App::main uses it; for programs without an App). The
/// source location of a tenax::Error is left out of the line (it is in the event log of a run).
/// An API option that `flags` has a flag for is named with its flag.
int run_program(std::string_view program, const std::function<int()>& body,
                const runtime::OptionFlags& flags = {});

/// `"tenax 0.1.0"`.
[[nodiscard]] std::string_view version() noexcept;

}  // namespace tenax::app
