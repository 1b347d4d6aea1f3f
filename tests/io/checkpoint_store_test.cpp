#include "tenax/io/checkpoint_store.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <optional>

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

// A FIFO named COMMIT hung `tenax ckpt list|verify|show` and the resume (SIGTERM could not stop
// them). Every reader now skips that checkpoint with the reason, at once. Each call runs under a
// deadline; a regression is unblocked by opening the FIFO's other end.
TEST(CheckpointStore, AFifoNamedCommitIsSkippedWithItsReasonWithoutBlocking) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options());
  store.write(1, sample_state(1), {});
  store.write(2, sample_state(2), {});
  const std::filesystem::path commit = store.step_dir(2) / "COMMIT";
  std::filesystem::remove(commit);
  ASSERT_EQ(::mkfifo(commit.c_str(), 0600), 0);
  const auto bounded = [&](const std::function<std::string()>& call) {
    auto result = std::async(std::launch::async, call);
    if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << "blocked on the FIFO";
      const int end = ::open(commit.c_str(), O_WRONLY | O_NONBLOCK);
      if (end >= 0) ::close(end);
    }
    return result.get();
  };
  const std::string expected = "COMMIT is a FIFO, not a regular file";
  EXPECT_EQ(bounded([&] { return store.verify(2, 0).value_or("valid"); }), expected);
  EXPECT_EQ(bounded([&] {
              const LoadedCheckpoint loaded = store.load_latest();
              return std::to_string(loaded.step) + " " + reasons(loaded);
            }),
            "1 step 2: " + expected + "\n");
  EXPECT_EQ(bounded([&] { return std::to_string(store.newest_valid_step(0).step.value_or(-1)); }),
            "1");
  EXPECT_EQ(bounded([&] { return read_commit_record(commit).reason; }), expected);
}

// `checkpoints/step-N` as a symbolic link to a directory outside the run directory: retention
// deleted the target's COMMIT. Now an older one is removed as a link, a newer one is refused for
// writing and skipped for reading, and nothing outside the run directory changes.
TEST(CheckpointStore, ASymlinkedStepDirectoryIsNeverFollowed) {
  Fixture fx;
  const std::filesystem::path victim = fx.dir.path() / "outside" / "victim";
  std::filesystem::create_directories(victim);
  std::ofstream(victim / "COMMIT") << "not yours";
  std::ofstream(victim / "rank-0.h5") << "not yours either";
  CheckpointStore store(fx.dir.path() / "run", fx.options(1));
  std::filesystem::create_directories(store.checkpoints_dir());
  std::filesystem::create_directory_symlink(victim, store.step_dir(0));
  std::filesystem::create_directory_symlink(victim, store.step_dir(9));
  store.write(1, sample_state(1), {});
  store.write(2, sample_state(2), {});
  store.wait_for_background_work();
  EXPECT_FALSE(std::filesystem::is_symlink(store.step_dir(0))) << "removed as a link";
  EXPECT_THROW(store.write(9, sample_state(9), {}), UsageError);
  const LoadedCheckpoint loaded = store.load_latest();
  EXPECT_EQ(loaded.step, 2) << reasons(loaded);
  EXPECT_TRUE(has_reason(loaded, 9, "symbolic link")) << reasons(loaded);
  EXPECT_EQ(store.committed_steps(), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(read_bytes(victim / "COMMIT"), "not yours");
  EXPECT_EQ(read_bytes(victim / "rank-0.h5"), "not yours either");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(victim)) ++entries;
  EXPECT_EQ(entries, 2);
}

// A damaged checkpoint does not count toward keep_last (it counted, so fewer valid ones were
// kept than asked): with keep_last = 2 and step 2 truncated, steps 3 and 1 are the two valid ones
// kept; step 2 stays for inspection until two valid checkpoints are newer than it.
TEST(CheckpointStore, RetentionCountsOnlyCheckpointsThatCanLoad) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options(2));
  store.write(1, sample_state(1), {});
  store.write(2, sample_state(2), {});
  store.wait_for_background_work();
  const std::filesystem::path damaged = store.step_dir(2) / "rank-0.h5";
  ASSERT_TRUE(std::filesystem::exists(damaged));
  std::filesystem::resize_file(damaged, std::filesystem::file_size(damaged) / 2);
  store.write(3, sample_state(3), {});
  store.wait_for_background_work();
  EXPECT_EQ(store.committed_steps(), (std::vector<std::int64_t>{3, 2, 1}));
  store.write(4, sample_state(4), {});
  store.wait_for_background_work();
  EXPECT_EQ(store.committed_steps(), (std::vector<std::int64_t>{4, 3}));
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
    EXPECT_NE(e.fix().find("checkpoints committed before are intact"), std::string::npos)
        << e.fix();
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

