#include "tenax/runtime/progress.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tenax/runtime/runner.hpp"

namespace tenax::runtime {
namespace {

// What `body` writes on stderr (file descriptor 2, where Progress writes).
template <class Body>
std::string stderr_of(Body&& body) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tenax-progress-" + std::to_string(::getpid()));
  std::fflush(stderr);
  const int saved = ::dup(2);
  std::FILE* capture = std::fopen(file.c_str(), "w");
  ::dup2(::fileno(capture), 2);
  body();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::fclose(capture);
  std::ifstream in(file);
  std::string text{std::istreambuf_iterator<char>(in), {}};
  std::filesystem::remove(file);
  return text;
}

// A message said while the in-place progress line is drawn takes the line's place (it was glued
// to its end), and the line is drawn again below it at the next update, even within the 250 ms
// between redraws.
TEST(Progress, AMessageClearsTheTerminalLineWhichIsRedrawnBelowIt) {
  const std::string text = stderr_of([] {
    Progress progress(ProgressMode::terminal, 100, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past the first redraw delay
    progress.update(10, 0);
    progress.clear_line();
    std::fputs("tenax: anomaly at step 11\n", stderr);
    progress.update(11, 0);
    progress.clear_line();
    progress.clear_line();  // nothing drawn: nothing to clear
    progress.finish();
  });
  const std::string clear = "\r\033[K";
  EXPECT_EQ(text.rfind(clear + "step 10/100", 0), 0u) << text;
  const std::size_t message = text.find(clear + "tenax: anomaly at step 11\n");
  ASSERT_NE(message, std::string::npos) << text;
  const std::size_t redraw = text.find(clear + "step 11/100", message);
  EXPECT_NE(redraw, std::string::npos) << text;
  EXPECT_EQ(text.find(clear + clear), std::string::npos) << "a second clear wrote again";
}

TEST(Progress, LogModeNeverDrawsInPlace) {
  const std::string text = stderr_of([] {
    Progress progress(ProgressMode::log, 10, 0);
    for (int step = 1; step <= 10; ++step) progress.update(step, 0);
    progress.clear_line();
    progress.finish();
  });
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_NE(text.find("tenax: step 10/10"), std::string::npos) << text;
}

}  // namespace
}  // namespace tenax::runtime
