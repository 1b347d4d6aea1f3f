// Runs the built `tenax ckpt` on a run directory written by heat2d, before and after damaging
// one of its checkpoints, as a user would.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "io/forged_checkpoint.hpp"
#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/io/state_file.hpp"
#include "tools/command_output.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;

using CliRun = testing::CommandOutput;

// Runs `program arguments`; stderr joins stdout unless `stdout_only`.
CliRun run_program(const std::string& program, const std::string& arguments,
                   bool stdout_only = false) {
  return testing::run_command("'" + program + "' " + arguments +
                              (stdout_only ? " 2>/dev/null" : " 2>&1"));
}

CliRun tenax_cli(const std::string& arguments, bool stdout_only = false) {
  return run_program(TENAX_CLI_PATH, arguments, stdout_only);
}

nlohmann::json tenax_json(const std::string& arguments, int expected_exit_code = 0) {
  const CliRun run = tenax_cli(arguments, /*stdout_only=*/true);
  EXPECT_EQ(run.exit_code, expected_exit_code) << arguments << "\n" << run.output;
  return nlohmann::json::parse(run.output);
}

std::string quote(const fs::path& path) { return "'" + path.string() + "'"; }

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Flips one byte inside the raw data of `entry` (a tensor) in a state file: the data's bytes
// are found by reading the entry's values and searching for them in the file.
void corrupt_entry_data(const fs::path& file, const std::string& entry) {
  const StateDict state = io::read_state_file(file);
  const Tensor& tensor = state.tensor(entry);
  const std::string data(static_cast<const char*>(tensor.data()), tensor.nbytes());
  std::string bytes = read_bytes(file);
  const std::size_t at = bytes.find(data);
  ASSERT_NE(at, std::string::npos) << "the data of " << entry << " is not stored contiguously";
  ASSERT_EQ(bytes.find(data, at + 1), std::string::npos);
  bytes[at + data.size() / 2] = static_cast<char>(bytes[at + data.size() / 2] ^ 0x5a);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

class CkptTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::path(::testing::TempDir()) / ("tenax_ckpt_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    const CliRun run = run_program(HEAT2D_PATH,
                                   "--n 16 --steps 30 --checkpoint-every 10 --device cpu "
                                   "--progress quiet --run-dir " +
                                       quote(root_ / "base"));
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  // A copy of the run directory (steps 10, 20 and 30) that this test may damage.
  void SetUp() override {
    ASSERT_TRUE(fs::exists(root_ / "base" / "checkpoints" / "step-30" / "COMMIT"));
    run_dir_ = root_ / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::copy(root_ / "base", run_dir_, fs::copy_options::recursive);
  }

  [[nodiscard]] fs::path step_dir(int step) const {
    return run_dir_ / "checkpoints" / ("step-" + std::to_string(step));
  }
  [[nodiscard]] fs::path rank_file(int step) const { return step_dir(step) / "rank-0.h5"; }

  static inline fs::path root_;
  fs::path run_dir_;
};

