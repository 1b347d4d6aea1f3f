// The example programs as a hostile user meets them: sizes that overflow 64 bits or cannot fit
// the memory limit, and a Matrix Market file whose size line promises far more than it stores.
// Each must end with a clear error (what, the expectation, the fix), exit 1 and stay small: the
// programs run under TENAX_MEMORY_LIMIT=256MiB and their peak resident memory, measured by
// wait4, must stay under 300 MB (before these checks, the same flags crashed with SIGSEGV,
// std::bad_alloc or std::length_error, or reached the kernel's OOM killer).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace tenax {
namespace {

namespace fs = std::filesystem;

struct Finished {
  int exit_code = -1;
  std::string output;     // stdout and stderr
  long peak_rss_kib = 0;  // of the shell and the program it ran
};

// Runs `command` through /bin/sh with TENAX_MEMORY_LIMIT=256MiB, its output in `log`; the peak
// resident memory comes from wait4, which reports the child's own and its waited-for children's.
Finished run_measured(const std::string& command, const fs::path& log) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::setenv("TENAX_MEMORY_LIMIT", "256MiB", 1);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) ::_exit(126);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  Finished finished;
  int status = 0;
  rusage usage{};
  if (child < 0 || ::wait4(child, &status, 0, &usage) != child) return finished;
  finished.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  finished.peak_rss_kib = usage.ru_maxrss;
  std::ifstream in(log);
  finished.output.assign(std::istreambuf_iterator<char>(in), {});
  return finished;
}

class HostileInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tenax-hostile-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `program args` on the CPU in a run directory of its own and checks the refusal: exit
  // status 1, each of `expected` in the output, no crash report, peak RSS under 300 MB.
  void expect_refused(const std::string& program, const std::string& args,
                      const std::vector<std::string>& expected) {
    const std::string command = program + " --device cpu " + args;
    SCOPED_TRACE(command);
    const Finished run =
        run_measured(command + " --run-dir " + (dir_ / "run").string(), dir_ / "log");
    EXPECT_EQ(run.exit_code, 1) << run.output;
    for (const std::string& text : expected) {
      EXPECT_NE(run.output.find(text), std::string::npos) << "missing '" << text << "' in\n"
                                                          << run.output;
    }
    for (const char* crash : {"terminate called", "std::bad_alloc", "Segmentation", "Aborted"}) {
      EXPECT_EQ(run.output.find(crash), std::string::npos) << run.output;
    }
    EXPECT_LT(run.peak_rss_kib, 300 * 1000) << "peak RSS " << run.peak_rss_kib << " KiB";
  }

  // Runs `program --device cpu --progress quiet args --run-dir run` (a run that may succeed).
  Finished run_in(const std::string& program, const std::string& args, const fs::path& run) {
    return run_measured(
        program + " --device cpu --progress quiet " + args + " --run-dir " + run.string(),
        dir_ / "log");
  }

  fs::path dir_;
};

TEST_F(HostileInput, Heat2dGridThatOverflowsIsRefusedWithTheLargestThatFits) {
  // n * n * 8 wrapped to 4.3 GiB, which was allocated and overrun (SIGSEGV).
  expect_refused(HEAT2D_PATH, "--n 6074001000",
                 {"--n 6074001000: the grid's points", "below 2^63", "points per side"});
  expect_refused(HEAT2D_PATH, "--n 99999999999", {"--n 99999999999", "points per side"});
}

TEST_F(HostileInput, Heat2dGridBeyondTheMemoryLimitIsRefusedBeforeAllocating) {
  expect_refused(HEAT2D_PATH, "--n 20000",
                 {"out_of_memory", "--n 20000 (400000000 points", "256.00 MiB",
                  "use at most 5740 points per side"});
}

