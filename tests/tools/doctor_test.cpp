// Runs the built `tenax doctor` as a user would and checks what it reports about this machine.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tenax/core/cuda_runtime.hpp"

namespace tenax {
namespace {

struct CliRun {
  int exit_code = -1;
  std::string output;
};

// Runs the tenax binary with `arguments`; `visible_devices` sets CUDA_VISIBLE_DEVICES in the
// child's environment (nullopt leaves it unset); `assignments` ("NAME=value ...") sets more.
CliRun run_tenax(const std::string& arguments,
                 const std::optional<std::string>& visible_devices = std::nullopt,
                 const std::string& assignments = "") {
  const char* saved = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::optional<std::string> previous =
      saved != nullptr ? std::optional<std::string>(saved) : std::nullopt;
  if (visible_devices) {
    setenv("CUDA_VISIBLE_DEVICES", visible_devices->c_str(), 1);
  } else {
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
  CliRun run;
  const std::string command =
      "env " + assignments + " '" + std::string(TENAX_CLI_PATH) + "' " + arguments;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    std::size_t n = 0;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
    const int status = pclose(pipe);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  if (previous) {
    setenv("CUDA_VISIBLE_DEVICES", previous->c_str(), 1);
  } else {
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
  return run;
}

nlohmann::json doctor_json(const std::optional<std::string>& visible_devices = std::nullopt) {
  const CliRun run = run_tenax("doctor --json", visible_devices);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  return nlohmann::json::parse(run.output);
}

const nlohmann::json* find(const nlohmann::json& report, const std::string& name) {
  for (const nlohmann::json& f : report.at("findings")) {
    if (f.at("name") == name) return &f;
  }
  return nullptr;
}

TEST(Doctor, JsonReportHasEveryCheck) {
  const nlohmann::json report = doctor_json();
  ASSERT_TRUE(report.at("findings").is_array());
  for (const char* name : {"build", "cuda-runtime", "cuda-driver", "cuda-devices", "nvml", "cublas",
                           "nccl", "hdf5", "mpi", "eigen", "env:CUDA_VISIBLE_DEVICES",
                           "env:CUDA_HOME", "env:CUDA_PATH", "env:LD_LIBRARY_PATH", "cpu"}) {
    EXPECT_NE(find(report, name), nullptr) << name << "\n" << report.dump(2);
  }
  for (const nlohmann::json& f : report.at("findings")) {
    const std::string status = f.at("status");
    EXPECT_TRUE(status == "OK" || status == "PROBLEM" || status == "INFO" || status == "SKIP")
        << f.dump();
    if (status == "PROBLEM") {
      EXPECT_FALSE(f.at("cause").get<std::string>().empty()) << f.dump();
      EXPECT_FALSE(f.at("fix").get<std::string>().empty()) << f.dump();
    } else {
      EXPECT_FALSE(f.at("detail").get<std::string>().empty()) << f.dump();
    }
  }
  const nlohmann::json& summary = report.at("summary");
  EXPECT_EQ(summary.at("ok").get<int>() + summary.at("problem").get<int>() +
                summary.at("info").get<int>() + summary.at("skip").get<int>(),
            static_cast<int>(report.at("findings").size()));
  EXPECT_FALSE(summary.at("text").get<std::string>().empty());
}

TEST(Doctor, DriverFindingExplainsWhyCudaIsOrIsNotUsed) {
  const nlohmann::json report = doctor_json();
  const nlohmann::json* driver = find(report, "cuda-driver");
  ASSERT_NE(driver, nullptr);
  const cuda::Availability& cuda = cuda::availability();
  if (!cuda::compiled()) {
    EXPECT_NE(driver->dump().find("CUDA not compiled"), std::string::npos) << driver->dump();
    EXPECT_EQ(find(report, "cuda-devices")->at("status"), "SKIP");
    return;
  }
  if (cuda.driver_version == 0) {
    EXPECT_EQ(driver->at("status"), "PROBLEM");
    const std::string cause = driver->at("cause");
    EXPECT_NE(cause.find("no NVIDIA driver was found"), std::string::npos) << cause;
    EXPECT_NE(cause.find("CPU backend will be used"), std::string::npos) << cause;
    EXPECT_NE(driver->at("fix").get<std::string>().find("install an NVIDIA driver"),
              std::string::npos);
    EXPECT_EQ(find(report, "transfer")->at("status"), "SKIP");
    EXPECT_EQ(find(report, "bandwidth")->at("status"), "SKIP");
    EXPECT_EQ(find(report, "gemm")->at("status"), "SKIP");
  } else if (cuda.usable && cuda.driver_version >= cuda.runtime_version) {
    EXPECT_EQ(driver->at("status"), "OK") << driver->dump();
    EXPECT_NE(find(report, "cuda:0"), nullptr);
    EXPECT_NE(find(report, "transfer:cuda:0"), nullptr);
  }
}

TEST(Doctor, ReportsLibraryVersions) {
  const nlohmann::json report = doctor_json();
  for (const char* name : {"hdf5", "eigen"}) {
    const nlohmann::json* f = find(report, name);
    ASSERT_NE(f, nullptr) << name;
    const std::string detail = f->at("detail");
    EXPECT_NE(detail.find_first_of("0123456789"), std::string::npos) << name << ": " << detail;
  }
  const std::string status = find(report, "cublas")->at("status");
  EXPECT_EQ(status, cuda::compiled() ? "OK" : "SKIP");
}

TEST(Doctor, HumanOutputHasOneLinePerFindingAndSaysHowToFixProblems) {
  const CliRun run = run_tenax("doctor");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("summary: "), std::string::npos) << run.output;
  bool any_problem = false;
  std::size_t start = 0;
  while (start < run.output.size()) {
    const std::size_t end = run.output.find('\n', start);
    const std::string line = run.output.substr(start, end - start);
    start = end == std::string::npos ? run.output.size() : end + 1;
    if (line.starts_with("PROBLEM ")) {
      any_problem = true;
      EXPECT_NE(line.find("fix: "), std::string::npos) << line;
    } else {
      EXPECT_TRUE(line.starts_with("OK ") || line.starts_with("INFO ") ||
                  line.starts_with("SKIP ") || line.starts_with("summary: "))
          << line;
    }
  }
  if (!cuda::availability().usable && cuda::compiled()) EXPECT_TRUE(any_problem) << run.output;
}

TEST(Doctor, EmptyCudaVisibleDevicesIsFlagged) {
  const nlohmann::json report = doctor_json(std::string());
  const nlohmann::json* f = find(report, "env:CUDA_VISIBLE_DEVICES");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->at("status"), "PROBLEM") << f->dump();
  EXPECT_NE(f->at("cause").get<std::string>().find("empty"), std::string::npos) << f->dump();
}

TEST(Doctor, InvalidCudaVisibleDevicesIsFlaggedAndValidOnesAreNot) {
  for (const char* bad : {"abc", "0,x,1", "-1", "0,0"}) {
    const nlohmann::json report = doctor_json(std::string(bad));
    EXPECT_EQ(find(report, "env:CUDA_VISIBLE_DEVICES")->at("status"), "PROBLEM") << bad;
  }
  const nlohmann::json report = doctor_json(std::string("0,1"));
  EXPECT_EQ(find(report, "env:CUDA_VISIBLE_DEVICES")->at("status"), "OK");
}

TEST(Doctor, TenaxVariablesAreValidated) {
  const CliRun bad = run_tenax("doctor --json", std::nullopt,
                               "TENAX_NUM_THREADS=zero TENAX_MEMORY_LIMIT=lots "
                               "TENAX_FAULTS=bogus TENAX_SOMETHING_ELSE=1");
  const nlohmann::json report = nlohmann::json::parse(bad.output);
  for (const char* name : {"env:TENAX_NUM_THREADS", "env:TENAX_MEMORY_LIMIT", "env:TENAX_FAULTS"}) {
    ASSERT_NE(find(report, name), nullptr) << name;
    EXPECT_EQ(find(report, name)->at("status"), "PROBLEM") << name;
  }
  ASSERT_NE(find(report, "env:TENAX_SOMETHING_ELSE"), nullptr);
  EXPECT_EQ(find(report, "env:TENAX_SOMETHING_ELSE")->at("status"), "INFO");

  const CliRun good =
      run_tenax("doctor --json", std::nullopt, "TENAX_NUM_THREADS=3 TENAX_MEMORY_LIMIT=2GiB");
  const nlohmann::json fine = nlohmann::json::parse(good.output);
  EXPECT_EQ(find(fine, "env:TENAX_NUM_THREADS")->at("status"), "OK");
  EXPECT_EQ(find(fine, "env:TENAX_MEMORY_LIMIT")->at("status"), "OK");
}

TEST(Doctor, StrictFailsOnlyWhenThereIsAProblem) {
  const nlohmann::json report = doctor_json(std::string());  // guarantees one PROBLEM
  ASSERT_GT(report.at("summary").at("problem").get<int>(), 0);
  const CliRun strict = run_tenax("doctor --strict --json", std::string());
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_TRUE(nlohmann::json::accept(strict.output)) << strict.output;
}

TEST(Doctor, BadUsageExitsNonZero) {
  EXPECT_NE(run_tenax("no-such-command 2>/dev/null").exit_code, 0);
  EXPECT_NE(run_tenax("2>/dev/null").exit_code, 0);
  EXPECT_EQ(run_tenax("--version").exit_code, 0);
}

}  // namespace
}  // namespace tenax
