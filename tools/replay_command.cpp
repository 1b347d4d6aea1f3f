// `tenax replay`: the checkpoint of STEP copied into a scratch run directory, the program that
// made the run resumed there with the stored configuration for K steps with a digest after
// every step, and its digests compared with the run's (the `digest` field of rank 0's step lines,
// io/state_digest.hpp: independent of the number of ranks). Where both have a checkpoint at the
// end, the states are compared too, tensor by tensor, to name what differs and by how much.
#include "replay_command.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <variant>

#include "command_status.hpp"
#include "run_history.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/half.hpp"
#include "tenax/io/checkpoint_layout.hpp"
#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/runner_entries.hpp"
#include "tenax/io/shard_layout.hpp"
#include "tenax/io/state_file.hpp"
#include "terminal_text.hpp"

namespace tenax::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kSame = 0;
constexpr int kDiverged = 1;

// ---- the program, run as a child ----

// Runs `argv` with its output (stdout and stderr) into `log`, without the variables that would
// change what it does (injected faults, extra arguments, a supervisor's restart count). Returns
// its exit status (128 + signal when a signal ended it).
int run_child(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> pointers;
  for (const std::string& a : argv) pointers.push_back(const_cast<char*>(a.c_str()));
  pointers.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw IoError("cannot create " + log.string() + ": " + std::strerror(errno),
                  "check that the scratch directory is writable (TMPDIR)");
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    throw EnvironmentError(std::string("cannot start a process: ") + std::strerror(errno),
                           "free memory or raise the process limit");
  }
  if (pid == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::unsetenv("TENAX_FAULTS");
    ::unsetenv("TENAX_ARGS");
    ::unsetenv("TENAX_RESTART_COUNT");
    ::execvp(pointers[0], pointers.data());
    const std::string what = std::string("cannot run ") + argv[0] + ": " + std::strerror(errno);
    (void)!::write(2, what.data(), what.size());
    ::_exit(127);
  }
  ::close(fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw EnvironmentError("cannot wait for the replay", "run it again");
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The last `lines` lines of `text`.
std::string tail(const std::string& text, int lines) {
  std::size_t at = text.size();  // the start of the tail, just after a newline (or the end)
  for (int n = 0; n <= lines && at > 0; ++n) {
    const std::size_t newline = text.rfind('\n', at - 1);
    if (newline == std::string::npos) return text;  // fewer lines than asked: all of it
    at = newline;
  }
  return at == text.size() ? std::string() : text.substr(at + 1);
}

// The directory of this executable (where the example programs are installed beside it).
fs::path own_directory() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : self.parent_path();
}

// What `PROGRAM --print-config` says: the program's name (its first line, "# NAME settings")
// and the names of its settings.
struct ProgramSettings {
  std::string program;
  std::vector<std::string> names;
};

ProgramSettings settings_of(const std::vector<std::string>& command, const fs::path& scratch) {
  std::vector<std::string> argv = command;
  argv.push_back("--print-config");
  const fs::path log = scratch / "print-config.txt";
  const int status = run_child(argv, log);
  const std::string text = read_text(log);
  ProgramSettings settings;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("# ") && settings.program.empty()) {
      const std::size_t end = line.find(" settings");
      if (end != std::string::npos) settings.program = line.substr(2, end - 2);
      continue;
    }
    const std::size_t equals = line.find(" = ");
    if (line.empty() || line.front() == '#' || equals == std::string::npos) continue;
    settings.names.push_back(line.substr(0, equals));
  }
  if (status != 0 || settings.program.empty()) {
    throw UsageError("`" + command.back() +
                         " --print-config` did not describe a tenax program (exit " +
                         std::to_string(status) + "):\n" + tail(text, 8),
                     "give the program that made the run after `--`: tenax replay RUN_DIR --from "
                     "STEP -- PROGRAM");
  }
  return settings;
}

