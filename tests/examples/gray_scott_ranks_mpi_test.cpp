// gray_scott across ranks: the periodic grid's rows are divided among `mpirun -np N` processes
// (the grid's halo exchange wraps around between the first and the last rank). u and v must be
// bitwise the single-process fields for every N, through an out-of-memory backoff (the in-place
// blocked sweep; injected, and under a real memory cap), and through kills followed by resumes on
// other numbers of ranks.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "mpi_example_runs.hpp"

#ifndef GRAY_SCOTT_PATH
#define GRAY_SCOTT_PATH ""
#endif

namespace tenax {
namespace {

class GrayScottRanks : public testing::MpiExampleRuns {
 protected:
  GrayScottRanks() : MpiExampleRuns(GRAY_SCOTT_PATH) {}

  [[nodiscard]] std::string arguments(const std::string& name) const {
    return "--device cpu --progress log --n 41 --steps 60 --checkpoint-every 10 --run-dir " +
           dir(name).string() + " --output " + (dir(name) / "final.h5").string();
  }
  int run(const std::string& name, int ranks, const std::string& extra = "") {
    return run_program(name, ranks, arguments(name) + " " + extra);
  }
  std::vector<double> field(const std::string& name, const std::string& entry) {
    return values(name, "final.h5", entry);
  }
};

TEST_F(GrayScottRanks, OneToFourRanksGiveTheSameBits) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  const std::vector<double> u = field("one", "u");
  const std::vector<double> v = field("one", "v");
  ASSERT_EQ(u.size(), 41u * 41u);
  ASSERT_EQ(v.size(), 41u * 41u);
  // The pattern has started to form: v is no longer the initial square.
  double v_max = 0;
  for (const double x : v) v_max = std::max(v_max, x);
  EXPECT_GT(v_max, 0.1);
  for (const int ranks : {2, 3, 4}) {
    const std::string name = "np" + std::to_string(ranks);
    ASSERT_EQ(run(name, ranks), 0) << log(name);
    EXPECT_EQ(field(name, "u"), u) << ranks << " ranks";
    EXPECT_EQ(field(name, "v"), v) << ranks << " ranks";
    EXPECT_NE(log(name).find("rows split over " + std::to_string(ranks) + " ranks"),
              std::string::npos)
        << log(name);
  }
}

TEST_F(GrayScottRanks, OutOfMemoryBackoffOnEveryRankGivesTheSameBits) {
  ASSERT_EQ(run("one", 1), 0) << log("one");
  ASSERT_EQ(run("oom", 3, "--inject oom@step=2x4"), 0) << log("oom");
  EXPECT_EQ(field("oom", "u"), field("one", "u"));
  EXPECT_EQ(field("oom", "v"), field("one", "v"));
  EXPECT_NE(log("oom").find("micro-batch halved"), std::string::npos) << log("oom");
}

// A real memory cap (the pool's): u and v fit, new fields beside them do not, so the step backs
// off to the in-place blocked sweep, with the same bits.
TEST_F(GrayScottRanks, ARealMemoryLimitBacksOffToTheInPlaceSweepWithTheSameBits) {
  const auto args = [&](const std::string& name) {
    return "--device cpu --progress log --n 256 --steps 30 --checkpoint-every 10 --run-dir " +
           dir(name).string() + " --output " + (dir(name) / "final.h5").string();
  };
  ASSERT_EQ(run_program("free", 1, args("free")), 0) << log("free");
  ASSERT_EQ(run_program("capped", 1, args("capped"), false, "TENAX_MEMORY_LIMIT=1792KiB"), 0)
      << log("capped");
  EXPECT_NE(log("capped").find("micro-batch halved"), std::string::npos) << log("capped");
  EXPECT_EQ(field("capped", "u"), field("free", "u"));
  EXPECT_EQ(field("capped", "v"), field("free", "v"));
}

// Killed on 4 ranks, resumed on 2 and killed again, resumed on 3 and killed again, finished on
// 1: the fields are the uninterrupted single-process ones.
TEST_F(GrayScottRanks, KilledAndResumedOnOtherNumbersOfRanksEndsWithTheSameBits) {
  ASSERT_EQ(run("whole", 1), 0) << log("whole");
  run_legs("elastic", arguments("elastic"),
           {{4, "--inject kill@step=13:rank=2", ""},
            {2, "--inject kill@step=34:rank=1", "step 10, written by 4 rank(s), on 2"},
            {3, "--inject kill@step=47:rank=0", "step 30, written by 2 rank(s), on 3"},
            {1, "", "step 40, written by 3 rank(s), on 1"}});
  EXPECT_EQ(field("elastic", "u"), field("whole", "u"));
  EXPECT_EQ(field("elastic", "v"), field("whole", "v"));
}

}  // namespace
}  // namespace tenax
