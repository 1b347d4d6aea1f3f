/// CheckpointStore: crash-consistent checkpoints of a run, one directory per checkpoint.
/// @file
/// The names, the commit record's format and the limits are in checkpoint_layout.hpp:
/// `RUN_DIR/checkpoints/step-<N>/` holds `rank-<r>.h5` for every rank r of the world (state
/// files, see state_file.hpp) and COMMIT, the commit record. A checkpoint exists only when its
/// COMMIT exists and verifies; a directory without one is an interrupted write and is ignored.
///
/// Commit protocol (every step survives a crash or power loss at any point):
///   1. Each rank writes its state to `rank-<r>.h5.tmp-<pid>` and fsyncs it, hashing the bytes
///      being made durable at the same time (XXH64 of the whole file); then renames it to
///      `rank-<r>.h5` and fsyncs the directory.
///   2. Rank 0 writes `COMMIT.tmp-<pid>` listing format version, step, world size and each
///      file's name, size and digest, plus a checksum of the record itself; fsyncs it, renames it
///      to COMMIT and fsyncs the directory. Only now does the checkpoint exist.
///   3. The new checkpoint is verified (the record read back and parsed, every file present with
///      its recorded size; the digests were taken during the files' fsync), and only then does
///      retention remove older checkpoints: all but the newest keep_last committed ones that
///      pass the same check (a damaged one older than those is removed, a newer one kept but not
///      counted), and every uncommitted directory older than the new one. Retention runs once
///      per checkpoint, in rank 0's commit. Removal deletes COMMIT first, so a crash mid-removal
///      leaves an uncommitted directory or files that no longer match their record, never a
///      damaged checkpoint that verifies.
///
/// Rewriting a step that is already committed first removes its COMMIT (every rank does, before
/// it renames its file into place, so no committed record ever describes a replaced file; that
/// checkpoint stops existing while it is rewritten, the older ones are untouched). Committed
/// checkpoints are never modified.
///
/// Failures (disk full, I/O error, a throwing on_phase) throw IoError and remove only what the
/// failing call wrote: write_rank_file its own `rank-<r>.h5.tmp-<pid>` (and its `rank-<r>.h5`
/// when it had renamed it already), commit its `COMMIT.tmp-<pid>`, write() both halves. In a
/// world of one the step directory then goes when it is empty (rmdir, never a recursive
/// removal); in a larger world it stays, since a peer may be writing into it, and what a failed
/// step leaves behind is removed by the retention of the next commit, like any uncommitted
/// directory.
///
/// Loading verifies the commit record, the size and digest of every file, and every dataset
/// checksum (read_state_file) before returning anything, takes the newest checkpoint that
/// passes, and reports each newer one it skipped with the reason.
///
/// Resuming N ranks on the newest step valid on every rank: each rank asks newest_valid_step
/// (rank, bound), the job agrees on the minimum (one all-reduce), and repeats with that bound
/// until all ranks answer the same step, which each then loads with load(step, rank); a load
/// that fails lowers the bound again. The committed world size is in every answer, so a resume
/// on a different number of ranks than the checkpoint's is detected before anything is loaded.
///
/// Fault injection: options.on_phase is called after each protocol step, on the thread that
/// writes (the AsyncCheckpointer's background thread in asynchronous mode); tests use it to kill
/// or fail at an exact point, and the process fault plan (`TENAX_FAULTS`) is honoured:
/// `kill@checkpoint=S[:PHASE]` raises SIGKILL at PHASE (the first phase when none is given) of
/// the S-th checkpoint this process writes; `enospc@checkpoint=S[:PHASE]` fails it there as a
/// full disk would (IoError with ENOSPC). PHASE is one of the names of CheckpointPhase.
///
/// Thread-safety: one store object must not be used by two threads at once; separate objects
/// on separate run directories are independent. Only one job may write a run directory at a time
/// (see RunDirectoryLock); within it each rank writes its own files and only rank 0 commits.
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tenax/core/fault_injection.hpp"
#include "tenax/io/checkpoint_layout.hpp"
#include "tenax/io/state_file.hpp"

