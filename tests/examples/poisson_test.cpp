// The poisson example end to end: second-order accuracy of the discretisation, every solver and
// preconditioner on the problems it is meant for, Matrix Market input, mixed precision, clear
// errors for bad flags, and a solve killed (or hit by a NaN) mid-way that resumes under the
// supervisor and ends bitwise equal to an uninterrupted solve.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tenax/io/state_file.hpp"

namespace tenax {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Solve {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  json summary;        // the --json line (null when absent)
};

class Poisson : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("tenax-poisson-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  // Runs poisson with `args` in its own run directory (under `tenax run` when supervised); a run
  // that is not `fresh` resumes what the directory holds.
  static Solve run(const std::string& name, const std::string& args, bool supervised = false,
                   const std::string& faults = "", bool fresh = true) {
    const fs::path dir = root_ / name;
    if (fresh) fs::remove_all(dir);
    std::string command = "TENAX_FAULTS='" + faults + "' ";
    if (supervised) {
      command += std::string(TENAX_CLI_PATH) +
                 " run --restart-delay 0 --max-restarts 3 --run-dir " + dir.string() + " -- ";
    }
    command += std::string(POISSON_PATH) + " --device cpu --progress quiet --json --run-dir " +
               dir.string() + " " + args;
    const fs::path log = root_ / (name + ".log");
    command += " >" + log.string() + " 2>&1";
    const int status = std::system(command.c_str());
    Solve result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream in(log);
    result.output.assign(std::istreambuf_iterator<char>(in), {});
    std::istringstream lines(result.output);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("{\"solver\"")) result.summary = json::parse(line);
    }
    return result;
  }

  static fs::path path_of(const std::string& name) { return root_ / name; }

  static std::vector<double> solution(const fs::path& file) {
    const StateDict state = io::read_state_file(file);
    const Tensor& x = state.tensor("x");
    return {x.data_as<double>(), x.data_as<double>() + x.numel()};
  }

  // The residual per iteration that --output writes beside the solution.
  static std::vector<double> residual_history(const fs::path& file) {
    const StateDict state = io::read_state_file(file);
    const Tensor& h = state.tensor("residual_history");
    return {h.data_as<double>(), h.data_as<double>() + h.numel()};
  }

  static inline fs::path root_;
};

double error_of(const Solve& run) {
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.summary.value("status", ""), "converged") << run.output;
  return run.summary.value("error_max", -1.0);
}

TEST_F(Poisson, SecondOrderInSpaceIn2dAnd3d) {
  for (const auto& [dim, op, sizes] : std::vector<std::tuple<int, std::string, std::vector<int>>>{
           {2, "csr", {15, 31, 63}}, {2, "stencil", {15, 31, 63}}, {3, "stencil", {7, 15, 31}}}) {
    std::vector<double> errors;
    for (const int n : sizes) {
      const std::string name = "order-" + std::to_string(dim) + op + std::to_string(n);
      errors.push_back(error_of(run(name, "--dim " + std::to_string(dim) + " --operator " + op +
                                              " --n " + std::to_string(n) + " --tol 1e-12")));
    }
    for (std::size_t k = 1; k < errors.size(); ++k) {
      const double ratio = errors[k - 1] / errors[k];
      EXPECT_GT(ratio, 3.6) << dim << "-D " << op << ": errors " << errors[k - 1] << " -> "
                            << errors[k];
      EXPECT_LT(ratio, 4.4) << dim << "-D " << op;
    }
  }
}

