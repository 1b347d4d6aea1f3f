// Doctor checks of the build, the CUDA runtime and driver, the devices, and work on them.
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "doctor.hpp"
#include "doctor_probes.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"

#ifndef TENAX_VERSION_STRING
#define TENAX_VERSION_STRING "unknown"
#endif
#ifndef TENAX_BUILD_TYPE
#define TENAX_BUILD_TYPE "unknown"
#endif
#ifndef TENAX_CUDA_ARCHITECTURES_STRING
#define TENAX_CUDA_ARCHITECTURES_STRING ""
#endif

namespace tenax::tools {

namespace {

std::string compiler() {
#if defined(__clang__)
  return "Clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "unknown compiler";
#endif
}

// Whether code built for the CMake CUDA architecture list `archs` ("80;90", "90-real",
// "90a", "all", ...) can run on a device of compute capability major.minor. Plain and
// "-virtual" entries carry PTX, which the driver compiles for any newer device; "-real" entries
// are machine code that runs only within the same major version; "a" variants only on exactly
// that capability.
bool runs_on(std::string_view archs, int major, int minor) {
  const int device = major * 10 + minor;
  bool any = false;
  while (!archs.empty()) {
    const std::size_t cut = archs.find_first_of(";,");
    std::string_view entry = archs.substr(0, cut);
    archs = cut == std::string_view::npos ? std::string_view{} : archs.substr(cut + 1);
    if (entry.empty()) continue;
    if (entry.starts_with("all") || entry == "native") return true;
    any = true;
    bool real_only = false;
    if (entry.ends_with("-real")) {
      real_only = true;
      entry.remove_suffix(5);
    } else if (entry.ends_with("-virtual")) {
      entry.remove_suffix(8);
    }
    const bool exact = entry.ends_with('a');
    const bool family = entry.ends_with('f');
    if (exact || family) entry.remove_suffix(1);
    const std::optional<int> parsed = parse_whole<int>(entry);
    if (!parsed) return true;  // unknown: trust it
    const int arch = *parsed;
    if (exact) {
      if (arch == device) return true;
    } else if (real_only || family) {
      if (arch / 10 == major && arch <= device) return true;
    } else if (arch <= device) {
      return true;
    }
  }
  return !any;
}

std::string architectures_text() {
  std::string text = TENAX_CUDA_ARCHITECTURES_STRING;
  return text.empty() ? "default" : text;
}

void check_without_cuda(Findings& out) {
  out.push_back(skip("cuda-runtime", "CUDA not compiled into this build: the CPU backend is used"));
  // A driver on a machine whose tenax lacks CUDA means GPUs sit idle: worth saying.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver != nullptr) {
    dlclose(driver);
    out.push_back(problem(
        "cuda-driver",
        "CUDA not compiled into this build, but an NVIDIA driver is installed (libcuda.so.1 "
        "loads): every job runs on the CPU backend and the GPUs stay idle",
        "rebuild tenax with -DTENAX_WITH_CUDA=ON (cmake --preset release) on a machine with the "
        "CUDA toolkit, cuBLAS and NCCL"));
  } else {
    out.push_back(skip("cuda-driver",
                       "CUDA not compiled into this build and no NVIDIA driver found: the CPU "
                       "backend is used"));
  }
  out.push_back(skip("cuda-devices", "CUDA not compiled into this build"));
}

void check_runtime(Findings& out) {
  const LibraryProbe runtime = probe_cuda_runtime();
  const std::string where = runtime.path.empty() ? "" : " from " + runtime.path;
  if (runtime.version_code < runtime.header_version_code) {
    out.push_back(problem(
        "cuda-runtime",
        fmt::format("tenax was built with CUDA {} headers but loaded the older CUDA {} runtime{}",
                    runtime.header_version, runtime.version, where),
        "put the CUDA runtime tenax was built with first on LD_LIBRARY_PATH, or rebuild tenax "
        "against the installed toolkit"));
    return;
  }
  out.push_back(ok("cuda-runtime", fmt::format("CUDA runtime {} (built with {} headers){}",
                                               runtime.version, runtime.header_version, where)));
}

void check_driver(Findings& out, const cuda::Availability& a) {
  const std::string runtime = format_cuda_version(a.runtime_version);
  const std::string driver = format_cuda_version(a.driver_version);
  if (a.driver_version == 0) {
    out.push_back(problem(
        "cuda-driver",
        fmt::format("no NVIDIA driver was found (libcuda.so.1 cannot be loaded, {}): CUDA cannot "
                    "be used and the CPU backend will be used",
                    a.status_name),
        fmt::format("install an NVIDIA driver that supports CUDA {} or newer (nvidia-smi then "
                    "shows it), or run on the CPU with --device cpu if this machine has no GPU",
                    runtime),
        "driver: none"));
    return;
  }
  if (a.driver_version / 1000 < a.runtime_version / 1000) {
    out.push_back(problem(
        "cuda-driver",
        fmt::format("the NVIDIA driver supports CUDA up to {} but tenax uses the CUDA {} runtime; "
                    "the driver must support at least the runtime's version{}",
                    driver, runtime,
                    a.usable ? "" : ", so CUDA cannot be used and the CPU backend will be used"),
        fmt::format("upgrade the NVIDIA driver to one that supports CUDA {}, or rebuild tenax with "
                    "a CUDA {} toolkit",
                    runtime, driver)));
    return;
  }
  if (a.driver_version < a.runtime_version) {
    out.push_back(problem(
        "cuda-driver",
        fmt::format("the NVIDIA driver supports CUDA {}, older than the CUDA {} runtime: this "
                    "works only through minor-version compatibility, where kernels that need PTX "
                    "compilation fail with cudaErrorUnsupportedPtxVersion",
                    driver, runtime),
        fmt::format("upgrade the NVIDIA driver to one that supports CUDA {}", runtime)));
    return;
  }
  out.push_back(ok("cuda-driver", fmt::format("driver supports CUDA {} >= runtime {}: compatible",
                                              driver, runtime)));
}

std::string describe(const cuda::DeviceProperties& p) {
  return fmt::format("{}, compute capability {}.{}, {} SMs, {} total, {} free, PCI {}", p.name,
                     p.compute_major, p.compute_minor, p.multiprocessor_count,
                     format_bytes(static_cast<double>(p.total_memory)),
                     format_bytes(static_cast<double>(p.free_memory)), p.pci_bus_id);
}

Finding device_finding(const cuda::DeviceProperties& p) {
  const std::string name = fmt::format("cuda:{}", p.ordinal);
  const std::string detail = describe(p);
  if (!runs_on(TENAX_CUDA_ARCHITECTURES_STRING, p.compute_major, p.compute_minor)) {
    return problem(
        name,
        fmt::format("{} has compute capability {}.{}, but tenax kernels were compiled only for "
                    "CUDA architectures {}: launches fail with cudaErrorNoKernelImageForDevice",
                    p.name, p.compute_major, p.compute_minor, architectures_text()),
        fmt::format("reconfigure with -DTENAX_CUDA_ARCHITECTURES=\"{};{}{}\" and rebuild",
                    architectures_text(), p.compute_major, p.compute_minor),
        detail);
  }
  if (p.total_memory > 0 && p.free_memory * 5 < p.total_memory) {
    return problem(
        name,
        fmt::format("only {} of {} device memory is free: other processes hold the rest, and "
                    "jobs here will run out of memory early",
                    format_bytes(static_cast<double>(p.free_memory)),
                    format_bytes(static_cast<double>(p.total_memory))),
        "find the other processes with nvidia-smi and stop them, pick another device with "
        "CUDA_VISIBLE_DEVICES, or set TENAX_MEMORY_LIMIT below the free amount",
        detail);
  }
  return ok(name, detail);
}

}  // namespace

