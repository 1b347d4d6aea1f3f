#include "tenax/io/checkpoint_layout.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <iterator>
#include <limits>
#include <system_error>

#include "durable_file.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/regular_file.hpp"
#include "tenax/core/text.hpp"
#include "tenax/io/checksum.hpp"

namespace tenax::io {
namespace {

// The longest lines of a record, to show that kMaxCommitRecordBytes admits the largest world:
// "file rank-65535.h5 <20 digits> <16 hex>\n", and the four other lines at their longest.
constexpr std::size_t kMaxFileLineBytes = 5 + 13 + 1 + 20 + 1 + 16 + 1;
constexpr std::size_t kMaxOtherLinesBytes =
    (23 + 1 + 10 + 1) + (5 + 19 + 1) + (11 + 5 + 1) + (9 + 16 + 1);
static_assert(kMaxWorldSize <= 65536, "kMaxFileLineBytes assumes ranks of at most five digits");
static_assert(kMaxOtherLinesBytes + static_cast<std::size_t>(kMaxWorldSize) * kMaxFileLineBytes <=
              kMaxCommitRecordBytes);

constexpr std::string_view kChecksumKey = "checksum ";

// A number written the way std::to_string writes it: digits only, no sign, no leading zero
// (except "0" itself), within T's range. Anything else is not a name this layout produces.
template <class T>
std::optional<T> parse_canonical(std::string_view digits) noexcept {
  if (digits.empty() || (digits.size() > 1 && digits.front() == '0')) return std::nullopt;
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return parse_whole<T>(digits);
}

// The fields of a line split at every single space; "a  b" has an empty middle field, which no
// record line has, so doubled spaces are caught as malformed.
std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t space = line.find(' ', start);
    fields.push_back(
        line.substr(start, space == std::string_view::npos ? line.npos : space - start));
    if (space == std::string_view::npos) return fields;
    start = space + 1;
  }
}

ParsedCommitRecord invalid(CommitProblem problem, std::string reason) {
  ParsedCommitRecord parsed;
  parsed.problem = problem;
  parsed.reason = std::move(reason);
  return parsed;
}

std::string quoted(std::string_view text) {
  constexpr std::size_t kShown = 40;  // a hostile record may hold a megabyte on one line
  std::string out = "'";
  out.append(text.substr(0, kShown));
  if (text.size() > kShown) out += "...";
  return out + "'";
}

