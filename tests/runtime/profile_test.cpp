// Profiles (tenax/core/profiler.hpp, RunnerOptions::profile_path): a run's trace is valid JSON in
// Chrome's trace event format, holds the phases of every step, checkpoint and NaN scan, and its
// spans nest on each thread; nothing is recorded or written when no profile is asked for; the
// span count is bounded; a bad path is refused before the run and an unwritable file is said.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "runtime/toy_workload.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/profiler.hpp"
#include "tenax/runtime/runner.hpp"

namespace tenax::runtime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::ToyWorkload;

class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tenax-profile-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  [[nodiscard]] RunnerOptions options(std::int64_t steps) const {
    RunnerOptions o;
    o.run_dir = dir_ / "run";
    o.total_steps = steps;
    o.checkpoint_every = 4;
    o.progress = ProgressMode::quiet;
    o.faults = &no_faults_;
    return o;
  }

  fs::path dir_;
  FaultPlan no_faults_;
};

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// Spans of one thread must nest: sorted by start, each lies inside the innermost open span or
// starts after it ended.
void expect_nested(const std::vector<json>& spans) {
  std::map<std::int64_t, std::vector<std::pair<double, double>>> by_thread;
  for (const json& e : spans) {
    by_thread[e.at("tid").get<std::int64_t>()].emplace_back(e.at("ts").get<double>(),
                                                            e.at("dur").get<double>());
  }
  for (auto& [thread, list] : by_thread) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.first < b.first || (a.first == b.first && a.second > b.second);
    });
    std::vector<double> open_ends;
    for (const auto& [start, duration] : list) {
      ASSERT_GE(duration, 0.0);
      while (!open_ends.empty() && start >= open_ends.back()) open_ends.pop_back();
      if (!open_ends.empty()) {
        EXPECT_LE(start + duration, open_ends.back() + 1e-3)
            << "a span on thread " << thread << " starting at " << start
            << " us outlives the span it started in";
      }
      open_ends.push_back(start + duration);
    }
  }
}

TEST_F(ProfileTest, ARunWritesATraceOfItsPhasesThatNest) {
  ToyWorkload toy(8);
  toy.oom = [](std::int64_t step, int attempt, std::int64_t) { return step == 3 && attempt == 0; };
  RunnerOptions o = options(10);
  o.profile_path = dir_ / "profile.json";
  ASSERT_EQ(Runner(toy, o).run().status, RunStatus::completed);
  ASSERT_TRUE(fs::exists(o.profile_path));
  EXPECT_FALSE(profiling::enabled()) << "the run's end stops the profile";

  const json trace = read_json(o.profile_path);
  EXPECT_EQ(trace.at("otherData").at("dropped_spans"), 0);
  std::vector<json> spans;
  std::map<std::string, int> count;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    EXPECT_EQ(e.at("pid"), 0);
    EXPECT_EQ(e.at("cat"), "tenax");
    spans.push_back(e);
    ++count[e.at("name").get<std::string>()];
  }
  EXPECT_EQ(count["step"], 10);
  EXPECT_EQ(count["step.compute"], 11) << "step 3 was computed twice (an out-of-memory retry)";
  EXPECT_EQ(count["step.commit"], 10);
  EXPECT_EQ(count["wait.agree_step"], 11);
  EXPECT_EQ(count["nan_scan"], 10);
  EXPECT_EQ(count["checkpoint"], 4) << "steps 0, 4, 8 and the last, 10";
  EXPECT_EQ(count["checkpoint.write"], 4);
  EXPECT_EQ(count["checkpoint.write"], count["checkpoint.commit"]);
  expect_nested(spans);
  // Every step's phases lie inside that step's span.
  for (const json& step : spans) {
    if (step.at("name") != "step") continue;
    const double begin = step.at("ts").get<double>();
    const double end = begin + step.at("dur").get<double>();
    for (const json& phase : spans) {
      if (phase.at("name") != "step.commit" ||
          phase.at("args").at("step") != step.at("args").at("step")) {
        continue;
      }
      EXPECT_GE(phase.at("ts").get<double>(), begin);
      EXPECT_LE(phase.at("ts").get<double>() + phase.at("dur").get<double>(), end + 1e-3);
    }
  }
}

TEST_F(ProfileTest, NothingIsRecordedOrWrittenWithoutAProfile) {
  ToyWorkload toy(8);
  EXPECT_FALSE(profiling::enabled());
  ASSERT_EQ(Runner(toy, options(5)).run().status, RunStatus::completed);
  EXPECT_FALSE(profiling::enabled());
  for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
    EXPECT_NE(entry.path().extension(), ".json") << "a profile appeared: " << entry.path();
  }
  // A span outside any profile records nothing, and a later profile does not see it.
  { const profiling::Span span("outside"); }
  ASSERT_TRUE(profiling::start());
  EXPECT_EQ(profiling::stop_and_write(dir_ / "empty.json", 0), 0u);
  EXPECT_EQ(read_json(dir_ / "empty.json").at("traceEvents").size(), 1u) << "the process name only";
}

TEST_F(ProfileTest, SpansAreBoundedAndOneProfileRecordsAtATime) {
  ASSERT_TRUE(profiling::start(5));
  EXPECT_FALSE(profiling::start()) << "a second profile in the same process";
  for (int i = 0; i < 12; ++i) const profiling::Span span("tiny", i);
  EXPECT_EQ(profiling::stop_and_write(dir_ / "bounded.json", 3), 5u);
  const json trace = read_json(dir_ / "bounded.json");
  EXPECT_EQ(trace.at("otherData").at("dropped_spans"), 7);
  EXPECT_EQ(trace.at("traceEvents").back().at("pid"), 3);
  EXPECT_THROW(profiling::start(0), UsageError);
  EXPECT_FALSE(profiling::enabled());
}

TEST_F(ProfileTest, BadPathsAreRefusedBeforeTheRunAndAnUnwritableFileIsSaid) {
  ToyWorkload toy(8);
  RunnerOptions o = options(3);
  o.profile_path = dir_ / "no-such-dir" / "profile.json";
  try {
    Runner runner(toy, o);
    ADD_FAILURE() << "a profile in a missing directory must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  o.profile_path = dir_ / "..";
  EXPECT_THROW(Runner(toy, o), UsageError);
  EXPECT_FALSE(fs::exists(dir_ / "run")) << "nothing was started";

  ASSERT_TRUE(profiling::start());
  { const profiling::Span span("lost"); }
  // (A directory in its place is refused as not a regular file: a UsageError, tests/core's
  // regular_file_test.)
  EXPECT_THROW((void)profiling::stop_and_write(dir_ / "no-such-folder" / "profile.json", 0),
               IoError);
  EXPECT_FALSE(profiling::enabled()) << "a failed write still ends the profile";
}

}  // namespace
}  // namespace tenax::runtime