void check_build(Findings& out) {
  const std::string backend =
      cuda::compiled()
          ? fmt::format("CUDA backend compiled in for architectures {}", architectures_text())
          : std::string(
                "CUDA not compiled (CPU backend only; rebuild with "
                "-DTENAX_WITH_CUDA=ON for GPUs)");
  out.push_back(info("build", fmt::format("tenax {}, {} build, {}, {}", TENAX_VERSION_STRING,
                                          TENAX_BUILD_TYPE, backend, compiler())));
}

CudaFacts check_cuda(Findings& out) {
  CudaFacts facts;
  if (!cuda::compiled()) {
    facts.unusable_reason = "CUDA not compiled into this build";
    check_without_cuda(out);
    return facts;
  }
  const cuda::Availability& a = cuda::availability();
  check_runtime(out);
  check_driver(out, a);
  if (!a.usable) {
    if (a.driver_version == 0 || a.driver_version / 1000 < a.runtime_version / 1000) {
      facts.unusable_reason = a.status_name + "; see cuda-driver";
      out.push_back(skip("cuda-devices", "no usable CUDA device: " + a.reason));
    } else {
      facts.unusable_reason = a.status_name + "; see cuda-devices";
      out.push_back(problem("cuda-devices", a.reason, a.fix, a.status_name));
    }
    return facts;
  }
  facts.usable = true;
  out.push_back(ok("cuda-devices", fmt::format("{} CUDA device(s) usable", a.device_count)));
  for (int ordinal = 0; ordinal < a.device_count; ++ordinal) {
    try {
      facts.devices.push_back(cuda::device_properties(ordinal));
      out.push_back(device_finding(facts.devices.back()));
    } catch (const Error& e) {
      out.push_back(problem(fmt::format("cuda:{}", ordinal), e.cause(), e.fix()));
    }
  }
  return facts;
}

