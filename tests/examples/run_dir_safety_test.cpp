// Run-directory safety of the example programs, end to end: for heat2d, poisson and train_mlp,
// a resume with a changed result-affecting setting is refused naming the key with its old and new
// values and leaves the stored checkpoints byte for byte as they were; a change of a free key
// (how far to run) resumes, and ends as an uninterrupted run of the new length would; a safe key
// resumes with --allow-config-change; a run directory written by another program is refused
// naming it; and a second job on a run directory in use is refused naming the first job's pid
// while the first runs on undisturbed, to the same bits as a run nobody interfered with.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tenax/io/state_file.hpp"

extern char** environ;

namespace tenax {
namespace {

namespace fs = std::filesystem;

struct Job {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

class RunDirSafety : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("tenax-run-dir-safety-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::string command_of(const std::string& program, const std::string& run_dir,
                                const std::string& args) {
    return program + " --device cpu --progress quiet --run-dir " + (root_ / run_dir).string() +
           " " + args;
  }

  // Runs `program` in run directory `run_dir` (kept between runs: that is the point) and
  // returns its exit code and output.
  static Job run(const std::string& program, const std::string& run_dir, const std::string& args) {
    const fs::path log = root_ / (run_dir + ".log");
    const std::string command =
        "TENAX_FAULTS= " + command_of(program, run_dir, args) + " >" + log.string() + " 2>&1";
    const int status = std::system(command.c_str());
    Job job;
    job.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    job.output = read(log);
    return job;
  }

  static std::string read(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  // Every file of the run's checkpoints, by path, with its bytes.
  static std::map<std::string, std::string> checkpoints(const std::string& run_dir) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(root_ / run_dir / "checkpoints")) {
      if (entry.is_regular_file()) files[entry.path().string()] = read(entry.path());
    }
    return files;
  }

  // A resume with `args` is refused with every part of `parts` in its message, and the stored
  // checkpoints are unchanged.
  static void expect_refused(const std::string& program, const std::string& run_dir,
                             const std::string& args, const std::vector<std::string>& parts) {
    const auto before = checkpoints(run_dir);
    ASSERT_FALSE(before.empty());
    const Job refused = run(program, run_dir, args);
    EXPECT_EQ(refused.exit_code, 1) << args << "\n" << refused.output;
    for (const std::string& part : parts) {
      EXPECT_NE(refused.output.find(part), std::string::npos)
          << "'" << part << "' missing for " << args << "\n"
          << refused.output;
    }
    EXPECT_TRUE(checkpoints(run_dir) == before) << args << ": the stored checkpoints changed";
  }

  // The tensor `name` of an HDF5 output file, as bytes.
  static std::string tensor_bytes(const fs::path& file, const std::string& name) {
    const StateDict state = io::read_state_file(file);
    const Tensor& t = state.tensor(name);
    return {static_cast<const char*>(t.data()), t.nbytes()};
  }

  static fs::path file(const std::string& name) { return root_ / name; }