// The stored configuration as a settings file the program reads (--config): every stored key
// that is one of its settings (the others are derived entries, such as an input's digest).
std::string settings_file(const json& config, const ProgramSettings& program) {
  std::string out = "# the configuration stored with the checkpoint (tenax replay)\n";
  for (const auto& [key, value] : config.items()) {
    std::string name = key;
    std::replace(name.begin(), name.end(), '_', '-');
    if (key == "program" ||
        std::find(program.names.begin(), program.names.end(), name) == program.names.end()) {
      continue;
    }
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    out += name + " = \"" + text + "\"\n";
  }
  return out;
}

// ---- the states compared ----

// The state of a checkpoint as one process would hold it: every sharded tensor assembled from
// the ranks' slabs or boxes (the shard table), every other entry from rank 0, the entries the
// digest leaves out dropped; names as in the workload's state.
StateDict whole_state(const fs::path& step_dir, int world) {
  std::vector<StateDict> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back(io::read_state_file(step_dir / io::rank_file_name(r)).scope("workload"));
  }
  const StateDict first = io::read_state_file(step_dir / io::rank_file_name(0));
  std::vector<std::string> left_out;
  if (first.contains(io::runner_entry::digest_rank_local)) {
    std::istringstream names(first.text(io::runner_entry::digest_rank_local));
    for (std::string name; std::getline(names, name);) left_out.push_back(name);
  }
  std::optional<io::ShardTable> table;
  if (first.contains(io::runner_entry::shards)) {
    table = io::parse_shard_table(first.text(io::runner_entry::shards), step_dir.string());
  }
  StateDict whole;
  for (const auto& [name, value] : ranks[0].entries()) {
    if (std::find(left_out.begin(), left_out.end(), name) != left_out.end()) continue;
    const io::TensorShard* shard = nullptr;
    if (table) {
      for (const io::TensorShard& s : table->ranks[0]) {
        if (s.name == "workload/" + name) shard = &s;
      }
    }
    if (shard == nullptr) {
      whole.set(name, value);
      continue;
    }
    const Tensor& part = ranks[0].tensor(name);
    // The whole tensor: every split axis at its global extent.
    const io::TensorShard all = shard->whole();
    Tensor out = Tensor::empty(all.part_shape(part.shape()), part.dtype());
    for (int r = 0; r < world; ++r) {
      for (const io::TensorShard& s : table->ranks[static_cast<std::size_t>(r)]) {
        if (s.name == shard->name) {
          io::copy_shard_overlap(s, ranks[static_cast<std::size_t>(r)].tensor(name), all, out);
        }
      }
    }
    whole.set(name, out);
  }
  return whole;
}

double element(const Tensor& t, std::int64_t i) {
  const void* p =
      static_cast<const char*>(t.data()) + i * static_cast<std::int64_t>(size_of(t.dtype()));
  switch (t.dtype()) {
    case DType::f64:
      return *static_cast<const double*>(p);
    case DType::f32:
      return *static_cast<const float*>(p);
    case DType::f16:
      return to_float(*static_cast<const Half*>(p));
    case DType::bf16:
      return to_float(*static_cast<const BFloat16*>(p));
    case DType::i64:
      return static_cast<double>(*static_cast<const std::int64_t*>(p));
    case DType::i32:
      return *static_cast<const std::int32_t*>(p);
    case DType::u8:
      return *static_cast<const std::uint8_t*>(p);
  }
  return 0.0;
}

// How two states differ: the first entry that differs (in the run's order), with its largest
// difference; and the largest relative difference over every tensor.
struct StateDifference {
  bool same = true;
  std::string first;  // "tensor 'u': max difference 3.1e-13 at element 17" or "entry 't' ..."
  double max_relative = 0.0;
  std::string worst;  // the entry of max_relative
};