TEST_F(Poisson, EverySolverAndPreconditionerConverges) {
  struct Case {
    std::string args;
    double error_limit;  // against the known solution
  };
  const std::vector<Case> cases = {
      {"--solver cg --precond none", 1e-3},
      {"--solver cg --precond jacobi", 1e-3},
      {"--solver cg --precond ilu0", 1e-3},
      {"--solver cg --precond jacobi --operator stencil", 1e-3},
      {"--solver bicgstab --precond ilu0", 1e-3},
      {"--solver gmres --precond jacobi --restart 20", 1e-3},
      {"--problem convdiff --solver bicgstab --precond none", 1e-6},
      {"--problem convdiff --solver bicgstab --precond jacobi", 1e-6},
      {"--problem convdiff --solver bicgstab --precond ilu0", 1e-6},
      {"--problem convdiff --solver gmres --precond none --restart 30", 1e-6},
      {"--problem convdiff --solver gmres --precond jacobi --restart 30", 1e-6},
      {"--problem convdiff --solver gmres --precond ilu0 --restart 10", 1e-6},
  };
  int index = 0;
  for (const Case& c : cases) {
    const Solve result = run("solver-" + std::to_string(index++), "--n 32 --tol 1e-10 " + c.args);
    const double error = error_of(result);
    EXPECT_GE(error, 0.0) << c.args;
    EXPECT_LT(error, c.error_limit) << c.args << "\n" << result.output;
    EXPECT_LE(result.summary.value("relative_residual", 1.0), 1e-10) << c.args;
  }
}

TEST_F(Poisson, PreconditionersCutTheIterationCount) {
  const auto iterations = [](const Solve& r) { return r.summary.value("iterations", -1); };
  const Solve none = run("pc-none", "--n 48 --tol 1e-8");
  const Solve ilu = run("pc-ilu0", "--n 48 --tol 1e-8 --precond ilu0");
  ASSERT_EQ(none.exit_code, 0) << none.output;
  ASSERT_EQ(ilu.exit_code, 0) << ilu.output;
  EXPECT_LT(iterations(ilu), iterations(none) * 3 / 4) << none.output << ilu.output;
}

TEST_F(Poisson, MatrixMarketSystemIsSolved) {
  // The 1-D Laplacian tridiag(-1, 2, -1) of order 40 (symmetric storage: lower triangle) and a
  // right-hand side in array format. Its solution is known in closed form for b = e_1 + e_n:
  // all ones.
  const int n = 40;
  const fs::path matrix = path_of("laplace1d.mtx");
  {
    std::ofstream out(matrix);
    out << "%%MatrixMarket matrix coordinate real symmetric\n% 1-D Laplacian\n";
    out << n << " " << n << " " << (2 * n - 1) << "\n";
    for (int i = 1; i <= n; ++i) {
      out << i << " " << i << " 2\n";
      if (i > 1) out << i << " " << i - 1 << " -1\n";
    }
  }
  const fs::path rhs = path_of("rhs.mtx");
  {
    std::ofstream out(rhs);
    out << "%%MatrixMarket matrix array real general\n" << n << " 1\n";
    for (int i = 1; i <= n; ++i) out << ((i == 1 || i == n) ? "1\n" : "0\n");
  }
  const fs::path output = path_of("mm-solution.h5");
  const Solve result =
      run("matrix-market", "--matrix " + matrix.string() + " --rhs " + rhs.string() +
                               " --tol 1e-12 --output " + output.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.summary.value("status", ""), "converged");
  EXPECT_EQ(result.summary.value("rows", 0), n);
  EXPECT_EQ(result.summary.value("nnz", 0), 3 * n - 2);
  for (const double x : solution(output)) EXPECT_NEAR(x, 1.0, 1e-9);
  // Without --rhs, b = A 1 and the error against all ones is reported.
  const Solve ones = run("matrix-market-ones", "--matrix " + matrix.string() + " --tol 1e-12");
  ASSERT_EQ(ones.exit_code, 0) << ones.output;
  EXPECT_LT(ones.summary.value("error_max", 1.0), 1e-9) << ones.output;
}

