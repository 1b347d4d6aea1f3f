#include "tenax/app/app.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/io/checkpoint_layout.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/runtime/event_log.hpp"
#include "tenax/runtime/run_events.hpp"

#ifndef TENAX_VERSION_STRING
#define TENAX_VERSION_STRING "unknown"
#endif

namespace tenax::app {
namespace {

// The largest --config file read: a real one is a few hundred bytes.
constexpr std::size_t kMaxConfigFileBytes = std::size_t{1} << 20;
// The environment variable with flags applied before the command line's.
constexpr const char* kArgsVariable = "TENAX_ARGS";

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '-' || name.front() == '.' ||
      name.back() == '-' || name.back() == '.') {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_';
  });
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return std::string(text.substr(first, last - first + 1));
}

std::vector<std::string> split_spaces(std::string_view text) {
  std::vector<std::string> tokens;
  std::istringstream in{std::string(text)};
  for (std::string token; in >> token;) tokens.push_back(token);
  return tokens;
}

std::string_view resume_note(const SettingBase& setting) {
  switch (setting.on_resume()) {
    case OnResume::must_match:
      return "recorded: a resume must keep it";
    case OnResume::change_when_allowed:
      return "recorded: safe to change on resume with --allow-config-change";
    case OnResume::change_freely:
      return "recorded: free to change on resume";
    case OnResume::not_recorded:
      return "";
  }
  return "";
}

// Words of `text` wrapped to `width` columns, each line after the first indented by `indent`.
std::string wrapped(const std::string& text, std::size_t indent, std::size_t width) {
  std::string out;
  std::size_t column = indent;
  for (const std::string& word : split_spaces(text)) {
    if (column > indent && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (column > indent) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out;
}

}  // namespace

std::string_view version() noexcept { return "tenax " TENAX_VERSION_STRING; }

int run_program(std::string_view program, const std::function<int()>& body,
                const runtime::OptionFlags& flags) {
  const std::string name(program);
  try {
    return body();
  } catch (const Error& e) {
    const std::string cause = runtime::with_flags(e.cause(), flags);
    const std::string fix = runtime::with_flags(e.fix(), flags);
    std::fprintf(stderr, "%s: tenax %s error: %s%s%s\n", name.c_str(),
                 std::string(to_string(e.fault_class())).c_str(), cause.c_str(),
                 fix.empty() ? "" : " -- fix: ", fix.c_str());
    return exit_code_for(e.fault_class());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "%s: tenax out_of_memory error: a host allocation outside the memory pool "
                 "failed (std::bad_alloc) -- fix: lower the problem size, free host memory, or "
                 "run on a machine with more\n",
                 name.c_str());
    return exit_code_for(FaultClass::out_of_memory);
  } catch (const std::length_error& e) {
    std::fprintf(stderr,
                 "%s: tenax usage error: a size computed from the input is larger than a "
                 "container can hold (%s) -- fix: lower the problem size\n",
                 name.c_str(), e.what());
    return exit_code_for(FaultClass::usage);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), e.what());
    return 1;
  }
}

// ---- Job ----------------------------------------------------------------------------------------

std::string Job::config() const { return app_.stored_config(); }

runtime::RunnerOptions Job::runner_options() const {
  const App::Standard& s = app_.standard();
  runtime::RunnerOptions options;
  options.program = app_.program();
  options.config = app_.stored_config();
  options.config_policy = app_.config_policy();
  options.run_dir = (*s.run_dir)();
  options.total_steps = s.steps != nullptr ? (*s.steps)() : 0;
  options.checkpoint_every = (*s.checkpoint_every)();
  options.checkpoint_seconds = (*s.checkpoint_seconds)();
  options.keep_last = (*s.keep_last)();
  options.async_checkpoints = (*s.async)();
  options.progress = runtime::parse_progress_mode((*s.progress)());
  options.anomaly_check_every = (*s.anomaly_check_every)();
  options.repeated_anomaly = runtime::parse_repeated_anomaly((*s.on_repeated_anomaly)());
  options.digest_every = (*s.digest_every)();
  options.telemetry_seconds = (*s.telemetry_seconds)();
  options.profile_path = (*s.profile)();
  options.option_flags = app_.option_flags();
  return options;
}

