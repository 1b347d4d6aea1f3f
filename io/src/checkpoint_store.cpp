#include "tenax/io/checkpoint_store.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <exception>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>

#include "durable_file.hpp"
#include "tenax/io/checksum.hpp"

namespace tenax::io {
namespace {

using detail::digest_file;
using detail::fsync_path;
using detail::rename_path;
using detail::throw_errno;

constexpr std::string_view kCommitMagic = "tenax-checkpoint-commit";
constexpr int kCommitVersion = 1;
constexpr std::size_t kMaxCommitBytes = std::size_t{1} << 20;
constexpr int kMaxWorldSize = 1 << 20;

std::string rank_file_name(int rank) { return "rank-" + std::to_string(rank) + ".h5"; }
std::string temp_suffix() { return ".tmp-" + std::to_string(::getpid()); }

struct CommitRecord {
  std::int64_t step = 0;
  int world_size = 0;
  std::vector<CheckpointFile> files;
};

std::string format_commit(const CommitRecord& record) {
  std::string text = std::string(kCommitMagic) + " " + std::to_string(kCommitVersion) + "\n";
  text += "step " + std::to_string(record.step) + "\n";
  text += "world_size " + std::to_string(record.world_size) + "\n";
  for (const CheckpointFile& file : record.files) {
    text +=
        "file " + file.name + " " + std::to_string(file.size) + " " + to_hex64(file.digest) + "\n";
  }
  // The record checksums itself, so a damaged record is told apart from a damaged data file.
  text += "checksum " + to_hex64(xxh64(text.data(), text.size())) + "\n";
  return text;
}

template <class T>
bool parse_number(std::string_view text, T& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} && end == text.data() + text.size();
}

// Parses a commit record; returns the reason it is invalid, or "" when it parsed.
std::string parse_commit(const std::string& text, CommitRecord& record) {
  const std::size_t checksum_at = text.rfind("checksum ");
  if (checksum_at == std::string::npos || (checksum_at != 0 && text[checksum_at - 1] != '\n')) {
    return "commit record has no checksum line (truncated?)";
  }
  std::uint64_t stored = 0;
  if (text.size() != checksum_at + 9 + 16 + 1 || text.back() != '\n' ||
      !parse_hex64(std::string_view(text).substr(checksum_at + 9, 16), stored)) {
    return "commit record's checksum line is malformed";
  }
  if (xxh64(text.data(), checksum_at) != stored) return "commit record checksum mismatch";

  std::istringstream lines(text.substr(0, checksum_at));
  std::string line;
  int line_number = 0;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string key;
    words >> key;
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    ++line_number;
    if (line_number == 1) {
      if (key != kCommitMagic || fields.size() != 1) return "not a tenax commit record";
      if (fields[0] != std::to_string(kCommitVersion)) {
        return "commit record version " + fields[0] + " is not " + std::to_string(kCommitVersion);
      }
    } else if (key == "step" && fields.size() == 1 && parse_number(fields[0], record.step)) {
    } else if (key == "world_size" && fields.size() == 1 &&
               parse_number(fields[0], record.world_size) && record.world_size >= 1 &&
               record.world_size <= kMaxWorldSize) {
    } else if (key == "file" && fields.size() == 3) {
      CheckpointFile file;
      file.name = fields[0];
      if (!parse_number(fields[1], file.size) || !parse_hex64(fields[2], file.digest)) {
        return "commit record line " + std::to_string(line_number) + " is malformed";
      }
      record.files.push_back(std::move(file));
    } else {
      return "commit record line " + std::to_string(line_number) + " is malformed";
    }
  }
  if (record.world_size < 1 || record.files.size() != static_cast<std::size_t>(record.world_size)) {
    return "commit record lists " + std::to_string(record.files.size()) + " files for world size " +
           std::to_string(record.world_size);
  }
  for (int r = 0; r < record.world_size; ++r) {
    if (record.files[static_cast<std::size_t>(r)].name != rank_file_name(r)) {
      return "commit record lists '" + record.files[static_cast<std::size_t>(r)].name +
             "' where '" + rank_file_name(r) + "' belongs";
    }
  }
  return "";
}

// The step of a directory named step-<N>, or nullopt.
std::optional<std::int64_t> step_of(const std::string& name) {
  if (!name.starts_with("step-") || name.size() <= 5 || name.size() > 5 + 18) return std::nullopt;
  std::int64_t step = 0;
  const std::string_view digits = std::string_view(name).substr(5);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      !parse_number(digits, step)) {
    return std::nullopt;
  }
  return step;
}

