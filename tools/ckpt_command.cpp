// `tenax ckpt`: path resolution, `list` and `verify`, and the command-line front end. `show` is
// in ckpt_show.cpp.
#include "ckpt_command.hpp"
#include "terminal_text.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "command_status.hpp"
#include "doctor.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/io/checkpoint_layout.hpp"
#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/state_digest.hpp"
#include "tenax/io/state_file.hpp"

namespace tenax::tools {
namespace {

constexpr std::string_view kPathFix =
    "pass a run directory (the job's --run-dir), one of its checkpoints/step-<N> directories, "
    "or a rank-<r>.h5 file in one";

bool is_dir(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

struct Problem {
  std::string file;  // the file the problem is in ("" for the checkpoint as a whole)
  std::string reason;
};

// What list and verify say about one checkpoint directory or state file.
struct Report {
  std::filesystem::path path;
  std::optional<std::int64_t> step;
  std::optional<bool> committed;  // nullopt for a file outside a checkpoint directory
  int rank_files = 0;
  std::uint64_t bytes = 0;
  std::string created;
  std::vector<Problem> problems;

  [[nodiscard]] bool valid() const { return problems.empty() && committed.value_or(true); }
  void add(std::string file, std::string reason) {
    for (const Problem& p : problems) {
      if (p.reason == reason) return;  // a commit-record problem repeats for every rank
    }
    problems.push_back({std::move(file), std::move(reason)});
  }
};

// Reads every dataset of a state file (checksums included); adds what is wrong to `report`.
// `step` and `rank`, when known, must match the file's own metadata. The state read, or nothing
// when the file has a problem.
std::optional<StateDict> check_state_file(const std::filesystem::path& file,
                                          std::optional<std::int64_t> step, std::optional<int> rank,
                                          Report& report) {
  if (!has_hdf5_signature(file)) {
    report.add(file.string(), "'" + file.string() +
                                  "' does not start with the HDF5 signature: it is not a tenax "
                                  "state file, or its first bytes are corrupt");
    return std::nullopt;
  }
  try {
    io::FileMetadata meta;
    StateDict state = io::read_state_file(file, &meta);
    if ((step && meta.step != *step) || (rank && meta.rank != *rank)) {
      report.add(file.string(), "'" + file.string() + "' says step " + std::to_string(meta.step) +
                                    ", rank " + std::to_string(meta.rank) +
                                    ", which does not match its directory and name");
      return std::nullopt;
    }
    return state;
  } catch (const Error& e) {
    report.add(file.string(), e.cause());
  }
  return std::nullopt;
}

// The deep check of a checkpoint's state digest, one rank file at a time: the state the files
// hold against the digest the ranks agreed on when it was written (a state corrupted in memory
// or on its way to the disk after that agreement has valid checksums and the wrong digest).
class DigestCheck {
 public:
  explicit DigestCheck(std::string where) : where_(std::move(where)) {}
  // Rank `rank`'s file, read whole and valid.
  void add(const StateDict& state, int rank, Report& report) {
    try {
      const std::optional<io::RecordedDigest> recorded = io::recorded_digest(state, rank, where_);
      if (!recorded) {
        unrecorded_ = true;
        return;
      }
      recorded_ = recorded->digest;
      parts_.push_back(io::digest_parts(state.scope("workload"), recorded->layout, rank));
    } catch (const Error& e) {
      report.add(where_, e.cause());
      failed_ = true;
    }
  }
  // After every rank's file was added (`ranks` of them).
  void finish(int ranks, Report& report) const {
    if (unrecorded_ || failed_ || static_cast<int>(parts_.size()) != ranks || ranks == 0) return;
    const io::DigestVote voted = io::vote(parts_);
    if (!voted.suspects.empty()) {
      std::string list;
      for (int r : voted.suspects) {
        if (!list.empty()) list += ", ";
        list += std::to_string(r);
      }
      report.add("",
                 "the ranks' files hold states that differ where they must be alike (state "
                 "digests; suspect rank files: " +
                     list + ")");
    } else if (voted.digest != recorded_) {
      report.add("", "the state in the files has the digest " + io::to_hex64(voted.digest) +
                         ", not the " + io::to_hex64(recorded_) +
                         " the ranks agreed on when it was written: it was corrupted after the "
                         "step (in memory or on its way to the disk)");
    }
  }

 private:
  std::string where_;
  std::vector<io::DigestParts> parts_;
  std::uint64_t recorded_ = 0;
  bool unrecorded_ = false;
  bool failed_ = false;
};

// Inspects RUN_DIR/checkpoints/step-<step>: the commit record, every rank file's size and
// digest, and when `deep` every dataset checksum.
Report inspect_checkpoint(const io::CheckpointStore& store, std::int64_t step, bool deep) {
  Report report;
  report.path = store.step_dir(step);
  report.step = step;
  std::error_code ec;
  const std::filesystem::path commit = report.path / io::kCommitFileName;
  report.committed = std::filesystem::exists(commit, ec);
  int highest_rank = -1;
  std::filesystem::path newest_file;
  std::filesystem::file_time_type newest_time{};
  for (const auto& entry : std::filesystem::directory_iterator(report.path, ec)) {
    std::error_code entry_ec;
    if (!entry.is_regular_file(entry_ec)) continue;
    report.bytes += entry.file_size(entry_ec);
    if (const auto rank = io::parse_rank_file_name(entry.path().filename().string())) {
      ++report.rank_files;
      highest_rank = std::max(highest_rank, *rank);
    }
    const auto time = entry.last_write_time(entry_ec);
    if (!entry_ec && (newest_file.empty() || time > newest_time)) {
      newest_file = entry.path();
      newest_time = time;
    }
  }
  // The commit record is written last, so its time is when the checkpoint came to exist.
  report.created = modification_time(*report.committed ? commit : newest_file);
  if (!*report.committed) {
    report.add("",
               "no commit record (the write was interrupted before it committed; a resume "
               "ignores this directory)");
    return report;
  }
  // Every rank's file is checked: as many as the record lists, or when the record itself is
  // damaged (and says nothing trustworthy), as many as the directory holds.
  const io::ParsedCommitRecord record = io::read_commit_record(commit);
  const int world = record.ok() ? record.record.world_size : std::max(highest_rank + 1, 1);
  DigestCheck digests(report.path.string());
  for (int rank = 0; rank < world; ++rank) {
    const std::filesystem::path file = report.path / io::rank_file_name(rank);
    if (auto problem = store.verify(step, rank, /*deep=*/false)) {
      report.add(file.string(), std::move(*problem));
    }
    // Read the datasets even when the digest already failed: that names the damaged entry.
    if (deep && std::filesystem::is_regular_file(file, ec)) {
      if (const std::optional<StateDict> state = check_state_file(file, step, rank, report)) {
        digests.add(*state, rank, report);
      }
    }
  }
  if (deep && report.problems.empty()) digests.finish(world, report);
  return report;
}

// A state file given by itself: checked against its commit record when it belongs to one.
Report inspect_file(const CheckpointPath& where) {
  Report report;
  report.path = where.path;
  report.step = where.step;
  std::error_code ec;
  report.bytes = std::filesystem::file_size(where.path, ec);
  report.rank_files = where.rank ? 1 : 0;
  report.created = modification_time(where.path);
  if (where.step && where.rank) {
    const io::CheckpointStore store(where.run_dir);
    report.committed =
        std::filesystem::exists(store.step_dir(*where.step) / io::kCommitFileName, ec);
    if (*report.committed) {
      if (auto problem = store.verify(*where.step, *where.rank, /*deep=*/false)) {
        report.add(where.path.string(), std::move(*problem));
      }
    } else {
      report.add("",
                 "its directory has no commit record (the write was interrupted before it "
                 "committed; a resume ignores it)");
    }
  }
  check_state_file(where.path, where.step, where.rank, report);
  return report;
}

nlohmann::json to_json(const Report& report) {
  nlohmann::json problems = nlohmann::json::array();
  for (const Problem& p : report.problems) {
    problems.push_back({{"file", p.file}, {"reason", p.reason}});
  }
  return {{"path", report.path.string()},
          {"step", report.step ? nlohmann::json(*report.step) : nlohmann::json()},
          {"committed", report.committed ? nlohmann::json(*report.committed) : nlohmann::json()},
          {"rank_files", report.rank_files},
          {"bytes", report.bytes},
          {"created", report.created},
          {"valid", report.valid()},
          {"problems", std::move(problems)}};
}

// The step a resume would load: the newest valid checkpoint.
std::optional<std::int64_t> resume_step(const std::vector<Report>& reports) {
  for (const Report& r : reports) {
    if (r.step && r.valid()) return r.step;
  }
  return std::nullopt;
}

std::string resume_sentence(const std::vector<Report>& reports) {
  if (const auto step = resume_step(reports)) {
    return fmt::format("A resume would load step {} (the newest valid checkpoint).", *step);
  }
  return "No valid checkpoint: a resume would start from the beginning.";
}

CheckpointPath need_run_dir(const std::filesystem::path& path, std::string_view command) {
  CheckpointPath where = resolve_checkpoint_path(path);
  if (where.kind != CheckpointPath::Kind::run_dir) {
    throw UsageError("'" + where.path.string() + "' is not a run directory",
                     fmt::format("`tenax ckpt {}` takes the job's --run-dir; use `tenax ckpt "
                                 "verify` or `tenax ckpt show` for one checkpoint or file",
                                 command));
  }
  return where;
}

}  // namespace

bool has_hdf5_signature(const std::filesystem::path& path) {
  static constexpr char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  // A regular file only, opened without blocking: a FIFO in a checkpoint would hang the read.
  const OpenedFile file = try_open_regular_file(path, O_RDONLY, Symlinks::follow);
  char head[8] = {};
  return file.ok() && ::read(file.fd.get(), head, sizeof head) == sizeof head &&
         std::equal(head, head + 8, kSignature);
}

std::string modification_time(const std::filesystem::path& path) {
  struct stat info {};
  if (path.empty() || ::stat(path.c_str(), &info) != 0) return "";
  std::tm utc{};
  if (gmtime_r(&info.st_mtime, &utc) == nullptr) return "";
  char text[32];
  return std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc) > 0 ? text : "";
}

CheckpointPath resolve_checkpoint_path(const std::filesystem::path& path) {
  if (path.empty()) throw UsageError("no PATH given", std::string(kPathFix));
  CheckpointPath where;
  where.path = std::filesystem::absolute(path).lexically_normal();
  if (!where.path.has_filename()) where.path = where.path.parent_path();  // "dir/"
  std::error_code ec;
  const auto status = std::filesystem::status(where.path, ec);
  if (status.type() == std::filesystem::file_type::not_found) {
    throw UsageError("'" + path.string() + "' does not exist", std::string(kPathFix));
  }
  if (ec) {
    throw UsageError("cannot access '" + path.string() + "': " + ec.message(),
                     "check the path and its permissions");
  }
  const std::filesystem::path parent = where.path.parent_path();
  const std::string name = where.path.filename().string();
  const bool in_checkpoints = parent.filename() == io::kCheckpointsDirName;
  if (status.type() == std::filesystem::file_type::directory) {
    if (is_dir(io::checkpoints_path(where.path)) ||
        std::filesystem::exists(where.path / "events.jsonl", ec)) {
      where.run_dir = where.path;
      return where;
    }
    if (name == io::kCheckpointsDirName) {
      where.path = where.run_dir = parent;
      return where;
    }
    if (const auto step = io::parse_step_dir_name(name); step && in_checkpoints) {
      where.kind = CheckpointPath::Kind::step_dir;
      where.run_dir = parent.parent_path();
      where.step = step;
      return where;
    }
    throw UsageError("'" + path.string() +
                         "' is neither a run directory (it has no checkpoints/ or events.jsonl) "
                         "nor a checkpoint directory (checkpoints/step-<N>)",
                     std::string(kPathFix));
  }
  if (status.type() != std::filesystem::file_type::regular) {
    throw UsageError("'" + path.string() + "' is not a regular file or a directory",
                     std::string(kPathFix));
  }
  where.kind = CheckpointPath::Kind::file;
  const auto step = io::parse_step_dir_name(parent.filename().string());
  if (step && parent.parent_path().filename() == io::kCheckpointsDirName) {
    where.step = step;
    where.run_dir = parent.parent_path().parent_path();
    where.rank = io::parse_rank_file_name(name);
  }
  return where;
}

int run_ckpt_list(const std::filesystem::path& path, const CkptListOptions& options,
                  std::ostream& out) {
  const CheckpointPath where = need_run_dir(path, "list");
  const io::CheckpointStore store(where.run_dir);
  std::vector<Report> reports;
  for (const std::int64_t step : io::list_step_dirs(where.run_dir)) {
    reports.push_back(inspect_checkpoint(store, step, options.deep));
  }
  const auto resume = resume_step(reports);
  // As verify: a committed checkpoint that does not check out fails the listing (an uncommitted
  // directory is an interrupted write, not damage).
  const bool all_valid = std::none_of(reports.begin(), reports.end(), [](const Report& r) {
    return r.committed.value_or(false) && !r.valid();
  });
  const int exit_status = all_valid ? kCkptValid : kCkptInvalid;
  if (options.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const Report& r : reports) list.push_back(to_json(r));
    out << nlohmann::json{{"run_dir", where.run_dir.string()},
                          {"check", options.deep ? "deep" : "shallow"},
                          {"checkpoints", std::move(list)},
                          {"resume_step", resume ? nlohmann::json(*resume) : nlohmann::json()},
                          {"valid", all_valid}}
               .dump(2)
        << '\n';
    return exit_status;
  }
  out << fmt::format("{}: {} checkpoint director{}, newest first ({})\n",
                     store.checkpoints_dir().string(), reports.size(),
                     reports.size() == 1 ? "y" : "ies",
                     options.deep ? "deep check: every dataset checksum"
                                  : "shallow check: commit record, sizes and digests; --deep "
                                    "also reads every dataset");
  if (!reports.empty()) {
    out << fmt::format("  {:>10}  {:<11}  {:>5}  {:>10}  {:<20}  {}\n", "STEP", "STATE", "FILES",
                       "SIZE", "CREATED", "STATUS");
  }
  for (const Report& r : reports) {
    std::string status = r.valid() ? "VALID" : "INVALID: " + r.problems.front().reason;
    for (std::size_t i = 1; i < r.problems.size(); ++i) status += "; " + r.problems[i].reason;
    if (r.step == resume) status += "  <- a resume loads this one";
    out << fmt::format("  {:>10}  {:<11}  {:>5}  {:>10}  {:<20}  {}\n", *r.step,
                       *r.committed ? "committed" : "uncommitted", r.rank_files,
                       format_bytes(static_cast<double>(r.bytes)), r.created, status);
  }
  out << resume_sentence(reports) << '\n';
  return exit_status;
}