runtime::RunResult Job::run(runtime::Workload& workload) const {
  return run(workload, runner_options());
}

runtime::RunResult Job::run(runtime::Workload& workload, runtime::RunnerOptions options) const {
  const runtime::OptionFlags flags = options.option_flags;
  const std::filesystem::path run_dir = options.run_dir;
  runtime::Runner runner(workload, std::move(options), communicator_);
  runtime::RunResult result = runner.run();
  if (result.status == runtime::RunStatus::completed) completed_run_dir_ = run_dir.string();
  if (result.status != runtime::RunStatus::completed) {
    std::fprintf(stderr, "%s: %s: %s\n", app_.program().c_str(),
                 std::string(runtime::to_string(result.status)).c_str(),
                 runtime::with_flags(result.message, flags).c_str());
  }
  return result;
}

void Job::record_exit(int exit_code) const {
  if (exit_code == 0 || completed_run_dir_.empty() || !leader()) return;
  try {
    runtime::EventLog log(std::filesystem::path(completed_run_dir_) / "events.jsonl");
    log.append(runtime::event::program_exit,
               {{"exit_code", std::int64_t{exit_code}}, {"program", app_.program()}});
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: warning: the exit status %d could not be written into %s: %s\n",
                 app_.program().c_str(), exit_code, completed_run_dir_.c_str(), e.what());
  }
}

// ---- App ----------------------------------------------------------------------------------------