// Corrupts one value of `step`'s rank-0 file and re-commits it with the digest of the corrupt
// bytes, as a disk that corrupted data before the digest was taken would: only the dataset
// checksums can tell.
void corrupt_behind_the_digest(CheckpointStore& store, std::int64_t step, unsigned seed) {
  const std::filesystem::path path = store.step_dir(step) / "rank-0.h5";
  const double original = sample_state(seed).tensor("solver/x").data_as<double>()[0];
  const std::string bytes = read_bytes(path);
  const std::size_t at = bytes.find(std::string(reinterpret_cast<const char*>(&original), 8));
  ASSERT_NE(at, std::string::npos);
  flip_byte(path, at);
  const std::string corrupt = read_bytes(path);
  std::filesystem::remove(store.step_dir(step) / "COMMIT");
  store.commit(
      step, 1,
      {CheckpointFile{"rank-0.h5", corrupt.size(), xxh64(corrupt.data(), corrupt.size())}});
}

FileMetadata rank_metadata(int rank, int world_size) {
  FileMetadata meta;
  meta.rank = rank;
  meta.world_size = world_size;
  return meta;
}

// Writes and commits `step` for a world of `world_size` ranks, each writing through its own
// store (as each process of a job does).
void write_world(Fixture& fx, std::int64_t step, int world_size, int keep_last = 3) {
  std::vector<CheckpointFile> files;
  for (int rank = 0; rank < world_size; ++rank) {
    CheckpointStore rank_store(fx.dir.path(), fx.options(keep_last));
    files.push_back(
        rank_store.write_rank_file(step, sample_state(static_cast<unsigned>(step * 10 + rank)),
                                   rank_metadata(rank, world_size)));
  }
  CheckpointStore(fx.dir.path(), fx.options(keep_last)).commit(step, world_size, files);
}

TEST(CheckpointStore, LoadLatestHonoursTheStepBound) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options(10));
  for (int step = 1; step <= 4; ++step) store.write(step, sample_state(step), {});
  flip_byte(store.step_dir(2) / "rank-0.h5", 200);

  const LoadedCheckpoint at_3 = store.load_latest(0, 3);
  ASSERT_TRUE(at_3.found) << reasons(at_3);
  EXPECT_EQ(at_3.step, 3);
  EXPECT_TRUE(at_3.skipped.empty()) << reasons(at_3);  // step 4 is beyond the bound, not bad
  EXPECT_TRUE(bitwise_equal(at_3.state, sample_state(3)));

  const LoadedCheckpoint at_2 = store.load_latest(0, 2);
  EXPECT_EQ(at_2.step, 1) << reasons(at_2);
  ASSERT_EQ(at_2.skipped.size(), 1u) << reasons(at_2);
  EXPECT_TRUE(has_reason(at_2, 2, "digest mismatch")) << reasons(at_2);

  EXPECT_FALSE(store.load_latest(0, 0).found);
  EXPECT_FALSE(store.load_latest(0, -1).found);
  EXPECT_EQ(store.load_latest(0, std::nullopt).step, 4);
  EXPECT_EQ(store.load_latest(0, 1000).step, 4);
}

TEST(CheckpointStore, LoadOneStepVerifiesItOrSaysWhyNot) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options(10));
  for (int step = 1; step <= 3; ++step) store.write(step, sample_state(step), {});
  std::filesystem::resize_file(store.step_dir(2) / "rank-0.h5", 100);
  corrupt_behind_the_digest(store, 3, 3);

  const LoadedCheckpoint one = store.load(1);
  ASSERT_TRUE(one.found) << reasons(one);
  EXPECT_EQ(one.step, 1);
  EXPECT_EQ(one.world_size, 1);
  EXPECT_EQ(one.file, store.step_dir(1) / "rank-0.h5");
  EXPECT_TRUE(bitwise_equal(one.state, sample_state(1)));
  EXPECT_TRUE(one.skipped.empty());

  const LoadedCheckpoint truncated = store.load(2);
  EXPECT_FALSE(truncated.found);
  EXPECT_EQ(truncated.step, -1);
  EXPECT_TRUE(has_reason(truncated, 2, "truncated")) << reasons(truncated);
  const LoadedCheckpoint corrupt = store.load(3);
  EXPECT_FALSE(corrupt.found);
  EXPECT_TRUE(has_reason(corrupt, 3, "checksum mismatch")) << reasons(corrupt);
  const LoadedCheckpoint absent = store.load(9);
  EXPECT_FALSE(absent.found);
  EXPECT_TRUE(has_reason(absent, 9, "no checkpoint directory step-9")) << reasons(absent);
  const LoadedCheckpoint other_rank = store.load(1, 1);
  EXPECT_FALSE(other_rank.found);
  EXPECT_TRUE(has_reason(other_rank, 1, "not in its world of 1")) << reasons(other_rank);
  EXPECT_THROW((void)store.load(-1), UsageError);
}

