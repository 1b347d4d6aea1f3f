#include "tenax/runtime/nvml.hpp"

#include <dlfcn.h>

#include <string>

namespace tenax::runtime::nvml {

namespace {

// The few NVML declarations used here, from the stable NVML C ABI (nvml.h).
using Status = int;
using Handle = Library::Device;
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr int kTemperatureGpu = 0;
constexpr int kClockSm = 1;
constexpr int kMemoryErrorCorrected = 0;
constexpr int kMemoryErrorUncorrected = 1;
constexpr int kVolatileEcc = 0;

}  // namespace

struct Library::Functions {
  void* library = nullptr;
  Status (*init)() = nullptr;
  Status (*shutdown)() = nullptr;
  const char* (*error_string)(Status) = nullptr;
  Status (*driver_version)(char*, unsigned) = nullptr;
  Status (*device_count)(unsigned*) = nullptr;
  Status (*by_index)(unsigned, Handle*) = nullptr;
  Status (*by_pci_bus_id)(const char*, Handle*) = nullptr;
  Status (*name)(Handle, char*, unsigned) = nullptr;
  Status (*temperature)(Handle, int, unsigned*) = nullptr;
  Status (*utilization)(Handle, Utilization*) = nullptr;
  Status (*ecc_mode)(Handle, int*, int*) = nullptr;
  // Optional: not every NVML or device has them.
  Status (*ecc_errors)(Handle, int, int, unsigned long long*) = nullptr;
  Status (*memory)(Handle, Memory*) = nullptr;
  Status (*power)(Handle, unsigned*) = nullptr;
  Status (*clock)(Handle, int, unsigned*) = nullptr;
  Status (*throttle)(Handle, unsigned long long*) = nullptr;
  bool initialised = false;

  ~Functions() {
    if (initialised) shutdown();
    if (library != nullptr) dlclose(library);
  }

  template <typename Function>
  bool bind(Function& target, const char* symbol) {
    target = reinterpret_cast<Function>(dlsym(library, symbol));
    return target != nullptr;
  }
};

std::unique_ptr<Library> Library::open(std::string& why, int& status) {
  status = -1;
  auto f = std::make_unique<Functions>();
  f->library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (f->library == nullptr) {
    const char* error = dlerror();
    why = std::string("NVML (libnvidia-ml.so.1) could not be loaded (") +
          (error != nullptr ? error : "not found") + "); it comes with the NVIDIA driver";
    return nullptr;
  }
  const bool bound = f->bind(f->init, "nvmlInit_v2") && f->bind(f->shutdown, "nvmlShutdown") &&
                     f->bind(f->error_string, "nvmlErrorString") &&
                     f->bind(f->driver_version, "nvmlSystemGetDriverVersion") &&
                     f->bind(f->device_count, "nvmlDeviceGetCount_v2") &&
                     f->bind(f->by_index, "nvmlDeviceGetHandleByIndex_v2") &&
                     f->bind(f->by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") &&
                     f->bind(f->name, "nvmlDeviceGetName") &&
                     f->bind(f->temperature, "nvmlDeviceGetTemperature") &&
                     f->bind(f->utilization, "nvmlDeviceGetUtilizationRates") &&
                     f->bind(f->ecc_mode, "nvmlDeviceGetEccMode");
  if (!bound) {
    why = "libnvidia-ml.so.1 lacks functions every current NVML has";
    return nullptr;
  }
  f->bind(f->ecc_errors, "nvmlDeviceGetTotalEccErrors");
  f->bind(f->memory, "nvmlDeviceGetMemoryInfo");
  f->bind(f->power, "nvmlDeviceGetPowerUsage");
  f->bind(f->clock, "nvmlDeviceGetClockInfo");
  // Renamed in CUDA 12.2's NVML; the old name stays for older drivers.
  if (!f->bind(f->throttle, "nvmlDeviceGetCurrentClocksEventReasons")) {
    f->bind(f->throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  status = f->init();
  if (status != kSuccess) {
    const char* text = f->error_string(status);
    why = "NVML could not start: NVML error " + std::to_string(status) +
          (text != nullptr ? std::string(": ") + text : std::string());
    return nullptr;
  }
  f->initialised = true;
  return std::unique_ptr<Library>(new Library(std::move(f)));
}

Library::Library(std::unique_ptr<Functions> functions) : functions_(std::move(functions)) {}
Library::~Library() = default;

std::string Library::describe(int status) const {
  const char* text = functions_->error_string(status);
  return "NVML error " + std::to_string(status) +
         (text != nullptr ? std::string(": ") + text : std::string());
}

std::string Library::driver_version() const {
  char version[96] = {};
  if (functions_->driver_version(version, sizeof version) != kSuccess) return "unknown";
  return version[0] != 0 ? version : "unknown";
}

unsigned Library::device_count() const {
  unsigned count = 0;
  if (functions_->device_count(&count) != kSuccess) return 0;
  return count;
}

std::optional<Library::Device> Library::by_index(unsigned index, std::string& why) const {
  Handle device = nullptr;
  const Status found = functions_->by_index(index, &device);
  if (found == kSuccess) return device;
  why = describe(found);
  return std::nullopt;
}

std::optional<Library::Device> Library::by_pci_bus_id(const std::string& bus_id,
                                                      std::string& why) const {
  Handle device = nullptr;
  const Status found = functions_->by_pci_bus_id(bus_id.c_str(), &device);
  if (found == kSuccess) return device;
  why = describe(found);
  return std::nullopt;
}

DeviceReading Library::read(Device device) const {
  const Functions& f = *functions_;
  DeviceReading r;
  char name[96] = {};
  if (f.name(device, name, sizeof name) == kSuccess) r.name = name;
  unsigned value = 0;
  if (f.temperature(device, kTemperatureGpu, &value) == kSuccess) r.temperature_celsius = value;
  Utilization use{};
  if (f.utilization(device, &use) == kSuccess) {
    r.utilization_percent = use.gpu;
    r.memory_utilization_percent = use.memory;
  }
  Memory memory{};
  if (f.memory != nullptr && f.memory(device, &memory) == kSuccess) {
    r.memory_used = memory.used;
    r.memory_total = memory.total;
  }
  if (f.power != nullptr && f.power(device, &value) == kSuccess) r.power_watts = value / 1000.0;
  if (f.clock != nullptr && f.clock(device, kClockSm, &value) == kSuccess) r.sm_clock_mhz = value;
  unsigned long long bits = 0;
  if (f.throttle != nullptr && f.throttle(device, &bits) == kSuccess) r.throttle_reasons = bits;
  int current = 0;
  int pending = 0;
  if (f.ecc_mode(device, &current, &pending) == kSuccess) {
    r.ecc_enabled = current != 0;
    r.ecc_pending_change = pending != current;
    unsigned long long count = 0;
    if (current != 0 && f.ecc_errors != nullptr) {
      if (f.ecc_errors(device, kMemoryErrorCorrected, kVolatileEcc, &count) == kSuccess) {
        r.ecc_corrected = count;
      }
      if (f.ecc_errors(device, kMemoryErrorUncorrected, kVolatileEcc, &count) == kSuccess) {
        r.ecc_uncorrected = count;
      }
    }
  }
  return r;
}

}  // namespace tenax::runtime::nvml