// Step directories (committed or not), newest first.
std::vector<std::int64_t> list_steps(const std::filesystem::path& dir) {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return steps;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) throw_errno("cannot list", dir, ec.value());
  for (const auto& entry : it) {
    std::error_code type_ec;
    if (!entry.is_directory(type_ec)) continue;
    if (const auto step = step_of(entry.path().filename().string())) steps.push_back(*step);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

// Removes a checkpoint directory, COMMIT first. Nothing here is fsynced, on purpose: a crash
// part-way leaves either the whole old checkpoint (valid, and removed by the next retention) or
// a directory whose files no longer match its commit record, which every load verifies and
// skips. Durability of a removal buys nothing, and each directory fsync is a journal commit.
void remove_checkpoint_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::remove(dir / "COMMIT", ec);
  std::filesystem::remove_all(dir, ec);
  if (ec) throw_errno("cannot remove", dir, ec.value());
}

}  // namespace

std::string_view to_string(CheckpointPhase phase) noexcept {
  switch (phase) {
    case CheckpointPhase::after_data_write:
      return "after_data_write";
    case CheckpointPhase::after_data_fsync:
      return "after_data_fsync";
    case CheckpointPhase::after_rename:
      return "after_rename";
    case CheckpointPhase::after_dir_fsync:
      return "after_dir_fsync";
    case CheckpointPhase::after_commit_write:
      return "after_commit_write";
    case CheckpointPhase::after_commit_rename:
      return "after_commit_rename";
    case CheckpointPhase::after_commit_dir_fsync:
      return "after_commit_dir_fsync";
  }
  return "unknown";
}

CheckpointStore::CheckpointStore(std::filesystem::path run_dir, CheckpointOptions options)
    : run_dir_(std::move(run_dir)), options_(std::move(options)) {
  TENAX_EXPECTS(options_.keep_last >= 1, UsageError,
                "checkpoint retention keep_last = " + std::to_string(options_.keep_last),
                "keep at least one checkpoint (keep_last >= 1; the default is 3)");
  const FaultPlan& plan =
      options_.fault_plan != nullptr ? *options_.fault_plan : process_fault_plan();
  for (const FaultSpec& spec : plan.faults()) {
    if (spec.point != FaultPoint::checkpoint || spec.phase.empty()) continue;
    const bool known = std::any_of(std::begin(kAllCheckpointPhases), std::end(kAllCheckpointPhases),
                                   [&](CheckpointPhase p) { return to_string(p) == spec.phase; });
    std::string names;
    for (const CheckpointPhase p : kAllCheckpointPhases) {
      names += (names.empty() ? "" : ", ") + std::string(to_string(p));
    }
    TENAX_EXPECTS(known, UsageError,
                  "fault plan names the unknown checkpoint phase '" + spec.phase + "'",
                  "use one of: " + names);
  }
}

std::filesystem::path CheckpointStore::checkpoints_dir() const { return run_dir_ / "checkpoints"; }

std::filesystem::path CheckpointStore::step_dir(std::int64_t step) const {
  return checkpoints_dir() / ("step-" + std::to_string(step));
}

void CheckpointStore::phase(CheckpointPhase phase, std::int64_t step) {
  if (options_.on_phase) options_.on_phase(phase, step);
  FaultPlan& plan = options_.fault_plan != nullptr ? *options_.fault_plan : process_fault_plan();
  if (plan.empty()) return;
  const std::string_view name = to_string(phase);
  if (plan.should_fire(FaultKind::kill, FaultPoint::checkpoint, occurrence_, name)) {
    std::raise(SIGKILL);
  }
  if (plan.should_fire(FaultKind::enospc, FaultPoint::checkpoint, occurrence_, name)) {
    throw_errno("injected fault (enospc@checkpoint=" + std::to_string(occurrence_) + ") writing",
                step_dir(step), ENOSPC);
  }
}

void CheckpointStore::write(std::int64_t step, const StateDict& state,
                            const FileMetadata& metadata) {
  FileMetadata meta = metadata;
  meta.step = step;
  meta.rank = 0;
  meta.world_size = 1;
  const CheckpointFile file = write_rank_file(step, state, meta);
  commit(step, 1, {file});
}

namespace {

// Removes what a failed write left: its temporary file, and the step directory unless it holds
// a commit record (another rank's, or a checkpoint committed before): an uncommitted directory
// is garbage, a committed one is left alone.
void discard_attempt(const std::filesystem::path& temp_path, const std::filesystem::path& dir) {
  std::error_code ignored;
  std::filesystem::remove(temp_path, ignored);
  if (!std::filesystem::exists(dir / "COMMIT", ignored)) std::filesystem::remove_all(dir, ignored);
}

}  // namespace

