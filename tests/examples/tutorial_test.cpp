// docs/tutorial.md and the README cannot go stale: both show docs/tutorial/cooling.cpp as it is,
// and the program it builds runs, matches the closed form, is killed and resumed to the same bits,
// and gets a report, as the page says.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "examples/tutorial_runs.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;
using testing::fresh_run_dir;
using testing::read_text;

testing::CommandOutput cooling(const fs::path& run_dir, const std::string& flags = "") {
  return testing::run_tutorial(TUTORIAL_PATH, run_dir, flags);
}

// The final temperatures of a run directory's newest checkpoint.
Tensor final_temperatures(const fs::path& run_dir) {
  const io::LoadedCheckpoint loaded = testing::final_checkpoint(run_dir);
  EXPECT_EQ(loaded.step, 2000);
  return loaded.state.tensor("workload/temperature");
}

TEST(Tutorial, ThePageShowsTheProgramAsItIs) {
  const std::string page = read_text(fs::path(TENAX_SOURCE_DIR) / "docs/tutorial.md");
  const std::string code = read_text(fs::path(TENAX_SOURCE_DIR) / "docs/tutorial/cooling.cpp");
  ASSERT_FALSE(code.empty());
  EXPECT_TRUE(testing::quotes_whole(page, code))
      << "docs/tutorial.md must quote docs/tutorial/cooling.cpp whole, in a cpp block";
  const std::string readme = read_text(fs::path(TENAX_SOURCE_DIR) / "README.md");
  EXPECT_TRUE(testing::quotes_whole(readme, code))
      << "README.md must quote docs/tutorial/cooling.cpp whole, in a cpp block";
}

TEST(Tutorial, RunsKilledAndResumedToTheSameBitsAndReports) {
  const fs::path whole = fresh_run_dir("whole");
  const testing::CommandOutput first = cooling(whole);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("tenax: completed at step 2000"), std::string::npos) << first.output;
  const Tensor expected = final_temperatures(whole);
  // The closed form of 2000 Euler steps: T = T_room + (1 - dt k)^2000 (T0 - T_room).
  const double* t = expected.data_as<double>();
  for (const std::int64_t i : {0, 500, 999}) {
    const double exact =
        18.0 + std::pow(1.0 - 0.01 * 0.5, 2000) * (20.0 + static_cast<double>(i) - 18.0);
    EXPECT_NEAR(t[i], exact, 1e-12 * exact) << "body " << i;
  }

  const fs::path killed = fresh_run_dir("killed");
  const testing::CommandOutput resumes =
      testing::killed_and_resumed(TUTORIAL_PATH, killed, 1234, 1200, "tenax: completed");
  EXPECT_NE(resumes.output.find("tenax: completed at step 2000"), std::string::npos);
  const Tensor resumed = final_temperatures(killed);
  ASSERT_EQ(resumed.nbytes(), expected.nbytes());
  EXPECT_EQ(std::memcmp(resumed.data(), expected.data(), expected.nbytes()), 0)
      << "killed and resumed, the run must end with the uninterrupted bits";

  std::string html;
  const testing::CommandOutput report = testing::report(killed, html);
  EXPECT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("1 x fault or crash; 33 steps recomputed"), std::string::npos)
      << report.output;
  EXPECT_NE(html.find("id=\"chart-metric-hottest\""), std::string::npos);
  fs::remove_all(whole);
  fs::remove_all(killed);
}

// The program's settings come from its declarations alone: --help lists them with the standard
// flags, --print-config shows them, a bad value is refused naming it, and a resume that changes a
// recorded setting is refused unless it is safe to change and allowed.
TEST(Tutorial, TheProgramGetsTheStandardFlagsAndTheConfigurationCheck) {
  const testing::CommandOutput help =
      testing::run_command("'" + std::string(TUTORIAL_PATH) + "' --help 2>&1");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  for (const char* flag : {"--bodies N", "--rate X", "--dt X", "--steps N", "--run-dir",
                           "--checkpoint-every N", "--inject", "--print-config"}) {
    EXPECT_NE(help.output.find(flag), std::string::npos) << flag << " in\n" << help.output;
  }
  const fs::path dir = fresh_run_dir("flags");
  const testing::CommandOutput printed = cooling(dir, "--bodies 7 --print-config");
  EXPECT_EQ(printed.exit_code, 0) << printed.output;
  EXPECT_NE(printed.output.find("bodies = 7"), std::string::npos) << printed.output;
  EXPECT_FALSE(fs::exists(dir)) << "--print-config must run nothing";
  const testing::CommandOutput bad = cooling(dir, "--rate -1");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("cooling: tenax usage error: --rate -1: expected a finite number > 0"),
            std::string::npos)
      << bad.output;
  ASSERT_EQ(cooling(dir, "--steps 20").exit_code, 0);
  const testing::CommandOutput refused = cooling(dir, "--steps 40 --rate 0.25");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("rate: 0.5 -> 0.25"), std::string::npos) << refused.output;
  const testing::CommandOutput unsafe = cooling(dir, "--steps 40 --dt 0.02");
  EXPECT_EQ(unsafe.exit_code, 1) << unsafe.output;
  EXPECT_NE(unsafe.output.find("pass --allow-config-change dt"), std::string::npos)
      << unsafe.output;
  const testing::CommandOutput allowed =
      cooling(dir, "--steps 40 --dt 0.02 --allow-config-change dt");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_NE(allowed.output.find("completed at step 40"), std::string::npos) << allowed.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tenax
