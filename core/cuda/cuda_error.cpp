#include "cuda_error.hpp"

#include <string>

namespace tenax::cuda {

std::string version_string(int cuda_version) {
  if (cuda_version <= 0) return "none";
  return std::to_string(cuda_version / 1000) + "." + std::to_string((cuda_version % 1000) / 10);
}

bool is_sticky(cudaError_t status) noexcept {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

FaultClass classify(cudaError_t status) noexcept {
  if (is_sticky(status)) return FaultClass::device_fault;
  switch (status) {
    case cudaErrorMemoryAllocation:
      return FaultClass::out_of_memory;
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorInitializationError:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:  // exclusive-process mode and another process holds it
    case cudaErrorNotSupported:        // the device or driver lacks the feature (e.g. VMM)
    case cudaErrorNotPermitted:        // the operation is not allowed here (e.g. in MPS)
    case cudaErrorOperatingSystem:     // an OS call of the runtime failed
    case cudaErrorSharedObjectInitFailed:
    case cudaErrorInvalidKernelImage:  // the fatbinary does not match this driver
    case cudaErrorPeerAccessUnsupported:
    case cudaErrorUnsupportedLimit:
    case cudaErrorMpsConnectionFailed:
    // The driver cannot compile the PTX for this GPU (no JIT compiler, JIT disabled, PTX it
    // cannot read): the build or the driver is wrong for this machine, on every restart.
    case cudaErrorInvalidPtx:
    case cudaErrorJitCompilerNotFound:
    case cudaErrorJitCompilationDisabled:
    case cudaErrorSharedObjectSymbolNotFound:
    case cudaErrorFileNotFound:
    case cudaErrorInvalidSource:
      return FaultClass::environment;
    // Deterministic errors of a call: retrying the same call on a restarted process fails the
    // same way, so these are usage errors with a fix, never device faults (which restart).
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection:
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchOutOfResources:         // 701: registers or shared memory per block
    case cudaErrorInvalidResourceHandle:        // 400: a stream or event destroyed or foreign
    case cudaErrorHostMemoryAlreadyRegistered:  // 712
    case cudaErrorHostMemoryNotRegistered:      // 713
    case cudaErrorPeerAccessAlreadyEnabled:
    case cudaErrorPeerAccessNotEnabled:
    case cudaErrorSetOnActiveProcess:
    case cudaErrorCooperativeLaunchTooLarge:
    case cudaErrorInvalidSymbol:
    case cudaErrorInvalidPitchValue:
    case cudaErrorIllegalState:         // 401: an API call in the wrong state
    case cudaErrorDeviceUninitialized:  // 201: no valid context for the call
    case cudaErrorContextIsDestroyed:   // 709: a context used after its destruction
    case cudaErrorCudartUnloading:      // 4: a CUDA call during the runtime's shutdown
      return FaultClass::usage;
    default:
      return FaultClass::device_fault;
  }
}

namespace {

std::string fix_for(FaultClass fault) {
  switch (fault) {
    case FaultClass::out_of_memory:
      return "lower the batch size, call empty_cache(), or set TENAX_MEMORY_LIMIT below the "
             "device memory shared with other processes";
    case FaultClass::environment:
      return "run `tenax doctor` to see which driver, device or toolkit is missing";
    case FaultClass::usage:
      return "check the arguments of the call named above (pointer on the right device, sizes)";
    default:
      return "the device is in an unusable state: exit with the restart code and resume from "
             "the last checkpoint (on another device if this one keeps failing)";
  }
}

// The fix of a status that says more than its class does.
std::string fix_for(cudaError_t status, FaultClass fault) {
  switch (status) {
    case cudaErrorLaunchOutOfResources:
      return "the kernel needs more registers or shared memory per block than this device "
             "gives: a launch configuration that does not suit this GPU; report it with the "
             "output of `tenax doctor`";
    case cudaErrorInvalidResourceHandle:
      return "a stream, event or handle was used after it was destroyed or on another device "
             "than its own: check which device each stream belongs to";
    case cudaErrorHostMemoryAlreadyRegistered:
    case cudaErrorHostMemoryNotRegistered:
      return "host memory was registered twice (or released without registration): register "
             "each buffer once, through pinned_host_pool()";
    case cudaErrorNotSupported:
      return "this device or driver does not support the operation (e.g. virtual memory "
             "management, peer access): run `tenax doctor`, or use a newer driver or GPU";
    default:
      return fix_for(fault);
  }
}

}  // namespace

void check(cudaError_t status, const char* call, std::source_location where) {
  if (status == cudaSuccess) return;
  // Clear this call's non-sticky error so later calls work, but not another pending one (a
  // launch not checked yet), which its own check must still see.
  if (!is_sticky(status) && cudaPeekAtLastError() == status) cudaGetLastError();
  const FaultClass fault = classify(status);
  std::string cause = std::string(call) + " failed with " + cudaGetErrorName(status) + " (" +
                      cudaGetErrorString(status) + ")";
  std::string fix = fix_for(status, fault);
  switch (fault) {
    case FaultClass::out_of_memory:
      throw OutOfMemoryError(std::move(cause), std::move(fix), where);
    case FaultClass::environment:
      throw EnvironmentError(std::move(cause), std::move(fix), where);
    case FaultClass::usage:
      throw UsageError(std::move(cause), std::move(fix), where);
    default:
      throw DeviceFaultError(std::move(cause), std::move(fix), where);
  }
}

Diagnosis diagnose_unavailable(cudaError_t status, int runtime_version, int driver_version) {
  const std::string runtime = version_string(runtime_version);
  if (driver_version == 0 || status == cudaErrorInsufficientDriver && driver_version == 0) {
    return {"no NVIDIA driver is installed or loadable (libcuda.so.1 not found); the CUDA " +
                runtime + " runtime needs one",
            "install an NVIDIA driver that supports CUDA " + runtime +
                " or newer (check with nvidia-smi), or run on the CPU with --device cpu"};
  }
  if (status == cudaErrorInsufficientDriver) {
    return {"the NVIDIA driver supports CUDA up to " + version_string(driver_version) +
                " but tenax was built with the CUDA " + runtime + " runtime",
            "upgrade the NVIDIA driver to one that supports CUDA " + runtime +
                ", or rebuild tenax with a CUDA toolkit no newer than " +
                version_string(driver_version)};
  }
  if (status == cudaErrorNoDevice || status == cudaSuccess) {
    return {"the driver is loaded but reports no CUDA device",
            "check CUDA_VISIBLE_DEVICES (an empty or wrong value hides every device), that the "
            "GPU appears in nvidia-smi, and that the container was started with GPU access"};
  }
  return {std::string("the device query failed with ") + cudaGetErrorName(status) + " (" +
              cudaGetErrorString(status) + ")",
          "run nvidia-smi; if it fails too, reload the driver or reboot the node"};
}

}  // namespace tenax::cuda