TEST(CheckpointStore, NewestValidStepVerifiesWithoutLoading) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options(10));
  for (int step = 1; step <= 4; ++step) store.write(step, sample_state(step), {});
  corrupt_behind_the_digest(store, 3, 3);
  flip_byte(store.step_dir(4) / "COMMIT", 30);

  const ValidCheckpoint shallow = store.newest_valid_step(0);
  EXPECT_EQ(shallow.step, 3);  // the digest matches the corrupt bytes; only a deep check sees it
  EXPECT_EQ(shallow.world_size, 1);
  ASSERT_EQ(shallow.skipped.size(), 1u);
  EXPECT_EQ(shallow.skipped[0].step, 4);
  EXPECT_NE(shallow.skipped[0].reason.find("commit record"), std::string::npos);

  const ValidCheckpoint deep = store.newest_valid_step(0, std::nullopt, /*deep=*/true);
  EXPECT_EQ(deep.step, 2);
  ASSERT_EQ(deep.skipped.size(), 2u);
  EXPECT_NE(deep.skipped[1].reason.find("solver/x"), std::string::npos) << deep.skipped[1].reason;

  EXPECT_EQ(store.newest_valid_step(0, 1).step, 1);
  EXPECT_FALSE(store.newest_valid_step(0, 0).step.has_value());
  const ValidCheckpoint wrong_rank = store.newest_valid_step(3);
  EXPECT_FALSE(wrong_rank.step.has_value());
  EXPECT_EQ(wrong_rank.world_size, 0);
  EXPECT_EQ(wrong_rank.skipped.size(), 4u);
}

TEST(CheckpointStore, MultiRankCheckpointsCarryTheirCommittedWorldSize) {
  Fixture fx;
  write_world(fx, 5, 2);
  write_world(fx, 6, 3);
  CheckpointStore store(fx.dir.path(), fx.options());
  EXPECT_EQ(store.committed_world_size(5), 2);
  EXPECT_EQ(store.committed_world_size(6), 3);
  EXPECT_FALSE(store.committed_world_size(7).has_value());

  for (int rank = 0; rank < 2; ++rank) {
    const LoadedCheckpoint loaded = store.load(5, rank);
    ASSERT_TRUE(loaded.found) << reasons(loaded);
    EXPECT_EQ(loaded.world_size, 2);
    EXPECT_EQ(loaded.metadata.rank, rank);
    EXPECT_TRUE(bitwise_equal(loaded.state, sample_state(50u + static_cast<unsigned>(rank))));
  }
  // A resume with two ranks finds step 6 valid for both, and learns it was written by three.
  const LoadedCheckpoint latest = store.load_latest(1);
  EXPECT_EQ(latest.step, 6);
  EXPECT_EQ(latest.world_size, 3);
  EXPECT_EQ(store.newest_valid_step(1).world_size, 3);
  // Rank 2 exists only in step 6's world.
  EXPECT_EQ(store.newest_valid_step(2).step, 6);
  EXPECT_FALSE(store.newest_valid_step(2, 5).step.has_value());
  EXPECT_TRUE(has_reason(store.load(5, 2), 5, "not in its world of 2"));
}

TEST(CheckpointStore, RankFileThatDisagreesWithItsCommitRecordIsRejected) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options());
  // Rank 1's file says it belongs to a world of three, the record says two.
  const CheckpointFile zero = store.write_rank_file(4, sample_state(1), rank_metadata(0, 2));
  const CheckpointFile one = store.write_rank_file(4, sample_state(2), rank_metadata(1, 3));
  store.commit(4, 2, {zero, one});
  EXPECT_TRUE(store.load(4, 0).found);
  const LoadedCheckpoint loaded = store.load(4, 1);
  EXPECT_FALSE(loaded.found);
  EXPECT_TRUE(has_reason(loaded, 4, "does not match its directory and commit record"))
      << reasons(loaded);
  EXPECT_TRUE(store.verify(4, 1, /*deep=*/true).has_value());
}

