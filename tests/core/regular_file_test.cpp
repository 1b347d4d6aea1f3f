// The regular-file rule (tenax/core/regular_file.hpp): FIFOs, directories and symbolic links are
// refused without blocking and named, an output is replaced whole and nothing but the writer's
// own temporary is ever removed. Every FIFO here is the test's own, in a scratch directory; no
// device node is touched (a FIFO shows the same defects: it blocks an open, it is not a file).
#include "tenax/core/regular_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tenax/core/error.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;

class RegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tenax-regular-file-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path file(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  fs::path fifo(const std::string& name) const {
    const fs::path path = dir_ / name;
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0);
    return path;
  }
  static std::string read_all(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  fs::path dir_;
};

TEST_F(RegularFileTest, FileKindNamesWhatIsThere) {
  EXPECT_EQ(file_kind(file("a", "x")), FileKind::regular);
  EXPECT_EQ(file_kind(fifo("f")), FileKind::fifo);
  EXPECT_EQ(file_kind(dir_), FileKind::directory);
  EXPECT_EQ(file_kind(dir_ / "none"), FileKind::missing);
  fs::create_symlink(dir_ / "f", dir_ / "link");
  EXPECT_EQ(file_kind(dir_ / "link"), FileKind::symlink);
  EXPECT_EQ(file_kind(dir_ / "link", /*follow_symlinks=*/true), FileKind::fifo);
  EXPECT_EQ(describe(FileKind::fifo), "a FIFO");
  EXPECT_EQ(describe(FileKind::character_device), "a character device");
}

// Without a writer, a blocking open of a FIFO for reading never returns: the test would hang.
TEST_F(RegularFileTest, AFifoIsRefusedWithoutBlockingForReadingAndWriting) {
  const fs::path path = fifo("COMMIT");
  for (const int flags : {O_RDONLY, O_WRONLY | O_APPEND, O_RDWR | O_CREAT}) {
    for (const Symlinks symlinks : {Symlinks::refuse, Symlinks::follow}) {
      const OpenedFile opened = try_open_regular_file(path, flags, symlinks);
      EXPECT_FALSE(opened.ok());
      EXPECT_EQ(opened.kind, FileKind::fifo);
      EXPECT_EQ(opened.problem, "'" + path.string() + "' is a FIFO, not a regular file");
    }
  }
  try {
    (void)open_regular_file(path, O_RDONLY, Symlinks::follow, "give a regular file");
    ADD_FAILURE() << "opened a FIFO";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.cause(), "'" + path.string() + "' is a FIFO, not a regular file");
    EXPECT_EQ(e.fix(), "give a regular file");
  }
}

TEST_F(RegularFileTest, ASymlinkIsFollowedOnlyToARegularFileAndOnlyWhenAsked) {
  file("target", "hello");
  fs::create_symlink(dir_ / "target", dir_ / "link");
  fs::create_symlink(fifo("pipe"), dir_ / "pipe-link");

  const OpenedFile refused = try_open_regular_file(dir_ / "link", O_RDONLY, Symlinks::refuse);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.kind, FileKind::symlink);
  EXPECT_NE(refused.problem.find("is a symbolic link, not a regular file"), std::string::npos);

  const OpenedFile followed = try_open_regular_file(dir_ / "link", O_RDONLY, Symlinks::follow);
  ASSERT_TRUE(followed.ok()) << followed.problem;
  char text[8] = {};
  EXPECT_EQ(::read(followed.fd.get(), text, sizeof text), 5);
  EXPECT_EQ(::fcntl(followed.fd.get(), F_GETFL) & O_NONBLOCK, 0) << "O_NONBLOCK is cleared";

  const OpenedFile to_fifo = try_open_regular_file(dir_ / "pipe-link", O_RDONLY, Symlinks::follow);
  EXPECT_FALSE(to_fifo.ok());
  EXPECT_EQ(to_fifo.kind, FileKind::fifo);

  // A write through a refused link changes nothing where it points.
  EXPECT_FALSE(
      try_open_regular_file(dir_ / "link", O_WRONLY | O_APPEND | O_CREAT, Symlinks::refuse).ok());
  EXPECT_EQ(read_all(dir_ / "target"), "hello");
}

TEST_F(RegularFileTest, AMissingFileIsAnErrnoProblemAndCreatingOneWorks) {
  const OpenedFile missing = try_open_regular_file(dir_ / "none", O_RDONLY, Symlinks::refuse);
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.error, ENOENT);
  EXPECT_THROW((void)open_regular_file(dir_ / "none", O_RDONLY, Symlinks::refuse, "fix"), IoError);
  const OpenedFile created =
      try_open_regular_file(dir_ / "new", O_WRONLY | O_CREAT, Symlinks::refuse);
  EXPECT_TRUE(created.ok()) << created.problem;
  EXPECT_EQ(file_kind(dir_ / "new"), FileKind::regular);
}

TEST_F(RegularFileTest, AnOutputThatIsNotARegularFileIsRefusedAndLeftAlone) {
  const fs::path pipe = fifo("out");
  fs::create_symlink(file("victim", "precious"), dir_ / "link");
  for (const fs::path& path : {pipe, dir_ / "link", dir_}) {
    try {
      replace_file_contents(path, "--output", "<html>");
      ADD_FAILURE() << "wrote " << path;
    } catch (const UsageError& e) {
      EXPECT_NE(e.cause().find("--output " + path.string() + " is "), std::string::npos)
          << e.what();
      EXPECT_NE(e.cause().find(", not a regular file"), std::string::npos) << e.what();
      EXPECT_NE(e.fix().find("give the path of a regular file"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(file_kind(pipe), FileKind::fifo);
  EXPECT_EQ(file_kind(dir_ / "link"), FileKind::symlink);
  EXPECT_EQ(read_all(dir_ / "victim"), "precious");
  EXPECT_THROW(require_output_path("", "-o"), UsageError);
}

TEST_F(RegularFileTest, AnOutputIsReplacedWholeAndAFailedWriteRemovesOnlyItsTemporary) {
  const fs::path path = file("report.html", "old");
  replace_file_contents(path, "-o", "new");
  EXPECT_EQ(read_all(path), "new");
  replace_file_contents(dir_ / "fresh", "-o", "made");
  EXPECT_EQ(read_all(dir_ / "fresh"), "made");

  EXPECT_THROW(replace_file(path, "-o",
                            [](const fs::path& temporary) {
                              std::ofstream(temporary) << "half";
                              throw IoError("disk full", "free space");
                            }),
               IoError);
  EXPECT_EQ(read_all(path), "new");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 2) << "the temporary is gone";
}

}  // namespace
}  // namespace tenax