// The largest grid a refusal names is one that runs under the same limit (before, heat2d and
// poisson named sizes whose arrays alone filled the pool, and they ran out of memory).
TEST_F(HostileInput, TheLargestGridARefusalNamesRuns) {
  for (const std::string& program :
       {std::string(HEAT2D_PATH) + " --steps 2", std::string(POISSON_PATH) + " --max-iters 5"}) {
    const Finished refused = run_measured(
        program + " --device cpu --progress quiet --n 40000 --run-dir " + (dir_ / "big").string(),
        dir_ / "log");
    ASSERT_EQ(refused.exit_code, 1) << refused.output;
    const std::size_t at = refused.output.find("use at most ");
    ASSERT_NE(at, std::string::npos) << refused.output;
    const std::string largest = std::to_string(std::stoll(refused.output.substr(at + 12)));
    const Finished fits = run_measured(program + " --device cpu --progress quiet --n " + largest +
                                           " --run-dir " + (dir_ / ("fits-" + largest)).string(),
                                       dir_ / "log");
    EXPECT_EQ(fits.exit_code, 0) << program << " --n " << largest << "\n" << fits.output;
  }
}

TEST_F(HostileInput, HeatEquationGridThatOverflowsIsRefused) {
  const Finished run = run_measured(
      std::string(HEAT_EQUATION_PATH) + " --device cpu --grid 3037000000", dir_ / "log");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("--grid 3037000000: the grid's bytes"), std::string::npos)
      << run.output;
  EXPECT_LT(run.peak_rss_kib, 300 * 1000);
}

TEST_F(HostileInput, TrainMlpModelsAndBatchesThatCannotFitAreRefusedBeforeAllocating) {
  // Before this check --layers 50000,50000 took 19.5 GB before failing, and a batch beyond the
  // memory backed off its micro-batch 33 times in vain (the batch is gathered whole).
  expect_refused(TRAIN_MLP_PATH, "--layers 50000,50000 --steps 2",
                 {"--layers 50000,50000 (", "of parameters and gradients) with --batch 256",
                  "needs at least", "fix: use narrower --layers or a smaller --batch"});
  expect_refused(TRAIN_MLP_PATH, "--samples 256 --batch 100000000000 --steps 5",
                 {"with --batch 100000000000 needs at least"});
  expect_refused(TRAIN_MLP_PATH, "--layers 4000000000,4000000000 --steps 1",
                 {"needs more bytes than 64 bits count"});
  // Noise beyond f32's range: every loss would be NaN and each rollback would meet it again.
  expect_refused(TRAIN_MLP_PATH, "--noise 1e308 --steps 2",
                 {"non-finite value(s) in the synthetic data (--noise 1e308 overflows f32's range)",
                  "fix: give --noise a standard deviation the data can hold"});
}

TEST_F(HostileInput, AGmresRestartLongerThanTheSystemIsCappedAtItsSize) {
  // --restart 20000 on 256 unknowns asked for 3 GB (its Hessenberg) before solving.
  const Finished run = run_measured(std::string(POISSON_PATH) +
                                        " --device cpu --n 16 --solver gmres --restart 20000 "
                                        "--run-dir " +
                                        (dir_ / "run").string(),
                                    dir_ / "log");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("--restart 20000 is longer than the 256 unknowns: GMRES cycles of 256"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("converged"), std::string::npos) << run.output;
  EXPECT_LT(run.peak_rss_kib, 300 * 1024) << "peak RSS " << run.peak_rss_kib << " KiB";
}

TEST_F(HostileInput, SettingsThatCannotMeanAnythingAreRefused) {
  // A relative tolerance of 1 or more is met by the starting guess.
  expect_refused(POISSON_PATH, "--n 8 --tol 1",
                 {"--tol 1: expected a number below 1", "fix: give --tol"});
  // Every collective would time out at once.
  expect_refused(HEAT2D_PATH, "--n 8 --comm-timeout 1e-300",
                 {"--comm-timeout 1e-300: expected a finite number in [0.01, 604800]"});
  // The root of the file system as a run directory.
  const Finished root = run_measured(std::string(HEAT2D_PATH) + " --n 8 --run-dir /", dir_ / "log");
  EXPECT_EQ(root.exit_code, 1) << root.output;
  EXPECT_NE(root.output.find("a directory's path, not empty and not the file system's root"),
            std::string::npos)
      << root.output;
  // A first restart delay beyond the cap of the delays.
  const Finished delay = run_measured(
      std::string(TENAX_CLI_PATH) + " run --restart-delay 1e308 -- /bin/true", dir_ / "log");
  EXPECT_NE(delay.exit_code, 0) << delay.output;
  EXPECT_NE(delay.output.find("--restart-delay 1e+308 is longer than --max-delay 60"),
            std::string::npos)
      << delay.output;
}

