/// The on-disk layout of a run directory's checkpoints: every name, the commit record's format
/// and the limits, in one place. CheckpointStore (the commit protocol, checkpoint_store.hpp) and
/// `tenax ckpt` both go through this header; nothing else spells these names.
/// @file
/// ```
/// RUN_DIR/checkpoints/                  checkpoints_path(run_dir)
///   step-<N>/                           one directory per checkpoint, step_dir_name(N)
///     rank-<r>.h5                       rank r's state file (state_file.hpp), rank_file_name(r)
///     COMMIT                            the commit record, written last
///     rank-<r>.h5.tmp-<pid>             a write in progress, temp_name(final, pid)
///     COMMIT.tmp-<pid>
/// ```
///
/// Names are canonical: `<N>` and `<r>` are decimal digits without sign or leading zeros ("0" is
/// the only number that starts with 0), as std::to_string writes them, so each step and rank has
/// exactly one name. The parsers accept exactly those names and nothing else (no whitespace, no
/// '+', no overflow); "step-07" is not step 7, it is a directory the store ignores.
///
/// A checkpoint exists only when its COMMIT exists and verifies. The record is text:
/// ```
/// tenax-checkpoint-commit 1
/// step <N>
/// world_size <W>
/// file rank-0.h5 <bytes> <xxh64 of the file, 16 hex digits>
/// ...                                   (W lines, in rank order)
/// checksum <xxh64 of every byte above, 16 hex digits>
/// ```
/// The lines come in this order, each ends with a newline, fields are separated by one space.
/// The record checksums itself, so a damaged record is told apart from a damaged data file.
///
/// Errors: the name builders throw UsageError for a negative step or a rank outside
/// [0, kMaxWorldSize); the parsers never throw (invalid input is a result); read_commit_record
/// reports a missing, unreadable or oversized file as a problem instead of throwing, and
/// list_step_dirs throws IoError when the checkpoints directory cannot be listed. Everything here
/// is thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tenax::io {

/// @name Names and format constants
///@{

/// The pieces every checkpoint path and commit record is spelled from (see the file's layout):
/// the checkpoints directory under the run directory, the step directory prefix, the rank file's
/// prefix and suffix, the commit record's file name, the infix of a temporary name, and the
/// record's first line (magic and the format version this build writes and reads).
inline constexpr std::string_view kCheckpointsDirName = "checkpoints";
inline constexpr std::string_view kStepDirPrefix = "step-";
inline constexpr std::string_view kRankFilePrefix = "rank-";
inline constexpr std::string_view kRankFileSuffix = ".h5";
inline constexpr std::string_view kCommitFileName = "COMMIT";
inline constexpr std::string_view kTempInfix = ".tmp-";
inline constexpr std::string_view kCommitRecordMagic = "tenax-checkpoint-commit";
inline constexpr int kCommitRecordVersion = 1;
///@}

/// Ranks in one checkpoint. A world this large already puts 64 Ki files in one directory.
inline constexpr int kMaxWorldSize = 1 << 16;
/// A commit record is read whole; anything longer is not one of ours. The limit admits the
/// record of the largest world (checked where the format is written), so no valid record is
/// ever refused.
inline constexpr std::size_t kMaxCommitRecordBytes = std::size_t{4} << 20;

/// @name Paths in a run directory
///@{

/// `RUN_DIR/checkpoints`, `RUN_DIR/checkpoints/step-<N>` and
/// `RUN_DIR/checkpoints/step-<N>/rank-<r>.h5`, built lexically (nothing is created or checked
/// on disk). The step and rank versions throw UsageError as step_dir_name and rank_file_name do.
[[nodiscard]] std::filesystem::path checkpoints_path(const std::filesystem::path& run_dir);
[[nodiscard]] std::filesystem::path step_path(const std::filesystem::path& run_dir,
                                              std::int64_t step);
[[nodiscard]] std::filesystem::path rank_file_path(const std::filesystem::path& run_dir,
                                                   std::int64_t step, int rank);
///@}

/// `step-<N>` for a step >= 0; throws UsageError for a negative step.
[[nodiscard]] std::string step_dir_name(std::int64_t step);
/// The step of a canonical `step-<N>` name, or nullopt for every other name (leading zeros,
/// signs, whitespace, a number beyond INT64_MAX).
[[nodiscard]] std::optional<std::int64_t> parse_step_dir_name(std::string_view name) noexcept;

/// `rank-<r>.h5` for 0 <= r < kMaxWorldSize; throws UsageError for any other rank.
[[nodiscard]] std::string rank_file_name(int rank);
/// The rank of a canonical `rank-<r>.h5` name with r < kMaxWorldSize, or nullopt otherwise.
[[nodiscard]] std::optional<int> parse_rank_file_name(std::string_view name) noexcept;

