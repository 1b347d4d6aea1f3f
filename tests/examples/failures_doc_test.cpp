// docs/failures.md cannot drift from what tenax says: every numbered row of its table is run as
// written (build/bin/ and runs/ mapped to this build and a scratch directory) and its output must
// hold the row's excerpt; rows that name a unit test must name one that exists.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "tenax/core/cuda_runtime.hpp"
#include "tools/command_output.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Row {
  int number = 0;
  std::string failure;
  std::string reproduce;  // the cell: a command in backticks, or "unit test `Suite.Name`"
  std::string excerpt;
};

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 1;
  for (std::size_t bar = line.find('|', start); bar != std::string::npos;
       bar = line.find('|', start)) {
    std::string cell = line.substr(start, bar - start);
    const auto first = cell.find_first_not_of(' ');
    const auto last = cell.find_last_not_of(' ');
    out.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
    start = bar + 1;
  }
  return out;
}

std::string in_backticks(const std::string& cell) {
  const auto open = cell.find('`');
  const auto close = open == std::string::npos ? open : cell.find('`', open + 1);
  return close == std::string::npos ? "" : cell.substr(open + 1, close - open - 1);
}

std::vector<Row> rows() {
  std::vector<Row> out;
  const std::string page = read_text(fs::path(TENAX_SOURCE_DIR) / "docs/failures.md");
  std::size_t start = 0;
  while (start < page.size()) {
    std::size_t end = page.find('\n', start);
    if (end == std::string::npos) end = page.size();
    const std::string line = page.substr(start, end - start);
    start = end + 1;
    if (!std::regex_search(line, std::regex(R"(^\| [0-9]+ \|)"))) continue;
    const std::vector<std::string> c = cells(line);
    if (c.size() != 5) {
      ADD_FAILURE() << "a row of docs/failures.md without 5 cells: " << line;
      continue;
    }
    out.push_back({std::stoi(c[0]), c[1], c[3], in_backticks(c[4])});
  }
  return out;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

TEST(FailuresDoc, EveryRowSaysWhatTenaxSays) {
  const std::vector<Row> table = rows();
  ASSERT_GE(table.size(), 12u) << "docs/failures.md lost its table";
  const bool driver = fs::exists("/dev/nvidiactl");
  const fs::path scratch =
      fs::temp_directory_path() / ("tenax-failures-doc-" + std::to_string(::getpid()));
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  for (std::size_t k = 0; k < table.size(); ++k) {
    const Row& row = table[k];
    SCOPED_TRACE("row " + std::to_string(row.number) + ": " + row.failure);
    EXPECT_EQ(row.number, static_cast<int>(k + 1)) << "rows are numbered 1, 2, ...";
    ASSERT_FALSE(row.excerpt.empty()) << "the last cell needs an excerpt in backticks";
    const std::string named = in_backticks(row.reproduce);
    ASSERT_FALSE(named.empty()) << "the reproduce cell needs a command or a test in backticks";
    if (row.reproduce.starts_with("unit test")) {
      // Suite.Name must be a test of this tree, and the excerpt must be in its file.
      const auto dot = named.find('.');
      ASSERT_NE(dot, std::string::npos) << named;
      const std::string suite = named.substr(0, dot);
      const std::string name = named.substr(dot + 1);
      bool found = false;
      for (const auto& entry :
           fs::recursive_directory_iterator(fs::path(TENAX_SOURCE_DIR) / "tests")) {
        if (entry.path().extension() != ".cpp") continue;
        const std::string source = read_text(entry.path());
        if (std::regex_search(source, std::regex("TEST(_F)?\\(" + suite + ", " + name + "\\)"))) {
          found = true;
          EXPECT_NE(source.find(row.excerpt), std::string::npos)
              << entry.path() << " never says '" << row.excerpt << "'";
        }
      }
      EXPECT_TRUE(found) << "no test " << named << " under tests/";
      continue;
    }
    if (row.reproduce.find("a CUDA build on a machine without an NVIDIA driver") !=
            std::string::npos &&
        (driver || !tenax::cuda::compiled())) {
      std::cout << "[  NOTE    ] row " << row.number
                << " needs a CUDA build on a machine without a driver\n";
      continue;
    }
    if (named.starts_with("mpirun") && std::string(TENAX_MPIRUN).empty()) {
      std::cout << "[  NOTE    ] row " << row.number << " needs mpirun\n";
      continue;
    }
    std::string command = replace_all(named, "build/bin/", std::string(TENAX_BIN_DIR) + "/");
    command = replace_all(command, "runs/", scratch.string() + "/");
    command = replace_all(command, "mpirun ", std::string(TENAX_MPIRUN) + " ");
    const testing::CommandOutput run = testing::run_command(
        "cd '" + scratch.string() +
        "' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 env " +
        command + " 2>&1");
    EXPECT_NE(run.output.find(row.excerpt), std::string::npos)
        << "'" << row.excerpt << "' is not in what\n  " << command << "\nprinted:\n"
        << run.output;
  }
  fs::remove_all(scratch);
}

}  // namespace
}  // namespace tenax