App::App(std::string program, std::string description, RunDefaults defaults)
    : program_(std::move(program)),
      description_(std::move(description)),
      defaults_(std::move(defaults)) {
  TENAX_EXPECTS(valid_name(program_), UsageError,
                "the program name '" + program_ + "' is not a name of letters, digits, - and _",
                "name the program as its executable is named (e.g. \"cooling\")");
  section_ = "Run (every tenax job has these)";
  const std::string run_dir = defaults_.run_dir.empty() ? "runs/" + program_ : defaults_.run_dir;
  standard_.run_dir = &setting("run-dir", run_dir,
                               "the run's directory: checkpoints and events.jsonl go here; a run "
                               "resumes from the newest valid checkpoint in it")
                           .not_recorded()
                           .sets_option("RunnerOptions::run_dir")
                           .expect(
                               [](const std::string& v) {
                                 return !v.empty() && v.find_first_not_of('/') != std::string::npos;
                               },
                               "a directory's path, not empty and not the file system's root");
  TENAX_EXPECTS(defaults_.steps >= 0, UsageError,
                "RunDefaults::steps is " + std::to_string(defaults_.steps),
                "give the default step count (>= 1), or 0 for a program that derives it");
  if (defaults_.steps > 0) {
    standard_.steps = &setting("steps", defaults_.steps, "the step the run ends at")
                           .at_least(1)
                           .free_to_change()
                           .sets_option("RunnerOptions::total_steps");
  }
  standard_.checkpoint_every = &setting("checkpoint-every", defaults_.checkpoint_every,
                                        "steps between checkpoints (0: no step-count trigger)")
                                    .at_least(0)
                                    .not_recorded()
                                    .sets_option("RunnerOptions::checkpoint_every");
  standard_.checkpoint_seconds = &setting("checkpoint-seconds", defaults_.checkpoint_seconds,
                                          "seconds between checkpoints (0: no time trigger)")
                                      .at_least(0.0)
                                      .not_recorded()
                                      .sets_option("RunnerOptions::checkpoint_seconds");
  standard_.keep_last = &setting("keep-last", defaults_.keep_last, "committed checkpoints kept")
                             .at_least(1)
                             .not_recorded()
                             .sets_option("RunnerOptions::keep_last");
  standard_.async =
      &setting("async", false, "write checkpoints on a background thread (one rank only)")
           .not_recorded()
           .sets_option("RunnerOptions::async_checkpoints");
  standard_.inject = &setting("inject", "",
                              "faults to inject, as TENAX_FAULTS (e.g. kill@step=3, nan@step=2, "
                              "oom@alloc=5): the proof that the job survives them")
                          .not_recorded()
                          .expect(
                              [](const std::string& v) {
                                (void)FaultPlan::parse(v);  // throws naming the bad item
                                return true;
                              },
                              "a fault plan");
  standard_.progress =
      &setting("progress", "auto", "how progress shows: auto, terminal, log or quiet")
           .one_of({"auto", "terminal", "log", "quiet"})
           .not_recorded()
           .sets_option("RunnerOptions::progress");
  standard_.anomaly_check_every =
      &setting("anomaly-check-every", std::int64_t{1},
               "steps between NaN/Inf scans of the state (0: only before checkpoints)")
           .at_least(0)
           .not_recorded()
           .sets_option("RunnerOptions::anomaly_check_every");
  standard_.on_repeated_anomaly =
      &setting("on-repeated-anomaly", "stop",
               "a step that fails again after a rollback, with the same inputs (a bad sample): "
               "stop the run, or skip the step and go on")
           .one_of({"stop", "skip"})
           .not_recorded()
           .sets_option("RunnerOptions::repeated_anomaly");
  standard_.digest_every =
      &setting("digest-every", std::int64_t{-1},
               "steps between state digests the ranks compare, to catch silent data corruption "
               "(-1: as often as they cost about 1% of the step time; 0: only at checkpoints and "
               "at the end)")
           .at_least(-1)
           .not_recorded()
           .sets_option("RunnerOptions::digest_every");
  standard_.allow_config_change =
      &setting("allow-config-change", std::vector<std::string>{},
               "resume although setting KEY changed, for a setting that is safe to change (a "
               "refused resume names them); repeat it or separate names with commas")
           .not_recorded();
  standard_.device =
      &setting("device", "auto", "where the job runs: auto, cpu, cuda or cuda:N")
           .not_recorded()
           .expect(
               [](const std::string& v) {
                 return v == "auto" || v == "cpu" || v == "cuda" || v.rfind("cuda:", 0) == 0;
               },
               "auto, cpu, cuda or cuda:N");
  standard_.comm = &setting("comm", "auto",
                            "how ranks talk: auto (MPI when started by mpirun or srun, else one "
                            "rank), single, mpi or nccl")
                        .one_of({"auto", "single", "mpi", "nccl"})
                        .not_recorded();
  standard_.comm_timeout =
      &setting("comm-timeout", 300.0,
               "seconds a collective may take before the job is declared hung (it then exits 75 "
               "naming the call and the ranks that did not arrive, for a restart)")
           .at_least(0.01)
           .at_most(7 * 86400.0)
           .not_recorded()
           .sets_option("CommOptions::timeout_seconds");
  standard_.telemetry_seconds =
      &setting("telemetry-seconds", 10.0,
               "seconds between telemetry lines in events.jsonl (memory, step rate, GPU health); "
               "0: off")
           .at_least(0.0)
           .at_most(7 * 86400.0)
           .not_recorded()
           .sets_option("RunnerOptions::telemetry_seconds");
  standard_.profile = &setting("profile", "",
                               "write a profile of the run to FILE (Chrome trace format, for "
                               "Perfetto); rank r > 0 writes FILE.rank-<r>.json")
                           .empty_means("no profile")
                           .not_recorded()
                           .sets_option("RunnerOptions::profile_path");
  standard_count_ = settings_.size();
  section_ = "Job";
}

App::~App() = default;