TEST_F(Poisson, ASolveThatFailsAfterItsStepsIsLoggedAsFailedNotCompleted) {
  // CG on a skew-symmetric matrix breaks down (exit 2) after its steps ran. The Runner's exit
  // line says its steps completed; the program's verdict follows it.
  const fs::path skew = path_of("skew.mtx");
  {
    std::ofstream out(skew);
    out << "%%MatrixMarket matrix coordinate real skew-symmetric\n4 4 3\n2 1 1\n3 2 1\n4 3 1\n";
  }
  const Solve failed = run("fails", "--matrix " + skew.string() + " --solver cg");
  ASSERT_EQ(failed.exit_code, 2) << failed.output;
  std::ifstream in(path_of("fails") / "events.jsonl");
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) last = line;
  }
  const json event = json::parse(last);
  EXPECT_EQ(event.value("event", ""), "program_exit") << last;
  EXPECT_EQ(event.value("exit_code", 0), failed.exit_code) << last;
  // `tenax report` says so.
  const fs::path page = path_of("fails-report.html");
  const std::string report = std::string(TENAX_CLI_PATH) + " report " + path_of("fails").string() +
                             " -o " + page.string() + " >/dev/null";
  ASSERT_EQ(std::system(report.c_str()), 0);
  std::ifstream html(page);
  const std::string text{std::istreambuf_iterator<char>(html), {}};
  EXPECT_NE(text.find("failed"), std::string::npos);
  EXPECT_NE(text.find("exited with status " + std::to_string(failed.exit_code)), std::string::npos);
  // A solve that succeeds writes no such line.
  const Solve fine = run("fine", "--n 16");
  ASSERT_EQ(fine.exit_code, 0) << fine.output;
  std::ifstream good(path_of("fine") / "events.jsonl");
  const std::string log{std::istreambuf_iterator<char>(good), {}};
  EXPECT_EQ(log.find("program_exit"), std::string::npos);
}

TEST_F(Poisson, OutputFileHasTheSolutionAndItsAttributes) {
  const fs::path output = path_of("out.h5");
  const Solve result = run("output", "--n 16 --tol 1e-10 --output " + output.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(solution(output).size(), 256u);
  const std::string dump = "h5dump -a /x/status -a /x/iterations -a /x/residual " +
                           output.string() + " > " + path_of("dump.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(dump.c_str()), 0);
  std::ifstream in(path_of("dump.txt"));
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  EXPECT_NE(text.find("\"converged\""), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(result.summary.value("iterations", -1))), std::string::npos)
      << text;
}

TEST_F(Poisson, MixedPrecisionReachesDoubleAccuracy) {
  // Convection-diffusion with b = A 1: the exact solution is all ones, with no discretisation
  // error to hide the solver's.
  const std::string problem = "--problem convdiff --n 64 --solver bicgstab --tol 1e-12 ";
  const Solve mixed = run("mixed", problem + "--precision mixed");
  ASSERT_EQ(mixed.exit_code, 0) << mixed.output;
  EXPECT_EQ(mixed.summary.value("status", ""), "converged") << mixed.output;
  EXPECT_LE(mixed.summary.value("relative_residual", 1.0), 1e-12);
  EXPECT_LT(mixed.summary.value("error_max", 1.0), 1e-10) << mixed.output;
  // f32 alone cannot get there: its iterate is accurate to f32 rounding at best.
  const Solve single = run("single", problem + "--precision f32 --max-iters 500");
  EXPECT_GT(single.summary.value("error_max", 0.0), 1e-8) << single.output;
}

TEST_F(Poisson, BadFlagsAreRefusedWithTheFix) {
  struct Case {
    std::string args;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {"--dim 4", "--dim 4: expected an integer in [2, 3]"},
           {"--precond ilu0 --operator stencil", "ilu0"},
           {"--rhs b.mtx", "--rhs without --matrix"},
           {"--solver sor", "sor"},
           {"--problem convdiff --operator stencil", "2-D only"},
           {"--matrix /nonexistent/A.mtx", "/nonexistent/A.mtx"},
       }) {
    const Solve result = run("bad", c.args);
    EXPECT_NE(result.exit_code, 0) << c.args;
    EXPECT_NE(result.output.find(c.expected), std::string::npos) << c.args << "\n" << result.output;
  }
}

// A solve long enough to checkpoint several times: 10 iterations a step, a checkpoint every 2.
constexpr const char* kResumable =
    "--n 48 --tol 1e-10 --iterations-per-step 10 --checkpoint-every 2";