TEST(CheckpointStore, CommitRefusesRecordsThatCouldNeverVerify) {
  Fixture fx;
  CheckpointStore store(fx.dir.path(), fx.options());
  const CheckpointFile zero = store.write_rank_file(1, sample_state(1), rank_metadata(0, 2));
  EXPECT_THROW(store.commit(1, 2, {zero}), UsageError);
  EXPECT_THROW(store.commit(1, 1, {CheckpointFile{"rank-1.h5", 1, 1}}), UsageError);
  EXPECT_THROW(store.commit(1, kMaxWorldSize + 1, {}), UsageError);
  EXPECT_FALSE(std::filesystem::exists(store.step_dir(1) / "COMMIT"));
  EXPECT_THROW((void)store.write_rank_file(1, sample_state(1), rank_metadata(-1, 2)), UsageError);
}

TEST(CheckpointStore, AFailedRankWriteRemovesOnlyItsOwnFiles) {
  const CheckpointPhase rank_phases[] = {
      CheckpointPhase::after_data_write, CheckpointPhase::after_data_fsync,
      CheckpointPhase::after_rename, CheckpointPhase::after_dir_fsync};
  for (const CheckpointPhase failing : rank_phases) {
    for (const bool peer_first : {true, false}) {
      SCOPED_TRACE(std::string(to_string(failing)) + (peer_first ? ", peer first" : ", peer last"));
      Fixture fx;
      write_world(fx, 1, 2, /*keep_last=*/1);  // the previous checkpoint, committed
      CheckpointStore peer(fx.dir.path(), fx.options(1));
      CheckpointOptions failing_options = fx.options(1);
      failing_options.on_phase = [&](CheckpointPhase phase, std::int64_t) {
        if (phase == failing) throw IoError("injected", "none");
      };
      CheckpointStore failing_rank(fx.dir.path(), failing_options);

      std::optional<CheckpointFile> survivor;
      if (peer_first) survivor = peer.write_rank_file(2, sample_state(20), rank_metadata(0, 2));
      EXPECT_THROW((void)failing_rank.write_rank_file(2, sample_state(21), rank_metadata(1, 2)),
                   IoError);
      if (!peer_first) survivor = peer.write_rank_file(2, sample_state(20), rank_metadata(0, 2));

      // The peer's file is whole, and nothing of the failed rank is left.
      const std::filesystem::path dir = peer.step_dir(2);
      ASSERT_TRUE(std::filesystem::exists(dir / "rank-0.h5"));
      const std::string bytes = read_bytes(dir / "rank-0.h5");
      EXPECT_EQ(bytes.size(), survivor->size);
      EXPECT_EQ(xxh64(bytes.data(), bytes.size()), survivor->digest);
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        EXPECT_EQ(entry.path().filename(), "rank-0.h5") << entry.path();
      }
      // The step never committed: the previous checkpoint is still the one every rank resumes.
      for (int rank = 0; rank < 2; ++rank) {
        EXPECT_FALSE(peer.verify(1, rank).has_value()) << rank;
        EXPECT_EQ(peer.load_latest(rank).step, 1) << rank;
        EXPECT_EQ(peer.newest_valid_step(rank).step, 1) << rank;
      }
      // Retention of the next commit (once, by rank 0) removes the failed step's leftovers.
      write_world(fx, 3, 2, /*keep_last=*/1);
      peer.wait_for_background_work();
      EXPECT_FALSE(std::filesystem::exists(dir));
      EXPECT_EQ(peer.committed_steps(), (std::vector<std::int64_t>{3}));
    }
  }
}

TEST(CheckpointStore, AnyRankRewritingACommittedStepRemovesItsCommitFirst) {
  Fixture fx;
  write_world(fx, 5, 2);
  bool commit_seen_after_rename = true;
  CheckpointOptions options = fx.options();
  CheckpointStore* observer = nullptr;
  options.on_phase = [&](CheckpointPhase phase, std::int64_t) {
    if (phase == CheckpointPhase::after_rename) {
      commit_seen_after_rename = std::filesystem::exists(observer->step_dir(5) / "COMMIT");
    }
  };
  CheckpointStore rank_one(fx.dir.path(), options);
  observer = &rank_one;
  // Rank 1 gets there before rank 0: the old record must not describe its new file.
  const CheckpointFile one = rank_one.write_rank_file(5, sample_state(9), rank_metadata(1, 2));
  EXPECT_FALSE(commit_seen_after_rename);
  EXPECT_TRUE(rank_one.verify(5, 0).has_value());  // step 5 no longer exists ...
  CheckpointStore rank_zero(fx.dir.path(), fx.options());
  const CheckpointFile zero = rank_zero.write_rank_file(5, sample_state(8), rank_metadata(0, 2));
  rank_zero.commit(5, 2, {zero, one});  // ... until it is committed again
  const LoadedCheckpoint loaded = rank_zero.load(5, 1);
  ASSERT_TRUE(loaded.found) << reasons(loaded);
  EXPECT_TRUE(bitwise_equal(loaded.state, sample_state(9)));
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
