#include "tenax/io/checkpoint_layout.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <set>

#include "io/io_test_helpers.hpp"
#include "tenax/core/error.hpp"
#include "tenax/io/checksum.hpp"

namespace tenax::io {
namespace {

using testing::ScratchDir;

}  // namespace

// Names instead of bytes in assertion messages.
void PrintTo(CommitProblem problem, std::ostream* out) { *out << to_string(problem); }

namespace {

// A record body with a correct checksum line, so that only what the body says is tested.
std::string with_checksum(const std::string& body) {
  return body + "checksum " + to_hex64(xxh64(body.data(), body.size())) + "\n";
}

std::string file_line(const std::string& name, std::uint64_t size = 123) {
  return "file " + name + " " + std::to_string(size) + " 0123456789abcdef\n";
}

std::string header(const std::string& world = "2", const std::string& step = "7") {
  return "tenax-checkpoint-commit 1\nstep " + step + "\nworld_size " + world + "\n";
}

CommitRecord sample_record(int world_size) {
  CommitRecord record;
  record.step = 42;
  record.world_size = world_size;
  for (int r = 0; r < world_size; ++r) {
    record.files.push_back({rank_file_name(r), 1000u + static_cast<unsigned>(r),
                            0x1234567890abcdefULL + static_cast<unsigned>(r)});
  }
  return record;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

TEST(CheckpointLayout, NamesRoundTrip) {
  for (const std::int64_t step :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{9}, std::int64_t{10},
        std::int64_t{123456789}, std::numeric_limits<std::int64_t>::max()}) {
    EXPECT_EQ(parse_step_dir_name(step_dir_name(step)), step) << step;
  }
  EXPECT_EQ(step_dir_name(30), "step-30");
  for (const int rank : {0, 1, 10, 4095, kMaxWorldSize - 1}) {
    EXPECT_EQ(parse_rank_file_name(rank_file_name(rank)), rank) << rank;
  }
  EXPECT_EQ(rank_file_name(3), "rank-3.h5");
  const std::filesystem::path run = "/runs/a";
  EXPECT_EQ(checkpoints_path(run), run / "checkpoints");
  EXPECT_EQ(step_path(run, 7), run / "checkpoints" / "step-7");
  EXPECT_EQ(rank_file_path(run, 7, 2), run / "checkpoints" / "step-7" / "rank-2.h5");

  EXPECT_EQ(temp_name("rank-3.h5", 4711), "rank-3.h5.tmp-4711");
  const auto temp = parse_temp_name(temp_name("COMMIT"));
  ASSERT_TRUE(temp.has_value());
  EXPECT_EQ(temp->final_name, "COMMIT");
  EXPECT_EQ(temp->pid, ::getpid());
}

TEST(CheckpointLayout, NameBuildersRefuseWhatNoParserAccepts) {
  EXPECT_THROW((void)step_dir_name(-1), UsageError);
  EXPECT_THROW((void)step_path("/runs/a", -5), UsageError);
  EXPECT_THROW((void)rank_file_name(-1), UsageError);
  EXPECT_THROW((void)rank_file_name(kMaxWorldSize), UsageError);
}

TEST(CheckpointLayout, StepParserRejectsHostileNames) {
  for (const std::string& name : std::vector<std::string>{
           "",
           "step",
           "step-",
           "step--1",
           "step-1x",
           "step-x1",
           "step-+1",
           "step- 1",
           "step-1 ",
           " step-1",
           "step-1\n",
           "STEP-1",
           "Step-1",
           "step_1",
           "step-0x1",
           "step-1e3",
           "step-1.0",
           "step-01",
           "step-00",
           "step-007",
           "step-99999999999999999999999",
           "step-9223372036854775808",  // INT64_MAX + 1
           "step-18446744073709551616",
           "step-\xd9\xa1",      // ARABIC-INDIC DIGIT ONE
           "step-\xef\xbc\x91",  // FULLWIDTH DIGIT ONE
           "step-1\xcc\x81",     // 1 with a combining accent
           "step-\xe2\x80\x8b"
           "1",                         // zero-width space before the digit
           std::string("step-1\0", 7),  // embedded NUL
           std::string("step-\0"
                       "1",
                       7),
       }) {
    EXPECT_FALSE(parse_step_dir_name(name).has_value()) << "'" << name << "'";
  }
  EXPECT_EQ(parse_step_dir_name("step-0"), 0);
  EXPECT_EQ(parse_step_dir_name("step-9223372036854775807"),
            std::numeric_limits<std::int64_t>::max());
}

TEST(CheckpointLayout, RankParserRejectsHostileNames) {
  for (const std::string name :
       {"", "rank-", "rank-.h5", "rank--1.h5", "rank-+1.h5", "rank-01.h5", "rank-1x.h5",
        "rank-1.H5", "rank-1.h5 ", "rank-1.h5.tmp-42", "rank-1.h", "rank-1h5", "rank-65536.h5",
        "rank-99999999999999999999.h5", "rank-\xef\xbc\x91.h5", "Rank-1.h5", "../rank-1.h5",
        "rank-1/.h5", "rank-1.h5\n"}) {
    EXPECT_FALSE(parse_rank_file_name(name).has_value()) << "'" << name << "'";
  }
}

TEST(CheckpointLayout, TempNameParserRejectsOtherNames) {
  for (const std::string name : {"COMMIT", ".tmp-1", "COMMIT.tmp-", "COMMIT.tmp-01",
                                 "COMMIT.tmp--1", "COMMIT.tmp-1x", "COMMIT.tmp-+1"}) {
    EXPECT_FALSE(parse_temp_name(name).has_value()) << "'" << name << "'";
  }
  const auto temp = parse_temp_name("rank-3.h5.tmp-12");
  ASSERT_TRUE(temp.has_value());
  EXPECT_EQ(temp->final_name, "rank-3.h5");
  EXPECT_EQ(temp->pid, 12);
}

TEST(CheckpointLayout, ListsCanonicalStepDirectoriesNewestFirst) {
  ScratchDir dir;
  EXPECT_TRUE(list_step_dirs(dir.path()).empty());  // no checkpoints directory yet
  const std::filesystem::path checkpoints = checkpoints_path(dir.path());
  for (const char* name : {"step-1", "step-10", "step-2", "step-01", "step-x", "junk"}) {
    std::filesystem::create_directories(checkpoints / name);
  }
  write_text(checkpoints / "step-3", "a file, not a directory");
  EXPECT_EQ(list_step_dirs(dir.path()), (std::vector<std::int64_t>{10, 2, 1}));
}

TEST(CommitRecord, FormatAndParseRoundTrip) {
  for (const int world : {1, 3}) {
    const CommitRecord record = sample_record(world);
    const ParsedCommitRecord parsed = parse_commit_record(format_commit_record(record));
    ASSERT_TRUE(parsed.ok()) << parsed.reason;
    EXPECT_TRUE(parsed.reason.empty());
    EXPECT_EQ(parsed.record.step, record.step);
    EXPECT_EQ(parsed.record.world_size, world);
    ASSERT_EQ(parsed.record.files.size(), record.files.size());
    for (std::size_t r = 0; r < record.files.size(); ++r) {
      EXPECT_EQ(parsed.record.files[r].name, record.files[r].name);
      EXPECT_EQ(parsed.record.files[r].size, record.files[r].size);
      EXPECT_EQ(parsed.record.files[r].digest, record.files[r].digest);
    }
  }
}

TEST(CommitRecord, TheLargestWorldFitsTheSizeLimit) {
  CommitRecord record;
  record.step = std::numeric_limits<std::int64_t>::max();
  record.world_size = kMaxWorldSize;
  for (int r = 0; r < kMaxWorldSize; ++r) {
    record.files.push_back(
        {rank_file_name(r), std::numeric_limits<std::uint64_t>::max(), ~std::uint64_t{0}});
  }
  const std::string text = format_commit_record(record);
  EXPECT_LE(text.size(), kMaxCommitRecordBytes);
  ScratchDir dir;
  write_text(dir.path() / "COMMIT", text);
  const ParsedCommitRecord parsed = read_commit_record(dir.path() / "COMMIT");
  ASSERT_TRUE(parsed.ok()) << parsed.reason;
  EXPECT_EQ(parsed.record.files.size(), static_cast<std::size_t>(kMaxWorldSize));
}

TEST(CommitRecord, TruncatedAtEveryLengthIsTruncated) {
  const std::string text = format_commit_record(sample_record(3));
  for (std::size_t length = 0; length < text.size(); ++length) {
    const ParsedCommitRecord parsed = parse_commit_record(text.substr(0, length));
    EXPECT_EQ(parsed.problem, CommitProblem::truncated)
        << length << " bytes: " << to_string(parsed.problem) << ": " << parsed.reason;
    EXPECT_NE(parsed.reason.find("commit record"), std::string::npos) << parsed.reason;
  }
}

TEST(CommitRecord, AnyFlippedByteIsInvalid) {
  const std::string text = format_commit_record(sample_record(2));
  const std::size_t magic_end = std::string("tenax-checkpoint-commit ").size();
  const std::size_t checksum_at = text.rfind("checksum ");
  for (std::size_t at = 0; at < text.size(); ++at) {
    for (const unsigned char mask : {0x01, 0x20, 0x80}) {
      std::string damaged = text;
      damaged[at] = static_cast<char>(damaged[at] ^ mask);
      const ParsedCommitRecord parsed = parse_commit_record(damaged);
      EXPECT_FALSE(parsed.ok()) << "byte " << at;
      if (at >= magic_end && at + 1 < checksum_at) {
        // The body is covered by the checksum, whatever the flip made of it. (The newline
        // before the checksum line is not: without it there is no checksum line.)
        EXPECT_EQ(parsed.problem, CommitProblem::checksum_mismatch)
            << "byte " << at << ": " << parsed.reason;
      }
    }
  }
}

TEST(CommitRecord, BadWorldSizesAreRejected) {
  for (const std::string world : {"0", "-1", "-2147483648", "65537", "2147483648",
                                  "99999999999999999999", "01", "+1", "1x", "", "0x10"}) {
    const ParsedCommitRecord parsed =
        parse_commit_record(with_checksum(header(world) + file_line("rank-0.h5")));
    EXPECT_EQ(parsed.problem, CommitProblem::bad_world_size)
        << "'" << world << "': " << to_string(parsed.problem) << ": " << parsed.reason;
    EXPECT_NE(parsed.reason.find("world size"), std::string::npos) << parsed.reason;
  }
}

TEST(CommitRecord, BadStepsAreRejected) {
  for (const std::string step : {"-1", "1x", "+3", "07", "", "99999999999999999999"}) {
    const ParsedCommitRecord parsed =
        parse_commit_record(with_checksum(header("1", step) + file_line("rank-0.h5")));
    EXPECT_EQ(parsed.problem, CommitProblem::bad_step) << "'" << step << "': " << parsed.reason;
  }
}

TEST(CommitRecord, FileLinesMustListEveryRankOnceInOrder) {
  struct Case {
    std::string body;
    CommitProblem expected;
  };
  const std::vector<Case> cases = {
      {header("2") + file_line("rank-0.h5"), CommitProblem::missing_rank_file},
      {header("2"), CommitProblem::missing_rank_file},
      {header("65536") + file_line("rank-0.h5"), CommitProblem::missing_rank_file},
      {header("2") + file_line("rank-0.h5") + file_line("rank-0.h5"),
       CommitProblem::duplicate_rank_file},
      {header("3") + file_line("rank-0.h5") + file_line("rank-1.h5") + file_line("rank-1.h5"),
       CommitProblem::duplicate_rank_file},
      {header("2") + file_line("rank-1.h5") + file_line("rank-0.h5"),
       CommitProblem::unexpected_rank_file},
      {header("2") + file_line("rank-0.h5") + file_line("rank-1.h5") + file_line("rank-2.h5"),
       CommitProblem::unexpected_rank_file},
      {header("1") + file_line("rank-5.h5"), CommitProblem::unexpected_rank_file},
      {header("1") + file_line("../../etc/passwd"), CommitProblem::unexpected_rank_file},
      {header("1") + file_line("rank-0.h5.tmp-12"), CommitProblem::unexpected_rank_file},
      {header("1") + "file rank-0.h5 -1 0123456789abcdef\n", CommitProblem::malformed},
      {header("1") + "file rank-0.h5 12 0123456789ABCDEF\n", CommitProblem::malformed},
      {header("1") + "file rank-0.h5 12 0123\n", CommitProblem::malformed},
      {header("1") + "file rank-0.h5  12 0123456789abcdef\n", CommitProblem::malformed},
      {header("1") + "file rank-0.h5 12 0123456789abcdef extra\n", CommitProblem::malformed},
      {header("1") + file_line("rank-0.h5") + "\n", CommitProblem::malformed},
      {"tenax-checkpoint-commit 1\nworld_size 1\nstep 7\n" + file_line("rank-0.h5"),
       CommitProblem::malformed},
      {"tenax-checkpoint-commit 1\nstep 7\n", CommitProblem::malformed},
      {"tenax-checkpoint-commit 2\nstep 7\nworld_size 1\n" + file_line("rank-0.h5"),
       CommitProblem::unsupported_version},
      {"tenax-checkpoint-commit 1 x\nstep 7\nworld_size 1\n" + file_line("rank-0.h5"),
       CommitProblem::not_a_commit_record},
      {"tenax-checkpoint-commitment\nstep 7\n", CommitProblem::not_a_commit_record},
  };
  for (const Case& c : cases) {
    const ParsedCommitRecord parsed = parse_commit_record(with_checksum(c.body));
    EXPECT_EQ(parsed.problem, c.expected)
        << c.body << "gave " << to_string(parsed.problem) << ": " << parsed.reason;
    EXPECT_FALSE(parsed.reason.empty());
  }
}

TEST(CommitRecord, HugeOrForeignTextIsNotARecord) {
  // More lines than any world: refused by size before a single line is parsed.
  std::string body = header("3");
  while (body.size() <= kMaxCommitRecordBytes) body += file_line("rank-0.h5");
  EXPECT_EQ(parse_commit_record(with_checksum(body)).problem, CommitProblem::oversized);
  // Many more file lines than the world size, within the size limit: the first one past the
  // world is the finding.
  std::string many = header("3");
  for (int i = 0; i < 50000; ++i) many += file_line(rank_file_name(i % 3));
  const ParsedCommitRecord parsed = parse_commit_record(with_checksum(many));
  EXPECT_EQ(parsed.problem, CommitProblem::unexpected_rank_file);
  EXPECT_NE(parsed.reason.find("beyond its world size 3"), std::string::npos) << parsed.reason;

  EXPECT_EQ(parse_commit_record("\x89HDF\r\n\x1a\n").problem, CommitProblem::not_a_commit_record);
  EXPECT_EQ(parse_commit_record("checksum 0123456789abcdef\n").problem,
            CommitProblem::not_a_commit_record);
  std::string bad_checksum = format_commit_record(sample_record(1));
  bad_checksum.replace(bad_checksum.size() - 5, 1, "z");
  EXPECT_EQ(parse_commit_record(bad_checksum).problem, CommitProblem::malformed);
}

TEST(CommitRecord, FormatRefusesRecordsThatWouldNotParse) {
  CommitRecord record = sample_record(2);
  record.step = -1;
  EXPECT_THROW((void)format_commit_record(record), UsageError);
  record = sample_record(2);
  record.world_size = 3;
  EXPECT_THROW((void)format_commit_record(record), UsageError);
  record = sample_record(2);
  std::swap(record.files[0], record.files[1]);
  EXPECT_THROW((void)format_commit_record(record), UsageError);
  EXPECT_THROW((void)format_commit_record(CommitRecord{1, 0, {}}), UsageError);
  EXPECT_THROW((void)format_commit_record(CommitRecord{1, kMaxWorldSize + 1, {}}), UsageError);
}

TEST(CommitRecord, ReadReportsMissingUnreadableAndOversizedFiles) {
  ScratchDir dir;
  const std::filesystem::path path = dir.path() / "COMMIT";
  EXPECT_EQ(read_commit_record(path).problem, CommitProblem::missing);

  std::filesystem::create_directories(dir.path() / "a-directory");
  const ParsedCommitRecord directory = read_commit_record(dir.path() / "a-directory");
  EXPECT_EQ(directory.problem, CommitProblem::unreadable) << directory.reason;
  EXPECT_NE(directory.reason.find("a-directory"), std::string::npos) << directory.reason;

  write_text(path, std::string(kMaxCommitRecordBytes + 1, 'x'));
  EXPECT_EQ(read_commit_record(path).problem, CommitProblem::oversized);

  write_text(path, format_commit_record(sample_record(2)));
  const ParsedCommitRecord parsed = read_commit_record(path);
  ASSERT_TRUE(parsed.ok()) << parsed.reason;
  EXPECT_EQ(parsed.record.world_size, 2);
}

TEST(CommitRecord, EveryProblemHasItsOwnName) {
  std::set<std::string_view> names;
  for (int p = 0; p <= static_cast<int>(CommitProblem::unexpected_rank_file); ++p) {
    names.insert(to_string(static_cast<CommitProblem>(p)));
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(CommitProblem::unexpected_rank_file) + 1);
  EXPECT_EQ(names.count("unknown"), 0u);
}

}  // namespace
}  // namespace tenax::io