TEST_F(Poisson, KilledOrPoisonedMidSolveEndsBitwiseAsUninterrupted) {
  for (const std::string solver : {"cg --precond jacobi", "bicgstab", "gmres --restart 15"}) {
    const std::string args = std::string(kResumable) + " --solver " + solver;
    const std::string tag = solver.substr(0, solver.find(' '));
    const Solve reference =
        run("ref-" + tag, args + " --output " + path_of("ref-" + tag + ".h5").string());
    ASSERT_EQ(reference.exit_code, 0) << reference.output;
    ASSERT_EQ(reference.summary.value("status", ""), "converged") << reference.output;
    const std::vector<double> expected = solution(path_of("ref-" + tag + ".h5"));
    const std::vector<double> expected_history = residual_history(path_of("ref-" + tag + ".h5"));
    ASSERT_EQ(static_cast<std::int64_t>(expected_history.size()),
              reference.summary.value("iterations", -1) + 1);
    EXPECT_EQ(expected_history.back(), reference.summary.value("residual", -1.0));
    for (const std::string faults :
         {"kill@step=3", "kill@step=8", "kill@checkpoint=2:after_data_fsync", "nan@step=5"}) {
      const std::string name = tag + "-" + faults.substr(0, faults.find('@')) +
                               std::to_string(std::hash<std::string>{}(faults) % 1000);
      const fs::path output = path_of(name + ".h5");
      const Solve faulty = run(name, args + " --output " + output.string(), true, faults);
      ASSERT_EQ(faulty.exit_code, 0) << faults << "\n" << faulty.output;
      EXPECT_EQ(faulty.summary.value("iterations", -1), reference.summary.value("iterations", -2))
          << solver << " " << faults;
      const std::vector<double> got = solution(output);
      ASSERT_EQ(got.size(), expected.size());
      EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(double)), 0)
          << solver << " with " << faults << ": the solution differs from the uninterrupted run";
      // The history is part of the checkpoint: the resumed run's is the uninterrupted one's.
      EXPECT_EQ(residual_history(output), expected_history) << solver << " with " << faults;
    }
  }
}

// The iteration limit is free to change: a solve that stopped at --max-iters 40 and is run again
// with a larger limit goes on, and ends with the bits of a solve that never stopped.
TEST_F(Poisson, ASolveStoppedAtItsLimitGoesOnWhenTheLimitIsRaised) {
  const std::string args = "--n 48 --solver cg";
  const Solve whole = run("limit-whole", args + " --output " + path_of("limit-whole.h5").string());
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  const Solve stopped = run("limit", args + " --max-iters 40");
  ASSERT_EQ(stopped.exit_code, 0) << stopped.output;
  EXPECT_EQ(stopped.summary.value("status", ""), "max_iterations") << stopped.output;
  const Solve raised =
      run("limit", args + " --max-iters 1000 --output " + path_of("limit-raised.h5").string(),
          false, "", /*fresh=*/false);
  ASSERT_EQ(raised.exit_code, 0) << raised.output;
  EXPECT_NE(raised.output.find("max_iters changed 40 -> 1000"), std::string::npos) << raised.output;
  EXPECT_EQ(raised.summary.value("status", ""), "converged") << raised.output;
  EXPECT_EQ(raised.summary.value("iterations", -1), whole.summary.value("iterations", -2));
  EXPECT_EQ(solution(path_of("limit-raised.h5")), solution(path_of("limit-whole.h5")));
}

// --pc-side left runs left-preconditioned GMRES: it converges, and with Jacobi on the Laplacian
// (a constant diagonal) it is the right-preconditioned iteration up to rounding.
TEST_F(Poisson, GmresPreconditioningSideIsASetting) {
  const std::string args = "--n 32 --solver gmres --precond jacobi --tol 1e-8";
  const Solve right = run("side-right", args);
  const Solve left =
      run("side-left", args + " --pc-side left --output " + path_of("side-left.h5").string());
  ASSERT_EQ(right.exit_code, 0) << right.output;
  ASSERT_EQ(left.exit_code, 0) << left.output;
  EXPECT_EQ(left.summary.value("status", ""), "converged") << left.output;
  EXPECT_NEAR(left.summary.value("iterations", 0.0), right.summary.value("iterations", 0.0), 3.0);
  EXPECT_EQ(static_cast<double>(residual_history(path_of("side-left.h5")).size()),
            left.summary.value("iterations", 0.0) + 1);
  const Solve bad = run("side-bad", args + " --pc-side up");
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_NE(bad.output.find("pc-side"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace tenax