TEST_F(HostileInput, TheLargestIterationLimitRunsToConvergence) {
  // The step count once overflowed to one step of 50 iterations: "max_iterations", rc 0.
  const Finished run = run_measured(std::string(POISSON_PATH) +
                                        " --device cpu --n 16 --solver gmres --max-iters "
                                        "9223372036854775807 --run-dir " +
                                        (dir_ / "run").string(),
                                    dir_ / "log");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("poisson: converged after"), std::string::npos) << run.output;
}

TEST_F(HostileInput, PoissonGridsThatCannotFitAreRefusedBeforeAssembly) {
  // Uncaught std::bad_alloc (SIGABRT) before: the matrix was assembled outside the pool.
  expect_refused(POISSON_PATH, "--dim 2 --n 20000 --index i64",
                 {"out_of_memory", "--n 20000 --dim 2", "use at most"});
  // Uncaught std::length_error before.
  expect_refused(POISSON_PATH, "--n 3037000000", {"--n 3037000000 --dim 2", "below 2^63"});
  // 24 GB of resident memory, then the kernel's OOM killer, before.
  expect_refused(POISSON_PATH, "--n 6074001000", {"--n 6074001000 --dim 2", "below 2^63"});
  expect_refused(POISSON_PATH, "--dim 3 --n 3000000", {"--n 3000000 --dim 3", "below 2^63"});
  expect_refused(POISSON_PATH, "--dim 3 --n 2000 --operator stencil",
                 {"out_of_memory", "--n 2000 --dim 3", "use at most"});
  expect_refused(POISSON_PATH, "--problem convdiff --n 30000", {"out_of_memory", "--n 30000"});
}

