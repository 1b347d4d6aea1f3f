// Doctor checks through NVML (temperature, utilisation, ECC), read with runtime::nvml::Library,
// which loads the driver's library at run time: tenax must start without a driver.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "doctor.hpp"
#include "tenax/runtime/nvml.hpp"

namespace tenax::tools {

namespace {

constexpr unsigned kHotCelsius = 85;

// One device's health line; a PROBLEM when it is hot or has uncorrectable memory errors.
Finding device_health(const runtime::nvml::DeviceReading& r, const std::string& finding_name) {
  std::vector<std::string> parts;
  std::vector<std::string> problems;
  std::vector<std::string> fixes;
  if (!r.name.empty()) parts.push_back(r.name);
  if (r.temperature_celsius) {
    const unsigned celsius = *r.temperature_celsius;
    parts.push_back(fmt::format("temperature {} C", celsius));
    if (celsius >= kHotCelsius) {
      problems.push_back(
          fmt::format("the GPU is at {} C, hot enough to throttle its clocks", celsius));
      fixes.emplace_back(
          "check cooling and airflow; nvidia-smi -q -d PERFORMANCE shows throttling");
    }
  }
  if (r.utilization_percent) {
    parts.push_back(fmt::format("utilisation {}% compute, {}% memory", *r.utilization_percent,
                                r.memory_utilization_percent.value_or(0)));
    if (*r.utilization_percent >= 50) parts.emplace_back("busy: another process is using it");
  }
  if (r.ecc_enabled) {
    parts.push_back(*r.ecc_enabled ? "ECC on" : "ECC off");
    if (r.ecc_pending_change.value_or(false)) parts.emplace_back("ECC change pending a reboot");
    if (r.ecc_uncorrected.value_or(0) > 0) {
      problems.push_back(fmt::format(
          "{} uncorrectable ECC memory error(s) since the driver loaded: results on this device "
          "cannot be trusted and jobs will hit device faults",
          *r.ecc_uncorrected));
      fixes.emplace_back(
          "drain the node and have the GPU checked (nvidia-smi -q -d ECC,PAGE_RETIREMENT)");
    }
  } else {
    parts.emplace_back("ECC not supported");
  }
  std::string detail;
  for (const std::string& part : parts) detail += (detail.empty() ? "" : ", ") + part;
  if (problems.empty()) return info(finding_name, detail);
  std::string cause;
  std::string fix;
  for (const std::string& p : problems) cause += (cause.empty() ? "" : "; ") + p;
  for (const std::string& f : fixes) fix += (fix.empty() ? "" : "; ") + f;
  return problem(finding_name, cause, fix, detail);
}

}  // namespace

void check_nvml(Findings& out, const CudaFacts& cuda) {
  namespace nvml = runtime::nvml;
  std::string why;
  int status = 0;
  const std::unique_ptr<nvml::Library> library = nvml::Library::open(why, status);
  if (library == nullptr) {
    if (status == -1 && why.find("could not be loaded") != std::string::npos) {
      out.push_back(skip("nvml", why + ", so temperature, utilisation and ECC are not reported"));
      return;
    }
    if (status == -1) {
      out.push_back(problem("nvml", why,
                            "reinstall the NVIDIA driver; an old or partial NVML is on the "
                            "library path"));
      return;
    }
    std::string fix = "run nvidia-smi; if it fails too, reinstall the driver or reboot the node";
    if (status == nvml::kLibRmVersionMismatch) {
      fix =
          "the driver was updated but the old kernel module is still loaded: reboot the node "
          "(or reload the nvidia kernel modules)";
    } else if (status == nvml::kDriverNotLoaded) {
      fix =
          "load the NVIDIA kernel module (modprobe nvidia) or reinstall the driver; in a "
          "container, start it with GPU access (--gpus all)";
    }
    out.push_back(problem("nvml", why, fix));
    return;
  }
  const unsigned count = library->device_count();
  out.push_back(info("nvml", fmt::format("NVIDIA driver {}, {} GPU(s) on this machine",
                                         library->driver_version(), count)));
  if (!cuda.devices.empty()) {
    // Matched by PCI bus id: NVML numbers all GPUs, CUDA only the visible ones.
    for (const cuda::DeviceProperties& p : cuda.devices) {
      const std::string name = fmt::format("health:cuda:{}", p.ordinal);
      const auto device = library->by_pci_bus_id(p.pci_bus_id, why);
      if (!device) {
        out.push_back(
            skip(name, "NVML does not know PCI device " + p.pci_bus_id + " (" + why + ")"));
        continue;
      }
      out.push_back(device_health(library->read(*device), name));
    }
  } else {
    for (unsigned index = 0; index < count; ++index) {
      const std::string name = fmt::format("health:nvml-gpu:{}", index);
      const auto device = library->by_index(index, why);
      if (!device) {
        out.push_back(problem(name, "NVML cannot open GPU " + std::to_string(index) + ": " + why,
                              "run nvidia-smi -q -i " + std::to_string(index) +
                                  "; a GPU that fell off the bus needs a node reboot"));
        continue;
      }
      out.push_back(device_health(library->read(*device), name));
    }
  }
}

}  // namespace tenax::tools