namespace tenax::io {

/// The points of the commit protocol at which CheckpointOptions::on_phase is called and a
/// `kill@checkpoint` or `enospc@checkpoint` fault can fire, in the order a write reaches them.
/// The first four happen on every rank in write_rank_file, the last three on rank 0 in commit.
enum class CheckpointPhase : unsigned char {
  after_data_write,        ///< rank file written under its temporary name
  after_data_fsync,        ///< ... and fsynced (its digest taken)
  after_rename,            ///< ... and renamed to `rank-<r>.h5`
  after_dir_fsync,         ///< ... and the directory fsynced
  after_commit_write,      ///< COMMIT written under its temporary name (and fsynced)
  after_commit_rename,     ///< ... renamed to COMMIT
  after_commit_dir_fsync,  ///< ... and the directory fsynced: the checkpoint exists
};
/// Every CheckpointPhase, in protocol order (to list or validate phase names).
inline constexpr CheckpointPhase kAllCheckpointPhases[] = {
    CheckpointPhase::after_data_write,      CheckpointPhase::after_data_fsync,
    CheckpointPhase::after_rename,          CheckpointPhase::after_dir_fsync,
    CheckpointPhase::after_commit_write,    CheckpointPhase::after_commit_rename,
    CheckpointPhase::after_commit_dir_fsync};
/// The enumerator's name, e.g. "after_rename": the PHASE spelling of a fault plan
/// ("unknown" for a value outside the enum).
[[nodiscard]] std::string_view to_string(CheckpointPhase phase) noexcept;

/// How a CheckpointStore retains, reports and reads checkpoints.
struct CheckpointOptions {
  int keep_last = 3;  ///< valid committed checkpoints kept by retention (>= 1)
  /// Called after each protocol step with the step being written. May throw (the write then
  /// fails as on an I/O error and cleans up) or end the process (a crash test).
  std::function<void(CheckpointPhase phase, std::int64_t step)> on_phase;
  /// Plan consulted for `kill@checkpoint` / `enospc@checkpoint`; nullptr means the process plan
  /// (`TENAX_FAULTS`). The store counts one checkpoint occurrence per write_rank_file call. When
  /// set, the plan must outlive the store.
  FaultPlan* fault_plan = nullptr;
  /// Limits for reading state files in load, load_latest, and deep verify / newest_valid_step.
  ReadOptions read_options;
};

/// A checkpoint that a load or a search passed over, and why.
struct SkippedCheckpoint {
  std::int64_t step = 0;  ///< the step of the checkpoint directory
  std::string reason;     ///< what failed, e.g. "rank-0.h5 digest mismatch (...)"
};

/// The result of CheckpointStore::load and load_latest.
struct LoadedCheckpoint {
  bool found = false;          ///< false: no valid checkpoint (state empty, step -1)
  std::int64_t step = -1;      ///< the step loaded (-1 when not found)
  int world_size = 0;          ///< ranks in the world that committed `step` (0 when not found)
  StateDict state;             ///< the rank's state, tensors on the CPU (empty when not found)
  FileMetadata metadata;       ///< the state file's root attributes
  std::filesystem::path file;  ///< the rank file read (empty when not found)
  std::vector<SkippedCheckpoint> skipped;  ///< newer checkpoints that failed verification
};

/// What newest_valid_step found: the step, its committed world size, and why newer ones failed.
struct ValidCheckpoint {
  std::optional<std::int64_t> step;        ///< nullopt: no valid checkpoint within the bound
  int world_size = 0;                      ///< of `step`'s commit record (0 when there is none)
  std::vector<SkippedCheckpoint> skipped;  ///< newer checkpoints that failed, newest first
};

/// The checkpoints of one run directory: writes them with the commit protocol described in this
/// file, applies retention, verifies them and loads the newest valid one. Movable, not copyable.
class CheckpointStore {
 public:
  /// A store for `run_dir`. Throws UsageError for keep_last < 1 or a fault plan naming an
  /// unknown checkpoint phase. Creates nothing until the first write.
  explicit CheckpointStore(std::filesystem::path run_dir, CheckpointOptions options = {});
  /// Waits for a retention removal still running in the background.
  ~CheckpointStore();
  /// Waits for the background removal of old checkpoints, so that other objects and processes
  /// see the directory as this store does (e.g. before a program exits or hands the directory
  /// on). A removal that failed is still reported by the next commit.
  void wait_for_background_work() const noexcept { wait_for_removal(); }
  /// Takes over the other store's directory, options, background removal in flight and any
  /// removal failure still to be reported; the moved-from store must only be destroyed or
  /// assigned to.
  CheckpointStore(CheckpointStore&&) noexcept = default;
  /// As the move constructor. This store's own background removal is waited for (as std::async
  /// futures do when released), but a removal failure it had not reported yet is dropped.
  CheckpointStore& operator=(CheckpointStore&&) noexcept = default;

  /// The run directory given at construction.
  [[nodiscard]] const std::filesystem::path& run_dir() const noexcept { return run_dir_; }
  /// `RUN_DIR/checkpoints` (checkpoints_path).
  [[nodiscard]] std::filesystem::path checkpoints_dir() const;
  /// `RUN_DIR/checkpoints/step-<N>` (step_path); UsageError for a negative step.
  [[nodiscard]] std::filesystem::path step_dir(std::int64_t step) const;

  /// Writes, commits, verifies and applies retention for rank 0 of a world of one (metadata's
  /// step, rank and world size are set from the arguments). Throws IoError (previous checkpoints
  /// intact, temporary files removed) or UsageError for state that cannot be stored.
  void write(std::int64_t step, const StateDict& state, const FileMetadata& metadata = {});

