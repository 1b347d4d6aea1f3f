// What the tutorials' tests share: a page's text, a fresh run directory, a tutorial program run
// as a user would type it, its report, and the comparison of two runs' final states bit for bit.
// The includer defines TENAX_CLI_PATH (the `tenax` program) at compile time.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <variant>

#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/runner_entries.hpp"
#include "tools/command_output.hpp"

namespace tenax::testing {

namespace fs = std::filesystem;

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// An empty (absent) directory of this process for `name`.
inline fs::path fresh_run_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("tenax-tutorial-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

// `program --run-dir run_dir flags`, stdout and stderr together.
inline CommandOutput run_tutorial(const std::string& program, const fs::path& run_dir,
                                  const std::string& flags = "") {
  return run_command("'" + program + "' --run-dir '" + run_dir.string() + "' --progress quiet " +
                     flags + " 2>&1");
}

// The first line of `output` that starts with `prefix` (without its newline), or "".
inline std::string line_starting(const std::string& output, const std::string& prefix) {
  std::size_t begin = 0;
  if (!output.starts_with(prefix)) {
    begin = output.find("\n" + prefix);
    if (begin == std::string::npos) return "";
    ++begin;
  }
  return output.substr(begin, output.find('\n', begin) - begin);
}

// `tenax report run_dir`: its summary, and report.html in `html`.
inline CommandOutput report(const fs::path& run_dir, std::string& html) {
  CommandOutput out =
      run_command("'" + std::string(TENAX_CLI_PATH) + "' report '" + run_dir.string() + "' 2>&1");
  html = read_text(run_dir / "report.html");
  return out;
}

// `program` killed by `--inject kill@step=KILL` in `run_dir`, then run again: the kill must end
// the process before its closing line (one starting with `closing`), and the second run must say
// it resumed from the checkpoint of `checkpoint_step`. Returns the second run.
inline CommandOutput killed_and_resumed(const std::string& program, const fs::path& run_dir,
                                        std::int64_t kill, std::int64_t checkpoint_step,
                                        const std::string& closing) {
  const CommandOutput dies =
      run_tutorial(program, run_dir, "--inject kill@step=" + std::to_string(kill));
  EXPECT_NE(dies.exit_code, 0) << "the injected kill must end the process: " << dies.output;
  EXPECT_EQ(line_starting(dies.output, closing), "") << dies.output;
  CommandOutput resumes = run_tutorial(program, run_dir);
  EXPECT_EQ(resumes.exit_code, 0) << resumes.output;
  EXPECT_NE(
      resumes.output.find("resumed from the checkpoint of step " + std::to_string(checkpoint_step)),
      std::string::npos)
      << resumes.output;
  return resumes;
}

// Whether `page` quotes `code` whole, in a cpp block.
inline bool quotes_whole(const std::string& page, const std::string& code) {
  return !code.empty() && page.find("```cpp\n" + code + "```") != std::string::npos;
}

// A tutorial page of docs/ (`page`, e.g. "tutorial-model.md") quotes its program
// (`program`, e.g. "tutorial/model.cpp") whole, and docs/tutorial.md and README.md link it.
inline void expect_linked_page_quoting(const std::string& page, const std::string& program) {
  const fs::path docs = fs::path(TENAX_SOURCE_DIR) / "docs";
  EXPECT_TRUE(quotes_whole(read_text(docs / page), read_text(docs / program)))
      << "docs/" << page << " must quote docs/" << program << " whole, in a cpp block";
  EXPECT_NE(read_text(docs / "tutorial.md").find("(" + page + ")"), std::string::npos)
      << "docs/tutorial.md must link the page";
  EXPECT_NE(read_text(fs::path(TENAX_SOURCE_DIR) / "README.md").find("(docs/" + page + ")"),
            std::string::npos)
      << "README.md must link the page";
}

// The newest checkpoint of a run directory (expected to exist).
inline io::LoadedCheckpoint final_checkpoint(const fs::path& run_dir) {
  io::LoadedCheckpoint loaded = io::CheckpointStore(run_dir).load_latest();
  EXPECT_TRUE(loaded.found) << "no checkpoint in " << run_dir;
  return loaded;
}

// Every entry of the workload's state in `a` is in `b` with the same bits (tensors byte for byte,
// numbers and texts equal), and `b` holds no other: the failures name the entry. The entries the
// workload declared a rank's own (state_layout().rank_local, such as a solve's seconds: the
// checkpoint lists them) are in both but may differ.
inline void expect_same_workload_state(const StateDict& a, const StateDict& b) {
  const StateDict left = a.scope("workload");
  const StateDict right = b.scope("workload");
  ASSERT_FALSE(left.empty()) << "no workload state to compare";
  EXPECT_EQ(left.size(), right.size());
  const std::string listed(a.contains(io::runner_entry::digest_rank_local)
                               ? a.text(io::runner_entry::digest_rank_local)
                               : std::string());
  const auto rank_local = [&listed](const std::string& name) {
    return listed.find(name + "\n") != std::string::npos;
  };
  for (const auto& [name, value] : left.entries()) {
    ASSERT_TRUE(right.contains(name)) << name;
    if (rank_local(name) || rank_local("workload/" + name)) continue;
    if (const Tensor* t = std::get_if<Tensor>(&value)) {
      const Tensor& u = right.tensor(name);
      ASSERT_EQ(t->dtype(), u.dtype()) << name;
      ASSERT_EQ(t->shape(), u.shape()) << name;
      EXPECT_EQ(std::memcmp(t->data(), u.data(), t->nbytes()), 0) << name << " differs";
    } else if (const double* x = std::get_if<double>(&value)) {
      const double y = right.real(name);
      EXPECT_EQ(std::memcmp(x, &y, sizeof y), 0) << name << ": " << *x << " vs " << y;
    } else if (const std::int64_t* i = std::get_if<std::int64_t>(&value)) {
      EXPECT_EQ(*i, right.integer(name)) << name;
    } else {
      EXPECT_EQ(std::get<std::string>(value), right.text(name)) << name;
    }
  }
}

// `program` killed at step `kill` in `killed` and resumed from the checkpoint of `checkpoint`
// ends as the whole run did: the same closing line (`said`, the line starting with `closing`), the
// same workload state bit for bit as `expected` (the whole run's final checkpoint), and a report
// that counts the steps computed again (`recomputed`, e.g. "6 steps recomputed") and draws the
// chart `chart`.
inline void expect_resumed_as_whole(const std::string& program, const fs::path& killed,
                                    std::int64_t kill, std::int64_t checkpoint,
                                    const std::string& closing, const std::string& said,
                                    const io::LoadedCheckpoint& expected,
                                    const std::string& recomputed, const std::string& chart) {
  const CommandOutput resumes = killed_and_resumed(program, killed, kill, checkpoint, closing);
  EXPECT_EQ(line_starting(resumes.output, closing), said) << resumes.output;
  const io::LoadedCheckpoint resumed = final_checkpoint(killed);
  EXPECT_EQ(resumed.step, expected.step);
  expect_same_workload_state(expected.state, resumed.state);
  std::string html;
  const CommandOutput summary = report(killed, html);
  EXPECT_EQ(summary.exit_code, 0) << summary.output;
  EXPECT_NE(summary.output.find("1 x fault or crash; " + recomputed), std::string::npos)
      << summary.output;
  EXPECT_NE(html.find("id=\"chart-metric-" + chart + "\""), std::string::npos);
}

}  // namespace tenax::testing