TEST_F(HostileInput, PoissonNamesTheIndexFlagWhenI32CannotHoldTheEntries) {
  // The check comes before any allocation, so a limit far above the machine is harmless here.
  const Finished run =
      run_measured("TENAX_MEMORY_LIMIT=1TiB " + std::string(POISSON_PATH) +
                       " --device cpu --n 21000 --index i32 --run-dir " + (dir_ / "run").string(),
                   dir_ / "log");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("--index i32 cannot hold the 2204916000 entries"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("fix: use --index i64"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("DType::i64"), std::string::npos) << run.output;
  EXPECT_LT(run.peak_rss_kib, 300 * 1000);
}

TEST_F(HostileInput, MatrixMarketSizeLineBeyondItsEntriesIsRefusedByTheEntries) {
  // 64 bytes declaring 50 000 000 rows and 3 entries reached 3.1 GB before the pool refused.
  const fs::path matrix = dir_ / "promise.mtx";
  std::ofstream(matrix) << "%%MatrixMarket matrix coordinate real general\n"
                           "50000000 50000000 3\n1 1 1.0\n2 2 1.0\n3 3 1.0\n";
  expect_refused(POISSON_PATH, "--matrix " + matrix.string(),
                 {"stores 3 entries for 50000000 rows", "singular", "size line"});
  std::ofstream(matrix) << "%%MatrixMarket matrix coordinate real general\n"
                           "1000000000 1000000000 3\n1 1 1.0\n2 2 1.0\n3 3 1.0\n";
  expect_refused(POISSON_PATH, "--matrix " + matrix.string(),
                 {"stores 3 entries for 1000000000 rows"});
}

// A time step too small for a double (h^2/(4 alpha) for a huge alpha, or a subnormal --dt) would
// leave t and the field where they are: refused, naming the flag.
TEST_F(HostileInput, Heat2dTimeStepsThatCannotAdvanceTAreRefused) {
  expect_refused(HEAT2D_PATH, "--n 8 --steps 3 --alpha 1e308",
                 {"--alpha 1e308", "t would not advance", "lower --alpha"});
  expect_refused(HEAT2D_PATH, "--n 8 --steps 3 --dt 1e-320", {"--dt 1e-320", "smallest normal"});
}

// An empty path (an unset shell variable) is refused, not taken for the built-in problem.
TEST_F(HostileInput, EmptyPathsAreRefusedNotTakenForTheDefault) {
  expect_refused(POISSON_PATH, "--n 8 --matrix ''",
                 {"--matrix '': an empty value", "leave it out for the generated problem"});
  expect_refused(POISSON_PATH, "--n 8 --output ''", {"--output '': an empty value"});
  expect_refused(TRAIN_MLP_PATH, "--steps 1 --data ''",
                 {"--data '': an empty value", "the synthetic data"});
  expect_refused(TRAIN_MLP_PATH, "--steps 1 --init ''", {"--init '': an empty value"});
  expect_refused(HEAT2D_PATH, "--n 8 --steps 1 --output ''", {"--output '': an empty value"});
  expect_refused(HEAT2D_PATH, "--n 8 --steps 1 --profile ''", {"--profile '': an empty value"});
}

TEST_F(HostileInput, TelemetryIntervalsThatAreNotSecondsAreRefused) {
  for (const char* value : {"-1", "nan", "inf", "1e300"}) {
    expect_refused(HEAT2D_PATH, std::string("--n 16 --steps 2 --telemetry-seconds ") + value,
                   {"--telemetry-seconds " + std::string(value), "a finite number in [0, 604800]"});
  }
}

TEST_F(HostileInput, ProfilePathsThatCannotBeWrittenAreRefusedBeforeTheRun) {
  expect_refused(HEAT2D_PATH, "--n 16 --steps 2 --profile /nonexistent-dir/profile.json",
                 {"--profile", "does not exist", "create it first"});
  expect_refused(TRAIN_MLP_PATH, "--steps 2 --profile /tmp", {"(--profile) /tmp is a directory"});
  expect_refused(POISSON_PATH, "--n 8 --profile ..", {"--profile", "names no file"});
}

// An --output that is the job's own input (the file itself or a hard link to it) would replace
// it; one in a directory that does not exist would fail after the whole job. Both are refused
// before the job runs, and the input keeps its bytes.
TEST_F(HostileInput, OutputsThatWouldReplaceAnInputOrCannotBeWrittenAreRefusedFirst) {
  const fs::path matrix = dir_ / "a.mtx";
  const std::string text =
      "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 2.0\n2 2 3.0\n";
  std::ofstream(matrix) << text;
  fs::create_hard_link(matrix, dir_ / "hard-link.h5");
  for (const fs::path& output : {matrix, dir_ / "hard-link.h5"}) {
    expect_refused(POISSON_PATH, "--matrix " + matrix.string() + " --output " + output.string(),
                   {"--output " + output.string() + " is the file --matrix", "which this job reads",
                    "give --output another path"});
  }
  expect_refused(TRAIN_MLP_PATH,
                 "--steps 1 --data " + matrix.string() + " --output " + matrix.string(),
                 {"is the file --data"});
  std::ifstream in(matrix);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), text);
  expect_refused(POISSON_PATH, "--n 8 --output " + (dir_ / "missing" / "x.h5").string(),
                 {"--output", "the directory", "missing does not exist", "create it first"});
}

