// `tenax doctor`: checks the machine the way an expert would (build, driver and runtime
// versions, devices, libraries, environment, a transfer and GEMM check) and says what to fix.
// Every check yields findings; a check that fails unexpectedly becomes a PROBLEM finding, so the
// doctor itself never stops early. Works, and explains, on machines without a GPU.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "tenax/core/cuda_runtime.hpp"

namespace CLI {
class App;
}

namespace tenax::tools {

enum class Status { ok, problem, info, skip };

[[nodiscard]] std::string_view to_string(Status status) noexcept;  // "OK", "PROBLEM", ...

// One observation. `detail` says what was found; a PROBLEM also says why it matters (`cause`)
// and what to do (`fix`).
struct Finding {
  std::string name;
  Status status = Status::info;
  std::string detail;
  std::string cause;
  std::string fix;
};

[[nodiscard]] Finding ok(std::string name, std::string detail);
[[nodiscard]] Finding info(std::string name, std::string detail);
[[nodiscard]] Finding skip(std::string name, std::string why);
[[nodiscard]] Finding problem(std::string name, std::string cause, std::string fix,
                              std::string detail = {});

using Findings = std::vector<Finding>;

// What the CUDA checks learned, for the checks that follow them.
struct CudaFacts {
  bool usable = false;
  std::string unusable_reason;  // why no device checks ran (empty when usable)
  std::vector<cuda::DeviceProperties> devices;
};

// The check groups, in the order the doctor runs them. Each appends to `out` and may throw; the
// caller turns an exception into a PROBLEM finding.
void check_build(Findings& out);
[[nodiscard]] CudaFacts check_cuda(Findings& out);
void check_nvml(Findings& out, const CudaFacts& cuda);
void check_device_work(Findings& out, const CudaFacts& cuda);
void check_libraries(Findings& out);
// Compares a matmul on CUDA device `ordinal` with the CPU backend's (one finding).
[[nodiscard]] Finding gemm_check(int ordinal);
void check_environment(Findings& out);

// Runs every check.
[[nodiscard]] Findings run_checks();

[[nodiscard]] std::string summary_line(const Findings& findings);
// One line per finding, then the summary line.
[[nodiscard]] std::string render_human(const Findings& findings);
// One JSON object: {"tenax_version", "findings": [{name, status, detail, cause, fix}],
// "summary": {"ok", "problem", "info", "skip", "text"}}.
[[nodiscard]] std::string render_json(const Findings& findings);

struct DoctorOptions {
  bool json = false;
  bool strict = false;  // exit status 1 when any finding is a PROBLEM
};

// Prints the report to `out`; returns the process exit status.
int run_doctor(const DoctorOptions& options, std::ostream& out);

// Adds the `doctor` subcommand to the CLI; running it stores its exit status in `exit_code`.
void add_doctor_command(CLI::App& app, int& exit_code);

// Formats bytes as "1.5 GiB" and CUDA versions (13000) as "13.0".
[[nodiscard]] std::string format_bytes(double bytes);
[[nodiscard]] std::string format_cuda_version(int version);

}  // namespace tenax::tools