void App::adopt(std::unique_ptr<SettingBase> setting) {
  const std::string name = setting->name();
  TENAX_EXPECTS(!parsed_, UsageError,
                "the setting --" + name + " was declared after the settings were read",
                "declare every setting before App::main");
  TENAX_EXPECTS(valid_name(name), UsageError,
                "the setting name '" + name + "' is not a name of letters, digits, - and .",
                "name it like a flag without its dashes (e.g. \"grid-size\", \"solver.tol\")");
  for (const char* reserved : {"help", "version", "print-config", "config", "h"}) {
    TENAX_EXPECTS(name != reserved, UsageError,
                  "the setting name '" + name + "' is one of the App's own flags",
                  "choose another name");
  }
  TENAX_EXPECTS(find(name) == nullptr, UsageError, "the setting --" + name + " is declared twice",
                "declare each setting once (a standard one: change its default through "
                "App::standard())");
  settings_.push_back(std::move(setting));
}

SettingBase* App::find(std::string_view name) const {
  for (const auto& setting : settings_) {
    if (setting->name() == name) return setting.get();
  }
  return nullptr;
}

std::vector<const SettingBase*> App::settings() const {
  std::vector<const SettingBase*> out;
  for (std::size_t k = standard_count_; k < settings_.size(); ++k)
    out.push_back(settings_[k].get());
  for (std::size_t k = 0; k < standard_count_; ++k) out.push_back(settings_[k].get());
  return out;
}

void App::apply(const std::vector<std::string>& tokens, Source source, const std::string& origin) {
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const std::string& token = tokens[k];
    TENAX_EXPECTS(token.size() > 2 && token.rfind("--", 0) == 0, UsageError,
                  "unexpected argument '" + token + "'" + origin,
                  "settings are flags: --name VALUE (see " + program_ + " --help)");
    const std::size_t equals = token.find('=');
    const std::string name = token.substr(2, equals == std::string::npos ? equals : equals - 2);
    if (name == "help" || name == "version" || name == "print-config") continue;
    if (name == "config") {  // read before the others
      if (equals == std::string::npos) ++k;
      continue;
    }
    SettingBase* setting = find(name);
    // --no-NAME turns a switch off (--no-shuffle).
    if (setting == nullptr && name.starts_with("no-") && equals == std::string::npos) {
      if (SettingBase* negated = find(name.substr(3)); negated && negated->is_switch()) {
        negated->assign("false", source, "--" + name + origin);
        continue;
      }
    }
    if (setting == nullptr) {
      std::string nearest;
      std::size_t best = 3;
      for (const auto& known : settings_) {
        const std::size_t distance = edit_distance(name, known->name());
        if (distance < best) {
          best = distance;
          nearest = known->name();
        }
      }
      throw UsageError(
          "unknown flag --" + name + origin,
          nearest.empty() ? "see " + program_ + " --help for the flags"
                          : "did you mean --" + nearest + "? (" + program_ + " --help lists them)");
    }
    std::string value;
    if (equals != std::string::npos) {
      value = token.substr(equals + 1);
    } else if (setting->is_switch()) {
      value = "true";
    } else {
      const bool missing =
          k + 1 >= tokens.size() || (tokens[k + 1].rfind("--", 0) == 0 && tokens[k + 1].size() > 2);
      TENAX_EXPECTS(!missing, UsageError, "--" + name + " was given no value" + origin,
                    "give --" + name + " " + setting->expectation());
      value = tokens[++k];
    }
    setting->assign(value, source, "--" + name + " " + value + origin);
  }
}