  static inline fs::path root_;
};

// ---- heat2d ----

const std::string kHeatCadence = "--checkpoint-every 5";
const std::string kHeat = kHeatCadence + " --n 24";

TEST_F(RunDirSafety, Heat2dRefusesAChangedProblemAndKeepsTheStoredRun) {
  ASSERT_EQ(run(HEAT2D_PATH, "heat-refused", kHeat + " --steps 20").exit_code, 0);
  expect_refused(HEAT2D_PATH, "heat-refused", kHeat + " --steps 20 --alpha 2",
                 {"alpha: 1.0 -> 2.0", "alpha cannot change when a run of heat2d resumes",
                  "use a new --run-dir"});
  expect_refused(HEAT2D_PATH, "heat-refused", kHeat + " --steps 30 --initial gauss",
                 {"initial: \"sine\" -> \"gauss\"", "steps: 20 -> 30"});
  // Several keys at once, one of them safe: every one is listed, the safe one named as such.
  expect_refused(HEAT2D_PATH, "heat-refused", kHeatCadence + " --steps 20 --n 25 --courant 0.5",
                 {"n: 24 -> 25", "courant: 0.9 -> 0.5",
                  "courant is safe to change: pass --allow-config-change courant"});
  // A safe key alone still needs the flag.
  expect_refused(HEAT2D_PATH, "heat-refused", kHeat + " --steps 20 --courant 0.5",
                 {"courant: 0.9 -> 0.5", "pass --allow-config-change courant to accept it"});
  // The flag does not reach keys that are not safe, and must name a key of the configuration.
  expect_refused(HEAT2D_PATH, "heat-refused",
                 kHeat + " --steps 20 --alpha 2 --allow-config-change alpha",
                 {"--allow-config-change alpha: alpha cannot change",
                  "the keys --allow-config-change accepts for heat2d are courant, dt"});
  expect_refused(HEAT2D_PATH, "heat-refused", kHeat + " --steps 20 --allow-config-change nope",
                 {"the configuration of heat2d has no key nope"});
  EXPECT_NE(read(file("heat-refused") / "events.jsonl").find("\"config_refused\""),
            std::string::npos);
}

TEST_F(RunDirSafety, Heat2dResumesWithMoreStepsOrAnAllowedSafeChange) {
  ASSERT_EQ(
      run(HEAT2D_PATH, "heat-30", kHeat + " --steps 30 --output " + file("heat-30.h5").string())
          .exit_code,
      0);
  ASSERT_EQ(run(HEAT2D_PATH, "heat-more", kHeat + " --steps 20").exit_code, 0);
  const Job more = run(HEAT2D_PATH, "heat-more",
                       kHeat + " --steps 30 --output " + file("heat-more.h5").string());
  ASSERT_EQ(more.exit_code, 0) << more.output;
  EXPECT_NE(more.output.find("tenax: resuming with steps changed 20 -> 30"), std::string::npos)
      << more.output;
  EXPECT_TRUE(tensor_bytes(file("heat-more.h5"), "u") == tensor_bytes(file("heat-30.h5"), "u"))
      << "20 steps resumed to 30 differ from 30 steps in one go";
  const std::string events = read(file("heat-more") / "events.jsonl");
  EXPECT_NE(events.find(R"("event":"config_changed")"), std::string::npos) << events;
  EXPECT_NE(events.find(R"("key":"steps","old":"20","new":"30","allowed":false)"),
            std::string::npos)
      << events;

  const Job safe = run(HEAT2D_PATH, "heat-more",
                       kHeat + " --steps 40 --courant 0.5 --allow-config-change courant");
  ASSERT_EQ(safe.exit_code, 0) << safe.output;
  EXPECT_NE(safe.output.find("tenax: resuming with courant changed 0.9 -> 0.5 "
                             "(--allow-config-change)"),
            std::string::npos)
      << safe.output;
  EXPECT_NE(safe.output.find("40 steps of 24x24"), std::string::npos) << safe.output;
}

// ---- poisson ----

const std::string kPoissonCadence = "--iterations-per-step 5 --checkpoint-every 2";
const std::string kPoisson = kPoissonCadence + " --n 16 --tol 0";

TEST_F(RunDirSafety, PoissonRefusesAnotherSolverOrMatrixAndKeepsTheStoredRun) {
  ASSERT_EQ(run(POISSON_PATH, "poisson-refused", kPoisson + " --max-iters 40").exit_code, 0);
  expect_refused(POISSON_PATH, "poisson-refused", kPoisson + " --max-iters 40 --solver bicgstab",
                 {"solver: \"cg\" -> \"bicgstab\"", "solver cannot change when a run of poisson",
                  "none of the changed keys is safe to change"});
  expect_refused(POISSON_PATH, "poisson-refused", kPoisson + " --max-iters 40 --precond jacobi",
                 {"precond: \"none\" -> \"jacobi\""});
  expect_refused(POISSON_PATH, "poisson-refused",
                 kPoissonCadence + " --tol 0 --max-iters 40 --n 17", {"n: 16 -> 17"});
  // GMRES's Gram-Schmidt changes the iterates: recorded when not the default, never changed.
  const std::string gmres = kPoisson + " --max-iters 40 --solver gmres --restart 12";
  ASSERT_EQ(run(POISSON_PATH, "poisson-orthog", gmres + " --solver-options orthog=cgs2").exit_code,
            0);
  expect_refused(POISSON_PATH, "poisson-orthog", gmres,
                 {"orthog: \"cgs2\" -> (absent)", "orthog cannot change when a run of poisson"});
  expect_refused(POISSON_PATH, "poisson-orthog", gmres + " --solver-options orthog=cgs",
                 {"orthog: \"cgs2\" -> \"cgs\""});

  // A matrix edited in place is another system, even under the same path.
  const fs::path matrix = file("poisson-matrix.mtx");
  const auto write_matrix = [&](double diagonal) {
    std::ofstream out(matrix);
    out << "%%MatrixMarket matrix coordinate real general\n6 6 16\n";
    for (int i = 1; i <= 6; ++i) out << i << " " << i << " " << diagonal << "\n";
    for (int i = 1; i < 6; ++i) out << i << " " << i + 1 << " -1\n" << i + 1 << " " << i << " -1\n";
  };
  write_matrix(4.0);
  const std::string args = "--matrix " + matrix.string() +
                           " --tol 0 --max-iters 4 "
                           "--iterations-per-step 1 --checkpoint-every 1";
  ASSERT_EQ(run(POISSON_PATH, "poisson-matrix", args).exit_code, 0);
  write_matrix(5.0);
  expect_refused(POISSON_PATH, "poisson-matrix", args, {"matrix_xxh64: \""});
}

TEST_F(RunDirSafety, PoissonResumesWithMoreIterationsOrAnAllowedTolerance) {
  ASSERT_EQ(run(POISSON_PATH, "poisson-80",
                kPoisson + " --max-iters 80 --output " + file("poisson-80.h5").string())
                .exit_code,
            0);
  // Killed before its limit of 40 iterations, resumed with a limit of 80: the iterates are
  // those of the uninterrupted 80-iteration solve.
  const Job killed =
      run(POISSON_PATH, "poisson-more", kPoisson + " --max-iters 40 --inject kill@step=5");
  ASSERT_NE(killed.exit_code, 0) << killed.output;
  const Job more = run(POISSON_PATH, "poisson-more",
                       kPoisson + " --max-iters 80 --output " + file("poisson-more.h5").string());
  ASSERT_EQ(more.exit_code, 0) << more.output;
  EXPECT_NE(more.output.find("tenax: resuming with max_iters changed 40 -> 80"), std::string::npos)
      << more.output;
  EXPECT_TRUE(tensor_bytes(file("poisson-more.h5"), "x") ==
              tensor_bytes(file("poisson-80.h5"), "x"));

  const Job safe =
      run(POISSON_PATH, "poisson-more",
          kPoissonCadence + " --n 16 --max-iters 80 --tol 1e-12 --allow-config-change tol");
  ASSERT_EQ(safe.exit_code, 0) << safe.output;
  EXPECT_NE(safe.output.find("tenax: resuming with tol changed 0.0 -> 1e-12 "
                             "(--allow-config-change)"),
            std::string::npos)
      << safe.output;
}

// ---- train_mlp ----

const std::string kTrain = "--samples 256 --batch 32 --grain 8 --layers 16,16 --checkpoint-every 4";

TEST_F(RunDirSafety, TrainMlpRefusesAnotherModelOrDataAndKeepsTheStoredRun) {
  ASSERT_EQ(run(TRAIN_MLP_PATH, "train-refused", kTrain + " --steps 8").exit_code, 0);
  expect_refused(TRAIN_MLP_PATH, "train-refused",
                 "--samples 256 --batch 32 --grain 8 --layers 8 --checkpoint-every 4 --steps 8",
                 {"layers: \"16,16\" -> \"8\"", "layers cannot change when a run of train_mlp"});
  expect_refused(TRAIN_MLP_PATH, "train-refused", kTrain + " --steps 8 --task regression",
                 {"task: \"spirals\" -> \"regression\""});
  expect_refused(TRAIN_MLP_PATH, "train-refused", kTrain + " --steps 8 --seed 5", {"seed: 0 -> 5"});
  expect_refused(TRAIN_MLP_PATH, "train-refused", kTrain + " --steps 8 --lr 0.001",
                 {"lr: 0.01 -> 0.001", "pass --allow-config-change lr to accept it"});
  // A cosine schedule spans the run: there --steps changes the rate of every step left.
  ASSERT_EQ(run(TRAIN_MLP_PATH, "train-cosine", kTrain + " --steps 8 --schedule cosine").exit_code,
            0);
  expect_refused(TRAIN_MLP_PATH, "train-cosine", kTrain + " --steps 12 --schedule cosine",
                 {"steps: 8 -> 12", "pass --allow-config-change steps"});
}

TEST_F(RunDirSafety, TrainMlpResumesWithMoreStepsOrAnAllowedLearningRate) {
  ASSERT_EQ(run(TRAIN_MLP_PATH, "train-12",
                kTrain + " --steps 12 --output " + file("train-12.h5").string())
                .exit_code,
            0);
  ASSERT_EQ(run(TRAIN_MLP_PATH, "train-more", kTrain + " --steps 8").exit_code, 0);
  const Job more = run(TRAIN_MLP_PATH, "train-more",
                       kTrain + " --steps 12 --output " + file("train-more.h5").string());
  ASSERT_EQ(more.exit_code, 0) << more.output;
  EXPECT_NE(more.output.find("tenax: resuming with steps changed 8 -> 12"), std::string::npos)
      << more.output;
  for (const char* name : {"params/fc0.weight", "params/fc2.bias", "loss"}) {
    EXPECT_TRUE(tensor_bytes(file("train-more.h5"), name) ==
                tensor_bytes(file("train-12.h5"), name))
        << name << ": 8 steps resumed to 12 differ from 12 steps in one go";
  }
  const Job safe =
      run(TRAIN_MLP_PATH, "train-more", kTrain + " --steps 16 --lr 0.001 --allow-config-change lr");
  ASSERT_EQ(safe.exit_code, 0) << safe.output;
  EXPECT_NE(safe.output.find("tenax: resuming with lr changed 0.01 -> 0.001 "
                             "(--allow-config-change)"),
            std::string::npos)
      << safe.output;
  EXPECT_NE(safe.output.find("16 steps"), std::string::npos) << safe.output;
}

// ---- every program ----

TEST_F(RunDirSafety, ARunDirectoryOfAnotherProgramIsRefusedNamingIt) {
  ASSERT_EQ(run(HEAT2D_PATH, "heat-owned", kHeat + " --steps 10").exit_code, 0);
  expect_refused(TRAIN_MLP_PATH, "heat-owned", kTrain + " --steps 8",
                 {"was written by heat2d, not train_mlp", "pass another --run-dir"});
  expect_refused(POISSON_PATH, "heat-owned", kPoisson + " --max-iters 20",
                 {"was written by heat2d, not poisson"});
  ASSERT_EQ(run(TRAIN_MLP_PATH, "train-owned", kTrain + " --steps 4").exit_code, 0);
  expect_refused(HEAT2D_PATH, "train-owned", kHeat + " --steps 10",
                 {"run directory " + (root_ / "train-owned").string() +
                  " was written by train_mlp, not heat2d"});
}

TEST_F(RunDirSafety, ASecondJobOnARunDirectoryInUseIsRefusedAndTheFirstIsUndisturbed) {
  // Long enough (a few seconds) that the first job still runs when the second one is refused.
  const std::string args = "--n 192 --steps 60000 --checkpoint-every 6000";
  ASSERT_EQ(run(HEAT2D_PATH, "undisturbed", args + " --output " + file("undisturbed.h5").string())
                .exit_code,
            0);

  const std::string first_command =
      "exec " +
      command_of(HEAT2D_PATH, "shared", args + " --output " + file("shared.h5").string()) + " >" +
      file("shared-first.log").string() + " 2>&1";
  char shell[] = "/bin/sh";
  char dash_c[] = "-c";
  std::vector<char> text(first_command.begin(), first_command.end());
  text.push_back('\0');
  char* argv[] = {shell, dash_c, text.data(), nullptr};
  pid_t first = 0;
  ASSERT_EQ(::posix_spawn(&first, shell, nullptr, nullptr, argv, environ), 0);

  // Wait for its first checkpoint (step 0, written before the first step).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const fs::path first_commit = file("shared") / "checkpoints" / "step-0" / "COMMIT";
  while (!fs::exists(first_commit) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(fs::exists(first_commit)) << read(file("shared-first.log"));

  const Job second = run(HEAT2D_PATH, "shared", args);
  int status = 0;
  const bool first_still_running = ::waitpid(first, &status, WNOHANG) == 0;
  EXPECT_NE(second.exit_code, 0) << second.output;
  for (const std::string part :
       {"run directory " + (root_ / "shared").string() + " is in use by heat2d (pid " +
            std::to_string(first) + " on host ",
        std::string("wait for that job to end or stop it, or pass another --run-dir")}) {
    EXPECT_NE(second.output.find(part), std::string::npos) << part << "\n" << second.output;
  }
  EXPECT_TRUE(first_still_running) << "the first job ended before the second was refused; the "
                                      "test needs a longer first job";

  if (first_still_running) ASSERT_EQ(::waitpid(first, &status, 0), first);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read(file("shared-first.log"));
  EXPECT_TRUE(tensor_bytes(file("shared.h5"), "u") == tensor_bytes(file("undisturbed.h5"), "u"))
      << "the first job's result differs from an undisturbed run's";
  // The second job wrote nothing into the run directory: one start, no resume, one exit.
  const std::string events = read(file("shared") / "events.jsonl");
  std::size_t starts = 0;
  std::size_t exits = 0;
  for (auto at = events.find("\"event\":\"started\""); at != std::string::npos;
       at = events.find("\"event\":\"started\"", at + 1)) {
    ++starts;
  }
  for (auto at = events.find("\"event\":\"exit\""); at != std::string::npos;
       at = events.find("\"event\":\"exit\"", at + 1)) {
    ++exits;
  }
  EXPECT_EQ(starts, 1u) << events;
  EXPECT_EQ(exits, 1u) << events;
  EXPECT_EQ(events.find("\"event\":\"resumed\""), std::string::npos) << events;
  // Once the first job is done, the directory is free again.
  const Job after = run(HEAT2D_PATH, "shared", args);
  EXPECT_EQ(after.exit_code, 0) << after.output;
}

}  // namespace
}  // namespace tenax