/// `<final_name>.tmp-<pid>`: where a process writes a file before renaming it to final_name. The
/// pid keeps two processes (a job and a stale one, or two ranks on one node) from sharing one.
/// The pid is written as given, unchecked.
[[nodiscard]] std::string temp_name(std::string_view final_name, std::int64_t pid);
/// temp_name(final_name, getpid()): this process's temporary name for final_name.
[[nodiscard]] std::string temp_name(std::string_view final_name);
/// The two parts of a temporary name, as parse_temp_name splits it.
struct TempName {
  std::string final_name;  ///< the name the file gets when it is renamed into place
  std::int64_t pid = 0;    ///< the process that writes it
};
/// The parts of a temporary name, split at its last `.tmp-` (final name non-empty, pid
/// canonical decimal), or nullopt.
[[nodiscard]] std::optional<TempName> parse_temp_name(std::string_view name);

/// Step directories under RUN_DIR/checkpoints, committed or not, newest first; empty when there
/// is no checkpoints directory. Entries that are not directories or not canonical names are
/// ignored. Throws IoError when the directory exists but cannot be listed.
[[nodiscard]] std::vector<std::int64_t> list_step_dirs(const std::filesystem::path& run_dir);

/// One rank's file as listed in the commit record.
struct CheckpointFile {
  std::string name;          ///< the rank file's name, rank_file_name(rank), e.g. "rank-0.h5"
  std::uint64_t size = 0;    ///< the file's length in bytes
  std::uint64_t digest = 0;  ///< XXH64 (seed 0) of the whole file
};

/// The content of a COMMIT file: which step, how many ranks, and each rank's file.
struct CommitRecord {
  std::int64_t step = 0;              ///< the checkpoint's step, >= 0
  int world_size = 0;                 ///< ranks that wrote it, in [1, kMaxWorldSize]
  std::vector<CheckpointFile> files;  ///< one per rank, in rank order
};

/// Why a commit record is not valid. Callers decide by this code; the reason text is for people.
enum class CommitProblem : unsigned char {
  none,                  ///< the record is valid
  missing,               ///< no COMMIT file (the write was interrupted before it committed)
  unreadable,            ///< it exists but cannot be opened or read
  oversized,             ///< longer than kMaxCommitRecordBytes
  truncated,             ///< it ends before its checksum line
  malformed,             ///< a line that is not what the format says at that place
  checksum_mismatch,     ///< the bytes do not match the record's own checksum
  not_a_commit_record,   ///< the first line is not the magic
  unsupported_version,   ///< a version this build does not read
  bad_step,              ///< step is not a canonical number in [0, INT64_MAX]
  bad_world_size,        ///< world size not a number in [1, kMaxWorldSize]
  missing_rank_file,     ///< fewer file lines than the world size
  duplicate_rank_file,   ///< a rank's file listed twice
  unexpected_rank_file,  ///< a file line out of rank order, beyond the world, or not a rank file
};
/// The enumerator's name, e.g. "checksum_mismatch" ("unknown" for a value outside the enum).
[[nodiscard]] std::string_view to_string(CommitProblem problem) noexcept;

/// What parse_commit_record and read_commit_record make of a record: the record, or the problem.
struct ParsedCommitRecord {
  CommitRecord record;                          ///< meaningful only when ok()
  CommitProblem problem = CommitProblem::none;  ///< the first problem found, none when valid
  std::string reason;  ///< "" when ok(), else a sentence naming what is wrong
  /// Whether the record is valid (problem is CommitProblem::none).
  [[nodiscard]] bool ok() const noexcept { return problem == CommitProblem::none; }
};

/// The record's text, checksum line included. Throws UsageError for a record that would not parse
/// back (negative step, world size outside [1, kMaxWorldSize], files not rank-0.h5 ... in order).
[[nodiscard]] std::string format_commit_record(const CommitRecord& record);
/// Parses text written by format_commit_record: the checksum line is checked before any other
/// line is read, so the result names the first problem of the order oversized, not a record,
/// truncated, checksum mismatch, then the body's. Never throws for bad input.
[[nodiscard]] ParsedCommitRecord parse_commit_record(std::string_view text);
/// Reads at most kMaxCommitRecordBytes (+1, to tell an oversized file) of `path` and parses it.
/// A missing or unreadable file is a problem in the result, not an exception.
[[nodiscard]] ParsedCommitRecord read_commit_record(const std::filesystem::path& path);

/// Whether `path` names a file tenax keeps in the run directory `run_dir` -- its event logs
/// (events.jsonl, events-rank-R.jsonl), anything under checkpoints/ or locks/ -- which an
/// output file (a program's --output, a report) must never replace. Both paths are resolved
/// first (weakly_canonical), so a relative, dotted or linked spelling counts too. Never throws
/// but std::bad_alloc.
[[nodiscard]] bool is_run_directory_file(const std::filesystem::path& run_dir,
                                         const std::filesystem::path& path);

}  // namespace tenax::io