TEST_F(CkptTest, ListShowsCommittedStepsNewestFirstAndTheResumePoint) {
  const CliRun run = tenax_cli("ckpt list " + quote(run_dir_));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::size_t at30 = run.output.find(" 30  committed");
  const std::size_t at20 = run.output.find(" 20  committed");
  const std::size_t at10 = run.output.find(" 10  committed");
  ASSERT_NE(at30, std::string::npos) << run.output;
  ASSERT_NE(at20, std::string::npos) << run.output;
  ASSERT_NE(at10, std::string::npos) << run.output;
  EXPECT_LT(at30, at20);
  EXPECT_LT(at20, at10);
  EXPECT_NE(run.output.find("VALID  <- a resume loads this one"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("INVALID"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("A resume would load step 30"), std::string::npos) << run.output;

  const nlohmann::json list = tenax_json("ckpt list --json " + quote(run_dir_));
  EXPECT_EQ(list.at("resume_step"), 30);
  ASSERT_EQ(list.at("checkpoints").size(), 3U);
  for (const nlohmann::json& c : list.at("checkpoints")) {
    EXPECT_TRUE(c.at("valid").get<bool>()) << c.dump();
    EXPECT_TRUE(c.at("committed").get<bool>()) << c.dump();
    EXPECT_EQ(c.at("rank_files"), 1);
    EXPECT_GT(c.at("bytes").get<std::uint64_t>(), 0U);
    EXPECT_FALSE(c.at("created").get<std::string>().empty());
  }
  EXPECT_EQ(list.at("checkpoints")[0].at("step"), 30);
  EXPECT_EQ(tenax_json("ckpt list --deep --json " + quote(run_dir_)).at("check"), "deep");
}

TEST_F(CkptTest, VerifyAcceptsAValidRunStepDirectoryAndFile) {
  for (const fs::path& path : {run_dir_, run_dir_ / "checkpoints", step_dir(20), rank_file(10)}) {
    const CliRun run = tenax_cli("ckpt verify " + quote(path));
    EXPECT_EQ(run.exit_code, 0) << path << "\n" << run.output;
    EXPECT_NE(run.output.find("OK"), std::string::npos) << run.output;
    EXPECT_EQ(run.output.find("CORRUPT"), std::string::npos) << run.output;
  }
  const nlohmann::json report = tenax_json("ckpt verify --json " + quote(run_dir_));
  EXPECT_TRUE(report.at("valid").get<bool>());
  EXPECT_EQ(report.at("resume_step"), 30);
  EXPECT_EQ(report.at("checkpoints").size(), 3U);
}

TEST_F(CkptTest, VerifyNamesTheFileAndDatasetOfACorruptedCheckpoint) {
  corrupt_entry_data(rank_file(30), "workload/u");

  const CliRun run = tenax_cli("ckpt verify " + quote(run_dir_));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  const std::size_t corrupt = run.output.find("CORRUPT      step 30");
  ASSERT_NE(corrupt, std::string::npos) << run.output;
  EXPECT_NE(run.output.find(rank_file(30).string() + "', entry 'workload/u': checksum mismatch"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("OK           step 20"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("OK           step 10"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("A resume would load step 20"), std::string::npos) << run.output;

  // The damaged file by itself, and its step directory, fail the same way.
  for (const fs::path& path : {rank_file(30), step_dir(30)}) {
    const CliRun one = tenax_cli("ckpt verify " + quote(path));
    EXPECT_EQ(one.exit_code, 1) << one.output;
    EXPECT_NE(one.output.find("entry 'workload/u': checksum mismatch"), std::string::npos)
        << one.output;
  }
  EXPECT_EQ(tenax_cli("ckpt verify " + quote(step_dir(20))).exit_code, 0);

  const nlohmann::json report = tenax_json("ckpt verify --json " + quote(run_dir_), 1);
  EXPECT_FALSE(report.at("valid").get<bool>());
  EXPECT_EQ(report.at("resume_step"), 20);
  const nlohmann::json& newest = report.at("checkpoints")[0];
  EXPECT_EQ(newest.at("step"), 30);
  EXPECT_EQ(newest.at("status"), "CORRUPT");
  bool named = false;
  for (const nlohmann::json& p : newest.at("problems")) {
    const std::string reason = p.at("reason");
    named = named || (p.at("file") == rank_file(30).string() &&
                      reason.find("'workload/u'") != std::string::npos &&
                      reason.find("checksum mismatch") != std::string::npos);
  }
  EXPECT_TRUE(named) << newest.dump(2);
}

TEST_F(CkptTest, VerifyFindsAStateThatIsNotTheOneItsDigestRecorded) {
  // Step 30's field changed after the ranks agreed on its digest, its file and commit record
  // made consistent again: every checksum passes, the state digest does not.
  io::testing::forge_checkpoint(step_dir(30), 0, [](StateDict& state) {
    Tensor u = state.tensor("workload/u").clone();
    u.data_as<double>()[7] = std::nextafter(u.data_as<double>()[7], 2.0);
    state.set("workload/u", u);
  });
  for (const std::string flags : {"", "--deep "}) {
    const CliRun run = tenax_cli("ckpt verify " + flags + quote(run_dir_));
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_NE(run.output.find("CORRUPT      step 30"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("the ranks agreed on when it was written: it was corrupted after "
                              "the step"),
              std::string::npos)
        << run.output;
    EXPECT_NE(run.output.find("OK           step 20"), std::string::npos) << run.output;
  }
}

TEST_F(CkptTest, ListMarksACorruptedCheckpointInvalidAndResumesFromThePreviousOne) {
  corrupt_entry_data(rank_file(30), "workload/u");
  const CliRun run = tenax_cli("ckpt list " + quote(run_dir_));
  // Exit 1 as verify does (it exited 0 with an INVALID line).
  ASSERT_EQ(run.exit_code, 1) << run.output;
  const std::size_t invalid = run.output.find("INVALID: rank-0.h5 digest mismatch");
  const std::size_t resume = run.output.find("VALID  <- a resume loads this one");
  ASSERT_NE(invalid, std::string::npos) << run.output;
  ASSERT_NE(resume, std::string::npos) << run.output;
  EXPECT_LT(run.output.rfind(" 30  committed", invalid), invalid);
  EXPECT_GT(resume, run.output.find(" 20  committed"));
  EXPECT_NE(run.output.find("A resume would load step 20"), std::string::npos) << run.output;

  const nlohmann::json deep = tenax_json("ckpt list --deep --json " + quote(run_dir_), 1);
  EXPECT_FALSE(deep.at("valid").get<bool>());
  EXPECT_EQ(deep.at("resume_step"), 20);
  EXPECT_FALSE(deep.at("checkpoints")[0].at("valid").get<bool>());
  EXPECT_NE(deep.at("checkpoints")[0].at("problems").dump().find("workload/u"), std::string::npos);
}

TEST_F(CkptTest, AnUncommittedDirectoryIsReportedButDoesNotFailTheRun) {
  fs::remove(step_dir(30) / "COMMIT");
  const CliRun list = tenax_cli("ckpt list " + quote(run_dir_));
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find(" 30  uncommitted"), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("A resume would load step 20"), std::string::npos) << list.output;
  const CliRun run = tenax_cli("ckpt verify " + quote(run_dir_));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("UNCOMMITTED  step 30"), std::string::npos) << run.output;
  // Asked about by itself, it is not a valid checkpoint.
  EXPECT_EQ(tenax_cli("ckpt verify " + quote(step_dir(30))).exit_code, 1);
}

// A checkpoint's text (its configuration, an entry's text) is shown as text: escape sequences in
// it never reach the terminal as control bytes.
TEST_F(CkptTest, ShowPrintsEscapeSequencesAsText) {
  StateDict state;
  state.set("note", std::string("\x1b[2Jcleared"));
  io::FileMetadata metadata;
  metadata.config = "{\"program\":\"\x1b]0;pwned\x07\"}";
  const fs::path file = run_dir_.parent_path() / "escapes.h5";
  io::write_state_file(file, state, metadata);
  for (const std::string arguments :
       {"ckpt show " + quote(file), "ckpt show --entry note " + quote(file),
        "ckpt verify " + quote(file)}) {
    const CliRun run = tenax_cli(arguments);
    EXPECT_EQ(run.output.find('\x1b'), std::string::npos) << arguments << ": " << run.output;
    EXPECT_EQ(run.output.find('\x07'), std::string::npos) << arguments;
  }
  EXPECT_NE(tenax_cli("ckpt show " + quote(file)).output.find("?]0;pwned?"), std::string::npos);
  fs::remove(file);
}

TEST_F(CkptTest, ShowPrintsMetadataAndEntries) {
  const CliRun run = tenax_cli("ckpt show " + quote(run_dir_));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* text :
       {"format version:  1", "step:            30", "rank:            0 of world size 1",
        "written:         20", "config:          {", "newest valid checkpoint", "workload/u",
        "tensor", "[16, 16]", "2048", "non-finite 0", "runner/step", "value 30"}) {
    EXPECT_NE(run.output.find(text), std::string::npos) << text << "\n" << run.output;
  }

  const nlohmann::json shown = tenax_json("ckpt show --json " + quote(step_dir(20)));
  EXPECT_EQ(shown.at("metadata").at("step"), 20);
  EXPECT_EQ(shown.at("metadata").at("config").at("n"), 16);
  bool found_u = false;
  for (const nlohmann::json& e : shown.at("entries")) {
    if (e.at("name") != "workload/u") continue;
    found_u = true;
    EXPECT_EQ(e.at("dtype"), "f64");
    EXPECT_EQ(e.at("shape"), nlohmann::json::array({16, 16}));
    EXPECT_EQ(e.at("bytes"), 2048);
    EXPECT_EQ(e.at("checksum").get<std::string>().size(), 16U);
    EXPECT_EQ(e.at("stats").at("non_finite"), 0);
    EXPECT_GT(e.at("stats").at("max").get<double>(), 0.0);
  }
  EXPECT_TRUE(found_u) << shown.dump(2);

  const CliRun entry = tenax_cli("ckpt show --entry workload/u --limit 3 " + quote(rank_file(10)));
  ASSERT_EQ(entry.exit_code, 0) << entry.output;
  EXPECT_NE(entry.output.find("[0, 2]"), std::string::npos) << entry.output;
  EXPECT_EQ(entry.output.find("[0, 3]"), std::string::npos) << entry.output;
  EXPECT_NE(entry.output.find("253 more"), std::string::npos) << entry.output;
  const nlohmann::json all =
      tenax_json("ckpt show --json --entry workload/u --limit 0 " + quote(rank_file(10)));
  EXPECT_EQ(all.at("entry").at("values").size(), 256U);
  EXPECT_FALSE(all.at("entry").at("truncated").get<bool>());

  const CliRun missing = tenax_cli("ckpt show --entry nope " + quote(rank_file(10)));
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("workload/u"), std::string::npos) << missing.output;
}

TEST_F(CkptTest, ShowSaysHowTheStateIsSplitAcrossRanks) {
  const CliRun run = tenax_cli("ckpt show " + quote(run_dir_));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("sharding:        1 tensor(s) split across 1 rank(s)"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("workload/u along axis 0 of 16:  0:[0, 16)*"), std::string::npos)
      << run.output;
  const nlohmann::json shown = tenax_json("ckpt show --json " + quote(run_dir_));
  EXPECT_EQ(shown.at("sharding").at("world_size"), 1);
  EXPECT_EQ(shown.at("sharding").at("tensors").at(0).at("slabs"),
            nlohmann::json::parse("[[0, 16]]"));

  // A damaged table (rewritten, with its checksum, by a program that does not know its rules)
  // is named, not trusted.
  StateDict state = io::read_state_file(rank_file(30));
  state.set("runner/shards", std::string(R"({"world_size":1,"ranks":[[{"name":"workload/u",)"
                                         R"("axis":0,"begin":0,"end":9,"extent":16}]]})"));
  const fs::path forged = run_dir_ / "forged.h5";
  io::write_state_file(forged, state, io::FileMetadata{});
  const CliRun bad = tenax_cli("ckpt show " + quote(forged));
  EXPECT_NE(bad.output.find("sharding:        unreadable"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("up to 9 of 16"), std::string::npos) << bad.output;

  // A table of boxes (a 2 x 2 block decomposition on 4 ranks) shows each rank's box.
  std::string boxes = R"({"world_size":4,"ranks":[)";
  for (int r = 0; r < 4; ++r) {
    const int row = r / 2 * 9;
    const int column = r % 2 * 10;
    boxes += (r == 0 ? "" : ",") + std::string(R"([{"name":"workload/u","axis":0,"begin":)") +
             std::to_string(row) + R"(,"end":)" + std::to_string(row == 0 ? 9 : 16) +
             R"(,"extent":16,"more":[{"axis":1,"begin":)" + std::to_string(column) + R"(,"end":)" +
             std::to_string(column + 10) + R"(,"extent":20}]}])";
  }
  state.set("runner/shards", boxes + "]}");
  const fs::path blocks = run_dir_ / "blocks.h5";
  io::write_state_file(blocks, state, io::FileMetadata{});
  const CliRun shown_boxes = tenax_cli("ckpt show " + quote(blocks));
  EXPECT_NE(shown_boxes.output.find("sharding:        1 tensor(s) split across 4 rank(s)"),
            std::string::npos)
      << shown_boxes.output;
  EXPECT_NE(shown_boxes.output.find("workload/u in boxes along axes 0 x 1 of 16 x 20:  "
                                    "0:[0, 9) x [0, 10)*  1:[0, 9) x [10, 20)  "
                                    "2:[9, 16) x [0, 10)  3:[9, 16) x [10, 20)"),
            std::string::npos)
      << shown_boxes.output;
  const nlohmann::json boxes_json = tenax_json("ckpt show --json " + quote(blocks));
  const nlohmann::json& tensor = boxes_json.at("sharding").at("tensors").at(0);
  EXPECT_EQ(tensor.at("axes"), nlohmann::json::parse("[0, 1]"));
  EXPECT_EQ(tensor.at("extents"), nlohmann::json::parse("[16, 20]"));
  EXPECT_EQ(tensor.at("boxes").at(3), nlohmann::json::parse("[[9, 16], [10, 20]]"));
  EXPECT_EQ(tensor.at("slabs").at(3), nlohmann::json::parse("[9, 16]"));
}

TEST_F(CkptTest, ShowPrintsTheValuesOfSmallEntries) {
  StateDict state;
  Tensor small = Tensor::empty({2, 2}, DType::f32);
  const float values[] = {1.5F, -2.0F, 0.25F, 8.0F};
  std::memcpy(small.data(), values, sizeof values);
  state.set("small", small);
  Tensor counts = Tensor::empty({3}, DType::i32);
  const std::int32_t ints[] = {7, -1, 42};
  std::memcpy(counts.data(), ints, sizeof ints);
  state.set("nested/counts", counts);
  state.set("label", std::string("hello"));
  io::FileMetadata meta;
  meta.step = 5;
  const fs::path file = run_dir_ / "small.h5";
  io::write_state_file(file, state, meta);

  const CliRun run = tenax_cli("ckpt show " + quote(file));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("values [1.5, -2, 0.25, 8]"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("values [7, -1, 42]"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("value \"hello\""), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("step:            5"), std::string::npos) << run.output;
  EXPECT_EQ(tenax_cli("ckpt verify " + quote(file)).exit_code, 0);
}

TEST_F(CkptTest, BadPathsGiveAClearErrorWithAFix) {
  const CliRun missing = tenax_cli("ckpt verify " + quote(run_dir_ / "nope"));
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("does not exist"), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("fix:"), std::string::npos) << missing.output;

  const fs::path plain = run_dir_ / "plain";
  fs::create_directories(plain);
  const CliRun not_run = tenax_cli("ckpt list " + quote(plain));
  EXPECT_EQ(not_run.exit_code, 2) << not_run.output;
  EXPECT_NE(not_run.output.find("neither a run directory"), std::string::npos) << not_run.output;

  const fs::path text = run_dir_ / "notes.txt";
  std::ofstream(text) << "not a checkpoint\n";
  const CliRun show_text = tenax_cli("ckpt show " + quote(text));
  EXPECT_EQ(show_text.exit_code, 1) << show_text.output;
  EXPECT_NE(show_text.output.find("is not a tenax state file"), std::string::npos)
      << show_text.output;
  EXPECT_NE(show_text.output.find("fix:"), std::string::npos) << show_text.output;
  const CliRun verify_text = tenax_cli("ckpt verify " + quote(text));
  EXPECT_EQ(verify_text.exit_code, 1) << verify_text.output;
  EXPECT_NE(verify_text.output.find("CORRUPT"), std::string::npos) << verify_text.output;

  EXPECT_EQ(tenax_cli("ckpt list " + quote(step_dir(10))).exit_code, 2);
  EXPECT_EQ(tenax_cli("ckpt verify").exit_code, 2);
  EXPECT_EQ(tenax_cli("ckpt").exit_code, 2);
  EXPECT_EQ(tenax_cli("ckpt verify --bogus " + quote(run_dir_)).exit_code, 2);

  fs::remove_all(run_dir_ / "checkpoints");
  const CliRun empty = tenax_cli("ckpt verify " + quote(run_dir_));
  EXPECT_EQ(empty.exit_code, 1) << empty.output;
  EXPECT_NE(empty.output.find("No committed checkpoint"), std::string::npos) << empty.output;
  const CliRun show_empty = tenax_cli("ckpt show " + quote(run_dir_));
  EXPECT_EQ(show_empty.exit_code, 1) << show_empty.output;
  EXPECT_NE(show_empty.output.find("no valid checkpoint"), std::string::npos) << show_empty.output;
}

}  // namespace
}  // namespace tenax
