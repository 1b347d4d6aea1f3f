// Doctor checks through NVML (temperature, utilisation, ECC). NVML ships with the NVIDIA driver,
// so it is loaded at run time with dlopen and never linked: tenax must start without a driver.
#include <dlfcn.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "doctor.hpp"

namespace tenax::tools {

namespace {

// The few NVML declarations used here, from the stable NVML C ABI (nvml.h).
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlNotSupported = 3;
constexpr NvmlReturn kNvmlDriverNotLoaded = 9;
constexpr NvmlReturn kNvmlLibRmVersionMismatch = 18;
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlMemoryErrorUncorrected = 1;
constexpr int kNvmlVolatileEcc = 0;
constexpr unsigned kHotCelsius = 85;

struct Nvml {
  void* library = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned) = nullptr;
  NvmlReturn (*device_count)(unsigned*) = nullptr;
  NvmlReturn (*by_index)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*ecc_mode)(NvmlDevice, int*, int*) = nullptr;
  NvmlReturn (*ecc_errors)(NvmlDevice, int, int, unsigned long long*) = nullptr;

  Nvml() = default;
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml() {
    if (library != nullptr) dlclose(library);
  }

  template <typename Function>
  bool bind(Function& target, const char* symbol) {
    target = reinterpret_cast<Function>(dlsym(library, symbol));
    return target != nullptr;
  }

  [[nodiscard]] std::string describe(NvmlReturn status) const {
    const char* text = error_string != nullptr ? error_string(status) : nullptr;
    return fmt::format("NVML error {}{}{}", status, text != nullptr ? ": " : "",
                       text != nullptr ? text : "");
  }
};