int run_ckpt_verify(const std::filesystem::path& path, const CkptVerifyOptions& options,
                    std::ostream& out) {
  const CheckpointPath where = resolve_checkpoint_path(path);
  std::vector<Report> reports;
  bool all_valid = true;
  switch (where.kind) {
    case CheckpointPath::Kind::run_dir: {
      const io::CheckpointStore store(where.run_dir);
      int committed = 0;
      for (const std::int64_t step : io::list_step_dirs(where.run_dir)) {
        reports.push_back(inspect_checkpoint(store, step, /*deep=*/true));
        // An uncommitted directory is an interrupted write, not a damaged checkpoint.
        if (*reports.back().committed) {
          ++committed;
          all_valid = all_valid && reports.back().valid();
        }
      }
      if (committed == 0) all_valid = false;
      break;
    }
    case CheckpointPath::Kind::step_dir:
      reports.push_back(
          inspect_checkpoint(io::CheckpointStore(where.run_dir), *where.step, /*deep=*/true));
      all_valid = reports.back().valid();
      break;
    case CheckpointPath::Kind::file:
      reports.push_back(inspect_file(where));
      all_valid = reports.back().valid();
      break;
  }
  const bool directory = where.kind != CheckpointPath::Kind::file;
  if (options.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const Report& r : reports) {
      nlohmann::json item = to_json(r);
      item["status"] = r.valid() ? "OK" : r.committed == false ? "UNCOMMITTED" : "CORRUPT";
      list.push_back(std::move(item));
    }
    nlohmann::json report{
        {"path", where.path.string()}, {"valid", all_valid}, {"checkpoints", std::move(list)}};
    if (directory) {
      const auto resume = resume_step(reports);
      report["resume_step"] = resume ? nlohmann::json(*resume) : nlohmann::json();
    }
    out << report.dump(2) << '\n';
    return all_valid ? kCkptValid : kCkptInvalid;
  }
  int corrupt = 0;
  for (const Report& r : reports) {
    const char* status = r.valid() ? "OK" : r.committed == false ? "UNCOMMITTED" : "CORRUPT";
    if (!r.valid() && r.committed != false) ++corrupt;
    const std::string step = r.step ? fmt::format("step {}  ", *r.step) : "";
    out << fmt::format("{:<11}  {}{}", status, step, r.path.string());
    if (r.valid() && directory) {
      out << fmt::format("  ({} rank file{}, {})", r.rank_files, r.rank_files == 1 ? "" : "s",
                         format_bytes(static_cast<double>(r.bytes)));
    }
    out << '\n';
    for (const Problem& p : r.problems) out << "             " << p.reason << '\n';
  }
  if (where.kind == CheckpointPath::Kind::run_dir) {
    if (reports.empty() || std::none_of(reports.begin(), reports.end(), [](const Report& r) {
          return r.committed.value_or(false);
        })) {
      out << "No committed checkpoint in " << where.run_dir.string()
          << ": nothing a resume could load.\n";
    } else {
      const auto committed = std::count_if(reports.begin(), reports.end(), [](const Report& r) {
        return r.committed.value_or(false);
      });
      out << (corrupt == 0
                  ? fmt::format("All {} committed checkpoints are valid. ", committed)
                  : fmt::format("{} of {} committed checkpoints corrupt. ", corrupt, committed))
          << resume_sentence(reports) << '\n';
    }
  }
  return all_valid ? kCkptValid : kCkptInvalid;
}