CheckpointFile CheckpointStore::write_rank_file(std::int64_t step, const StateDict& state,
                                                const FileMetadata& metadata) {
  TENAX_EXPECTS(step >= 0, UsageError, "checkpoint step " + std::to_string(step) + " is negative",
                "checkpoint steps count from 0");
  // Rewriting a directory that the background removal is deleting would race with it.
  if (std::find(removing_.begin(), removing_.end(), step_dir(step)) != removing_.end()) {
    wait_for_removal();
  }
  FaultPlan& plan = options_.fault_plan != nullptr ? *options_.fault_plan : process_fault_plan();
  occurrence_ = plan.advance(FaultPoint::checkpoint);
  FileMetadata meta = metadata;
  meta.step = step;
  const std::filesystem::path dir = step_dir(step);
  const std::filesystem::path final_path = dir / rank_file_name(meta.rank);
  const std::filesystem::path temp_path = dir / (rank_file_name(meta.rank) + temp_suffix());
  try {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      std::filesystem::create_directories(dir, ec);
      if (ec) throw_errno("cannot create", dir, ec.value());
      fsync_path(checkpoints_dir(), true);
      fsync_path(run_dir_, true);
    } else if (meta.rank == 0 && std::filesystem::exists(dir / "COMMIT", ec)) {
      // Rewriting a committed step: it stops existing first, so a crash part-way can never
      // leave a COMMIT that describes files from two different writes.
      std::filesystem::remove(dir / "COMMIT", ec);
      if (ec) throw_errno("cannot remove", dir / "COMMIT", ec.value());
      fsync_path(dir, true);
    }
    write_state_file(temp_path, state, meta);
    phase(CheckpointPhase::after_data_write, step);
    const detail::FileDigest digest = detail::fsync_and_digest(temp_path);
    phase(CheckpointPhase::after_data_fsync, step);
    rename_path(temp_path, final_path);
    phase(CheckpointPhase::after_rename, step);
    fsync_path(dir, true);
    phase(CheckpointPhase::after_dir_fsync, step);
    return CheckpointFile{rank_file_name(meta.rank), digest.size, digest.digest};
  } catch (...) {
    discard_attempt(temp_path, dir);
    throw;
  }
}

void CheckpointStore::commit(std::int64_t step, int world_size,
                             const std::vector<CheckpointFile>& files) {
  TENAX_EXPECTS(world_size >= 1 && files.size() == static_cast<std::size_t>(world_size), UsageError,
                "commit of step " + std::to_string(step) + " got " + std::to_string(files.size()) +
                    " files for world size " + std::to_string(world_size),
                "gather one CheckpointFile per rank, in rank order, on rank 0");
  const std::filesystem::path dir = step_dir(step);
  const std::filesystem::path temp_path = dir / ("COMMIT" + temp_suffix());
  try {
    CommitRecord record{step, world_size, files};
    detail::write_file_synced(temp_path, format_commit(record));
    phase(CheckpointPhase::after_commit_write, step);
    rename_path(temp_path, dir / "COMMIT");
    phase(CheckpointPhase::after_commit_rename, step);
    fsync_path(dir, true);
    phase(CheckpointPhase::after_commit_dir_fsync, step);
  } catch (...) {
    discard_attempt(temp_path, dir);
    throw;
  }
  // Nothing older is removed unless the new checkpoint reads back as valid: its commit record
  // from disk, and every file present with its recorded size. The digests in the record were
  // taken from the files after their fsync, so hashing them again would only re-read the page
  // cache (it cost a third of the write time).
  for (int rank = 0; rank < world_size; ++rank) {
    if (const auto problem = check(step, rank, Depth::record)) {
      throw IoError("checkpoint of step " + std::to_string(step) +
                        " does not verify right after it was written: " + *problem,
                    "check the disk (dmesg, smartctl); older checkpoints were kept");
    }
  }
  apply_retention(step);
}

void CheckpointStore::apply_retention(std::int64_t newest) {
  wait_for_removal();
  if (removal_error_) std::rethrow_exception(std::exchange(removal_error_, nullptr));
  std::error_code ec;
  int kept = 0;
  std::vector<std::filesystem::path> doomed;
  for (const std::int64_t step : list_steps(checkpoints_dir())) {
    const std::filesystem::path dir = step_dir(step);
    const bool committed = std::filesystem::exists(dir / "COMMIT", ec);
    if (step == newest) {
      ++kept;
    } else if (committed) {
      if (step > newest || kept < options_.keep_last) {
        ++kept;
      } else {
        doomed.push_back(dir);
      }
    } else if (step < newest) {
      // An interrupted write older than a valid checkpoint will never be committed.
      doomed.push_back(dir);
    }
  }
  removing_ = doomed;
  if (doomed.empty()) return;
  // No fsync afterwards: see remove_checkpoint_dir.
  removal_ = std::async(std::launch::async, [doomed = std::move(doomed)] {
    for (const std::filesystem::path& dir : doomed) remove_checkpoint_dir(dir);
  });
}

void CheckpointStore::wait_for_removal() const noexcept {
  if (!removal_.valid()) return;
  try {
    removal_.get();
  } catch (...) {
    removal_error_ = std::current_exception();
  }
  removing_.clear();
}