// Parses the lines before the checksum line, whose bytes the checksum has already vouched for;
// what can still be wrong is what the writer put there.
ParsedCommitRecord parse_body(std::string_view body) {
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start < body.size();) {
    const std::size_t end = body.find('\n', start);  // the body ends with '\n'
    lines.push_back(body.substr(start, end - start));
    start = end + 1;
  }
  const auto line_name = [](std::size_t index) {
    return "commit record line " + std::to_string(index + 1);
  };
  if (lines.size() < 3) {
    return invalid(CommitProblem::malformed,
                   "commit record has " + std::to_string(lines.size()) +
                       " lines before its checksum, fewer than its header needs");
  }
  std::vector<std::string_view> fields = split_fields(lines[0]);
  if (fields.size() != 2 || fields[0] != kCommitRecordMagic) {
    return invalid(CommitProblem::not_a_commit_record,
                   "not a tenax commit record (first line " + quoted(lines[0]) + ")");
  }
  if (parse_canonical<int>(fields[1]) != kCommitRecordVersion) {
    return invalid(CommitProblem::unsupported_version,
                   "commit record version " + quoted(fields[1]) + " is not " +
                       std::to_string(kCommitRecordVersion) + ", the one this build reads");
  }

  ParsedCommitRecord parsed;
  CommitRecord& record = parsed.record;
  fields = split_fields(lines[1]);
  if (fields.size() != 2 || fields[0] != "step") {
    return invalid(CommitProblem::malformed, line_name(1) + " is not 'step <N>'");
  }
  const auto step = parse_canonical<std::int64_t>(fields[1]);
  if (!step) {
    return invalid(CommitProblem::bad_step,
                   "commit record step " + quoted(fields[1]) + " is not a step number");
  }
  record.step = *step;

  fields = split_fields(lines[2]);
  if (fields.size() != 2 || fields[0] != "world_size") {
    return invalid(CommitProblem::malformed, line_name(2) + " is not 'world_size <W>'");
  }
  const auto world = parse_canonical<int>(fields[1]);
  if (!world || *world < 1 || *world > kMaxWorldSize) {
    return invalid(CommitProblem::bad_world_size, "commit record world size " + quoted(fields[1]) +
                                                      " is not in [1, " +
                                                      std::to_string(kMaxWorldSize) + "]");
  }
  record.world_size = *world;

  std::vector<bool> listed(static_cast<std::size_t>(record.world_size), false);
  for (std::size_t i = 3; i < lines.size(); ++i) {
    fields = split_fields(lines[i]);
    if (fields.size() != 4 || fields[0] != "file") {
      return invalid(CommitProblem::malformed,
                     line_name(i) + " is not 'file <name> <bytes> <digest>'");
    }
    const std::size_t index = i - 3;
    const auto rank = parse_rank_file_name(fields[1]);
    if (!rank) {
      return invalid(CommitProblem::unexpected_rank_file,
                     "commit record lists " + quoted(fields[1]) + ", which is not a rank file");
    }
    if (*rank >= record.world_size || index >= listed.size()) {
      return invalid(CommitProblem::unexpected_rank_file,
                     "commit record lists " + quoted(fields[1]) + " beyond its world size " +
                         std::to_string(record.world_size));
    }
    if (listed[static_cast<std::size_t>(*rank)]) {
      return invalid(CommitProblem::duplicate_rank_file,
                     "commit record lists " + quoted(fields[1]) + " twice");
    }
    if (static_cast<std::size_t>(*rank) != index) {
      return invalid(CommitProblem::unexpected_rank_file,
                     "commit record lists " + quoted(fields[1]) + " where '" +
                         rank_file_name(static_cast<int>(index)) + "' belongs");
    }
    listed[static_cast<std::size_t>(*rank)] = true;
    CheckpointFile file;
    file.name = std::string(fields[1]);
    const auto size = parse_canonical<std::uint64_t>(fields[2]);
    if (!size || !parse_hex64(fields[3], file.digest)) {
      return invalid(CommitProblem::malformed,
                     line_name(i) + " has a malformed size or digest for " + file.name);
    }
    file.size = *size;
    record.files.push_back(std::move(file));
  }
  if (record.files.size() != listed.size()) {
    return invalid(CommitProblem::missing_rank_file,
                   "commit record lists " + std::to_string(record.files.size()) +
                       " files for world size " + std::to_string(record.world_size) + " (no '" +
                       rank_file_name(static_cast<int>(record.files.size())) + "')");
  }
  return parsed;
}

// Closes a descriptor when it goes out of scope.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::filesystem::path checkpoints_path(const std::filesystem::path& run_dir) {
  return run_dir / kCheckpointsDirName;
}

std::filesystem::path step_path(const std::filesystem::path& run_dir, std::int64_t step) {
  return checkpoints_path(run_dir) / step_dir_name(step);
}

std::filesystem::path rank_file_path(const std::filesystem::path& run_dir, std::int64_t step,
                                     int rank) {
  return step_path(run_dir, step) / rank_file_name(rank);
}

std::string step_dir_name(std::int64_t step) {
  TENAX_EXPECTS(step >= 0, UsageError, "checkpoint step " + std::to_string(step) + " is negative",
                "checkpoint steps count from 0");
  return std::string(kStepDirPrefix) + std::to_string(step);
}

std::optional<std::int64_t> parse_step_dir_name(std::string_view name) noexcept {
  if (!name.starts_with(kStepDirPrefix)) return std::nullopt;
  return parse_canonical<std::int64_t>(name.substr(kStepDirPrefix.size()));
}

std::string rank_file_name(int rank) {
  TENAX_EXPECTS(
      rank >= 0 && rank < kMaxWorldSize, UsageError,
      "rank " + std::to_string(rank) + " is outside [0, " + std::to_string(kMaxWorldSize) + ")",
      "pass the rank of a process in the job (0 to world size - 1)");
  return std::string(kRankFilePrefix) + std::to_string(rank) + std::string(kRankFileSuffix);
}

