// The launch environment rule: which variables give each number, strict parsing of hostile
// values, and when a process counts as one of several ranks (launched_by_mpi_launcher).
#include "tenax/runtime/launch_environment.hpp"

#include <gtest/gtest.h>
#include <tuple>
#include <vector>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime {
namespace {

// Every variable the rule reads, cleared for each test and restored after it, so that a test run
// under mpirun or srun sees only what the test sets.
class LaunchEnvironmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name :
         {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
          "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK",
          "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE", "PMI_SIZE", "PMI_RANK",
          "PMIX_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS",
          "SLURM_PROCID", "SLURM_LOCALID"}) {
      const char* value = std::getenv(name);
      saved_[name] = value != nullptr ? std::optional<std::string>(value) : std::nullopt;
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(LaunchEnvironmentTest, NoVariablesIsASingleProcess) {
  const LaunchEnvironment e = read_launch_environment();
  EXPECT_EQ(e.launcher, Launcher::none);
  EXPECT_FALSE(e.parallel);
  EXPECT_FALSE(e.rank.set());
  EXPECT_FALSE(launched_by_mpi_launcher());
}

TEST_F(LaunchEnvironmentTest, OpenMpiGivesEveryNumber) {
  set("OMPI_COMM_WORLD_SIZE", "4");
  set("OMPI_COMM_WORLD_RANK", "3");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  // mpirun inside a Slurm allocation: the batch shell's SLURM_PROCID=0 must not win.
  set("SLURM_PROCID", "0");
  set("SLURM_NTASKS", "4");
  const LaunchEnvironment e = read_launch_environment();
  EXPECT_EQ(e.launcher, Launcher::open_mpi);
  EXPECT_TRUE(e.parallel);
  EXPECT_EQ(e.world_size.value, 4);
  EXPECT_EQ(e.rank.value, 3);
  EXPECT_EQ(e.rank.name, "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(e.local_rank.value, 1);
  EXPECT_EQ(e.local_size.value, 2);
  EXPECT_TRUE(launched_by_mpi_launcher());
}

TEST_F(LaunchEnvironmentTest, HydraAndPmixAreLaunches) {
  set("PMI_SIZE", "2");
  set("PMI_RANK", "1");
  set("MPI_LOCALRANKID", "1");
  set("MPI_LOCALNRANKS", "2");
  LaunchEnvironment e = read_launch_environment();
  EXPECT_EQ(e.launcher, Launcher::pmi);
  EXPECT_EQ(e.local_rank.name, "MPI_LOCALRANKID");
  EXPECT_EQ(e.local_size.value, 2);
  ::unsetenv("PMI_SIZE");
  ::unsetenv("PMI_RANK");
  ::unsetenv("MPI_LOCALRANKID");
  ::unsetenv("MPI_LOCALNRANKS");
  set("PMIX_RANK", "5");
  e = read_launch_environment();
  EXPECT_EQ(e.launcher, Launcher::pmix);
  EXPECT_EQ(e.rank.value, 5);
  EXPECT_FALSE(e.world_size.set());
}

TEST_F(LaunchEnvironmentTest, SlurmNeedsAStepOfSeveralTasks) {
  set("SLURM_PROCID", "0");
  set("SLURM_NTASKS", "1");
  EXPECT_FALSE(read_launch_environment().parallel);
  set("SLURM_NTASKS", "8");
  EXPECT_TRUE(read_launch_environment().parallel);
  // The step's own count wins over the job's: a single-task step inside an 8-task job.
  set("SLURM_STEP_NUM_TASKS", "1");
  EXPECT_FALSE(read_launch_environment().parallel);
  set("SLURM_STEP_NUM_TASKS", "4");
  set("SLURM_LOCALID", "2");
  const LaunchEnvironment e = read_launch_environment();
  EXPECT_EQ(e.launcher, Launcher::slurm);
  EXPECT_EQ(e.world_size.name, "SLURM_STEP_NUM_TASKS");
  EXPECT_EQ(e.world_size.value, 4);
  EXPECT_EQ(e.local_rank.value, 2);
  ::unsetenv("SLURM_PROCID");
  EXPECT_FALSE(read_launch_environment().parallel);
}

TEST_F(LaunchEnvironmentTest, ASingleRankUnderALauncherOfSeveralProcessesIsRefused) {
  // Each process would run the whole job alone in one run directory, whoever launched them.
  for (const auto& [name, value, launcher] :
       std::vector<std::tuple<const char*, const char*, const char*>>{
           {"OMPI_COMM_WORLD_SIZE", "2", "Open MPI"},
           {"PMI_SIZE", "3", "PMI (mpiexec)"},
           {"SLURM_NTASKS", "2", "Slurm (srun)"}}) {
    SCOPED_TRACE(name);
    set("SLURM_PROCID", "0");
    set(name, value);
    try {
      (void)make_communicator(CommKind::single);
      ADD_FAILURE() << "not refused";
    } catch (const UsageError& e) {
      EXPECT_NE(e.cause().find("--comm single under a launcher of " + std::string(value) +
                               " processes (" + launcher),
                std::string::npos)
          << e.cause();
    }
    ::unsetenv(name);
  }
  // One process of one: fine.
  set("SLURM_NTASKS", "1");
  EXPECT_EQ(make_communicator(CommKind::single)->size(), 1);
}

TEST_F(LaunchEnvironmentTest, HostileValuesAreNotNumbers) {
  const struct {
    const char* text;
    const char* error;
  } cases[] = {{"abc", "not a whole number"},
               {"", "empty"},
               {"-1", "negative"},
               {"99999999999999999999", "too large"},
               {"-99999999999999999999", "negative"},
               {"2147483648", "too large"},
               {" 1", "not a whole number"},
               {"1 ", "not a whole number"},
               {"+1", "not a whole number"},
               {"0x10", "not a whole number"},
               {"1e3", "not a whole number"}};
  for (const auto& c : cases) {
    set("SLURM_LOCALID", c.text);
    const LaunchVariable v = read_launch_variable({"SLURM_LOCALID"});
    EXPECT_TRUE(v.set()) << c.text;
    EXPECT_EQ(v.text, c.text);
    EXPECT_FALSE(v.value.has_value()) << "'" << c.text << "' parsed as " << *v.value;
    EXPECT_NE(v.error.find(c.error), std::string::npos) << c.text << ": " << v.error;
  }
  set("SLURM_LOCALID", "2147483647");
  EXPECT_EQ(read_launch_variable({"SLURM_LOCALID"}).value, 2147483647);
  set("SLURM_LOCALID", "0");
  EXPECT_EQ(read_launch_variable({"SLURM_LOCALID"}).value, 0);
}

TEST_F(LaunchEnvironmentTest, UnreadableTaskCountsAreNotALaunch) {
  set("SLURM_PROCID", "0");
  for (const char* tasks : {"abc", "99999999999999999999", "-4", "4 "}) {
    set("SLURM_NTASKS", tasks);
    EXPECT_FALSE(launched_by_mpi_launcher()) << tasks;
  }
  // An MPI launcher's variable counts by its presence, whatever its value.
  set("OMPI_COMM_WORLD_SIZE", "abc");
  EXPECT_TRUE(launched_by_mpi_launcher());
  EXPECT_FALSE(read_launch_environment().world_size.value.has_value());
}

}  // namespace
}  // namespace tenax::runtime