StateDifference compare_states(const StateDict& run, const StateDict& replay) {
  StateDifference d;
  const auto differ = [&](std::string what) {
    if (d.same) d.first = std::move(what);
    d.same = false;
  };
  for (const auto& [name, value] : run.entries()) {
    if (!replay.contains(name)) {
      differ("entry '" + name + "' is missing from the replay's state");
      continue;
    }
    const StateDict::Value& other = replay.at(name);
    if (value.index() != other.index()) {
      differ("entry '" + name + "' holds another kind of value");
      continue;
    }
    const Tensor* a = std::get_if<Tensor>(&value);
    if (a == nullptr) {
      const bool equal = std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, Tensor>) {
              return false;
            } else {
              return x == std::get<T>(other);
            }
          },
          value);
      if (!equal) differ("entry '" + name + "' differs");
      continue;
    }
    const Tensor& b = std::get<Tensor>(other);
    if (a->shape() != b.shape() || a->dtype() != b.dtype()) {
      differ("tensor '" + name + "' is " + a->describe() + " in the run, " + b.describe() +
             " in the replay");
      continue;
    }
    if (std::memcmp(a->data(), b.data(), a->nbytes()) == 0) continue;
    double max_abs = 0.0;
    std::int64_t at = 0;
    double relative = 0.0;
    for (std::int64_t i = 0; i < a->numel(); ++i) {
      const double x = element(*a, i);
      const double y = element(b, i);
      const double diff = std::isnan(x) != std::isnan(y) ? INFINITY : std::fabs(x - y);
      if (diff > max_abs || (std::isnan(diff) && max_abs == 0.0)) {
        max_abs = diff;
        at = i;
      }
      const double scale = std::max({std::fabs(x), std::fabs(y), 1e-30});
      if (!std::isnan(diff)) relative = std::max(relative, diff / scale);
    }
    differ(fmt::format("tensor '{}': max difference {:.3g} at element {}", name, max_abs, at));
    if (relative >= d.max_relative) {
      d.max_relative = relative;
      d.worst = name;
    }
  }
  return d;
}

// ---- the run's side ----

// The digest of every step rank 0 logged one for (the last line of each step: a step computed
// again after a rollback or a restart is logged again).
std::map<std::int64_t, std::string> logged_digests(const fs::path& run_dir) {
  std::map<std::int64_t, std::string> digests;
  const RunHistory history = read_run_history(run_dir);
  if (history.ranks.empty()) return digests;
  for (const StepRecord& step : history.ranks.front().steps) {
    if (!step.digest.empty()) digests[step.step] = step.digest;
  }
  return digests;
}

// The device kind the run's steps ran on ("cpu", "cuda"), from its started/resumed events.
std::string logged_device(const fs::path& run_dir) {
  const RunHistory history = read_run_history(run_dir);
  std::string device;
  if (history.ranks.empty()) return device;
  for (const RunEvent& event : history.ranks.front().events) {
    const std::string d = event.field("device");
    if (!d.empty()) device = d;
  }
  return device.substr(0, device.find(':'));
}

std::string list_steps(const std::vector<std::int64_t>& steps) {
  std::string out;
  for (std::int64_t s : steps) {
    if (!out.empty()) out += ", ";
    out += std::to_string(s);
  }
  return out.empty() ? "none" : out;
}

// A scratch run directory holding the checkpoint of `step`: its files linked (copied where a link
// cannot be made), so the run directory is never written.
fs::path scratch_with_checkpoint(const io::CheckpointStore& store, std::int64_t step, int world) {
  std::string pattern = (fs::temp_directory_path() / "tenax-replay-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw IoError("cannot create a scratch directory in " + fs::temp_directory_path().string() +
                      ": " + std::strerror(errno),
                  "set TMPDIR to a writable directory with room for one checkpoint");
  }
  const fs::path scratch = pattern;
  const fs::path to = scratch / "run" / "checkpoints" / io::step_dir_name(step);
  fs::create_directories(to);
  std::vector<std::string> names{std::string(io::kCommitFileName)};
  for (int r = 0; r < world; ++r) names.push_back(io::rank_file_name(r));
  for (const std::string& name : names) {
    std::error_code ec;
    fs::create_hard_link(store.step_dir(step) / name, to / name, ec);
    if (ec) fs::copy_file(store.step_dir(step) / name, to / name);
  }
  return scratch;
}

}  // namespace