std::optional<int> parse_rank_file_name(std::string_view name) noexcept {
  if (!name.starts_with(kRankFilePrefix) || !name.ends_with(kRankFileSuffix) ||
      name.size() < kRankFilePrefix.size() + kRankFileSuffix.size()) {
    return std::nullopt;
  }
  const auto rank = parse_canonical<int>(name.substr(
      kRankFilePrefix.size(), name.size() - kRankFilePrefix.size() - kRankFileSuffix.size()));
  if (!rank || *rank >= kMaxWorldSize) return std::nullopt;
  return rank;
}

std::string temp_name(std::string_view final_name, std::int64_t pid) {
  return std::string(final_name) + std::string(kTempInfix) + std::to_string(pid);
}

std::string temp_name(std::string_view final_name) { return temp_name(final_name, ::getpid()); }

std::optional<TempName> parse_temp_name(std::string_view name) {
  const std::size_t at = name.rfind(kTempInfix);
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  const auto pid = parse_canonical<std::int64_t>(name.substr(at + kTempInfix.size()));
  if (!pid) return std::nullopt;
  return TempName{std::string(name.substr(0, at)), *pid};
}

std::vector<std::int64_t> list_step_dirs(const std::filesystem::path& run_dir) {
  const std::filesystem::path dir = checkpoints_path(run_dir);
  std::vector<std::int64_t> steps;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return steps;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) detail::throw_errno("cannot list", dir, ec.value());
  for (const auto& entry : it) {
    std::error_code type_ec;
    if (!entry.is_directory(type_ec)) continue;
    if (const auto step = parse_step_dir_name(entry.path().filename().string())) {
      steps.push_back(*step);
    }
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

std::string_view to_string(CommitProblem problem) noexcept {
  switch (problem) {
    case CommitProblem::none:
      return "none";
    case CommitProblem::missing:
      return "missing";
    case CommitProblem::unreadable:
      return "unreadable";
    case CommitProblem::oversized:
      return "oversized";
    case CommitProblem::truncated:
      return "truncated";
    case CommitProblem::malformed:
      return "malformed";
    case CommitProblem::checksum_mismatch:
      return "checksum_mismatch";
    case CommitProblem::not_a_commit_record:
      return "not_a_commit_record";
    case CommitProblem::unsupported_version:
      return "unsupported_version";
    case CommitProblem::bad_step:
      return "bad_step";
    case CommitProblem::bad_world_size:
      return "bad_world_size";
    case CommitProblem::missing_rank_file:
      return "missing_rank_file";
    case CommitProblem::duplicate_rank_file:
      return "duplicate_rank_file";
    case CommitProblem::unexpected_rank_file:
      return "unexpected_rank_file";
  }
  return "unknown";
}

std::string format_commit_record(const CommitRecord& record) {
  TENAX_EXPECTS(record.step >= 0, UsageError,
                "commit record for the negative step " + std::to_string(record.step),
                "checkpoint steps count from 0");
  TENAX_EXPECTS(record.world_size >= 1 && record.world_size <= kMaxWorldSize &&
                    record.files.size() == static_cast<std::size_t>(record.world_size),
                UsageError,
                "commit record of step " + std::to_string(record.step) + " with " +
                    std::to_string(record.files.size()) + " files for world size " +
                    std::to_string(record.world_size),
                "gather one CheckpointFile per rank, in rank order, on rank 0 (at most " +
                    std::to_string(kMaxWorldSize) + " ranks)");
  std::string text =
      std::string(kCommitRecordMagic) + " " + std::to_string(kCommitRecordVersion) + "\n";
  text += "step " + std::to_string(record.step) + "\n";
  text += "world_size " + std::to_string(record.world_size) + "\n";
  for (std::size_t rank = 0; rank < record.files.size(); ++rank) {
    const CheckpointFile& file = record.files[rank];
    TENAX_EXPECTS(file.name == rank_file_name(static_cast<int>(rank)), UsageError,
                  "commit record of step " + std::to_string(record.step) + " lists '" + file.name +
                      "' where '" + rank_file_name(static_cast<int>(rank)) + "' belongs",
                  "pass the files in rank order, each as write_rank_file returned it");
    text +=
        "file " + file.name + " " + std::to_string(file.size) + " " + to_hex64(file.digest) + "\n";
  }
  text += std::string(kChecksumKey) + to_hex64(xxh64(text.data(), text.size())) + "\n";
  return text;
}

ParsedCommitRecord parse_commit_record(std::string_view text) {
  if (text.size() > kMaxCommitRecordBytes) {
    return invalid(CommitProblem::oversized,
                   "commit record has " + std::to_string(text.size()) + " bytes, more than the " +
                       std::to_string(kMaxCommitRecordBytes) + " any record can have");
  }
  // Any prefix of a record is a prefix of its magic or starts with all of it; anything else
  // (an HDF5 file, text) is not a record at all rather than a truncated one.
  const std::string magic = std::string(kCommitRecordMagic) + " ";
  if (text.substr(0, magic.size()) != std::string_view(magic).substr(0, text.size())) {
    return invalid(CommitProblem::not_a_commit_record,
                   "not a tenax commit record (it does not start with '" +
                       std::string(kCommitRecordMagic) + "')");
  }
  // The checksum line is written last; a record cut anywhere lacks a complete one.
  const std::size_t last_start =
      text.size() < 2 ? 0 : text.rfind('\n', text.size() - 2) + 1;  // npos + 1 == 0
  if (text.empty() || text.back() != '\n' || !text.substr(last_start).starts_with(kChecksumKey)) {
    return invalid(CommitProblem::truncated,
                   "commit record ends before its checksum line (truncated, " +
                       std::to_string(text.size()) + " bytes)");
  }
  const std::string_view checksum_field = text.substr(
      last_start + kChecksumKey.size(), text.size() - 1 - last_start - kChecksumKey.size());
  std::uint64_t stored = 0;
  if (!parse_hex64(checksum_field, stored)) {
    return invalid(CommitProblem::malformed, "commit record's checksum line is malformed");
  }
  if (xxh64(text.data(), last_start) != stored) {
    return invalid(CommitProblem::checksum_mismatch,
                   "commit record checksum mismatch (the record is damaged)");
  }
  return parse_body(text.substr(0, last_start));
}

ParsedCommitRecord read_commit_record(const std::filesystem::path& path) {
  // Without blocking and not through a symbolic link: a FIFO named COMMIT hung every reader
  // (list, verify, show, the resume) beyond the reach of SIGTERM.
  OpenedFile opened = try_open_regular_file(path, O_RDONLY, Symlinks::refuse);
  if (!opened.ok()) {
    if (opened.error == ENOENT) {
      return invalid(CommitProblem::missing,
                     "no commit record (the write was interrupted before it committed)");
    }
    if (opened.error == 0) {
      return invalid(CommitProblem::unreadable, path.filename().string() + " is " +
                                                    std::string(describe(opened.kind)) +
                                                    ", not a regular file");
    }
    return invalid(CommitProblem::unreadable, "cannot open commit record '" + path.string() +
                                                  "': " + std::strerror(opened.error));
  }
  Descriptor file{opened.fd.release()};
  // Reading stops one byte past the limit: that tells an oversized file without reading it all.
  std::string text;
  char chunk[16384];
  while (text.size() <= kMaxCommitRecordBytes) {
    const ssize_t n = ::read(file.fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return invalid(CommitProblem::unreadable,
                     "cannot read commit record '" + path.string() + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  return parse_commit_record(text);
}

bool is_run_directory_file(const std::filesystem::path& run_dir,
                           const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::weakly_canonical(run_dir, ec);
  if (ec) return false;
  const std::filesystem::path file = std::filesystem::weakly_canonical(path, ec);
  if (ec) return false;
  const std::filesystem::path relative = file.lexically_relative(dir);
  if (relative.empty() || *relative.begin() == "..") return false;
  const std::string first = relative.begin()->string();
  if (first == kCheckpointsDirName || first == "locks") return true;
  return std::distance(relative.begin(), relative.end()) == 1 && first.starts_with("events") &&
         first.ends_with(".jsonl");
}

}  // namespace tenax::io
