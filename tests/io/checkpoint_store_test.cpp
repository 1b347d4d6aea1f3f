#include "tenax/io/checkpoint_store.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "io/io_test_helpers.hpp"
#include "tenax/io/checksum.hpp"

namespace tenax::io {
namespace {

using testing::bitwise_equal;
using testing::sample_state;
using testing::ScratchDir;

// A store whose fault plan is private to the test (so TENAX_FAULTS of the environment and the
// process-wide counters play no part).
struct Fixture {
  ScratchDir dir;
  FaultPlan plan;
  CheckpointOptions options(int keep_last = 3) {
    CheckpointOptions o;
    o.keep_last = keep_last;
    o.fault_plan = &plan;
    return o;
  }
};

bool has_reason(const LoadedCheckpoint& loaded, std::int64_t step, const std::string& word) {
  for (const auto& skip : loaded.skipped) {
    if (skip.step == step && skip.reason.find(word) != std::string::npos) return true;
  }
  return false;
}

std::string reasons(const LoadedCheckpoint& loaded) {
  std::string text;
  for (const auto& skip : loaded.skipped) {
    text += "step " + std::to_string(skip.step) + ": " + skip.reason + "\n";
  }
  return text;
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void flip_byte(const std::filesystem::path& path, std::uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x10));
}

TEST(CheckpointStore, WritesTheDocumentedLayoutAndLoadsIt) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options());
  store.write(10, sample_state(10), {.config = "{}"});
  EXPECT_TRUE(std::filesystem::exists(fx.dir.path() / "checkpoints/step-10/rank-0.h5"));
  EXPECT_TRUE(std::filesystem::exists(fx.dir.path() / "checkpoints/step-10/COMMIT"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(store.step_dir(10)),
                          std::filesystem::directory_iterator()),
            2);  // no temporary files left behind
  EXPECT_FALSE(store.verify(10).has_value());

  const LoadedCheckpoint loaded = store.load_latest();
  ASSERT_TRUE(loaded.found) << reasons(loaded);
  EXPECT_EQ(loaded.step, 10);
  EXPECT_EQ(loaded.metadata.step, 10);
  EXPECT_EQ(loaded.metadata.config, "{}");
  EXPECT_TRUE(loaded.skipped.empty());
  EXPECT_TRUE(bitwise_equal(loaded.state, sample_state(10)));
}

TEST(CheckpointStore, EmptyRunDirectoryHasNoCheckpoint) {
  Fixture fx;
  const LoadedCheckpoint loaded = CheckpointStore(fx.dir.path(), fx.options()).load_latest();
  EXPECT_FALSE(loaded.found);
  EXPECT_EQ(loaded.step, -1);
}

TEST(CheckpointStore, NewestValidIsChosenAndEverySkipHasItsReason) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options(10));
  for (int step = 1; step <= 6; ++step) store.write(step, sample_state(step), {});
  const auto file = [&](int step) { return store.step_dir(step) / "rank-0.h5"; };

  std::filesystem::create_directories(store.step_dir(7));  // a write that never committed
  std::filesystem::copy_file(file(6), store.step_dir(7) / "rank-0.h5");
  std::filesystem::remove(store.step_dir(6) / "COMMIT");        // missing commit record
  flip_byte(file(5), std::filesystem::file_size(file(5)) / 2);  // digest mismatch
  std::filesystem::resize_file(file(4), std::filesystem::file_size(file(4)) - 100);  // truncated
  {
    // Corrupt one value of step 3 and re-commit with the digest of the corrupt bytes, as a disk
    // that corrupted data before the digest was taken would: only the dataset checksum is left
    // to catch it.
    const std::filesystem::path path = file(3);
    const double original = sample_state(3).tensor("solver/x").data_as<double>()[0];
    const std::string bytes = read_bytes(path);
    const std::size_t at = bytes.find(std::string(reinterpret_cast<const char*>(&original), 8));
    ASSERT_NE(at, std::string::npos);
    flip_byte(path, at);
    const std::string corrupt = read_bytes(path);
    std::filesystem::remove(store.step_dir(3) / "COMMIT");
    store.commit(
        3, 1, {CheckpointFile{"rank-0.h5", corrupt.size(), xxh64(corrupt.data(), corrupt.size())}});
  }

  const LoadedCheckpoint loaded = store.load_latest();
  ASSERT_TRUE(loaded.found) << reasons(loaded);
  EXPECT_EQ(loaded.step, 2) << reasons(loaded);
  EXPECT_TRUE(bitwise_equal(loaded.state, sample_state(2)));
  ASSERT_EQ(loaded.skipped.size(), 5u) << reasons(loaded);
  EXPECT_TRUE(has_reason(loaded, 7, "no commit record")) << reasons(loaded);
  EXPECT_TRUE(has_reason(loaded, 6, "no commit record")) << reasons(loaded);
  EXPECT_TRUE(has_reason(loaded, 5, "digest mismatch")) << reasons(loaded);
  EXPECT_TRUE(has_reason(loaded, 4, "truncated")) << reasons(loaded);
  EXPECT_TRUE(has_reason(loaded, 3, "checksum mismatch")) << reasons(loaded);
  EXPECT_TRUE(has_reason(loaded, 3, "solver/x")) << reasons(loaded);
}

