// docs/stencil.md cannot go stale: it quotes examples/gray_scott.cpp whole, and its commands are
// run here as written (build/bin/ pointing at this build, mpirun with the flags CI needs): the run
// killed on 2 ranks says it resumed on 3 from the checkpoint the page names, and ends with the
// one-rank run's bits, as the page says.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "mpi_example_runs.hpp"

#ifndef GRAY_SCOTT_PATH
#define GRAY_SCOTT_PATH ""
#endif
#ifndef TENAX_SOURCE_DIR
#define TENAX_SOURCE_DIR ""
#endif

namespace tenax {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The lines of the page's ```sh blocks that start gray_scott (directly or under mpirun).
std::vector<std::string> gray_scott_commands(const std::string& page) {
  std::vector<std::string> commands;
  std::istringstream lines(page);
  std::string line;
  bool in_block = false;
  while (std::getline(lines, line)) {
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block && line == "```sh";
      continue;
    }
    if (in_block && line.find("build/bin/gray_scott") != std::string::npos) {
      commands.push_back(line.substr(0, line.find("  #")));
    }
  }
  return commands;
}

class StencilDoc : public testing::MpiExampleRuns {
 protected:
  StencilDoc() : MpiExampleRuns(GRAY_SCOTT_PATH) {}
  const std::string page = read_text(std::string(TENAX_SOURCE_DIR) + "/docs/stencil.md");
};

TEST_F(StencilDoc, ThePageQuotesTheProgramWhole) {
  const std::string code = read_text(std::string(TENAX_SOURCE_DIR) + "/examples/gray_scott.cpp");
  ASSERT_FALSE(code.empty());
  EXPECT_NE(page.find("```cpp\n" + code + "```"), std::string::npos)
      << "docs/stencil.md must quote examples/gray_scott.cpp whole, in a cpp block";
}

TEST_F(StencilDoc, TheCommandsRunAsWrittenAndTheResumedRunHasTheOneRankBits) {
  const std::vector<std::string> commands = gray_scott_commands(page);
  // The one-rank run, the killed 2-rank run, its resume on 3, the GPU run (not run here), and
  // the run killed on 2 x 2 blocks and its resume on 3 slabs.
  ASSERT_EQ(commands.size(), 6u) << page;
  int status[6] = {};
  std::filesystem::create_directories(dir("page"));
  for (const std::size_t k : {0, 1, 2, 4, 5}) {
    std::string command = commands[k];
    // In a directory of its own: runs/ and the output files land there.
    const auto at = command.find("build/bin/gray_scott");
    command.replace(at, std::string("build/bin/gray_scott").size(), program());
    if (command.rfind("mpirun ", 0) == 0) command.replace(0, 6, launcher());
    status[k] = run_command("step" + std::to_string(k),
                            "cd '" + dir("page").string() + "' && " + command + " --device cpu");
  }
  EXPECT_EQ(status[0], 0) << log("step0");
  EXPECT_NE(status[1], 0) << "the injected kill did not happen\n" << log("step1");
  ASSERT_EQ(status[2], 0) << log("step2");
  const std::string said = "resumed from the checkpoint of step 200, written by 2 rank(s), on 3";
  EXPECT_NE(page.find(said), std::string::npos) << "the page no longer quotes: " << said;
  EXPECT_NE(log("step2").find(said), std::string::npos) << log("step2");
  EXPECT_NE(log("step0").find("gray_scott: 300 steps on cpu, grid 128 x 128, periodic, ghost "
                              "width 1:"),
            std::string::npos)
      << log("step0");
  for (const char* field : {"u", "v"}) {
    const std::vector<double> one = values("page", "gs-one.h5", field);
    ASSERT_EQ(one.size(), 128u * 128u) << field;
    EXPECT_EQ(values("page", "gs.h5", field), one) << field;
  }
  // Blocks: killed on 2 x 2, resumed on 3 slabs, the same bits.
  EXPECT_NE(status[4], 0) << "the injected kill did not happen\n" << log("step4");
  ASSERT_EQ(status[5], 0) << log("step5");
  const std::string blocks = "resumed from the checkpoint of step 200, written by 4 rank(s), on 3";
  EXPECT_NE(page.find(blocks), std::string::npos) << "the page no longer quotes: " << blocks;
  EXPECT_NE(log("step5").find(blocks), std::string::npos) << log("step5");
  for (const char* field : {"u", "v"}) {
    EXPECT_EQ(values("page", "gs-blocks.h5", field), values("page", "gs-one.h5", field)) << field;
  }
}

}  // namespace
}  // namespace tenax
