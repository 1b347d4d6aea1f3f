// Runs the built `tenax doctor` as a user would and checks what it reports about this machine.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tenax/core/cuda_runtime.hpp"
#include "tools/command_output.hpp"

namespace tenax {
namespace {

using CliRun = testing::CommandOutput;

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
  const CliRun run = testing::run_command("env " + assignments + " '" +
                                          std::string(TENAX_CLI_PATH) + "' " + arguments);
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
  for (const char* name : {"build",
                           "cuda-runtime",
                           "cuda-driver",
                           "cuda-devices",
                           "nvml",
                           "cublas",
                           "nccl",
                           "hdf5",
                           "mpi",
                           "eigen",
                           "env:CUDA_VISIBLE_DEVICES",
                           "env:CUDA_HOME",
                           "env:CUDA_PATH",
                           "env:LD_LIBRARY_PATH",
                           "cpu",
                           "huge-pages",
                           "launch",
                           "launch:device",
                           "peer-access",
                           "placement"}) {
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

// cuBLAS is loaded at run time: a library that cannot be loaded is a PROBLEM naming the file
// tried and the fix, and the doctor itself still runs (nothing links cuBLAS).
TEST(Doctor, ACublasThatCannotBeLoadedIsAProblemWithItsPathAndFix) {
  if (!cuda::compiled()) GTEST_SKIP() << "CUDA not compiled into this build: cuBLAS is not used";
  const CliRun run =
      run_tenax("doctor --json", std::nullopt, "TENAX_CUBLAS_LIBRARY=/nonexistent/libcublas.so");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json report = nlohmann::json::parse(run.output);
  const nlohmann::json* cublas = find(report, "cublas");
  ASSERT_NE(cublas, nullptr) << run.output;
  EXPECT_EQ(cublas->at("status"), "PROBLEM") << cublas->dump();
  EXPECT_NE(cublas->at("cause").get<std::string>().find("/nonexistent/libcublas.so"),
            std::string::npos)
      << cublas->dump();
  EXPECT_NE(cublas->at("fix").get<std::string>().find("TENAX_CUBLAS_LIBRARY"), std::string::npos)
      << cublas->dump();
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

TEST(Doctor, SettingsEveryJobWouldRefuseAreProblemsWithTheJobsOwnMessage) {
  // Each makes every job refuse to start; the doctor says so (and --strict fails) first.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"TENAX_CPU_SIMD=avx9000", "env:TENAX_CPU_SIMD"},
      {"TENAX_CSR_COMPACT=maybe", "env:TENAX_CSR_COMPACT"},
      {"TENAX_MEMORY_LIMIT=1", "host-pool"}};
  for (const auto& [assignment, name] : cases) {
    SCOPED_TRACE(assignment);
    const CliRun run = run_tenax("doctor --strict --json", std::nullopt, assignment);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    const nlohmann::json report = nlohmann::json::parse(run.output);
    ASSERT_NE(find(report, name), nullptr) << run.output;
    EXPECT_EQ(find(report, name)->at("status"), "PROBLEM") << run.output;
  }
  const CliRun fine =
      run_tenax("doctor --json", std::nullopt, "TENAX_CPU_SIMD=baseline TENAX_CSR_COMPACT=0");
  const nlohmann::json report = nlohmann::json::parse(fine.output);
  EXPECT_EQ(find(report, "env:TENAX_CPU_SIMD")->at("status"), "OK");
  EXPECT_EQ(find(report, "env:TENAX_CSR_COMPACT")->at("status"), "OK");
  EXPECT_EQ(find(report, "host-pool")->at("status"), "OK");
}

TEST(Doctor, StrictFailsOnlyWhenThereIsAProblem) {
  const nlohmann::json report = doctor_json(std::string());  // guarantees one PROBLEM
  ASSERT_GT(report.at("summary").at("problem").get<int>(), 0);
  const CliRun strict = run_tenax("doctor --strict --json", std::string());
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_TRUE(nlohmann::json::accept(strict.output)) << strict.output;
}

// ---- Multi-GPU and multi-rank checks ----

// `env` options that clear every launcher variable the doctor reads, so that a test run under
// mpirun or srun sees only the launch it fakes.
std::string without_launcher() {
  std::string text;
  for (const char* name : {"OMPI_COMM_WORLD_SIZE",
                           "OMPI_COMM_WORLD_RANK",
                           "OMPI_COMM_WORLD_LOCAL_RANK",
                           "OMPI_COMM_WORLD_LOCAL_SIZE",
                           "MV2_COMM_WORLD_SIZE",
                           "MV2_COMM_WORLD_RANK",
                           "MV2_COMM_WORLD_LOCAL_RANK",
                           "MV2_COMM_WORLD_LOCAL_SIZE",
                           "PMI_SIZE",
                           "PMI_RANK",
                           "PMIX_RANK",
                           "MPI_LOCALRANKID",
                           "MPI_LOCALNRANKS",
                           "SLURM_STEP_NUM_TASKS",
                           "SLURM_NTASKS",
                           "SLURM_PROCID",
                           "SLURM_LOCALID",
                           "SLURM_JOB_ID",
                           "SLURM_STEP_GPUS",
                           "SLURM_JOB_GPUS",
                           "SLURM_GPUS_ON_NODE"}) {
    text += std::string("-u ") + name + " ";
  }
  return text;
}

// The doctor's JSON report under a faked launch (`assignments`: "NAME=value ...").
nlohmann::json launched_doctor(const std::string& assignments,
                               const std::optional<std::string>& visible_devices = std::nullopt) {
  const CliRun run = run_tenax("doctor --json", visible_devices, without_launcher() + assignments);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  return nlohmann::json::parse(run.output);
}

std::string text_of(const nlohmann::json* f) {
  if (f == nullptr) return "(missing)";
  return f->at("detail").get<std::string>() + " | " + f->at("cause").get<std::string>() + " | " +
         f->at("fix").get<std::string>();
}

bool contains(const nlohmann::json* f, const std::string& part) {
  return text_of(f).find(part) != std::string::npos;
}

constexpr const char* kOpenMpiRank1Of2 =
    "OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_LOCAL_RANK=1 "
    "OMPI_COMM_WORLD_LOCAL_SIZE=2 ";

TEST(DoctorLaunch, WithoutALauncherItIsOneProcessAndSaysHowToStartMore) {
  const nlohmann::json report = launched_doctor("");
  const nlohmann::json* launch = find(report, "launch");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->at("status"), "INFO") << launch->dump();
  for (const char* part : {"single process", "mpirun -np N", "srun -n N", "tenax run -- mpirun"}) {
    EXPECT_TRUE(contains(launch, part)) << part << ": " << launch->dump();
  }
  EXPECT_EQ(find(report, "launch:device")->at("status"), "INFO");
  // A Slurm batch shell is not a parallel step.
  const nlohmann::json batch = launched_doctor("SLURM_JOB_ID=77 SLURM_PROCID=0 SLURM_NTASKS=1 ");
  EXPECT_EQ(find(batch, "launch")->at("status"), "INFO");
  EXPECT_TRUE(contains(find(batch, "launch"), "inside Slurm job 77")) << batch.dump(2);
}

TEST(DoctorLaunch, OpenMpiLaunchIsReportedWithRanksAndTheDeviceOfTheRank) {
  const nlohmann::json report = launched_doctor(
      "OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_LOCAL_RANK=0 "
      "OMPI_COMM_WORLD_LOCAL_SIZE=1 ",
      std::string("0"));
  const nlohmann::json* launch = find(report, "launch");
  EXPECT_EQ(launch->at("status"), "OK") << launch->dump();
  EXPECT_TRUE(contains(launch, "Open MPI")) << launch->dump();
  EXPECT_TRUE(contains(launch, "rank 2 of 4, local rank 0 of 1 on this host")) << launch->dump();
  const nlohmann::json* device = find(report, "launch:device");
  ASSERT_NE(device, nullptr);
  if (!cuda::compiled()) {
    EXPECT_EQ(device->at("status"), "SKIP") << device->dump();
    EXPECT_TRUE(contains(device, "CUDA not compiled")) << device->dump();
    return;
  }
  EXPECT_NE(device->at("status"), "PROBLEM") << device->dump();
  EXPECT_TRUE(contains(device, "cuda:0")) << device->dump();
  EXPECT_TRUE(contains(device, "--device cuda or auto")) << device->dump();
}

TEST(DoctorLaunch, HydraAndPmixLaunchesAreReported) {
  const nlohmann::json hydra =
      launched_doctor("PMI_SIZE=3 PMI_RANK=2 MPI_LOCALRANKID=0 MPI_LOCALNRANKS=1 ");
  EXPECT_EQ(find(hydra, "launch")->at("status"), "OK") << hydra.dump(2);
  EXPECT_TRUE(contains(find(hydra, "launch"), "PMI (mpiexec): rank 2 of 3, local rank 0 of 1"))
      << find(hydra, "launch")->dump();
  // PMIx gives the rank only: MPI computes the local rank when the job starts.
  const nlohmann::json pmix = launched_doctor("PMIX_RANK=3 ");
  EXPECT_EQ(find(pmix, "launch")->at("status"), "OK");
  if (cuda::compiled()) {
    EXPECT_TRUE(contains(find(pmix, "launch:device"), "gives no local rank"))
        << find(pmix, "launch:device")->dump();
  }
}

TEST(DoctorLaunch, SlurmStepIsReportedWithItsGpus) {
  const nlohmann::json report = launched_doctor(
      "SLURM_JOB_ID=9 SLURM_PROCID=2 SLURM_NTASKS=4 SLURM_STEP_NUM_TASKS=4 SLURM_LOCALID=0 "
      "SLURM_STEP_GPUS=0,1 SLURM_GPUS_ON_NODE=2 ");
  const nlohmann::json* launch = find(report, "launch");
  EXPECT_EQ(launch->at("status"), "OK") << launch->dump();
  EXPECT_TRUE(contains(launch, "Slurm (srun): rank 2 of 4, local rank 0")) << launch->dump();
  const nlohmann::json* device = find(report, "launch:device");
  if (cuda::compiled()) {
    EXPECT_NE(device->at("status"), "PROBLEM") << device->dump();
    EXPECT_TRUE(contains(device, "SLURM_STEP_GPUS=0,1")) << device->dump();
    EXPECT_TRUE(contains(device, "SLURM_GPUS_ON_NODE=2")) << device->dump();
  } else {
    EXPECT_EQ(device->at("status"), "SKIP");
  }
}

TEST(DoctorLaunch, LocalRankWithoutAVisibleGpuIsRefusedAsTheRuntimeWould) {
  // One GPU listed per rank while tenax picks cuda:<local rank>: local rank 1 has no cuda:1.
  const nlohmann::json report = launched_doctor(kOpenMpiRank1Of2, std::string("1"));
  const nlohmann::json* device = find(report, "launch:device");
  ASSERT_NE(device, nullptr);
  if (!cuda::compiled()) {
    EXPECT_EQ(device->at("status"), "SKIP") << device->dump();
    return;
  }
  EXPECT_EQ(device->at("status"), "PROBLEM") << device->dump();
  for (const char* part : {"local rank 1", "--comm nccl refuses this rank",
                           "rank 1 is local rank 1 of its host, which has 1 visible GPU(s)",
                           "one GPU of its own", "--gpu-bind=none"}) {
    EXPECT_TRUE(contains(device, part)) << part << ": " << device->dump();
  }
  // More ranks on the host than GPUs: a rank that is fine itself still says so.
  const nlohmann::json crowded = launched_doctor(
      "OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_LOCAL_RANK=0 "
      "OMPI_COMM_WORLD_LOCAL_SIZE=4 ",
      std::string("0,1"));
  const nlohmann::json* many = find(crowded, "launch:device");
  EXPECT_EQ(many->at("status"), "PROBLEM") << many->dump();
  EXPECT_TRUE(contains(many, "4 rank(s) run on this host")) << many->dump();
  EXPECT_TRUE(contains(many, "--npernode")) << many->dump();
}

TEST(DoctorLaunch, EmptyOrInvalidVisibleDevicesUnderALauncherLeaveTheRankWithoutAGpu) {
  const nlohmann::json empty = launched_doctor(kOpenMpiRank1Of2, std::string());
  EXPECT_EQ(find(empty, "env:CUDA_VISIBLE_DEVICES")->at("status"), "PROBLEM");
  const nlohmann::json* device = find(empty, "launch:device");
  if (cuda::compiled()) {
    EXPECT_EQ(device->at("status"), "PROBLEM") << device->dump();
    EXPECT_TRUE(contains(device, "sees no GPU")) << device->dump();
    EXPECT_TRUE(contains(device, "which sees no CUDA device")) << device->dump();
  }
  for (const char* bad : {"abc", "0,x,1"}) {
    const nlohmann::json report = launched_doctor(kOpenMpiRank1Of2, std::string(bad));
    EXPECT_EQ(find(report, "env:CUDA_VISIBLE_DEVICES")->at("status"), "PROBLEM") << bad;
    const nlohmann::json* d = find(report, "launch:device");
    if (!cuda::compiled()) continue;
    EXPECT_EQ(d->at("status"), "PROBLEM") << bad << ": " << d->dump();
    EXPECT_TRUE(contains(d, "correct CUDA_VISIBLE_DEVICES")) << bad << ": " << d->dump();
  }
}

TEST(DoctorLaunch, HostileLauncherValuesAreDiagnosedNotMisparsed) {
  const struct {
    const char* value;
    const char* diagnosis;
  } cases[] = {{"abc", "'abc' is not a whole number"},
               {"-1", "'-1' is negative"},
               {"99999999999999999999", "'99999999999999999999' is too large"},
               {"1x", "'1x' is not a whole number"},
               {"", "'' is empty"}};
  for (const auto& c : cases) {
    const nlohmann::json report = launched_doctor(
        std::string("OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_LOCAL_RANK=") +
        c.value + " ");
    const nlohmann::json* launch = find(report, "launch");
    EXPECT_EQ(launch->at("status"), "PROBLEM") << c.value << ": " << launch->dump();
    EXPECT_TRUE(contains(launch, std::string("OMPI_COMM_WORLD_LOCAL_RANK=") + c.diagnosis))
        << launch->dump();
    EXPECT_FALSE(launch->at("fix").get<std::string>().empty());
    if (cuda::compiled()) {
      EXPECT_EQ(find(report, "launch:device")->at("status"), "SKIP")
          << find(report, "launch:device")->dump();
    }
  }
  // Contradictions between valid numbers.
  const nlohmann::json wrong = launched_doctor(
      "OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=5 OMPI_COMM_WORLD_LOCAL_RANK=3 "
      "OMPI_COMM_WORLD_LOCAL_SIZE=2 ");
  const nlohmann::json* launch = find(wrong, "launch");
  EXPECT_EQ(launch->at("status"), "PROBLEM");
  EXPECT_TRUE(contains(launch, "OMPI_COMM_WORLD_RANK='5' is not below OMPI_COMM_WORLD_SIZE='2'"))
      << launch->dump();
  EXPECT_TRUE(contains(launch, "OMPI_COMM_WORLD_LOCAL_RANK='3' is not below")) << launch->dump();
  // An unreadable Slurm task count: tenax cannot tell it is a launch, and says so.
  const nlohmann::json slurm =
      launched_doctor("SLURM_PROCID=0 SLURM_NTASKS=99999999999999999999 SLURM_LOCALID=-1 ");
  const nlohmann::json* s = find(slurm, "launch");
  EXPECT_EQ(s->at("status"), "PROBLEM") << s->dump();
  EXPECT_TRUE(contains(s, "SLURM_NTASKS='99999999999999999999' is too large")) << s->dump();
  EXPECT_TRUE(contains(s, "SLURM_LOCALID='-1' is negative")) << s->dump();
  EXPECT_TRUE(contains(s, "single rank")) << s->dump();
}

TEST(DoctorLaunch, AValueWithANewlineKeepsOneLinePerFinding) {
  const CliRun run =
      run_tenax("doctor", std::string("0\n1"),
                without_launcher() +
                    "OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 "
                    "OMPI_COMM_WORLD_LOCAL_RANK='1\nPROBLEM fake' NCCL_ALGO='a\nb' ");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(
      run.output.find("OMPI_COMM_WORLD_LOCAL_RANK='1\\x0aPROBLEM fake' is not a whole number"),
      std::string::npos)
      << run.output;
  std::size_t start = 0;
  while (start < run.output.size()) {
    const std::size_t end = run.output.find('\n', start);
    const std::string line = run.output.substr(start, end - start);
    start = end == std::string::npos ? run.output.size() : end + 1;
    EXPECT_TRUE(line.starts_with("OK ") || line.starts_with("INFO ") || line.starts_with("SKIP ") ||
                line.starts_with("PROBLEM ") || line.starts_with("summary: "))
        << line;
    EXPECT_FALSE(line.starts_with("PROBLEM fake")) << line;
  }
}

TEST(DoctorNccl, ReportsTheVersionBuiltAgainstAndTheOneLoaded) {
  const nlohmann::json report = launched_doctor("");
  const nlohmann::json* nccl = find(report, "nccl");
  ASSERT_NE(nccl, nullptr);
  if (!cuda::compiled()) {
    EXPECT_EQ(nccl->at("status"), "SKIP") << nccl->dump();
    EXPECT_TRUE(contains(nccl, "NCCL not compiled")) << nccl->dump();
    EXPECT_TRUE(contains(nccl, "-DTENAX_WITH_CUDA=ON")) << nccl->dump();
    EXPECT_EQ(find(report, "env:NCCL_DEBUG"), nullptr);
    return;
  }
  // The CUDA build links NCCL through the runtime, so a library is loaded: OK when it matches
  // the headers, PROBLEM (with cause and fix) when it does not.
  const std::string status = nccl->at("status");
  EXPECT_TRUE(status == "OK" || status == "PROBLEM") << nccl->dump();
  EXPECT_TRUE(contains(nccl, "built with")) << nccl->dump();
  EXPECT_TRUE(contains(nccl, "libnccl")) << nccl->dump();
}

TEST(DoctorNccl, NcclVariablesAreReportedAndTheDisablingOnesFlagged) {
  const nlohmann::json quiet = launched_doctor("-u NCCL_DEBUG ");
  const nlohmann::json loud = launched_doctor(
      "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_DEBUG=warn "
      "NCCL_SOCKET_IFNAME=eth0 ");
  if (!cuda::compiled()) {
    EXPECT_EQ(find(loud, "env:NCCL_P2P_DISABLE"), nullptr);
    return;
  }
  EXPECT_TRUE(contains(find(quiet, "env:NCCL_DEBUG"), "not set")) << quiet.dump(2);
  EXPECT_TRUE(contains(find(quiet, "env:NCCL_DEBUG"), "NCCL_DEBUG=WARN"));
  for (const char* name : {"env:NCCL_P2P_DISABLE", "env:NCCL_SHM_DISABLE"}) {
    const nlohmann::json* f = find(loud, name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->at("status"), "PROBLEM") << f->dump();
    EXPECT_TRUE(contains(f, "unset")) << f->dump();
  }
  EXPECT_TRUE(contains(find(loud, "env:NCCL_P2P_DISABLE"), "NVLink or PCIe"));
  EXPECT_EQ(find(loud, "env:NCCL_IB_DISABLE")->at("status"), "INFO");
  EXPECT_TRUE(contains(find(loud, "env:NCCL_IB_DISABLE"), "IP sockets"));
  EXPECT_TRUE(contains(find(loud, "env:NCCL_DEBUG"), "explicit error message"));
  EXPECT_EQ(find(loud, "env:NCCL_SOCKET_IFNAME")->at("detail"), "eth0");
  const nlohmann::json off = launched_doctor("NCCL_P2P_DISABLE=0 NCCL_DEBUG=loud ");
  EXPECT_EQ(find(off, "env:NCCL_P2P_DISABLE")->at("status"), "INFO");
  EXPECT_TRUE(contains(find(off, "env:NCCL_DEBUG"), "not one of NCCL's levels"));
}

TEST(DoctorPeerAccess, ExplainsWhyItCannotBeCheckedOrShowsTheMatrix) {
  const nlohmann::json report = launched_doctor("");
  const nlohmann::json* peer = find(report, "peer-access");
  ASSERT_NE(peer, nullptr);
  const cuda::Availability& cuda = cuda::availability();
  if (!cuda::compiled()) {
    EXPECT_EQ(peer->at("status"), "SKIP");
    EXPECT_TRUE(contains(peer, "CUDA not compiled")) << peer->dump();
  } else if (cuda.driver_version == 0) {
    EXPECT_EQ(peer->at("status"), "SKIP") << peer->dump();
    EXPECT_TRUE(contains(peer, "no NVIDIA driver was found")) << peer->dump();
    EXPECT_TRUE(contains(peer, "see cuda-driver")) << peer->dump();
  } else if (cuda.usable && cuda.device_count >= 2) {
    const std::string status = peer->at("status");
    EXPECT_TRUE(status == "OK" || status == "INFO") << peer->dump();
    EXPECT_TRUE(contains(peer, "cudaDeviceCanAccessPeer")) << peer->dump();
    EXPECT_TRUE(contains(peer, "cuda:1 [")) << peer->dump();
  } else {
    EXPECT_EQ(peer->at("status"), "SKIP") << peer->dump();
  }
}

TEST(DoctorPlacement, ExplainsTheSameDeviceRuleWithTenaxsOwnMessage) {
  const nlohmann::json report = launched_doctor("");
  const nlohmann::json* placement = find(report, "placement");
  ASSERT_NE(placement, nullptr);
  EXPECT_EQ(placement->at("status"), "INFO");
  EXPECT_TRUE(contains(placement, "so that both are on the same device")) << placement->dump();
  EXPECT_TRUE(contains(placement, "Tensor::to(device)")) << placement->dump();
}

TEST(Doctor, TransparentHugePagesModeIsReported) {
  // The finding follows the kernel's active mode, the bracketed word of the sysfs file.
  std::ifstream sysfs("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(sysfs, text);
  const nlohmann::json report = doctor_json();
  const nlohmann::json* f = find(report, "huge-pages");
  ASSERT_NE(f, nullptr) << report.dump(2);
  const std::string detail = f->at("detail");
  if (!sysfs) {
    EXPECT_EQ(f->at("status"), "INFO");
    EXPECT_NE(detail.find("base pages"), std::string::npos) << detail;
  } else if (text.find("[always]") != std::string::npos ||
             text.find("[madvise]") != std::string::npos) {
    EXPECT_EQ(f->at("status"), "OK") << detail;
    EXPECT_NE(detail.find("2 MiB"), std::string::npos) << detail;
  } else {
    EXPECT_EQ(f->at("status"), "INFO") << detail;
    EXPECT_NE(detail.find("echo madvise"), std::string::npos) << detail;
  }
}

TEST(Doctor, BadUsageExitsNonZero) {
  EXPECT_NE(run_tenax("no-such-command 2>/dev/null").exit_code, 0);
  EXPECT_NE(run_tenax("2>/dev/null").exit_code, 0);
  EXPECT_EQ(run_tenax("--version").exit_code, 0);
}

}  // namespace
}  // namespace tenax