namespace {

// Runs one subcommand, turning tenax errors into a message and an exit status: 2 for usage
// errors, 1 for anything else (an unreadable file, a failed listing).
template <class Run>
int guarded(CLI::App* command, Run run) {
  static_assert(kCkptUsage == kExitUsage && kCkptInvalid == kExitFailure);
  return run_reporting_errors("ckpt " + command->get_name(), [&] {
    if (!command->remaining().empty()) {
      throw UsageError("unexpected argument '" + command->remaining().front() + "'",
                       "see `tenax ckpt " + command->get_name() + " --help`");
    }
    return run();
  });
}

}  // namespace

void add_ckpt_command(CLI::App& app, int& exit_code) {
  CLI::App* ckpt = app.add_subcommand(
      "ckpt", "Inspect and verify a run's checkpoints (read-only): list, verify, show");
  ckpt->require_subcommand(0, 1);

  struct Arguments {
    std::string path;
    CkptListOptions list;
    CkptVerifyOptions verify;
    CkptShowOptions show;
  };
  auto args = std::make_shared<Arguments>();

  CLI::App* list = ckpt->add_subcommand(
      "list",
      "One line per checkpoint directory of RUN_DIR, newest first: step, committed or not, "
      "rank files, size, time, VALID or INVALID and why, and which one a resume would load");
  list->add_option("RUN_DIR", args->path, "The job's --run-dir");
  list->add_flag("--deep", args->list.deep,
                 "Also read every dataset and check its checksum (slower; as verify does)");
  list->add_flag("--json", args->list.json, "Print one JSON object");
  list->allow_extras();
  list->callback([list, args, &exit_code] {
    exit_code = guarded(list, [&] {
      return print_terminal_safe(
          std::cout, [&](std::ostream& out) { return run_ckpt_list(args->path, args->list, out); });
    });
  });

  CLI::App* verify = ckpt->add_subcommand(
      "verify",
      "Deep verification of every checkpoint of RUN_DIR, of one STEP_DIR or of one FILE.h5: "
      "commit record, file digests, every dataset checksum and, for a checkpoint, the state "
      "digest the ranks agreed on when it was written. Exit status 0 when all are valid, 1 "
      "otherwise");
  verify->add_option("PATH", args->path, "RUN_DIR, RUN_DIR/checkpoints/step-<N> or a .h5 file");
  verify->add_flag("--json", args->verify.json, "Print one JSON object");
  verify->add_flag("--deep", args->verify.deep,
                   "Accepted for symmetry with `list --deep`: verify always checks "
                   "every dataset and the state digest");
  verify->allow_extras();
  verify->callback([verify, args, &exit_code] {
    exit_code = guarded(verify, [&] {
      return print_terminal_safe(std::cout, [&](std::ostream& out) {
        return run_ckpt_verify(args->path, args->verify, out);
      });
    });
  });

  CLI::App* show = ckpt->add_subcommand(
      "show",
      "Metadata and entries of a state file (a rank file, a step directory, or RUN_DIR meaning "
      "its newest valid checkpoint)");
  show->add_option("PATH", args->path, "A .h5 file, RUN_DIR/checkpoints/step-<N> or RUN_DIR");
  show->add_option("--rank", args->show.rank, "Rank whose file a directory means")
      ->capture_default_str();
  show->add_option("--entry", args->show.entry, "Print every value of this entry");
  show->add_option("--limit", args->show.limit, "Values printed by --entry (0: all)")
      ->capture_default_str();
  show->add_flag("--json", args->show.json, "Print one JSON object");
  show->allow_extras();
  show->callback([show, args, &exit_code] {
    exit_code = guarded(show, [&] {
      return print_terminal_safe(
          std::cout, [&](std::ostream& out) { return run_ckpt_show(args->path, args->show, out); });
    });
  });

  ckpt->callback([ckpt, &exit_code] {
    if (ckpt->get_subcommands().empty()) {
      std::cerr << ckpt->help()
                << "\ntenax ckpt: no subcommand given\n  fix: use `tenax ckpt "
                   "list RUN_DIR`, `tenax ckpt verify PATH` or `tenax ckpt show "
                   "PATH`\n";
      exit_code = kCkptUsage;
    }
  });
}

}  // namespace tenax::tools