CheckpointStore::~CheckpointStore() { wait_for_removal(); }

std::vector<std::int64_t> CheckpointStore::committed_steps() const {
  wait_for_removal();
  std::vector<std::int64_t> steps;
  std::error_code ec;
  for (const std::int64_t step : list_steps(checkpoints_dir())) {
    if (std::filesystem::exists(step_dir(step) / "COMMIT", ec)) steps.push_back(step);
  }
  return steps;
}

std::optional<std::string> CheckpointStore::verify(std::int64_t step, int rank, bool deep) const {
  wait_for_removal();
  return check(step, rank, deep ? Depth::datasets : Depth::digest);
}

std::optional<std::string> CheckpointStore::check(std::int64_t step, int rank, Depth depth) const {
  const std::filesystem::path dir = step_dir(step);
  std::error_code ec;
  if (!std::filesystem::exists(dir / "COMMIT", ec)) {
    return "no commit record (the write was interrupted before it committed)";
  }
  CommitRecord record;
  try {
    const std::string problem =
        parse_commit(detail::read_small_file(dir / "COMMIT", kMaxCommitBytes), record);
    if (!problem.empty()) return problem;
    if (record.step != step) {
      return "commit record is for step " + std::to_string(record.step) + ", not " +
             std::to_string(step);
    }
    if (rank < 0 || rank >= record.world_size) {
      return "rank " + std::to_string(rank) + " is not in its world of " +
             std::to_string(record.world_size) + " (restart with the same number of ranks)";
    }
    const CheckpointFile& expected = record.files[static_cast<std::size_t>(rank)];
    const std::filesystem::path path = dir / expected.name;
    if (!std::filesystem::is_regular_file(path, ec)) return expected.name + " is missing";
    const std::uint64_t size = std::filesystem::file_size(path, ec);
    if (ec || size != expected.size) {
      return expected.name + " has " + std::to_string(size) + " bytes, the commit record says " +
             std::to_string(expected.size) + " (truncated or overwritten)";
    }
    if (depth == Depth::record) return std::nullopt;
    const detail::FileDigest digest = digest_file(path);
    if (digest.digest != expected.digest || digest.size != expected.size) {
      return expected.name + " digest mismatch (commit record " + to_hex64(expected.digest) +
             ", file " + to_hex64(digest.digest) + "): the file is corrupt";
    }
    if (depth == Depth::datasets) {
      FileMetadata meta;
      (void)read_state_file(path, &meta, options_.read_options);
      if (meta.step != step || meta.rank != rank || meta.world_size != record.world_size) {
        return expected.name + " says step " + std::to_string(meta.step) + ", rank " +
               std::to_string(meta.rank) + " of " + std::to_string(meta.world_size) +
               ", which does not match its directory and commit record";
      }
    }
  } catch (const Error& e) {
    return e.cause();
  }
  return std::nullopt;
}

LoadedCheckpoint CheckpointStore::load_latest(int rank) const {
  wait_for_removal();
  LoadedCheckpoint result;
  for (const std::int64_t step : list_steps(checkpoints_dir())) {
    if (auto problem = check(step, rank, Depth::record)) {
      result.skipped.push_back({step, std::move(*problem)});
      continue;
    }
    const std::filesystem::path path = step_dir(step) / rank_file_name(rank);
    // The file digest and the read (which verifies every dataset checksum) each take one pass
    // over the file; they run side by side, and nothing read is handed out unless both pass.
    // The reader treats the file as hostile, so reading before the digest is known is safe.
    std::optional<std::string> digest_problem;
    std::exception_ptr digest_error;
    std::thread digester([&] {
      try {
        digest_problem = check(step, rank, Depth::digest);
      } catch (...) {
        digest_error = std::current_exception();
      }
    });
    std::optional<std::string> read_problem;
    FileMetadata meta;
    StateDict state;
    try {
      state = read_state_file(path, &meta, options_.read_options);
      if (meta.step != step || meta.rank != rank) {
        read_problem = path.filename().string() + " says step " + std::to_string(meta.step) +
                       ", rank " + std::to_string(meta.rank) +
                       ", which does not match its directory";
      }
    } catch (const Error& e) {
      read_problem = e.cause();
    } catch (...) {
      digester.join();
      throw;
    }
    digester.join();
    if (digest_error) std::rethrow_exception(digest_error);
    // A digest mismatch is the more basic finding: report it over what the read ran into.
    if (digest_problem || read_problem) {
      result.skipped.push_back({step, std::move(digest_problem ? *digest_problem : *read_problem)});
      continue;
    }
    result.found = true;
    result.step = step;
    result.state = std::move(state);
    result.metadata = std::move(meta);
    result.file = path;
    return result;
  }
  return result;
}

}  // namespace tenax::io
