// poisson across ranks: the matrix's rows divided among `mpirun -np N` processes (block-aligned
// ranges, halo exchange in every product, reductions across the ranks in the single-process
// order). For CG, BiCGSTAB and GMRES with and without Jacobi, every N gives the single-process
// iteration count, residual and solution bits; a rank killed mid-solve under the supervisor
// resumes to the same bits, also on other numbers of ranks; what cannot run on several ranks yet
// is refused with the fix.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "mpi_example_runs.hpp"
#include "tenax/io/matrix_market.hpp"

#ifndef POISSON_PATH
#define POISSON_PATH ""
#endif

namespace tenax {
namespace {

class PoissonRanks : public testing::MpiExampleRuns {
 protected:
  PoissonRanks() : MpiExampleRuns(POISSON_PATH) {}

  // 128^2 rows: four reduction blocks, so 2, 3 and 4 ranks all hold rows.
  int run(const std::string& name, int ranks, const std::string& method,
          const std::string& extra = "", bool supervised = false) {
    return run_program(name, ranks,
                       "--device cpu --n 128 --tol 1e-9 --iterations-per-step 25 " + method +
                           " --run-dir " + dir(name).string() + " --output " +
                           (dir(name) / "x.h5").string() + " --json " + extra,
                       supervised);
  }
  std::vector<double> solution(const std::string& name) { return values(name, "x.h5", "x"); }
  // The JSON summary's iteration count and residual, as printed (17 significant digits).
  std::string outcome(const std::string& name) {
    const std::string text = log(name);
    const auto at = text.find("\"iterations\":");
    if (at == std::string::npos) return "";
    return text.substr(at, text.find(",\"status\"", at) - at);
  }
};

TEST_F(PoissonRanks, EveryNumberOfRanksGivesTheSingleProcessIterates) {
  const std::vector<std::string> methods = {"--solver cg --precond jacobi", "--solver cg",
                                            "--solver bicgstab --precond jacobi",
                                            "--solver gmres --restart 20 --problem convdiff"};
  for (std::size_t m = 0; m < methods.size(); ++m) {
    const std::string& method = methods[m];
    SCOPED_TRACE(method);
    const std::string one = "m" + std::to_string(m) + "-np1";
    ASSERT_EQ(run(one, 1, method), 0) << log(one);
    const std::vector<double> expected = solution(one);
    ASSERT_EQ(expected.size(), 128u * 128u);
    ASSERT_NE(outcome(one), "") << log(one);
    for (const int ranks : {2, 3, 4}) {
      const std::string name = "m" + std::to_string(m) + "-np" + std::to_string(ranks);
      ASSERT_EQ(run(name, ranks, method), 0) << log(name);
      EXPECT_EQ(outcome(name), outcome(one)) << ranks << " ranks";
      EXPECT_EQ(solution(name), expected) << ranks << " ranks";
      EXPECT_NE(log(name).find(std::to_string(ranks) + " ranks"), std::string::npos) << log(name);
    }
  }
}

TEST_F(PoissonRanks, ARankKilledMidSolveIsRestartedAndEndsWithTheSameBits) {
  const std::string method = "--solver cg --precond jacobi --checkpoint-every 3";
  ASSERT_EQ(run("one", 1, method), 0) << log("one");
  ASSERT_EQ(run("kill", 3, method, "--inject kill@step=8:rank=2", true), 0) << log("kill");
  EXPECT_EQ(solution("kill"), solution("one"));
  EXPECT_EQ(outcome("kill"), outcome("one"));
  EXPECT_NE(log("kill").find("resumed from the checkpoint of step 6"), std::string::npos)
      << log("kill");
}

// Killed on 4 ranks, resumed on 2 and killed, on 3 and killed, finished on 1: the iteration
// count, residual and solution are the uninterrupted single-process ones. GMRES is killed in the
// middle of a restart cycle, so its basis (split along its second axis) is divided anew too.
TEST_F(PoissonRanks, KilledAndResumedOnOtherNumbersOfRanksEndsWithTheSingleProcessBits) {
  const std::vector<std::string> methods = {"--solver cg --precond jacobi",
                                            "--solver bicgstab --precond jacobi",
                                            "--solver gmres --restart 20 --problem convdiff"};
  for (std::size_t m = 0; m < methods.size(); ++m) {
    const std::string method = methods[m] + " --checkpoint-every 3";
    SCOPED_TRACE(method);
    const std::string one = "m" + std::to_string(m) + "-one";
    ASSERT_EQ(run(one, 1, method), 0) << log(one);
    const std::string name = "m" + std::to_string(m) + "-elastic";
    const std::string args = "--device cpu --n 128 --tol 1e-9 --iterations-per-step 25 " + method +
                             " --run-dir " + dir(name).string() + " --output " +
                             (dir(name) / "x.h5").string() + " --json";
    run_legs(name, args,
             {{4, "--inject kill@step=5:rank=1", ""},
              {2, "--inject kill@step=8:rank=1", "step 3, written by 4 rank(s), on 2"},
              {3, "--inject kill@step=10:rank=0", "step 6, written by 2 rank(s), on 3"},
              {1, "", "step 9, written by 3 rank(s), on 1"}});
    EXPECT_EQ(solution(name), solution(one));
    const std::string last = log(name + "-leg3");
    const std::string expected = outcome(one);
    EXPECT_NE(last.find(expected), std::string::npos) << expected << "\n" << last;
  }
}

// A user's Matrix Market file on several ranks: each rank reads only its rows (its console line
// says how many entries it kept; none holds them all), and the iterates are the single-process
// ones. The file is symmetric, so rows are assembled from both triangles.
TEST_F(PoissonRanks, AMatrixMarketFileIsReadByRowsWithTheSingleProcessIterates) {
  tenax::io::CooMatrix a;
  const std::int64_t side = 100;
  a.rows = a.cols = side * side;
  const auto add = [&](std::int64_t i, std::int64_t j, double v) {
    a.row.push_back(i), a.col.push_back(j), a.value.push_back(v);
  };
  for (std::int64_t y = 0; y < side; ++y) {
    for (std::int64_t x = 0; x < side; ++x) {
      const std::int64_t i = y * side + x;
      add(i, i, 4.0 + 1e-3 * static_cast<double>(x));
      if (x > 0) add(i, i - 1, -1.0), add(i - 1, i, -1.0);
      if (y > 0) add(i, i - side, -1.0), add(i - side, i, -1.0);
    }
  }
  const std::filesystem::path file = dir("file") / "a.mtx";
  std::filesystem::create_directories(dir("file"));
  tenax::io::write_matrix_market(file, a, tenax::io::Symmetry::symmetric);
  const std::string method = "--solver cg --precond jacobi --matrix " + file.string();
  ASSERT_EQ(run("one", 1, method), 0) << log("one");
  const std::vector<double> expected = solution("one");
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(side * side));
  for (const int ranks : {2, 3, 4}) {
    const std::string name = "np" + std::to_string(ranks);
    ASSERT_EQ(run(name, ranks, method), 0) << log(name);
    EXPECT_EQ(outcome(name), outcome("one")) << ranks << " ranks";
    EXPECT_EQ(solution(name), expected) << ranks << " ranks";
    // Every rank kept only its share of the 49 600 entries, and the shares add up.
    const std::string text = log(name);
    long long kept = 0;
    for (int r = 0; r < ranks; ++r) {
      const std::string tag =
          "poisson [rank " + std::to_string(r) + "/" + std::to_string(ranks) + "]: read rows [";
      const auto at = text.find(tag);
      ASSERT_NE(at, std::string::npos) << text;
      const auto colon = text.find(": ", at + tag.size());
      long long mine = 0, total = 0;
      ASSERT_EQ(std::sscanf(text.c_str() + colon + 2, "%lld of its %lld entries", &mine, &total), 2)
          << text.substr(at, 200);
      EXPECT_EQ(total, 49600);
      if (mine > 0) EXPECT_LT(mine, total);
      kept += mine;
    }
    EXPECT_EQ(kept, 49600);
  }
}

TEST_F(PoissonRanks, OutOfMemoryOnOneRankChangesNothing) {
  const std::string method = "--solver bicgstab --precond jacobi";
  ASSERT_EQ(run("one", 1, method), 0) << log("one");
  ASSERT_EQ(run("oom", 3, method, "--inject oom@step=3:rank=1 --comm-timeout 30"), 0) << log("oom");
  EXPECT_EQ(solution("oom"), solution("one"));
  EXPECT_EQ(outcome("oom"), outcome("one"));
  EXPECT_NE(log("oom").find("on rank 1"), std::string::npos) << log("oom");
}

TEST_F(PoissonRanks, WhatRunsOnOneProcessOnlyIsRefusedWithTheFix) {
  EXPECT_EQ(run("ilu", 2, "--precond ilu0"), 1) << log("ilu");
  EXPECT_NE(log("ilu").find("use --precond jacobi"), std::string::npos) << log("ilu");
  EXPECT_EQ(run("stencil", 2, "--operator stencil"), 1) << log("stencil");
  EXPECT_NE(log("stencil").find("use --operator csr"), std::string::npos) << log("stencil");
  EXPECT_EQ(run("mixed", 2, "--precision mixed"), 1) << log("mixed");
  EXPECT_NE(log("mixed").find("f32 on several ranks"), std::string::npos) << log("mixed");
}

}  // namespace
}  // namespace tenax