void check_device_work(Findings& out, const CudaFacts& cuda) {
  if (!cuda.usable) {
    const std::string why = "no usable CUDA device (" + cuda.unusable_reason + ")";
    out.push_back(skip("transfer", why));
    out.push_back(skip("gemm", why));
    out.push_back(skip("bandwidth", why));
    return;
  }
  constexpr std::size_t kCheckBytes = std::size_t{8} << 20;
  constexpr std::size_t kBandwidthBytes = std::size_t{64} << 20;
  for (const cuda::DeviceProperties& device : cuda.devices) {
    const std::string suffix = fmt::format(":cuda:{}", device.ordinal);
    try {
      const std::size_t bad = copy_round_trip_mismatches(device.ordinal, kCheckBytes);
      if (bad == 0) {
        out.push_back(
            ok("transfer" + suffix, fmt::format("{} host->device->host round trip is bit-exact",
                                                format_bytes(kCheckBytes))));
      } else {
        out.push_back(problem(
            "transfer" + suffix,
            fmt::format("{} of {} bytes came back different after a host->device->host copy: "
                        "the device or its link corrupts data",
                        bad, kCheckBytes),
            "do not run jobs on this device; check nvidia-smi -q -d ECC and the PCIe link, and "
            "have the GPU serviced"));
      }
    } catch (const Error& e) {
      out.push_back(problem("transfer" + suffix, e.cause(), e.fix()));
    }
    out.push_back(gemm_check(device.ordinal));
    try {
      const Bandwidth b = measure_bandwidth(device.ordinal, kBandwidthBytes);
      const std::string detail = fmt::format(
          "{} copies: pageable host->device {:.1f} GB/s, device->host {:.1f} GB/s; pinned "
          "host->device {:.1f} GB/s, device->host {:.1f} GB/s",
          format_bytes(kBandwidthBytes), b.pageable_to_device, b.pageable_to_host,
          b.pinned_to_device, b.pinned_to_host);
      if (std::min(b.pinned_to_device, b.pinned_to_host) < 3.0) {
        out.push_back(problem(
            "bandwidth" + suffix,
            fmt::format("pinned host<->device copies reach only {:.1f} GB/s (a PCIe 3.0 x16 link "
                        "gives about 12): checkpoints and data loading will be slow",
                        std::min(b.pinned_to_device, b.pinned_to_host)),
            "check the link width and generation (nvidia-smi -q | grep -A3 'Link'), that the GPU "
            "sits in a x16 slot, and bind the process to the GPU's NUMA node (numactl)",
            detail));
      } else {
        out.push_back(info("bandwidth" + suffix, detail));
      }
    } catch (const Error& e) {
      out.push_back(problem("bandwidth" + suffix, e.cause(), e.fix()));
    }
  }
}

}  // namespace tenax::tools