  /// First half of write() for N ranks: every rank writes its file (protocol step 1) and returns
  /// its entry for the commit record. metadata.rank and metadata.world_size say which rank this
  /// is (metadata.step is set to `step`). Throws UsageError for a negative step, a rank outside
  /// [0, world_size) or [0, kMaxWorldSize), or state that cannot be stored; IoError on a write
  /// failure, after removing this rank's own files.
  [[nodiscard]] CheckpointFile write_rank_file(std::int64_t step, const StateDict& state,
                                               const FileMetadata& metadata);
  /// Second half, on rank 0 only once every rank's write_rank_file has returned: `files` are
  /// their results gathered in rank order. Writes COMMIT (protocol step 2), verifies the new
  /// checkpoint and decides retention (step 3); the old directories it drops are removed by a
  /// background thread (a 256 MiB file takes ~45 ms to unlink, the page cache it frees) that
  /// every later call of this store waits for first, so no caller ever sees a half-removed
  /// directory. Throws UsageError, with nothing written, for a record that would not parse back
  /// (see format_commit_record); IoError when the write fails, when the new checkpoint does not
  /// verify (older ones kept), or to report that the background removal started by the
  /// previous commit failed (the new checkpoint is committed by then).
  void commit(std::int64_t step, int world_size, const std::vector<CheckpointFile>& files);

  /// Steps of all directories that have a COMMIT, newest first (not verified). Throws IoError
  /// when the checkpoints directory cannot be listed.
  [[nodiscard]] std::vector<std::int64_t> committed_steps() const;
  /// Why checkpoint `step` is not valid for `rank`, or nullopt when it is: commit record, the
  /// rank's file size and digest, and (when deep) every dataset checksum and the file's own step,
  /// rank and world size. A rank outside the committed world is a reason, not an exception;
  /// throws UsageError for a negative step.
  [[nodiscard]] std::optional<std::string> verify(std::int64_t step, int rank = 0,
                                                  bool deep = true) const;
  /// The world size in step's commit record, or nullopt when the step has no valid record (only
  /// the record is read and checked, not the files). UsageError for a negative step.
  [[nodiscard]] std::optional<int> committed_world_size(std::int64_t step) const;

  /// Loads the newest valid checkpoint for `rank` whose step is at most `at_most_step` (no bound
  /// when nullopt; see the protocol above). skipped lists the checkpoints within the bound that
  /// failed, newest first. Never throws for bad checkpoints; throws IoError when the directory
  /// cannot be listed.
  [[nodiscard]] LoadedCheckpoint load_latest(
      int rank = 0, std::optional<std::int64_t> at_most_step = std::nullopt) const;
  /// Loads checkpoint `step` for `rank`, verified as load_latest verifies; when it is not valid,
  /// found is false and skipped holds the one reason. Throws nothing for bad checkpoints, and
  /// UsageError for a negative step.
  [[nodiscard]] LoadedCheckpoint load(std::int64_t step, int rank = 0) const;
  /// The newest step <= at_most_step (no bound when nullopt) whose checkpoint is valid for
  /// `rank`, verified as verify(step, rank, deep) does, keeping nothing it read; `skipped` lists
  /// the newer ones within the bound that failed. Without deep, a dataset whose bytes were
  /// damaged before their digest was taken passes here and fails the load. Throws IoError when
  /// the directory cannot be listed.
  [[nodiscard]] ValidCheckpoint newest_valid_step(
      int rank = 0, std::optional<std::int64_t> at_most_step = std::nullopt,
      bool deep = false) const;

 private:
  /// UsageError when checkpoints/ is a symbolic link (writes and retention would follow it).
  void refuse_a_linked_checkpoints_dir() const;
  /// How much check() reads: the commit record and file sizes; also every file's digest; also
  /// every dataset's checksum.
  enum class Depth { record, digest, datasets };
  [[nodiscard]] std::optional<std::string> check(std::int64_t step, int rank, Depth depth) const;
  /// The commit record of `step`, or why it is not valid (missing, damaged, for another step).
  [[nodiscard]] std::optional<std::string> check_record(std::int64_t step,
                                                        CommitRecord& record) const;
  /// rank's file as `record` lists it, to `depth`; the record has passed check_record.
  [[nodiscard]] std::optional<std::string> check_file(const CommitRecord& record, int rank,
                                                      Depth depth) const;
  /// Whether `step`'s record and every rank's file (name and size) check out; retention counts
  /// only such checkpoints toward keep_last.
  [[nodiscard]] bool valid_at_record_depth(std::int64_t step) const;
  /// load(): the state of a step whose record has passed check_record.
  [[nodiscard]] LoadedCheckpoint load_verified(const CommitRecord& record, int rank) const;
  void phase(CheckpointPhase phase, std::int64_t step);
  void apply_retention(std::int64_t newest);
  /// Waits for the background removal, keeping its failure for the next commit.
  void wait_for_removal() const noexcept;

  std::filesystem::path run_dir_;
  CheckpointOptions options_;
  std::uint64_t occurrence_ = 0;       ///< fault-plan occurrence of the write in progress
  mutable std::future<void> removal_;  ///< retention's removal of old checkpoint directories
  mutable std::exception_ptr removal_error_;
  mutable std::vector<std::filesystem::path> removing_;  ///< what removal_ is deleting
};

}  // namespace tenax::io
