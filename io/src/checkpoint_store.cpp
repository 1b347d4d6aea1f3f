#include "tenax/io/checkpoint_store.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <exception>
#include <system_error>
#include <thread>
#include <utility>

#include "durable_file.hpp"
#include "state_file_writer.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/io/checksum.hpp"

namespace tenax::io {
namespace {

using detail::digest_file;
using detail::fsync_path;
using detail::rename_path;
using detail::throw_errno;

// Why a state file's own metadata disagrees with where it is (its directory, its name and the
// commit record), or nullopt.
std::optional<std::string> metadata_problem(const FileMetadata& meta, const CommitRecord& record,
                                            int rank, const std::string& name) {
  if (meta.step == record.step && meta.rank == rank && meta.world_size == record.world_size) {
    return std::nullopt;
  }
  return name + " says step " + std::to_string(meta.step) + ", rank " + std::to_string(meta.rank) +
         " of " + std::to_string(meta.world_size) +
         ", which does not match its directory and commit record";
}

// Removes a checkpoint directory, COMMIT first. Nothing here is fsynced, on purpose: a crash
// part-way leaves either the whole old checkpoint (valid, and removed by the next retention) or
// a directory whose files no longer match its commit record, which every load verifies and
// skips. Durability of a removal buys nothing, and each directory fsync is a journal commit.
// A symbolic link in the place of a step directory is removed as a link: what it points to is
// outside the run directory's ownership and is never touched (remove_all does not follow links
// below the directory either).
void remove_checkpoint_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  const FileKind kind = file_kind(dir);
  if (kind == FileKind::directory) {
    std::filesystem::remove(dir / kCommitFileName, ec);
    std::filesystem::remove_all(dir, ec);
  } else if (kind == FileKind::symlink) {
    std::filesystem::remove(dir, ec);  // unlink(2) of the link itself
  }
  if (ec) throw_errno("cannot remove", dir, ec.value());
}

// Why `dir` (checkpoints/step-N) cannot hold a checkpoint of this run directory, or nullopt: a
// symbolic link there is never followed, for reading or writing.
std::optional<std::string> step_dir_problem(const std::filesystem::path& dir) {
  const FileKind kind = file_kind(dir);
  if (kind == FileKind::directory || kind == FileKind::missing) return std::nullopt;
  return "checkpoints/" + dir.filename().string() + " is " + std::string(describe(kind)) +
         ", not a directory (tenax does not follow it; remove it)";
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
  refuse_a_linked_checkpoints_dir();
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

std::filesystem::path CheckpointStore::checkpoints_dir() const {
  return checkpoints_path(run_dir_);
}

// A symbolic link in the place of checkpoints/ would put the checkpoints wherever it points,
// and retention would delete step directories there: refused, as a linked locks/ is.
void CheckpointStore::refuse_a_linked_checkpoints_dir() const {
  if (file_kind(checkpoints_dir()) != FileKind::symlink) return;
  throw UsageError("the run directory's checkpoints folder " + checkpoints_dir().string() +
                       " is a symbolic link, not a directory",
                   "remove the link (tenax creates " + checkpoints_dir().string() +
                       " itself, and would write and delete checkpoints wherever it points), "
                       "or pass another --run-dir");
}

std::filesystem::path CheckpointStore::step_dir(std::int64_t step) const {
  return step_path(run_dir_, step);
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

namespace {

// What a failed write or commit leaves: the files this call wrote (never a peer's) and, in a
// world of one, the step directory when nothing else is in it. A larger world keeps the
// directory: a peer may be between creating it and writing into it.
void discard_attempt(const std::vector<std::filesystem::path>& own_files,
                     const std::filesystem::path& dir, bool remove_empty_dir) {
  std::error_code ignored;
  for (const std::filesystem::path& file : own_files) std::filesystem::remove(file, ignored);
  // remove() of a directory is rmdir(2): it fails, removing nothing, unless the directory is
  // empty.
  if (remove_empty_dir) std::filesystem::remove(dir, ignored);
}

}  // namespace

void CheckpointStore::write(std::int64_t step, const StateDict& state,
                            const FileMetadata& metadata) {
  FileMetadata meta = metadata;
  meta.step = step;
  meta.rank = 0;
  meta.world_size = 1;
  const CheckpointFile file = write_rank_file(step, state, meta);
  try {
    commit(step, 1, {file});
  } catch (...) {
    // Once COMMIT is in place the checkpoint exists (and a failure after that, in its
    // verification or retention, leaves it to the loader's verification); before, the rank
    // file this call wrote is an orphan.
    std::error_code ec;
    if (!std::filesystem::exists(step_dir(step) / kCommitFileName, ec)) {
      discard_attempt({step_dir(step) / file.name}, step_dir(step), true);
    }
    throw;
  }
}

CheckpointFile CheckpointStore::write_rank_file(std::int64_t step, const StateDict& state,
                                                const FileMetadata& metadata) {
  TENAX_EXPECTS(step >= 0, UsageError, "checkpoint step " + std::to_string(step) + " is negative",
                "checkpoint steps count from 0");
  FileMetadata meta = metadata;
  meta.step = step;
  const std::string file_name = rank_file_name(meta.rank);  // UsageError for a bad rank
  const std::filesystem::path dir = step_dir(step);
  // Rewriting a directory that the background removal is deleting would race with it.
  if (std::find(removing_.begin(), removing_.end(), dir) != removing_.end()) wait_for_removal();
  FaultPlan& plan = options_.fault_plan != nullptr ? *options_.fault_plan : process_fault_plan();
  occurrence_ = plan.advance(FaultPoint::checkpoint);
  const std::filesystem::path final_path = dir / file_name;
  const std::filesystem::path temp_path = dir / temp_name(file_name);
  bool renamed = false;
  refuse_a_linked_checkpoints_dir();
  if (auto problem = step_dir_problem(dir)) {
    throw UsageError(
        "cannot write the checkpoint of step " + std::to_string(step) + ": " + *problem,
        "remove " + dir.string() + " (tenax creates its checkpoint directories)");
  }
  try {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      std::filesystem::create_directories(dir, ec);
      if (ec) throw_errno("cannot create", dir, ec.value());
      fsync_path(checkpoints_dir(), true);
      fsync_path(run_dir_, true);
    } else if (std::filesystem::exists(dir / kCommitFileName, ec)) {
      // Rewriting a committed step: it stops existing before this rank's file is replaced, so a
      // crash part-way can never leave a COMMIT that describes files from two different
      // writes. Every rank does this (whoever comes first removes it), since rank 0 may be
      // the last to get here; the commit of this step waits for all ranks' files anyway.
      std::filesystem::remove(dir / kCommitFileName, ec);
      if (ec) throw_errno("cannot remove", dir / kCommitFileName, ec.value());
      fsync_path(dir, true);
    }
    detail::write_hdf5_file(temp_path, state, &meta);  // the temporary is this protocol's own
    phase(CheckpointPhase::after_data_write, step);
    const detail::FileDigest digest = detail::fsync_and_digest(temp_path);
    phase(CheckpointPhase::after_data_fsync, step);
    rename_path(temp_path, final_path);
    renamed = true;
    phase(CheckpointPhase::after_rename, step);
    fsync_path(dir, true);
    phase(CheckpointPhase::after_dir_fsync, step);
    return CheckpointFile{file_name, digest.size, digest.digest};
  } catch (...) {
    // The renamed file is this rank's own and belongs to no commit (the step's COMMIT was
    // removed above), so it goes too.
    discard_attempt(renamed ? std::vector{temp_path, final_path} : std::vector{temp_path}, dir,
                    meta.world_size <= 1);
    throw;
  }
}

void CheckpointStore::commit(std::int64_t step, int world_size,
                             const std::vector<CheckpointFile>& files) {
  const std::filesystem::path dir = step_dir(step);
  // Formatted first: a record that could not be read back is a UsageError with nothing written.
  const std::string text = format_commit_record(CommitRecord{step, world_size, files});
  const std::filesystem::path temp_path = dir / temp_name(kCommitFileName);
  try {
    detail::write_file_synced(temp_path, text);
    phase(CheckpointPhase::after_commit_write, step);
    rename_path(temp_path, dir / kCommitFileName);
    phase(CheckpointPhase::after_commit_rename, step);
    fsync_path(dir, true);
    phase(CheckpointPhase::after_commit_dir_fsync, step);
  } catch (...) {
    // The rank files are the ranks' own; a failed commit leaves them to retention (or to
    // write(), which owns both halves in a world of one).
    discard_attempt({temp_path}, dir, false);
    throw;
  }
  // Nothing older is removed unless the new checkpoint reads back as valid: its commit record
  // from disk, and every file present with its recorded size. The digests in the record were
  // taken from the files after their fsync, so hashing them again would only re-read the page
  // cache (it cost a third of the write time). The record is read once, not once per rank.
  CommitRecord record;
  std::optional<std::string> problem = check_record(step, record);
  for (int rank = 0; !problem && rank < world_size; ++rank) {
    problem = check_file(record, rank, Depth::record);
  }
  if (problem) {
    throw IoError("checkpoint of step " + std::to_string(step) +
                      " does not verify right after it was written: " + *problem,
                  "check the disk (dmesg, smartctl); older checkpoints were kept");
  }
  apply_retention(step);
}

bool CheckpointStore::valid_at_record_depth(std::int64_t step) const {
  CommitRecord record;
  if (check_record(step, record)) return false;
  for (int rank = 0; rank < record.world_size; ++rank) {
    if (check_file(record, rank, Depth::record)) return false;
  }
  return true;
}

void CheckpointStore::apply_retention(std::int64_t newest) {
  wait_for_removal();
  if (removal_error_) std::rethrow_exception(std::exchange(removal_error_, nullptr));
  std::error_code ec;
  int kept = 0;
  std::vector<std::filesystem::path> doomed;
  for (const std::int64_t step : list_step_dirs(run_dir_)) {
    const std::filesystem::path dir = step_dir(step);
    if (step_dir_problem(dir)) {
      // Not a checkpoint of this directory (a symbolic link): an older one goes as a link.
      if (step < newest) doomed.push_back(dir);
      continue;
    }
    const bool committed = std::filesystem::exists(dir / kCommitFileName, ec);
    if (step == newest) {
      ++kept;
    } else if (committed) {
      if (step > newest || kept < options_.keep_last) {
        // A checkpoint that cannot load (its record damaged, a file missing or of another size)
        // is kept for inspection but does not count: keep_last valid ones stay. (The digests
        // are not read here, that would read every file at every checkpoint; a flipped bit is
        // found by load and by `tenax ckpt verify`.)
        if (valid_at_record_depth(step)) ++kept;
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
  for (const std::int64_t step : list_step_dirs(run_dir_)) {
    if (!step_dir_problem(step_dir(step)) &&
        std::filesystem::exists(step_dir(step) / kCommitFileName, ec)) {
      steps.push_back(step);
    }
  }
  return steps;
}

std::optional<std::string> CheckpointStore::verify(std::int64_t step, int rank, bool deep) const {
  wait_for_removal();
  return check(step, rank, deep ? Depth::datasets : Depth::digest);
}

std::optional<int> CheckpointStore::committed_world_size(std::int64_t step) const {
  wait_for_removal();
  CommitRecord record;
  if (check_record(step, record)) return std::nullopt;
  return record.world_size;
}

std::optional<std::string> CheckpointStore::check(std::int64_t step, int rank, Depth depth) const {
  CommitRecord record;
  if (auto problem = check_record(step, record)) return problem;
  return check_file(record, rank, depth);
}

std::optional<std::string> CheckpointStore::check_record(std::int64_t step,
                                                         CommitRecord& record) const {
  const std::filesystem::path dir = step_dir(step);
  if (auto problem = step_dir_problem(dir)) return problem;
  ParsedCommitRecord parsed = read_commit_record(dir / kCommitFileName);
  if (parsed.problem == CommitProblem::missing) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      return "there is no checkpoint directory " + step_dir_name(step);
    }
  }
  if (!parsed.ok()) return std::move(parsed.reason);
  if (parsed.record.step != step) {
    return "commit record is for step " + std::to_string(parsed.record.step) + ", not " +
           std::to_string(step);
  }
  record = std::move(parsed.record);
  return std::nullopt;
}

std::optional<std::string> CheckpointStore::check_file(const CommitRecord& record, int rank,
                                                       Depth depth) const {
  if (rank < 0 || rank >= record.world_size) {
    return "rank " + std::to_string(rank) + " is not in its world of " +
           std::to_string(record.world_size) + " (restart with the same number of ranks)";
  }
  const CheckpointFile& expected = record.files[static_cast<std::size_t>(rank)];
  const std::filesystem::path path = step_dir(record.step) / expected.name;
  std::error_code ec;
  try {
    const FileKind kind = file_kind(path);
    if (kind == FileKind::missing) return expected.name + " is missing";
    if (kind != FileKind::regular) {
      return expected.name + " is " + std::string(describe(kind)) + ", not a regular file";
    }
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
      if (auto problem = metadata_problem(meta, record, rank, expected.name)) return problem;
    }
  } catch (const Error& e) {
    return e.cause();
  }
  return std::nullopt;
}

LoadedCheckpoint CheckpointStore::load_verified(const CommitRecord& record, int rank) const {
  LoadedCheckpoint result;
  const std::int64_t step = record.step;
  if (auto problem = check_file(record, rank, Depth::record)) {
    result.skipped.push_back({step, std::move(*problem)});
    return result;
  }
  const std::string& name = record.files[static_cast<std::size_t>(rank)].name;
  const std::filesystem::path path = step_dir(step) / name;
  // The file digest and the read (which verifies every dataset checksum) each take one pass
  // over the file; they run side by side, and nothing read is handed out unless both pass.
  // The reader treats the file as hostile, so reading before the digest is known is safe.
  std::optional<std::string> digest_problem;
  std::exception_ptr digest_error;
  std::thread digester([&] {
    try {
      digest_problem = check_file(record, rank, Depth::digest);
    } catch (...) {
      digest_error = std::current_exception();
    }
  });
  std::optional<std::string> read_problem;
  FileMetadata meta;
  StateDict state;
  try {
    state = read_state_file(path, &meta, options_.read_options);
    read_problem = metadata_problem(meta, record, rank, name);
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
    return result;
  }
  result.found = true;
  result.step = step;
  result.world_size = record.world_size;
  result.state = std::move(state);
  result.metadata = std::move(meta);
  result.file = path;
  return result;
}

LoadedCheckpoint CheckpointStore::load(std::int64_t step, int rank) const {
  wait_for_removal();
  CommitRecord record;
  if (auto problem = check_record(step, record)) {
    LoadedCheckpoint result;
    result.skipped.push_back({step, std::move(*problem)});
    return result;
  }
  return load_verified(record, rank);
}

LoadedCheckpoint CheckpointStore::load_latest(int rank,
                                              std::optional<std::int64_t> at_most_step) const {
  wait_for_removal();
  std::vector<SkippedCheckpoint> skipped;
  for (const std::int64_t step : list_step_dirs(run_dir_)) {
    if (at_most_step && step > *at_most_step) continue;
    CommitRecord record;
    if (auto problem = check_record(step, record)) {
      skipped.push_back({step, std::move(*problem)});
      continue;
    }
    LoadedCheckpoint loaded = load_verified(record, rank);
    if (loaded.found) {
      loaded.skipped = std::move(skipped);
      return loaded;
    }
    skipped.insert(skipped.end(), std::make_move_iterator(loaded.skipped.begin()),
                   std::make_move_iterator(loaded.skipped.end()));
  }
  LoadedCheckpoint none;
  none.skipped = std::move(skipped);
  return none;
}

ValidCheckpoint CheckpointStore::newest_valid_step(int rank,
                                                   std::optional<std::int64_t> at_most_step,
                                                   bool deep) const {
  wait_for_removal();
  ValidCheckpoint result;
  for (const std::int64_t step : list_step_dirs(run_dir_)) {
    if (at_most_step && step > *at_most_step) continue;
    CommitRecord record;
    std::optional<std::string> problem = check_record(step, record);
    if (!problem) problem = check_file(record, rank, deep ? Depth::datasets : Depth::digest);
    if (problem) {
      result.skipped.push_back({step, std::move(*problem)});
      continue;
    }
    result.step = step;
    result.world_size = record.world_size;
    return result;
  }
  return result;
}

}  // namespace tenax::io
