// Device selection: the one place that decides between the CPU and CUDA backends for a job.
#include "tenax/core/context.hpp"

#include <iostream>
#include <string>

#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"

namespace tenax {

Device select_device(std::string_view request) {
  if (request == "auto") {
    const cuda::Availability& cuda = cuda::availability();
    if (cuda.usable) return Device::cuda(0);
    // One line, so that logs of long jobs show why they ran slowly on the CPU.
    std::cerr << "tenax: running on the CPU because CUDA is not usable: " << cuda.reason
              << (cuda.fix.empty() ? "" : "; to use a GPU: " + cuda.fix) << '\n';
    return Device::cpu();
  }
  if (request != "cpu" && request != "cuda" && !request.starts_with("cuda:")) {
    throw UsageError("unknown device request '" + std::string(request) + "'",
                     "write 'auto' (a GPU when one is usable, else the CPU), 'cpu', 'cuda' or "
                     "'cuda:N' with N a device ordinal");
  }
  const Device device = parse_device(request);
  if (device.is_cpu()) return device;

  if (!cuda::compiled())
    throw_not_compiled("the CUDA backend (device '" + std::string(request) + "')",
                       "TENAX_WITH_CUDA");
  const cuda::Availability& cuda = cuda::availability();
  if (!cuda.usable) {
    throw EnvironmentError("device '" + std::string(request) +
                               "' was requested but CUDA is not usable: " + cuda.reason,
                           cuda.fix);
  }
  if (device.index >= cuda.device_count) {
    throw EnvironmentError(
        "device '" + std::string(request) + "' was requested but this machine " + "has " +
            std::to_string(cuda.device_count) + " usable CUDA device(s)",
        "use an ordinal in [0, " + std::to_string(cuda.device_count) +
            ") or check CUDA_VISIBLE_DEVICES, which renumbers the visible devices");
  }
  return device;
}

}  // namespace tenax