// The run directory's own files -- its event log, checkpoints, locks -- are never an output: a
// program's --output or a report's -o naming one is refused and the file kept. A checkpoints/
// that is a symbolic link is refused before anything is written or deleted where it points. A
// heat2d step that overflows a double is refused naming --alpha.
TEST_F(HostileInput, TheRunDirectorysOwnFilesAreNeverOverwritten) {
  const fs::path run = dir_ / "run";
  const Finished made = run_in(HEAT2D_PATH, "--n 16 --steps 4 --checkpoint-every 2", run);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  std::ifstream log_in(run / "events.jsonl");
  const std::string log(std::istreambuf_iterator<char>(log_in), {});
  ASSERT_FALSE(log.empty());
  expect_refused(
      HEAT2D_PATH,
      "--n 16 --steps 6 --checkpoint-every 2 --output " + (run / "events.jsonl").string(),
      {"is a file of the run directory", "which the output would replace"});
  expect_refused(
      HEAT2D_PATH,
      "--n 16 --steps 6 --output " + (run / "checkpoints" / "step-4" / "rank-0.h5").string(),
      {"is a file of the run directory"});
  const Finished report = run_measured(std::string(TENAX_CLI_PATH) + " report " + run.string() +
                                           " -o " + (run / "events.jsonl").string(),
                                       dir_ / "log");
  EXPECT_NE(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("which the report would replace"), std::string::npos)
      << report.output;
  std::ifstream after_in(run / "events.jsonl");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(after_in), {}).substr(0, log.size()), log);

  // A linked checkpoints/ (retention would delete step directories wherever it points).
  fs::remove_all(run);
  fs::create_directories(run);
  fs::create_directories(dir_ / "elsewhere" / "step-1");
  std::ofstream(dir_ / "elsewhere" / "step-1" / "data.txt") << "precious";
  fs::create_directory_symlink(dir_ / "elsewhere", run / "checkpoints");
  expect_refused(HEAT2D_PATH, "--n 16 --steps 4 --checkpoint-every 2 --keep-last 1",
                 {"checkpoints folder", "is a symbolic link"});
  EXPECT_TRUE(fs::exists(dir_ / "elsewhere" / "step-1" / "data.txt"));
  fs::remove(run / "checkpoints");

  expect_refused(HEAT2D_PATH, "--n 16 --steps 3 --alpha 1e-320",
                 {"--alpha 1e-320", "beyond the largest double"});

  // A run directory that is a loop of symbolic links: said, not a bare filesystem error.
  fs::create_symlink(dir_ / "loop-b", dir_ / "loop-a");
  fs::create_symlink(dir_ / "loop-a", dir_ / "loop-b");
  const Finished loop = run_in(HEAT2D_PATH, "--n 16 --steps 2", dir_ / "loop-a");
  EXPECT_EQ(loop.exit_code, 1) << loop.output;
  EXPECT_NE(loop.output.find("is a loop of symbolic links"), std::string::npos) << loop.output;
}

// A run stopped by an error the Runner does not handle (its checkpoints failed three times in a
// row) still ends its log with an exit line, so that watch ends and report says "failed".
TEST_F(HostileInput, ARunStoppedByAnErrorEndsItsLogWithAnExitLine) {
  const fs::path run = dir_ / "run";
  const Finished failed = run_in(
      HEAT2D_PATH, "--n 16 --steps 40 --checkpoint-every 10 --inject enospc@checkpoint=2x3", run);
  EXPECT_EQ(failed.exit_code, 1) << failed.output;
  std::ifstream in(run / "events.jsonl");
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  EXPECT_NE(last.find(R"("event":"exit")"), std::string::npos) << last;
  EXPECT_NE(last.find(R"("status":"failed")"), std::string::npos) << last;
  const Finished watch = run_measured(
      "timeout 20 " + std::string(TENAX_CLI_PATH) + " watch " + run.string(), dir_ / "log");
  EXPECT_NE(watch.exit_code, 124) << "watch did not end on the exit line: " << watch.output;
  EXPECT_NE(watch.output.find("failed"), std::string::npos) << watch.output;
}

// `tenax watch --once` on a log that is a symbolic link ends at once (it spun at 100 % CPU), and a
// line whose counts are not numbers is skipped by report and watch (they ended with "stoll").
TEST_F(HostileInput, WatchAndReportSurviveOddLogs) {
  const fs::path run = dir_ / "linked";
  fs::create_directories(run);
  std::ofstream(dir_ / "real.jsonl") << R"({"event":"started","time":1,"total_steps":5,"ranks":1})"
                                     << "\n";
  fs::create_symlink(dir_ / "real.jsonl", run / "events.jsonl");
  const Finished watch = run_measured(
      "timeout 20 " + std::string(TENAX_CLI_PATH) + " watch --once " + run.string(), dir_ / "log");
  EXPECT_NE(watch.exit_code, 124) << "watch did not end: " << watch.output;
  EXPECT_NE(watch.output.find("not a regular file"), std::string::npos) << watch.output;
  const fs::path odd = dir_ / "odd";
  fs::create_directories(odd);
  std::ofstream(odd / "events.jsonl")
      << R"({"event":"started","time":1,"total_steps":"abc","ranks":"99999999999"})"
      << "\n";
  for (const char* command : {" report ", " watch --once "}) {
    const Finished run_ = run_measured(
        "timeout 20 " + std::string(TENAX_CLI_PATH) + command + odd.string(), dir_ / "log");
    EXPECT_EQ(run_.exit_code, 0) << command << run_.output;
    EXPECT_EQ(run_.output.find("stoll"), std::string::npos) << run_.output;
    EXPECT_EQ(run_.output.find("stoi"), std::string::npos) << run_.output;
  }
}

