// Classification of CUDA runtime statuses into fault classes, by numeric cudaError_t value (this
// file cannot include CUDA headers). The values are fixed by the CUDA runtime ABI.
#include <gtest/gtest.h>

#include <string>

#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"

namespace tenax {
namespace {

struct StatusCase {
  int code;
  const char* name;
  FaultClass fault;
  bool sticky;
};

constexpr StatusCase kStatuses[] = {
    {1, "cudaErrorInvalidValue", FaultClass::usage, false},
    {2, "cudaErrorMemoryAllocation", FaultClass::out_of_memory, false},
    {3, "cudaErrorInitializationError", FaultClass::environment, false},
    {9, "cudaErrorInvalidConfiguration", FaultClass::usage, false},
    {17, "cudaErrorInvalidDevicePointer", FaultClass::usage, false},
    {21, "cudaErrorInvalidMemcpyDirection", FaultClass::usage, false},
    {34, "cudaErrorStubLibrary", FaultClass::environment, false},
    {35, "cudaErrorInsufficientDriver", FaultClass::environment, false},
    {100, "cudaErrorNoDevice", FaultClass::environment, false},
    {101, "cudaErrorInvalidDevice", FaultClass::environment, false},
    {209, "cudaErrorNoKernelImageForDevice", FaultClass::environment, false},
    // Deterministic: a restart would fail the same way, so never device_fault (which restarts).
    {400, "cudaErrorInvalidResourceHandle", FaultClass::usage, false},
    {701, "cudaErrorLaunchOutOfResources", FaultClass::usage, false},
    {712, "cudaErrorHostMemoryAlreadyRegistered", FaultClass::usage, false},
    {713, "cudaErrorHostMemoryNotRegistered", FaultClass::usage, false},
    {720, "cudaErrorCooperativeLaunchTooLarge", FaultClass::usage, false},
    {800, "cudaErrorNotPermitted", FaultClass::environment, false},
    {801, "cudaErrorNotSupported", FaultClass::environment, false},
    {304, "cudaErrorOperatingSystem", FaultClass::environment, false},
    {214, "cudaErrorECCUncorrectable", FaultClass::device_fault, true},
    {222, "cudaErrorUnsupportedPtxVersion", FaultClass::environment, false},
    {700, "cudaErrorIllegalAddress", FaultClass::device_fault, true},
    {702, "cudaErrorLaunchTimeout", FaultClass::device_fault, true},
    {710, "cudaErrorAssert", FaultClass::device_fault, true},
    {714, "cudaErrorHardwareStackError", FaultClass::device_fault, true},
    {715, "cudaErrorIllegalInstruction", FaultClass::device_fault, true},
    {716, "cudaErrorMisalignedAddress", FaultClass::device_fault, true},
    {718, "cudaErrorInvalidPc", FaultClass::device_fault, true},
    {719, "cudaErrorLaunchFailure", FaultClass::device_fault, true},
    {803, "cudaErrorSystemDriverMismatch", FaultClass::environment, false},
    {804, "cudaErrorCompatNotSupportedOnDevice", FaultClass::environment, false},
    {999, "cudaErrorUnknown", FaultClass::device_fault, true},
    // PTX the driver cannot compile, and calls made in a wrong state: the same on a restart.
    {218, "cudaErrorInvalidPtx", FaultClass::environment, false},
    {221, "cudaErrorJitCompilerNotFound", FaultClass::environment, false},
    {223, "cudaErrorJitCompilationDisabled", FaultClass::environment, false},
    {401, "cudaErrorIllegalState", FaultClass::usage, false},
    {201, "cudaErrorDeviceUninitialized", FaultClass::usage, false},
    {709, "cudaErrorContextIsDestroyed", FaultClass::usage, false},
    {4, "cudaErrorCudartUnloading", FaultClass::usage, false},
};

TEST(CudaStatus, ClassificationTable) {
  if (!cuda::compiled()) GTEST_SKIP() << "CUDA is not compiled into this build";
  for (const StatusCase& c : kStatuses) {
    EXPECT_EQ(cuda::status_name(c.code), c.name) << c.code;
    EXPECT_EQ(cuda::classify_status(c.code), c.fault)
        << c.name << " -> " << to_string(cuda::classify_status(c.code));
    EXPECT_EQ(cuda::is_sticky_status(c.code), c.sticky) << c.name;
  }
}

TEST(CudaStatus, OnlyDeviceFaultsAreSticky) {
  if (!cuda::compiled()) GTEST_SKIP() << "CUDA is not compiled into this build";
  for (int code = 1; code < 1000; ++code) {
    if (cuda::is_sticky_status(code)) {
      EXPECT_EQ(cuda::classify_status(code), FaultClass::device_fault) << code;
    }
  }
  EXPECT_FALSE(cuda::is_sticky_status(0));
  EXPECT_EQ(cuda::status_name(0), "cudaSuccess");
}

TEST(CudaStatus, WithoutCudaEveryStatusIsNotCompiled) {
  if (cuda::compiled()) GTEST_SKIP() << "CUDA is compiled into this build";
  for (const StatusCase& c : kStatuses) {
    EXPECT_EQ(cuda::classify_status(c.code), FaultClass::not_compiled) << c.name;
    EXPECT_FALSE(cuda::is_sticky_status(c.code)) << c.name;
  }
}

TEST(CudaAvailability, ExplainsItselfWhenUnusable) {
  const cuda::Availability& a = cuda::availability();
  if (a.usable) {
    EXPECT_GT(a.device_count, 0);
    EXPECT_TRUE(a.reason.empty());
    return;
  }
  EXPECT_EQ(a.device_count, 0);
  EXPECT_FALSE(a.reason.empty());
  EXPECT_FALSE(a.fix.empty());
  if (cuda::compiled()) {
    EXPECT_GT(a.runtime_version, 0);
    EXPECT_NE(a.status_code, 0);
    EXPECT_EQ(a.status_name, cuda::status_name(a.status_code));
  }
}

TEST(CudaAvailability, DevicePropertiesNeedAUsableDevice) {
  if (cuda::availability().usable) GTEST_SKIP() << "CUDA is usable here; see the gpu tests";
  if (cuda::compiled()) {
    EXPECT_THROW((void)cuda::device_properties(0), EnvironmentError);
  } else {
    EXPECT_THROW((void)cuda::device_properties(0), NotCompiledError);
  }
}

}  // namespace
}  // namespace tenax