int run_replay(const ReplayOptions& options, std::ostream& out) {
  std::error_code ec;
  TENAX_EXPECTS(fs::is_directory(options.run_dir, ec), UsageError,
                "'" + options.run_dir.string() + "' is not a run directory",
                "give the job's --run-dir");
  TENAX_EXPECTS(options.from >= 0, UsageError,
                "--from " + std::to_string(options.from) + ": expected a step >= 0",
                "give the step of one of the run's checkpoints (tenax ckpt list RUN_DIR)");
  TENAX_EXPECTS(options.steps >= 0, UsageError,
                "--steps " + std::to_string(options.steps) + ": expected a count >= 0",
                "give the number of steps to replay, or 0 for up to the next checkpoint");
  TENAX_EXPECTS(std::isfinite(options.tolerance) && options.tolerance >= 0 && options.tolerance < 1,
                UsageError,
                fmt::format("--tolerance {}: expected a number in [0, 1)", options.tolerance),
                "give a relative tolerance such as 1e-6");

  // The checkpoint, verified on every rank (a replay from a damaged one proves nothing).
  const io::CheckpointStore store(options.run_dir);
  std::vector<std::int64_t> committed = store.committed_steps();
  std::sort(committed.begin(), committed.end());
  const std::optional<int> world = store.committed_world_size(options.from);
  std::optional<std::string> problem;
  if (!world) {
    problem = "it has no checkpoint of step " + std::to_string(options.from);
  } else {
    for (int r = 0; r < *world && !problem; ++r) problem = store.verify(options.from, r, true);
  }
  if (problem) {
    throw UsageError("cannot replay " + options.run_dir.string() + " from step " +
                         std::to_string(options.from) + ": " + *problem +
                         " (its committed checkpoints: " + list_steps(committed) + ")",
                     "give --from one of those steps (tenax ckpt list " + options.run_dir.string() +
                         " tells which are valid)");
  }
  const io::LoadedCheckpoint loaded = store.load(options.from, 0);
  const json config = json::parse(loaded.metadata.config, nullptr, false);
  TENAX_EXPECTS(config.is_object() && config.contains("program") && config["program"].is_string(),
                UsageError,
                "the checkpoint of step " + std::to_string(options.from) +
                    " stores no configuration naming its program",
                "a replay needs a run made by a tenax program (tenax::App), which stores one");
  const std::string program = config["program"].get<std::string>();

  // How far: K steps, or up to the run's next checkpoint (where the states compare too).
  const std::map<std::int64_t, std::string> digests = logged_digests(options.run_dir);
  std::int64_t until = 0;
  // The run's last step with something to compare: a checkpoint or a logged digest.
  const std::int64_t last = std::max(committed.empty() ? options.from : committed.back(),
                                     digests.empty() ? options.from : digests.rbegin()->first);
  if (options.steps > 0) {
    TENAX_EXPECTS(options.steps <= last - options.from, UsageError,
                  "--steps " + std::to_string(options.steps) + " reaches past step " +
                      std::to_string(last) +
                      ", the run's last checkpoint or logged digest: nothing would compare there",
                  "give --steps " + std::to_string(last - options.from) +
                      " or fewer, or leave it out to replay up to the next checkpoint");
    until = options.from + options.steps;
  } else {
    const auto next = std::upper_bound(committed.begin(), committed.end(), options.from);
    if (next != committed.end()) {
      until = *next;
    } else if (!digests.empty()) {
      until = digests.rbegin()->first;
    }
  }
  TENAX_EXPECTS(until > options.from, UsageError,
                "nothing to replay after step " + std::to_string(options.from) +
                    ": the run has no later checkpoint and logged no later digest",
                "give --steps K");

  std::vector<std::string> command = options.command;
  if (command.empty()) {
    const fs::path beside = own_directory() / program;
    TENAX_EXPECTS(::access(beside.c_str(), X_OK) == 0, UsageError,
                  "the run was made by '" + program + "', which is not beside tenax (" +
                      beside.parent_path().string() + ")",
                  "give the program after `--`: tenax replay " + options.run_dir.string() +
                      " --from " + std::to_string(options.from) + " -- PATH/TO/" + program);
    command.push_back(beside.string());
  }

  const fs::path scratch = scratch_with_checkpoint(store, options.from, *world);
  bool keep = options.keep;
  struct Cleanup {
    const fs::path& dir;
    const bool& keep;
    ~Cleanup() {
      std::error_code ignored;
      if (!keep) fs::remove_all(dir, ignored);
    }
  } cleanup{scratch, keep};

  const ProgramSettings settings = settings_of(command, scratch);
  if (settings.program != program) {
    throw UsageError("the run in " + options.run_dir.string() + " was made by '" + program +
                         "', not by '" + settings.program + "' (" + command.back() + ")",
                     "give the program that made the run after `--`");
  }
  {
    std::ofstream file(scratch / "settings.txt");
    file << settings_file(config, settings);
  }
  const auto has = [&](const char* name) {
    return std::find(settings.names.begin(), settings.names.end(), name) != settings.names.end();
  };
  std::vector<std::string> argv = command;
  for (std::string a : std::vector<std::string>{
           "--config", (scratch / "settings.txt").string(), "--run-dir", (scratch / "run").string(),
           "--digest-every", "1", "--checkpoint-every", "0", "--checkpoint-seconds", "0",
           "--progress", "log", "--telemetry-seconds", "0"}) {
    argv.push_back(std::move(a));
  }
  if (has("steps")) {
    argv.push_back("--steps");
    argv.push_back(std::to_string(until));
  }
  if (!options.device.empty()) {
    argv.push_back("--device");
    argv.push_back(options.device);
  }
  out << fmt::format("replaying steps {}..{} of {} from the checkpoint of step {} ({})\n",
                     options.from + 1, until, program, options.from, scratch.string());
  out.flush();
  const fs::path log = scratch / "replay.log";
  const int status = run_child(argv, log);
  if (status != 0) {
    keep = true;
    throw UsageError("the replay did not complete (exit " + std::to_string(status) + "); its " +
                         "last lines:\n" + tail(read_text(log), 10),
                     "read " + log.string() +
                         "; a replay takes the run's stored configuration: arguments that change "
                         "a recorded setting are refused as a resume refuses them");
  }

  // The digests, step by step.
  const std::map<std::int64_t, std::string> replayed = logged_digests(scratch / "run");
  int compared = 0;
  std::optional<std::int64_t> diverged;
  std::int64_t last_same = options.from;  // the checkpoint's state is the run's
  std::string run_digest, replay_digest;
  for (std::int64_t s = options.from + 1; s <= until; ++s) {
    const auto a = digests.find(s);
    const auto b = replayed.find(s);
    if (a == digests.end() || b == replayed.end()) continue;
    ++compared;
    if (a->second != b->second) {
      diverged = s;
      run_digest = a->second;
      replay_digest = b->second;
      break;
    }
    last_same = s;
  }
  // The states at the end, when the run has a checkpoint there (the replay always ends with one).
  std::optional<StateDifference> difference;
  const bool run_has_end = std::binary_search(committed.begin(), committed.end(), until);
  const io::CheckpointStore replay_store(scratch / "run");
  const std::optional<int> replay_world = replay_store.committed_world_size(until);
  const std::optional<int> run_world = store.committed_world_size(until);
  if (run_has_end && replay_world && run_world) {
    difference = compare_states(whole_state(store.step_dir(until), *run_world),
                                whole_state(replay_store.step_dir(until), *replay_world));
  }
  const std::string run_device = logged_device(options.run_dir);
  const std::string replay_device = logged_device(scratch / "run");
  const bool cross_device =
      !run_device.empty() && !replay_device.empty() && run_device != replay_device;
  if (cross_device) {
    out << fmt::format(
        "the run ran on {} and the replay on {}: their kernels are not bit-exact (cuBLAS GEMM "
        "and reduction orders differ), so the states are compared to a relative tolerance of "
        "{:g}\n",
        run_device, replay_device, options.tolerance);
    if (!difference) {
      throw UsageError("the run has no checkpoint of step " + std::to_string(until) +
                           " to compare the replay's state with",
                       "replay up to one of its checkpoints (leave out --steps)");
    }
    if (difference->max_relative <= options.tolerance) {
      out << fmt::format(
          "within tolerance: steps {}..{} reproduce (largest relative difference "
          "{:.3g}{})\n",
          options.from + 1, until, difference->max_relative,
          difference->same ? "" : " in '" + difference->worst + "'");
      return kSame;
    }
    out << fmt::format(
        "diverged by step {}: largest relative difference {:.3g} in '{}', above "
        "the tolerance\n",
        until, difference->max_relative, difference->worst);
    return kDiverged;
  }
  if (diverged) {
    const std::string where =
        last_same + 1 == *diverged
            ? fmt::format("at step {}", *diverged)
            : fmt::format(
                  "after step {} and by step {} (the run logged no digest in between: "
                  "run it with --digest-every 1 to name the step)",
                  last_same, *diverged);
    out << fmt::format("diverged {} (state digest {} in the run, {} in the replay)", where,
                       run_digest, replay_digest);
    if (difference && !difference->same) {
      out << fmt::format("; by step {}: first differing {}", until, difference->first);
    }
    out << '\n';
    return kDiverged;
  }
  if (difference && !difference->same) {
    out << fmt::format("diverged by step {}: first differing {}\n", until, difference->first);
    return kDiverged;
  }
  if (compared == 0 && !difference) {
    throw UsageError("nothing to compare: the run logged no state digest for steps " +
                         std::to_string(options.from + 1) + ".." + std::to_string(until) +
                         " and has no checkpoint of step " + std::to_string(until),
                     "replay up to one of its checkpoints, or run the job with --digest-every 1");
  }
  out << fmt::format("same bits: steps {}..{} reproduce ({} digest{} compared{})\n",
                     options.from + 1, until, compared, compared == 1 ? "" : "s",
                     difference ? fmt::format(", and the state of step {}", until) : "");
  return kSame;
}

