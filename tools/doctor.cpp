#include "doctor.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <utility>

#include "tenax/core/error.hpp"

#ifndef TENAX_VERSION_STRING
#define TENAX_VERSION_STRING "unknown"
#endif

namespace tenax::tools {

std::string_view to_string(Status status) noexcept {
  switch (status) {
    case Status::ok:
      return "OK";
    case Status::problem:
      return "PROBLEM";
    case Status::info:
      return "INFO";
    case Status::skip:
      return "SKIP";
  }
  return "INFO";
}

Finding ok(std::string name, std::string detail) {
  return {std::move(name), Status::ok, std::move(detail), {}, {}};
}

Finding info(std::string name, std::string detail) {
  return {std::move(name), Status::info, std::move(detail), {}, {}};
}

Finding skip(std::string name, std::string why) {
  return {std::move(name), Status::skip, std::move(why), {}, {}};
}

Finding problem(std::string name, std::string cause, std::string fix, std::string detail) {
  return {std::move(name), Status::problem, std::move(detail), std::move(cause), std::move(fix)};
}

std::string format_bytes(double bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

std::string format_cuda_version(int version) {
  if (version <= 0) return "none";
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

// Runs one check group; an unexpected failure becomes a PROBLEM finding instead of ending the
// report, because the rest of the report is what the user needs to fix it.
template <typename Check>
void guarded(Findings& out, std::string_view group, Check&& check) {
  try {
    std::forward<Check>(check)();
  } catch (const Error& e) {
    out.push_back(problem(fmt::format("doctor:{}", group),
                          fmt::format("the {} check failed: {}", group, e.cause()), e.fix()));
  } catch (const std::exception& e) {
    out.push_back(problem(fmt::format("doctor:{}", group),
                          fmt::format("the {} check failed: {}", group, e.what()),
                          "rerun `tenax doctor --json` and report its output"));
  }
}

struct Counts {
  int ok = 0;
  int problem = 0;
  int info = 0;
  int skip = 0;
};

Counts count(const Findings& findings) {
  Counts c;
  for (const Finding& f : findings) {
    switch (f.status) {
      case Status::ok:
        ++c.ok;
        break;
      case Status::problem:
        ++c.problem;
        break;
      case Status::info:
        ++c.info;
        break;
      case Status::skip:
        ++c.skip;
        break;
    }
  }
  return c;
}

std::string backend_sentence() {
  const cuda::Availability& cuda = cuda::availability();
  if (cuda.usable) {
    return fmt::format("jobs with --device auto run on cuda:0 ({} CUDA device(s) usable)",
                       cuda.device_count);
  }
  return cuda::compiled() ? "jobs with --device auto run on the CPU backend (CUDA is not usable)"
                          : "jobs run on the CPU backend (CUDA not compiled)";
}

}  // namespace

Findings run_checks() {
  Findings out;
  CudaFacts cuda;
  guarded(out, "build", [&] { check_build(out); });
  guarded(out, "cuda", [&] { cuda = check_cuda(out); });
  guarded(out, "nvml", [&] { check_nvml(out, cuda); });
  guarded(out, "device-work", [&] { check_device_work(out, cuda); });
  guarded(out, "libraries", [&] { check_libraries(out); });
  guarded(out, "nccl", [&] { check_nccl(out); });
  guarded(out, "environment", [&] { check_environment(out); });
  guarded(out, "multi-gpu", [&] { check_multi_gpu(out, cuda); });
  return out;
}

std::string summary_line(const Findings& findings) {
  const Counts c = count(findings);
  std::string names;
  for (const Finding& f : findings) {
    if (f.status != Status::problem) continue;
    names += names.empty() ? " (" : ", ";
    names += f.name;
  }
  if (!names.empty()) names += ")";
  return fmt::format("{} checks: {} problem(s){}, {} ok, {} info, {} skipped; {}", findings.size(),
                     c.problem, names, c.ok, c.info, c.skip, backend_sentence());
}

std::string render_human(const Findings& findings) {
  std::string text;
  for (const Finding& f : findings) {
    const std::string_view status = to_string(f.status);
    if (f.status == Status::problem) {
      text += fmt::format("{:<7} {}: {} \u2014 fix: {}\n", status, f.name, f.cause, f.fix);
    } else {
      text += fmt::format("{:<7} {}: {}\n", status, f.name, f.detail);
    }
  }
  text += "summary: " + summary_line(findings) + "\n";
  return text;
}

std::string render_json(const Findings& findings) {
  nlohmann::json report;
  report["tenax_version"] = TENAX_VERSION_STRING;
  nlohmann::json list = nlohmann::json::array();
  for (const Finding& f : findings) {
    list.push_back({{"name", f.name},
                    {"status", std::string(to_string(f.status))},
                    {"detail", f.detail},
                    {"cause", f.cause},
                    {"fix", f.fix}});
  }
  report["findings"] = std::move(list);
  const Counts c = count(findings);
  report["summary"] = {{"ok", c.ok},
                       {"problem", c.problem},
                       {"info", c.info},
                       {"skip", c.skip},
                       {"cuda_usable", cuda::availability().usable},
                       {"text", summary_line(findings)}};
  // Replace invalid UTF-8 (from environment values) rather than failing to print the report.
  return report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

int run_doctor(const DoctorOptions& options, std::ostream& out) {
  const Findings findings = run_checks();
  out << (options.json ? render_json(findings) : render_human(findings));
  out.flush();
  if (!options.strict) return 0;
  return count(findings).problem > 0 ? 1 : 0;
}

void add_doctor_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<DoctorOptions>();
  CLI::App* doctor = app.add_subcommand(
      "doctor",
      "Check drivers, devices, libraries and environment, and say what to fix. Works without a "
      "GPU.");
  doctor->add_flag("--json", options->json, "Print one JSON object instead of text");
  doctor->add_flag("--strict", options->strict, "Exit with status 1 when any check is a PROBLEM");
  doctor->callback([options, &exit_code] { exit_code = run_doctor(*options, std::cout); });
}

}  // namespace tenax::tools