// One device's health line; a PROBLEM when it is hot or has uncorrectable memory errors.
Finding device_health(const Nvml& nvml, NvmlDevice device, const std::string& finding_name) {
  std::vector<std::string> parts;
  std::vector<std::string> problems;
  std::vector<std::string> fixes;
  char name[96] = {};
  if (nvml.name(device, name, sizeof name) == kNvmlSuccess) parts.emplace_back(name);
  unsigned celsius = 0;
  if (nvml.temperature(device, kNvmlTemperatureGpu, &celsius) == kNvmlSuccess) {
    parts.push_back(fmt::format("temperature {} C", celsius));
    if (celsius >= kHotCelsius) {
      problems.push_back(
          fmt::format("the GPU is at {} C, hot enough to throttle its clocks", celsius));
      fixes.emplace_back(
          "check cooling and airflow; nvidia-smi -q -d PERFORMANCE shows throttling");
    }
  }
  NvmlUtilization use{};
  if (nvml.utilization(device, &use) == kNvmlSuccess) {
    parts.push_back(fmt::format("utilisation {}% compute, {}% memory", use.gpu, use.memory));
    if (use.gpu >= 50) parts.emplace_back("busy: another process is using it");
  }
  int current = 0;
  int pending = 0;
  const NvmlReturn ecc = nvml.ecc_mode(device, &current, &pending);
  if (ecc == kNvmlSuccess) {
    parts.push_back(current != 0 ? "ECC on" : "ECC off");
    if (pending != current) parts.emplace_back("ECC change pending a reboot");
    unsigned long long uncorrected = 0;
    if (current != 0 && nvml.ecc_errors != nullptr &&
        nvml.ecc_errors(device, kNvmlMemoryErrorUncorrected, kNvmlVolatileEcc, &uncorrected) ==
            kNvmlSuccess &&
        uncorrected > 0) {
      problems.push_back(fmt::format(
          "{} uncorrectable ECC memory error(s) since the driver loaded: results on this device "
          "cannot be trusted and jobs will hit device faults",
          uncorrected));
      fixes.emplace_back(
          "drain the node and have the GPU checked (nvidia-smi -q -d ECC,PAGE_RETIREMENT)");
    }
  } else if (ecc == kNvmlNotSupported) {
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
  Nvml nvml;
  nvml.library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml.library == nullptr) {
    const char* error = dlerror();
    out.push_back(skip("nvml", fmt::format("NVML (libnvidia-ml.so.1) could not be loaded ({}); it "
                                           "comes with the NVIDIA driver, so temperature, "
                                           "utilisation and ECC are not reported",
                                           error != nullptr ? error : "not found")));
    return;
  }
  const bool bound = nvml.bind(nvml.init, "nvmlInit_v2") &&
                     nvml.bind(nvml.shutdown, "nvmlShutdown") &&
                     nvml.bind(nvml.error_string, "nvmlErrorString") &&
                     nvml.bind(nvml.driver_version, "nvmlSystemGetDriverVersion") &&
                     nvml.bind(nvml.device_count, "nvmlDeviceGetCount_v2") &&
                     nvml.bind(nvml.by_index, "nvmlDeviceGetHandleByIndex_v2") &&
                     nvml.bind(nvml.by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") &&
                     nvml.bind(nvml.name, "nvmlDeviceGetName") &&
                     nvml.bind(nvml.temperature, "nvmlDeviceGetTemperature") &&
                     nvml.bind(nvml.utilization, "nvmlDeviceGetUtilizationRates") &&
                     nvml.bind(nvml.ecc_mode, "nvmlDeviceGetEccMode");
  nvml.bind(nvml.ecc_errors, "nvmlDeviceGetTotalEccErrors");  // optional
  if (!bound) {
    out.push_back(problem("nvml", "libnvidia-ml.so.1 lacks functions every current NVML has",
                          "reinstall the NVIDIA driver; an old or partial NVML is on the library "
                          "path"));
    return;
  }
  const NvmlReturn status = nvml.init();
  if (status != kNvmlSuccess) {
    std::string fix = "run nvidia-smi; if it fails too, reinstall the driver or reboot the node";
    if (status == kNvmlLibRmVersionMismatch) {
      fix =
          "the driver was updated but the old kernel module is still loaded: reboot the node "
          "(or reload the nvidia kernel modules)";
    } else if (status == kNvmlDriverNotLoaded) {
      fix =
          "load the NVIDIA kernel module (modprobe nvidia) or reinstall the driver; in a "
          "container, start it with GPU access (--gpus all)";
    }
    out.push_back(problem("nvml", "NVML could not start: " + nvml.describe(status), fix));
    return;
  }
  char version[96] = {};
  unsigned count = 0;
  nvml.driver_version(version, sizeof version);
  nvml.device_count(&count);
  out.push_back(info("nvml", fmt::format("NVIDIA driver {}, {} GPU(s) on this machine",
                                         version[0] != 0 ? version : "unknown", count)));
  if (!cuda.devices.empty()) {
    // Matched by PCI bus id: NVML numbers all GPUs, CUDA only the visible ones.
    for (const cuda::DeviceProperties& p : cuda.devices) {
      NvmlDevice device = nullptr;
      const std::string name = fmt::format("health:cuda:{}", p.ordinal);
      const NvmlReturn found = nvml.by_pci_bus_id(p.pci_bus_id.c_str(), &device);
      if (found != kNvmlSuccess) {
        out.push_back(skip(name, "NVML does not know PCI device " + p.pci_bus_id + " (" +
                                     nvml.describe(found) + ")"));
        continue;
      }
      out.push_back(device_health(nvml, device, name));
    }
  } else {
    for (unsigned index = 0; index < count; ++index) {
      NvmlDevice device = nullptr;
      const std::string name = fmt::format("health:nvml-gpu:{}", index);
      const NvmlReturn found = nvml.by_index(index, &device);
      if (found != kNvmlSuccess) {
        out.push_back(problem(
            name, "NVML cannot open GPU " + std::to_string(index) + ": " + nvml.describe(found),
            "run nvidia-smi -q -i " + std::to_string(index) +
                "; a GPU that fell off the bus needs a node reboot"));
        continue;
      }
      out.push_back(device_health(nvml, device, name));
    }
  }
  nvml.shutdown();
}

}  // namespace tenax::tools
