#include "tenax/runtime/event_log.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"

namespace tenax::runtime {
namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("tenax-event-log-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

std::vector<nlohmann::json> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(EventLog, FormatsOneObjectPerLineInFieldOrder) {
  EXPECT_EQ(EventLog::format(
                "backoff", {{"step", std::int64_t{12}}, {"micro_batch", std::int64_t{64}}}, false),
            "{\"event\":\"backoff\",\"step\":12,\"micro_batch\":64}\n");
  EXPECT_EQ(EventLog::format("fault", {{"reason", std::string("a \"quoted\"\nline")}}, false),
            "{\"event\":\"fault\",\"reason\":\"a \\\"quoted\\\"\\nline\"}\n");
}

TEST(EventLog, AppendsAcrossReopensAndCreatesTheDirectory) {
  const auto dir = fresh_dir("append");
  const auto path = dir / "run" / "events.jsonl";
  {
    EventLog log(path);
    log.append("resumed", {{"step", std::int64_t{3}}});
    log.append("step", {{"step", std::int64_t{4}}, {"seconds", 0.25}});
  }
  EventLog again(path);
  again.append("exit", {{"code", std::int64_t{0}}, {"done", true}});
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["event"], "resumed");
  EXPECT_EQ(lines[1]["seconds"], 0.25);
  EXPECT_EQ(lines[2]["done"], true);
  EXPECT_GT(lines[2]["time"].get<double>(), 1.7e9);
  std::filesystem::remove_all(dir);
}

TEST(EventLog, LinesWrittenBeforeAKillSurvive) {
  const auto dir = fresh_dir("kill");
  const auto path = dir / "events.jsonl";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    EventLog log(path);
    for (std::int64_t step = 0; step < 100; ++step) log.append("step", {{"step", step}});
    ::kill(::getpid(), SIGKILL);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(read_lines(path).size(), 100u);
  std::filesystem::remove_all(dir);
}

// A full disk cuts a line short: the next event starts a line of its own (in the same process
// and after a reopen), and read_events skips the torn line instead of failing on it.
TEST(EventLog, ATornLineIsNeverGluedToTheNextEventAndReadersSkipIt) {
  const auto dir = fresh_dir("torn");
  const auto path = dir / "events.jsonl";
  {
    EventLog log(path);
    log.append("started", {{"total_steps", std::int64_t{10}}});
    // The file-size limit stands in for a full disk: the write stops 12 bytes in.
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = saved;
    small.rlim_cur = std::filesystem::file_size(path) + 12;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    EXPECT_THROW(log.append("checkpoint_written", {{"step", std::int64_t{5}}}), IoError);
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, previous_handler);
    log.append("anomaly", {{"step", std::int64_t{6}}});
  }
  std::ofstream(path, std::ios::app) << "{\"event\":\"resumed\",\"st";  // a crash mid-line
  EventLog reopened(path);
  reopened.append("exit", {{"status", std::string("completed")}});

  const EventLines events = read_events(path);
  EXPECT_EQ(events.skipped, 2);
  ASSERT_EQ(events.lines.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(events.lines[0])["event"], "started");
  EXPECT_EQ(nlohmann::json::parse(events.lines[1])["event"], "anomaly");
  EXPECT_EQ(nlohmann::json::parse(events.lines[2])["event"], "exit");
  EXPECT_THROW((void)read_events(dir / "missing.jsonl"), Error);
  std::filesystem::remove_all(dir);
}

TEST(EventLog, UnwritableLocationIsAnErrorNamingThePath) {
  try {
    EventLog log("/proc/tenax-cannot-write-here/events.jsonl");
    FAIL() << "opening an event log under /proc must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/tenax-cannot-write-here"), std::string::npos);
  }
}

std::string contents(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// `ln -s VICTIM RUN_DIR/events.jsonl` must not make a job append to VICTIM.
TEST(EventLog, ASymlinkInTheLogsPlaceIsRefusedAndItsTargetLeftAlone) {
  const auto dir = fresh_dir("symlink");
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "victim") << "root:x:0:0\n";
  std::filesystem::create_symlink(dir / "victim", dir / "events.jsonl");
  try {
    EventLog log(dir / "events.jsonl");
    log.append("started", {});
    ADD_FAILURE() << "opened the event log through a symbolic link";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find((dir / "events.jsonl").string()), std::string::npos) << e.what();
    EXPECT_NE(e.cause().find("is a symbolic link, not a regular file"), std::string::npos)
        << e.what();
    EXPECT_NE(e.fix().find("remove it"), std::string::npos) << e.what();
  }
  EXPECT_EQ(contents(dir / "victim"), "root:x:0:0\n");
  EXPECT_THROW((void)read_events(dir / "events.jsonl"), UsageError) << "readers do not follow it";
  std::filesystem::remove_all(dir);
}

TEST(EventLog, AFifoInTheLogsPlaceIsRefusedByTheWriter) {
  const auto dir = fresh_dir("fifo-writer");
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir / "events.jsonl").c_str(), 0600), 0);
  try {
    EventLog log(dir / "events.jsonl");
    ADD_FAILURE() << "opened a FIFO as the event log";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("is a FIFO, not a regular file"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// `tenax report` on a run whose events.jsonl is a FIFO (or a link to /dev/zero, which a FIFO
// stands for here) must return at once: the read runs on another thread under a deadline, and
// a regression is unblocked by opening the FIFO's other end.
TEST(EventLog, AReaderRefusesAFifoWithoutBlocking) {
  const auto dir = fresh_dir("fifo-reader");
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink(fifo, dir / "events.jsonl");
  for (const auto& path : {fifo, dir / "events.jsonl"}) {
    auto reading = std::async(std::launch::async, [&] {
      try {
        (void)read_events(path);
        return std::string("read it");
      } catch (const UsageError& e) {
        return e.cause();
      }
    });
    if (reading.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << "read_events blocked on " << path;
      const int end = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets the reader see EOF
      if (end >= 0) ::close(end);
    }
    const std::string cause = reading.get();
    EXPECT_NE(cause.find("not a regular file"), std::string::npos) << path << ": " << cause;
  }
  std::filesystem::remove_all(dir);
}

TEST(EventLog, AReaderSkipsALineLongerThanTheBoundAndReadsOn) {
  constexpr std::size_t kBound = std::size_t{1} << 20;  // kMaxEventLineBytes
  const auto dir = fresh_dir("long-line");
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "events.jsonl", std::ios::binary);
    out << "{\"event\":\"started\"}\n";
    out << "{\"event\":\"x\",\"pad\":\"" << std::string(kBound + 10, 'a') << "\"}\n";
    out << "{\"event\":\"exit\"}\n" << std::string(3 * kBound, 'b');
  }
  const EventLines events = read_events(dir / "events.jsonl");
  ASSERT_EQ(events.lines.size(), 2u);
  EXPECT_EQ(events.lines[1], "{\"event\":\"exit\"}");
  EXPECT_EQ(events.skipped, 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tenax::runtime
