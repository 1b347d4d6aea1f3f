// docs/running.md and docs/building.md cannot go stale: every command in their ```sh blocks that
// starts one of our programs is checked against the program itself (each flag it names exists and
// each value is one the program takes: the command is run with --print-config, which reads and
// checks every setting and stops before any work), and every CMake preset they name exists.
// Commands whose arguments are placeholders (JOB, FILE, a data set of the reader's) are counted as
// such, so that a command the parser missed fails the count.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tools/command_output.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The commands of a page's ```sh blocks: continuation lines joined, comments dropped.
std::vector<std::string> shell_commands(const std::string& page) {
  std::vector<std::string> commands;
  bool in_block = false;
  std::string pending;
  std::size_t start = 0;
  while (start < page.size()) {
    std::size_t end = page.find('\n', start);
    if (end == std::string::npos) end = page.size();
    std::string line = page.substr(start, end - start);
    start = end + 1;
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block && line == "```sh";
      continue;
    }
    if (!in_block) continue;
    if (const auto hash = line.find("  #"); hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(' ') == std::string::npos) continue;
    const bool continues = !line.empty() && line.back() == '\\';
    if (continues) line.pop_back();
    pending += line;
    if (!continues) {
      commands.push_back(pending);
      pending.clear();
    }
  }
  return commands;
}

// The program invocation in a command: `build/bin/PROGRAM ARGS` (after `tenax run --` or an
// environment assignment), as PROGRAM and ARGS; empty when the command starts none of ours.
struct Invocation {
  std::string environment;
  std::string program;
  std::string arguments;
};
Invocation invocation(const std::string& command) {
  static const std::regex job(R"(^((?:[A-Z_]+=\S+\s+)*)(?:build/bin/tenax run(?: \S+)* -- )?)"
                              R"(build/bin/([a-z_0-9]+)(.*)$)");
  std::smatch match;
  if (!std::regex_match(command, match, job)) return {};
  return {match[1], match[2], match[3]};
}

bool has_placeholder(const std::string& text) {
  static const std::regex placeholder(
      R"(\b(JOB|FILE|DIR|N|mine\.h5|start\.h5|A\.mtx|b\.mtx)\b|\.\.\.)");
  return std::regex_search(text, placeholder);
}

TEST(DocsCommands, EveryProgramCommandOfTheRunningPageIsOneTheProgramAccepts) {
  const std::vector<std::string> commands =
      shell_commands(read_text(fs::path(TENAX_SOURCE_DIR) / "docs/running.md"));
  int checked = 0;
  int placeholders = 0;
  for (const std::string& command : commands) {
    const Invocation call = invocation(command);
    if (call.program.empty() || call.program == "tenax") continue;
    if (has_placeholder(call.arguments)) {
      ++placeholders;
      continue;
    }
    const testing::CommandOutput run =
        testing::run_command(call.environment + "'" + TENAX_BIN_DIR + "/" + call.program + "'" +
                             call.arguments + " --print-config 2>&1");
    EXPECT_EQ(run.exit_code, 0) << "docs/running.md: `" << command << "`\n" << run.output;
    EXPECT_NE(run.output.find("run-dir = "), std::string::npos) << command << "\n" << run.output;
    ++checked;
  }
  // heat2d's, poisson's and train_mlp's two are checked; poisson's and train_mlp's commands with
  // the reader's own files are placeholders (the launchers' lines start no program of ours).
  EXPECT_GE(checked, 4) << "commands found: " << commands.size();
  EXPECT_GE(placeholders, 2);
}

TEST(DocsCommands, EveryPresetTheBuildingPageNamesExists) {
  const std::string page = read_text(fs::path(TENAX_SOURCE_DIR) / "docs/building.md");
  const std::string presets = read_text(fs::path(TENAX_SOURCE_DIR) / "CMakePresets.json");
  static const std::regex named(R"(--preset[ =]([a-z]+))");
  std::set<std::string> seen;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), named);
       it != std::sregex_iterator(); ++it) {
    seen.insert((*it)[1]);
  }
  ASSERT_GE(seen.size(), 2u) << "the page names the release and campaigns presets";
  for (const std::string& preset : seen) {
    EXPECT_NE(presets.find("\"name\": \"" + preset + "\""), std::string::npos)
        << "docs/building.md names the preset '" << preset << "', which CMakePresets.json lacks";
  }
  // The page's table of configure presets: each row's preset exists with the directory it says.
  static const std::regex row(R"(\| `([a-z]+)` \| `(build[a-z-]*)/` \|)");
  int rows = 0;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), row); it != std::sregex_iterator();
       ++it) {
    ++rows;
    const std::string name = (*it)[1];
    const std::string dir = (*it)[2];
    EXPECT_NE(presets.find("\"name\": \"" + name + "\""), std::string::npos) << name;
    EXPECT_NE(presets.find("${sourceDir}/" + dir + "\""), std::string::npos) << name << " " << dir;
  }
  EXPECT_GE(rows, 4) << "the table of presets was not found";
}

}  // namespace
}  // namespace tenax