void App::read_file(const std::string& path) {
  struct stat info {};
  TENAX_EXPECTS(::stat(path.c_str(), &info) == 0, UsageError, "--config " + path + ": no such file",
                "give the path of a settings file");
  TENAX_EXPECTS(S_ISREG(info.st_mode), UsageError, "--config " + path + " is not a regular file",
                "give the path of a settings file (lines `name = value`)");
  TENAX_EXPECTS(
      static_cast<std::size_t>(info.st_size) <= kMaxConfigFileBytes, UsageError,
      "--config " + path + " holds " + std::to_string(info.st_size) +
          " bytes, more than a settings file's 1 MiB",
      "give a settings file of lines `name = value` (" + program_ + " --print-config writes one)");
  std::ifstream in(path);
  TENAX_EXPECTS(in.good(), UsageError, "--config " + path + " cannot be read",
                "check the file's permissions");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = " (" + path + " line " + std::to_string(number) + ")";
    const std::size_t comment = line.rfind(" #");
    std::string text = trim(comment == std::string::npos ? line : line.substr(0, comment));
    if (text.empty() || text.front() == '#') continue;
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos) {
      if (text.size() > 80) text.resize(80);
      // Shown on a terminal: control bytes of a binary file as '?'.
      std::replace_if(
          text.begin(), text.end(),
          [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }, '?');
      throw UsageError(
          std::string("'").append(text).append("'").append(where).append(" is not `name = value`"),
          "write each setting as `name = value` (" + program_ +
              " --print-config writes such a file)");
    }
    const std::string name = trim(text.substr(0, equals));
    std::string value = trim(text.substr(equals + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    SettingBase* setting = find(name);
    TENAX_EXPECTS(setting != nullptr, UsageError, "unknown setting '" + name + "'" + where,
                  "see " + program_ + " --help for the settings");
    setting->assign(value, Source::file, name + " = " + value + where);
  }
}

int App::parse(int argc, const char* const* argv) {
  TENAX_EXPECTS(!parsed_, UsageError, "the settings of " + program_ + " were read twice",
                "call App::parse or App::main once");
  parsed_ = true;
  std::vector<std::string> command_line;
  for (int k = 1; k < argc; ++k) command_line.emplace_back(argv[k]);
  const char* variable = std::getenv(kArgsVariable);
  const std::vector<std::string> environment =
      variable ? split_spaces(variable) : std::vector<std::string>{};
  for (const std::string& token : command_line) {
    if (token == "--help" || token == "-h") {
      std::fputs(help_text().c_str(), stdout);
      return 0;
    }
    if (token == "--version") {
      std::printf("%s (%s)\n", program_.c_str(), std::string(version()).c_str());
      return 0;
    }
  }
  // --config: the command line's, else the environment's.
  std::string config_file;
  for (const std::vector<std::string>* tokens :
       std::initializer_list<const std::vector<std::string>*>{&environment, &command_line}) {
    for (std::size_t k = 0; k < tokens->size(); ++k) {
      const std::string& token = (*tokens)[k];
      if (token.rfind("--config=", 0) == 0) config_file = token.substr(9);
      if (token == "--config") {
        TENAX_EXPECTS(k + 1 < tokens->size(), UsageError, "--config was given no file",
                      "give --config FILE, a file of lines `name = value`");
        config_file = (*tokens)[k + 1];
      }
    }
  }
  if (!config_file.empty()) read_file(config_file);
  apply(environment, Source::environment, std::string(" (in ") + kArgsVariable + ")");
  apply(command_line, Source::command_line, "");
  for (const std::function<void()>& hook : parsed_hooks_) hook();
  if (std::find(command_line.begin(), command_line.end(), "--print-config") != command_line.end()) {
    std::fputs(config_text().c_str(), stdout);
    return 0;
  }
  // A bad --allow-config-change is refused before anything runs.
  io::check_allowed_changes(stored_config(), config_policy());
  return -1;
}

runtime::OptionFlags App::option_flags() const {
  runtime::OptionFlags flags;
  for (const auto& setting : settings_) {
    for (const std::string& option : setting->options()) {
      flags.push_back({option, "--" + setting->name()});
    }
  }
  return flags;
}