TEST(CheckpointStore, CorruptCommitRecordIsSkipped) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options());
  store.write(1, sample_state(1), {});
  store.write(2, sample_state(2), {});
  flip_byte(store.step_dir(2) / "COMMIT", 30);
  const LoadedCheckpoint loaded = store.load_latest();
  EXPECT_EQ(loaded.step, 1);
  EXPECT_TRUE(has_reason(loaded, 2, "commit record")) << reasons(loaded);
}

TEST(CheckpointStore, RetentionKeepsTheLastNAndCleansUncommittedDirectories) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options(2));
  std::filesystem::create_directories(store.step_dir(0));  // an interrupted older write
  store.write(1, sample_state(1), {});
  store.write(2, sample_state(2), {});
  store.wait_for_background_work();  // removals run behind the write; other readers wait here
  EXPECT_FALSE(std::filesystem::exists(store.step_dir(0)));
  EXPECT_EQ(store.committed_steps(), (std::vector<std::int64_t>{2, 1}));
  store.write(3, sample_state(3), {});
  EXPECT_EQ(store.committed_steps(), (std::vector<std::int64_t>{3, 2}));
  store.write(4, sample_state(4), {});
  EXPECT_EQ(store.committed_steps(), (std::vector<std::int64_t>{4, 3}));
  EXPECT_FALSE(std::filesystem::exists(store.step_dir(1)));
  EXPECT_EQ(store.load_latest().step, 4);
}

TEST(CheckpointStore, PreviousCheckpointSurvivesUntilTheNewOneCommits) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options(1));
  store.write(1, sample_state(1), {});
  std::vector<std::string> seen;
  CheckpointOptions options = fx.options(1);
  options.on_phase = [&](CheckpointPhase phase, std::int64_t step) {
    seen.emplace_back(to_string(phase));
    // With keep_last = 1, step 1 must still exist and load at every phase of step 2's write.
    EXPECT_EQ(step, 2);
    EXPECT_TRUE(std::filesystem::exists(store.step_dir(1) / "COMMIT")) << to_string(phase);
    EXPECT_FALSE(store.verify(1).has_value()) << to_string(phase);
  };
  CheckpointStore observed(fx.dir.path(), options);
  observed.write(2, sample_state(2), {});
  EXPECT_EQ(seen, (std::vector<std::string>{"after_data_write", "after_data_fsync", "after_rename",
                                            "after_dir_fsync", "after_commit_write",
                                            "after_commit_rename", "after_commit_dir_fsync"}));
  EXPECT_EQ(observed.committed_steps(), (std::vector<std::int64_t>{2}));
}

