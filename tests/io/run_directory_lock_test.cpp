// RunDirectoryLock: one holder per rank and run directory, in this process and across processes;
// the refusal names the holder (and stays clear when its description is missing or hostile); the
// lock dies with its holder (SIGKILL included) and is not inherited by programs started later;
// unusable run directories are refused with the fix.
#include "tenax/io/run_directory_lock.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "tenax/core/error.hpp"

extern char** environ;

namespace tenax::io {
namespace {

namespace fs = std::filesystem;

class RunDirectoryLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("tenax-lock-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(root_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(root_, ec);
  }

  static std::string read(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  // The UsageError that acquire() throws, as "cause | fix".
  static std::string refusal(const fs::path& run_dir, int rank = 0) {
    try {
      const RunDirectoryLock lock = RunDirectoryLock::acquire(run_dir, rank, "second");
    } catch (const UsageError& e) {
      return e.cause() + " | " + e.fix();
    }
    ADD_FAILURE() << "the lock of " << run_dir << " was granted twice";
    return "";
  }

  static std::string host() {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    return name;
  }

  fs::path root_;
};

TEST_F(RunDirectoryLockTest, CreatesTheRunDirectoryAndDescribesItsHolder) {
  const fs::path dir = root_ / "a" / "b" / "run";
  const RunDirectoryLock lock = RunDirectoryLock::acquire(dir, 3, "heat2d");
  ASSERT_TRUE(lock.held());
  EXPECT_EQ(lock.path(), dir / "locks" / "rank-3.lock");
  EXPECT_EQ(RunDirectoryLock::lock_file(dir, 3), lock.path());
  const LockHolder holder = RunDirectoryLock::parse_holder(read(lock.path()));
  EXPECT_EQ(holder.pid, ::getpid());
  EXPECT_EQ(holder.rank, 3);
  EXPECT_EQ(holder.program, "heat2d");
  EXPECT_EQ(holder.host, host());
  EXPECT_TRUE(std::regex_match(holder.started, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << holder.started;
}

TEST_F(RunDirectoryLockTest, ASecondLockOnTheSameRankIsRefusedNamingTheHolder) {
  const RunDirectoryLock first = RunDirectoryLock::acquire(root_, 0, "heat2d");
  const std::string message = refusal(root_);
  for (const std::string part :
       {"run directory " + root_.string() + " is in use by heat2d (pid " +
            std::to_string(::getpid()) + " on host " + host() + ", rank 0, since ",
        std::string("wait for that job to end or stop it, or pass another --run-dir")}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << "\n" << message;
  }
  // The refused attempt left the holder's description alone.
  EXPECT_EQ(RunDirectoryLock::parse_holder(read(first.path())).program, "heat2d");
}

TEST_F(RunDirectoryLockTest, RanksOfOneJobDoNotConflict) {
  const RunDirectoryLock rank0 = RunDirectoryLock::acquire(root_, 0, "job");
  const RunDirectoryLock rank1 = RunDirectoryLock::acquire(root_, 1, "job");
  EXPECT_TRUE(rank0.held());
  EXPECT_TRUE(rank1.held());
  EXPECT_NE(refusal(root_, 1).find("rank 1"), std::string::npos);
}

TEST_F(RunDirectoryLockTest, ReleaseMoveAndDestructionHandTheLockOn) {
  RunDirectoryLock lock = RunDirectoryLock::acquire(root_, 0, "job");
  const fs::path file = lock.path();
  lock.release();
  EXPECT_FALSE(lock.held());
  EXPECT_TRUE(lock.path().empty());
  EXPECT_EQ(read(file), "") << "a released lock leaves no description that could mislead";
  lock.release();  // twice: nothing happens

  RunDirectoryLock moved = RunDirectoryLock::acquire(root_, 0, "job");
  RunDirectoryLock target(std::move(moved));
  EXPECT_FALSE(moved.held());  // NOLINT(bugprone-use-after-move): the moved-from state is defined
  EXPECT_TRUE(target.held());
  EXPECT_FALSE(refusal(root_).empty()) << "the moved lock is still held";

  RunDirectoryLock other = RunDirectoryLock::acquire(root_, 1, "job");
  other = std::move(target);  // releases rank 1, takes over rank 0
  EXPECT_TRUE(other.held());
  EXPECT_EQ(other.path(), file);
  { const RunDirectoryLock rank1 = RunDirectoryLock::acquire(root_, 1, "job"); }
  EXPECT_FALSE(refusal(root_).empty());
  { const RunDirectoryLock gone = std::move(other); }
  const RunDirectoryLock again = RunDirectoryLock::acquire(root_, 0, "job");
  EXPECT_TRUE(again.held());
}

TEST_F(RunDirectoryLockTest, AMissingOrHostileDescriptionStillGivesAClearMessage) {
  const RunDirectoryLock holder = RunDirectoryLock::acquire(root_, 0, "job");
  const auto refused_with = [&](const std::string& content) {
    {
      std::ofstream out(holder.path(), std::ios::binary | std::ios::trunc);
      out << content;
    }
    return refusal(root_);
  };
  const std::string unknown = "does not say which process holds it";
  EXPECT_NE(refused_with("").find(unknown), std::string::npos);
  EXPECT_NE(refused_with("pid=abc\nprogram=x\n").find(unknown), std::string::npos);
  // A pid of this host that is not running is a stale description, not the holder.
  EXPECT_NE(refused_with("pid=2147483647\nhost=" + host() + "\n").find(unknown), std::string::npos);
  EXPECT_NE(refused_with("pid=99999999999999999999999\n").find(unknown), std::string::npos);
  // Megabytes of binary garbage: a bounded read, and nothing of it in the message.
  std::string garbage(4 << 20, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 131 % 251);
  const std::string message = refused_with(garbage);
  EXPECT_NE(message.find(unknown), std::string::npos);
  EXPECT_LT(message.size(), 1000u);
  // Escape sequences and forged lines in the values reach the message as plain characters.
  const std::string forged =
      refused_with("pid=" + std::to_string(::getpid()) + "\nhost=h\x07\nprogram=evil\x1b[2J\r" +
                   std::string(3000, 'x') + "\nrank=" + std::string(1000, '9'));
  EXPECT_NE(forged.find("in use by evil?[2J?xxx"), std::string::npos) << forged;
  EXPECT_NE(forged.find("on host h?, rank 0"), std::string::npos) << forged;
  EXPECT_EQ(forged.find('\x1b'), std::string::npos);
  EXPECT_LT(forged.size(), 1000u);
}

TEST_F(RunDirectoryLockTest, DescriptionsAreParsedAsUntrustedText) {
  LockHolder written;
  written.pid = 42;
  written.rank = 1;
  written.host = "node\nrank=7";
  written.started = "2025-01-31T12:00:00Z";
  written.program = "a\x1b[31mb";
  const LockHolder read_back = RunDirectoryLock::parse_holder(RunDirectoryLock::describe(written));
  EXPECT_EQ(read_back.pid, 42);
  EXPECT_EQ(read_back.rank, 1) << "a newline in a value cannot forge a line";
  EXPECT_EQ(read_back.host, "node?rank=7");
  EXPECT_EQ(read_back.program, "a?[31mb");
  EXPECT_EQ(RunDirectoryLock::parse_holder("pid=-5\nrank=x\n").pid, -1);
  EXPECT_EQ(RunDirectoryLock::parse_holder("pid=0\n").pid, -1);
  EXPECT_EQ(RunDirectoryLock::parse_holder("garbage").pid, -1);
  EXPECT_EQ(RunDirectoryLock::parse_holder("program=" + std::string(10000, 'p')).program.size(),
            256u);
}

TEST_F(RunDirectoryLockTest, AnEmptyProgramNameRecordsTheCommandName) {
  const RunDirectoryLock lock = RunDirectoryLock::acquire(root_, 0, "");
  EXPECT_FALSE(RunDirectoryLock::parse_holder(read(lock.path())).program.empty());
}

// A child process takes the lock and waits; the parent is refused with the child's pid; once the
// child is killed with SIGKILL (no clean-up of any kind), the lock can be taken.
TEST_F(RunDirectoryLockTest, AnotherProcessIsRefusedUntilTheHolderIsKilled) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    try {
      const RunDirectoryLock lock = RunDirectoryLock::acquire(root_, 0, "holder");
      const char byte = 1;
      if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
      while (true) ::pause();
    } catch (...) {
      ::_exit(2);
    }
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "the child did not get the lock";
  ::close(ready[0]);
  const std::string message = refusal(root_);
  EXPECT_NE(message.find("in use by holder (pid " + std::to_string(child) + " on host "),
            std::string::npos)
      << message;
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  const RunDirectoryLock lock = RunDirectoryLock::acquire(root_, 0, "after");
  EXPECT_TRUE(lock.held());
}

// A program started while the lock is held (a helper, a shell command) does not inherit it:
// when the holder lets go, the lock is free even though the program still runs.
TEST_F(RunDirectoryLockTest, ProgramsStartedByTheHolderDoNotHoldTheLock) {
  RunDirectoryLock lock = RunDirectoryLock::acquire(root_, 0, "job");
  pid_t child = 0;
  char sleep_path[] = "/bin/sleep";
  char seconds[] = "30";
  char* argv[] = {sleep_path, seconds, nullptr};
  ASSERT_EQ(::posix_spawn(&child, sleep_path, nullptr, nullptr, argv, environ), 0);
  lock.release();
  EXPECT_NO_THROW({ const RunDirectoryLock again = RunDirectoryLock::acquire(root_, 0, "job"); });
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_F(RunDirectoryLockTest, UnusableRunDirectoriesAreRefusedWithTheFix) {
  const auto refused = [](const fs::path& dir) -> std::string {
    try {
      const RunDirectoryLock lock = RunDirectoryLock::acquire(dir, 0, "job");
    } catch (const Error& e) {
      EXPECT_EQ(e.fault_class(), FaultClass::usage) << e.what();
      return e.cause() + " | " + e.fix();
    }
    ADD_FAILURE() << dir << " was accepted";
    return "";
  };
  // A file where the run directory should be.
  const fs::path file = root_ / "a-file";
  std::ofstream(file) << "x";
  std::string message = refused(file);
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_NE(message.find("Not a directory"), std::string::npos) << message;
  EXPECT_NE(message.find("--run-dir"), std::string::npos) << message;
  // A directory, a symbolic link and a FIFO where the lock file should be.
  fs::create_directories(root_ / "dir-lock" / "locks" / "rank-0.lock");
  message = refused(root_ / "dir-lock");
  EXPECT_NE(message.find("rank-0.lock"), std::string::npos) << message;
  fs::create_directories(root_ / "link-lock" / "locks");
  fs::create_symlink(file, root_ / "link-lock" / "locks" / "rank-0.lock");
  message = refused(root_ / "link-lock");
  EXPECT_NE(message.find("symbolic link"), std::string::npos) << message;
  EXPECT_EQ(std::ifstream(file).get(), 'x') << "the link's target is untouched";
  fs::create_directories(root_ / "fifo-lock" / "locks");
  ASSERT_EQ(::mkfifo((root_ / "fifo-lock" / "locks" / "rank-0.lock").c_str(), 0644), 0);
  message = refused(root_ / "fifo-lock");
  EXPECT_NE(message.find("not a regular file"), std::string::npos) << message;
  // No permission (root is never refused, so only checked as another user).
  if (::geteuid() != 0) {
    const fs::path closed = root_ / "closed";
    fs::create_directories(closed);
    fs::permissions(closed, fs::perms::owner_read | fs::perms::owner_exec);
    message = refused(closed / "run");
    EXPECT_NE(message.find("Permission denied"), std::string::npos) << message;
    EXPECT_NE(message.find("write permission"), std::string::npos) << message;
    fs::permissions(closed, fs::perms::owner_all);
  }
  message = refused("");
  EXPECT_NE(message.find("--run-dir"), std::string::npos) << message;
  EXPECT_THROW((void)RunDirectoryLock::acquire(root_, -1, "job"), UsageError);
}

// `RUN_DIR/locks` as a symbolic link to a directory elsewhere: the lock files were created and
// written there. Refused, with nothing created or written where it points.
TEST_F(RunDirectoryLockTest, ASymlinkedLocksFolderIsRefusedAndItsTargetLeftAlone) {
  const fs::path elsewhere = root_ / "elsewhere";
  fs::create_directories(elsewhere);
  fs::create_directories(root_ / "run");
  fs::create_directory_symlink(elsewhere, root_ / "run" / "locks");
  try {
    const RunDirectoryLock lock = RunDirectoryLock::acquire(root_ / "run", 0, "job");
    ADD_FAILURE() << "locked through a symbolic link";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find((root_ / "run" / "locks").string() + " is a symbolic link"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.fix().find("remove the link"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(elsewhere));
}

}  // namespace
}  // namespace tenax::io