int App::main(int argc, const char* const* argv, const std::function<int(Job&)>& body) {
  return run_program(
      program_,
      [&] {
        const int early = parse(argc, argv);
        if (early >= 0) return early;
        if (const std::string& faults = (*standard_.inject)(); !faults.empty()) {
          // Allocations and restarted processes read the plan from the environment.
          ::setenv("TENAX_FAULTS", faults.c_str(), 1);
        }
        runtime::CommOptions comm_options;
        comm_options.timeout_seconds = (*standard_.comm_timeout)();
        std::shared_ptr<runtime::Communicator> comm =
            runtime::make_communicator(runtime::parse_comm_kind((*standard_.comm)()), comm_options);
        TENAX_EXPECTS(defaults_.divides_work_across_ranks || comm->size() == 1, UsageError,
                      program_ + " was started as " + std::to_string(comm->size()) +
                          " ranks, but it does not divide its work across ranks: every rank would "
                          "compute the whole job",
                      "run it as one process (without mpirun or srun)");
        const std::string& request = (*standard_.device)();
        Device device = select_device(request);
        // Several ranks on one host: each takes the GPU of its local rank unless --device names
        // one.
        if (device.is_cuda() && comm->size() > 1 && request.find(':') == std::string::npos) {
          device = Device::cuda(comm->local_rank());
        }
        Job job(*this, std::move(comm), device);
        const int code = body(job);
        job.record_exit(code);
        return code;
      },
      option_flags());
}

std::string App::help_text() const {
  constexpr std::size_t kWidth = 100;
  constexpr std::size_t kIndent = 30;
  std::string out =
      program_ + ": " + description_ + "\n\nusage: " + program_ + " [--name VALUE]...\n";
  std::string section;
  auto line = [&](const std::string& flag, const std::string& text) {
    std::string row = "  " + flag;
    row += row.size() + 2 <= kIndent ? std::string(kIndent - row.size(), ' ')
                                     : "\n" + std::string(kIndent, ' ');
    out += row + wrapped(text, kIndent, kWidth) + "\n";
  };
  for (const SettingBase* setting : settings()) {
    if (setting->section() != section) {
      section = setting->section();
      out += "\n" + section + ":\n";
    }
    std::string text = setting->help() + " [" + setting->expectation();
    if (!setting->is_switch()) {
      text += "; default " +
              (setting->default_text().empty() ? std::string("none") : setting->default_text());
    }
    const std::string_view note = resume_note(*setting);
    if (!note.empty()) text += "; " + std::string(note);
    text += "]";
    std::string flag = "--" + setting->name();
    if (setting->is_switch() && setting->default_text() == "true")
      flag += ", --no-" + setting->name();
    if (!setting->is_switch()) {
      std::string type = setting->expectation().rfind("an integer", 0) == 0           ? "N"
                         : setting->expectation().find("number") != std::string::npos ? "X"
                                                                                      : "VALUE";
      flag += " " + type;
    }
    line(flag, text);
  }
  out += "\nInformation:\n";
  line("--help, -h", "this text");
  line("--version", "the program's and tenax's version");
  line("--print-config",
       "every setting's value and where it came from, as a file --config reads; "
       "nothing runs");
  line("--config FILE", "read settings from FILE: lines `name = value`, `#` comments");
  out += "\n" +
         wrapped(std::string("Values are taken from, later ones winning: the defaults, "
                             "--config FILE, the environment variable ") +
                     kArgsVariable +
                     " (flags separated by spaces), the command line. "
                     "Recorded settings are stored with every checkpoint; a resume with "
                     "another value is refused, naming it, unless the setting is safe to "
                     "change and named by --allow-config-change, or free to change.",
                 0, kWidth) +
         "\n";
  return out;
}

std::string App::config_text() const {
  std::string out = "# " + program_ + " settings (" + std::string(version()) +
                    "); later sources win: default, file, environment, command line\n";
  std::string section;
  for (const SettingBase* setting : settings()) {
    if (setting->section() != section) {
      section = setting->section();
      out += "\n# " + section + "\n";
    }
    std::string row = setting->name() + " = " + setting->value_text();
    if (row.size() < 40) row += std::string(40 - row.size(), ' ');
    out += row + " # " + std::string(to_string(setting->source())) +
           (setting->recorded() ? ", recorded" : "") + "\n";
  }
  return out;
}