void add_replay_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ReplayOptions>();
  CLI::App* replay = app.add_subcommand(
      "replay",
      "Re-run steps of a run from one of its checkpoints (here, on another device or another "
      "number of ranks) and compare the state digests step by step with those the run logged: "
      "\"same bits\" (exit 0) or \"diverged at step S\" (exit 1). The run directory is only "
      "read. Usage: tenax replay RUN_DIR --from STEP [--steps K] [--device D] [-- PROGRAM...]");
  replay->add_option("RUN_DIR", options->run_dir, "The job's --run-dir")->required();
  replay->add_option("--from", options->from, "The step of the checkpoint to start from")
      ->required();
  replay->add_option("--steps", options->steps,
                     "Steps to replay (default: up to the run's next checkpoint)");
  replay->add_option("--device", options->device,
                     "Where the replay runs: cpu, cuda or cuda:N (default: the program's)");
  replay
      ->add_option("--tolerance", options->tolerance,
                   "Relative tolerance when the run and the replay ran on different kinds of "
                   "device")
      ->capture_default_str();
  replay->add_flag("--keep", options->keep, "Keep the scratch run directory");
  replay
      ->add_option("command", options->command,
                   "The program that made the run, with its launcher (mpirun -np N PROGRAM); "
                   "default: the program named in the checkpoint, beside tenax")
      ->take_all();
  replay->callback([options, &exit_code] {
    exit_code = run_reporting_errors("replay", [&] {
      return print_terminal_safe(std::cout,
                                 [&](std::ostream& out) { return run_replay(*options, out); });
    });
  });
}

}  // namespace tenax::tools