// Files that are not regular files, as a hostile user passes them. A FIFO and a symbolic link of
// the test's own stand for the devices (/dev/null, /dev/full, /dev/stdout) the user named; every
// command runs under `timeout`, so a regression that blocks fails instead of hanging.

// `poisson --matrix FIFO` hung (the file was opened twice), `--matrix <(cat A.mtx)` failed with
// "Illegal seek -- fix: check the filesystem".
TEST_F(HostileInput, PoissonInputsThatAreNotRegularFilesAreRefusedAtOnce) {
  const fs::path fifo = dir_ / "A.mtx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::ofstream(dir_ / "B.mtx") << "%%MatrixMarket matrix coordinate real general\n2 2 2\n"
                                   "1 1 2.0\n2 2 3.0\n";
  expect_refused("timeout 60 " + std::string(POISSON_PATH), "--matrix " + fifo.string(),
                 {"--matrix " + fifo.string() + " is a FIFO, not a regular file",
                  "give the path of a regular file", "save it to a file first"});
  expect_refused("timeout 60 " + std::string(POISSON_PATH),
                 "--matrix " + (dir_ / "B.mtx").string() + " --rhs " + fifo.string(),
                 {"--rhs " + fifo.string() + " is a FIFO, not a regular file"});
  expect_refused("timeout 60 " + std::string(POISSON_PATH), "--matrix " + dir_.string(),
                 {"--matrix " + dir_.string() + " is a directory, not a regular file"});
  EXPECT_FALSE(fs::exists(dir_ / "run" / "events.jsonl")) << "refused before the run";
}

// `heat2d --output /dev/null`: an io error, SIGSEGV at exit, the device node deleted; the same
// for poisson (and train_mlp writes its --output the same way). Each is refused before the run
// and left as it was.
TEST_F(HostileInput, OutputsThatAreNotRegularFilesAreRefusedBeforeTheRunAndLeftAlone) {
  const fs::path fifo = dir_ / "out.h5";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::ofstream(dir_ / "victim") << "precious";
  fs::create_symlink(dir_ / "victim", dir_ / "link.h5");
  const std::vector<std::pair<std::string, std::string>> programs = {
      {HEAT2D_PATH, "--n 16 --steps 2"}, {POISSON_PATH, "--n 8"}, {TRAIN_MLP_PATH, "--steps 2"}};
  for (const auto& [program, args] : programs) {
    for (const auto& [path, kind] : std::vector<std::pair<fs::path, std::string>>{
             {fifo, "a FIFO"}, {dir_ / "link.h5", "a symbolic link"}}) {
      fs::remove_all(dir_ / "run");
      expect_refused("timeout 120 " + program, args + " --output " + path.string(),
                     {"--output " + path.string() + " is " + kind + ", not a regular file",
                      "fix: give the path of a regular file"});
      EXPECT_FALSE(fs::exists(dir_ / "run" / "checkpoints")) << "refused before the run";
    }
    expect_refused("timeout 120 " + program, args + " --profile " + fifo.string(),
                   {"--profile) " + fifo.string() + " is a FIFO, not a regular file"});
  }
  struct stat info {};
  ASSERT_EQ(::lstat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.h5"));
  std::ifstream in(dir_ / "victim");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "precious");
}

}  // namespace
}  // namespace tenax