void App::record_file_digest(const Setting<std::string>& path, std::string key) {
  input_files_.push_back(&path);
  record_also([this, &path, key = std::move(key)](io::ConfigWriter& config) {
    if (path().empty()) return;
    // An input file is read twice (here and by the program's reader), so it must be a regular
    // file: a FIFO would hang the first open and be empty for the second, a device would be
    // read without end. Looked at without opening it (stat follows a link to its target).
    const FileKind kind = file_kind(path(), /*follow_symlinks=*/true);
    TENAX_EXPECTS(kind == FileKind::missing || kind == FileKind::regular, UsageError,
                  "--" + path.name() + " " + path() + " is " + std::string(describe(kind)) +
                      ", not a regular file",
                  "give the path of a regular file (a pipe, a FIFO or a process substitution "
                  "such as <(cat A.mtx) can be read only once: save it to a file first)");
    auto found = file_digests_.find(path());
    if (found == file_digests_.end()) {
      std::string digest = "(unreadable)";
      try {
        digest = io::to_hex64(io::xxh64_file(path()));
      } catch (const Error&) {
      }
      found = file_digests_.emplace(path(), std::move(digest)).first;
    }
    config.set(key, found->second);
  });
}

void App::output_file(const Setting<std::string>& path) {
  on_parsed([this, &path] {
    if (path().empty()) return;
    // A file in the run directory (made when the job starts) needs no directory yet.
    std::error_code ec;
    const std::filesystem::path output(path());
    const std::filesystem::path folder = output.has_parent_path() ? output.parent_path() : ".";
    const bool in_run_dir = std::filesystem::weakly_canonical(folder, ec) ==
                            std::filesystem::weakly_canonical((*standard_.run_dir)(), ec);
    if (in_run_dir) {
      require_output_path(output, "--" + path.name());
    } else {
      require_output_path_before_the_job(output, "--" + path.name());
    }
    TENAX_EXPECTS(!io::is_run_directory_file((*standard_.run_dir)(), output), UsageError,
                  "--" + path.name() + " " + path() + " is a file of the run directory " +
                      (*standard_.run_dir)() +
                      " (its event log, a checkpoint or a lock), which the output would replace",
                  "give --" + path.name() +
                      " a path outside the run's events*.jsonl, checkpoints/ and locks/ (e.g. " +
                      (std::filesystem::path((*standard_.run_dir)()) / "output.h5").string() + ")");
    for (const Setting<std::string>* input : input_files_) {
      const bool same = !(*input)().empty() && std::filesystem::equivalent(path(), (*input)(), ec);
      TENAX_EXPECTS(!same, UsageError,
                    "--" + path.name() + " " + path() + " is the file --" + input->name() + " " +
                        (*input)() +
                        " names, which this job reads: writing the output would "
                        "replace it",
                    "give --" + path.name() + " another path");
    }
  });
}

std::string App::stored_config() const {
  io::ConfigWriter config(program_);
  for (const SettingBase* setting : settings()) {
    if (setting->recorded()) setting->record(config);
  }
  for (const auto& entries : derived_entries_) entries(config);
  return config.text();
}

io::ConfigPolicy App::config_policy() const {
  io::ConfigPolicy policy;
  for (const SettingBase* setting : settings()) {
    if (!setting->recorded()) continue;
    if (setting->on_resume() == OnResume::change_freely) {
      policy.free_keys.push_back(setting->config_key());
    }
    if (setting->on_resume() == OnResume::change_when_allowed) {
      policy.safe_keys.push_back(setting->config_key());
    }
  }
  for (std::string key : (*standard_.allow_config_change)()) {
    std::replace(key.begin(), key.end(), '-', '_');
    policy.allowed.push_back(std::move(key));
  }
  return policy;
}

}  // namespace tenax::app