TEST(CheckpointStore, FailureAtAnyPhaseLeavesThePreviousCheckpointAndNoTemporaries) {
  for (const CheckpointPhase failing : kAllCheckpointPhases) {
    Fixture fx;
    CheckpointStore(fx.dir.path(), fx.options(1)).write(1, sample_state(1), {});
    CheckpointOptions options = fx.options(1);
    options.on_phase = [&](CheckpointPhase phase, std::int64_t) {
      if (phase == failing) throw IoError("injected", "none");
    };
    CheckpointStore store(fx.dir.path(), options);
    EXPECT_THROW(store.write(2, sample_state(2), {}), IoError);
    const LoadedCheckpoint loaded = store.load_latest();
    // Once COMMIT is renamed into place the new checkpoint exists; before, the old one rules.
    const bool committed = failing == CheckpointPhase::after_commit_rename ||
                           failing == CheckpointPhase::after_commit_dir_fsync;
    EXPECT_EQ(loaded.step, committed ? 2 : 1) << to_string(failing) << "\n" << reasons(loaded);
    EXPECT_FALSE(store.verify(1).has_value()) << to_string(failing);
    if (!committed) EXPECT_FALSE(std::filesystem::exists(store.step_dir(2))) << to_string(failing);
    for (const auto& entry : std::filesystem::recursive_directory_iterator(fx.dir.path())) {
      EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos)
          << entry.path() << " after failing at " << to_string(failing);
    }
  }
}

TEST(CheckpointStore, InjectedDiskFullIsAClearIoErrorAndThePreviousCheckpointLoads) {
  Fixture fx;
  fx.plan = FaultPlan::parse("enospc@checkpoint=2");
  CheckpointStore store(fx.dir.path(), fx.options(1));
  store.write(1, sample_state(1), {});
  try {
    store.write(2, sample_state(2), {});
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
    EXPECT_NE(e.fix().find("free disk space"), std::string::npos) << e.fix();
    EXPECT_NE(e.fix().find("previous checkpoint is intact"), std::string::npos) << e.fix();
  }
  const LoadedCheckpoint loaded = store.load_latest();
  EXPECT_EQ(loaded.step, 1);
  EXPECT_TRUE(bitwise_equal(loaded.state, sample_state(1)));
  EXPECT_FALSE(std::filesystem::exists(store.step_dir(2)));
  store.write(3, sample_state(3), {});  // the next checkpoint works again
  EXPECT_EQ(store.load_latest().step, 3);
}

TEST(CheckpointStore, KillAtEveryPhaseLeavesAValidCheckpoint) {
  for (const CheckpointPhase phase : kAllCheckpointPhases) {
    Fixture fx;
    CheckpointStore(fx.dir.path(), fx.options(1)).write(1, sample_state(1), {});
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      FaultPlan plan = FaultPlan::parse("kill@checkpoint=1:" + std::string(to_string(phase)));
      CheckpointOptions options;
      options.keep_last = 1;
      options.fault_plan = &plan;
      CheckpointStore(fx.dir.path(), options).write(2, sample_state(2), {});
      ::_exit(0);  // not reached when the kill fires
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << to_string(phase);
    const LoadedCheckpoint loaded = CheckpointStore(fx.dir.path(), fx.options(1)).load_latest();
    ASSERT_TRUE(loaded.found) << to_string(phase);
    const bool committed = phase == CheckpointPhase::after_commit_rename ||
                           phase == CheckpointPhase::after_commit_dir_fsync;
    EXPECT_EQ(loaded.step, committed ? 2 : 1) << to_string(phase) << "\n" << reasons(loaded);
    EXPECT_TRUE(bitwise_equal(loaded.state, sample_state(static_cast<unsigned>(loaded.step))));
  }
}

TEST(CheckpointStore, RewritingACommittedStepReplacesIt) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options());
  store.write(5, sample_state(1), {});
  store.write(5, sample_state(2), {});
  const LoadedCheckpoint loaded = store.load_latest();
  EXPECT_EQ(loaded.step, 5);
  EXPECT_TRUE(bitwise_equal(loaded.state, sample_state(2)));
}

TEST(CheckpointStore, BadOptionsAreUsageErrors) {
  Fixture fx;
  EXPECT_THROW(CheckpointStore(fx.dir.path(), fx.options(0)), UsageError);
  fx.plan = FaultPlan::parse("kill@checkpoint=1:after_lunch");
  try {
    CheckpointStore store(fx.dir.path(), fx.options());
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("after_lunch"), std::string::npos);
    EXPECT_NE(e.fix().find("after_commit_rename"), std::string::npos);
  }
}

}  // namespace
}  // namespace tenax::io
