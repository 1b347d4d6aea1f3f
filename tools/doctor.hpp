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
// Multi-GPU and multi-rank: the NCCL library and NCCL_* variables, the launch (launcher, ranks,
// the GPU this rank would use), peer access between the visible GPUs, and how tenax keeps the
// operands of one computation on one device.
void check_nccl(Findings& out);
void check_multi_gpu(Findings& out, const CudaFacts& cuda);

// CUDA_VISIBLE_DEVICES as CUDA reads it: entries separated by commas, each an ordinal or a
// GPU-/MIG- UUID; CUDA stops at the first invalid entry.
struct VisibleDevices {
  bool set = false;
  bool blank = false;  // set to an empty (or all-space) value: no GPU is visible
  std::string text;
  int entries = 0;              // valid entries before the first invalid or repeated one
  std::string invalid_entry;    // the first invalid entry ("" when none)
  std::string duplicate_entry;  // the first repeated entry ("" when none)
};
[[nodiscard]] VisibleDevices read_visible_devices();

// The "huge-pages" finding from the text of /sys/kernel/mm/transparent_hugepage/enabled (the
// active mode in brackets, e.g. "always [madvise] never"); `readable` false when the file is not
// there. tenax's host pool advises huge pages for its large blocks, which the modes always and
// madvise honour.
[[nodiscard]] Finding transparent_huge_pages(bool readable, std::string_view sysfs_text);

// A library loaded at run time against the headers tenax was built with, from version codes
// (major, minor and patch in decimal digits: M*10000 + m*100 + p, as cuBLAS and NCCL >= 2.9 count
// them): another major version, or an older minor release, is a problem (what the headers
// declare may be missing); an older patch release of the same minor keeps its interface and is
// fine (said in the detail), as is anything newer. `where` (" from PATH" or "") ends the texts.
[[nodiscard]] Finding library_version_finding(const std::string& name, const std::string& library,
                                              int loaded, int built, const std::string& where);

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
// `text` with control characters written as \xNN, so that a hostile environment value cannot
// break the one-line-per-finding report.
[[nodiscard]] std::string printable(std::string_view text);

}  // namespace tenax::tools
