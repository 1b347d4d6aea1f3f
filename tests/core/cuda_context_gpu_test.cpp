// CUDA contexts on a real device. Every test skips with the reason where CUDA is not usable.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "tenax/core/context.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"

namespace tenax {
namespace {

constexpr int kCudaErrorMemoryAllocation = 2;
constexpr int kCudaErrorIllegalAddress = 700;

#define TENAX_SKIP_WITHOUT_CUDA()                                                 \
  do {                                                                            \
    if (!cuda::availability().usable) {                                           \
      GTEST_SKIP() << "CUDA is not usable here: " << cuda::availability().reason; \
    }                                                                             \
  } while (false)

TEST(CudaContextGpu, OneContextPerDeviceWithItsOwnStream) {
  TENAX_SKIP_WITHOUT_CUDA();
  cuda::Context& context = cuda::context(Device::cuda(0));
  EXPECT_EQ(&context, &cuda::context(Device::cuda(0)));
  EXPECT_EQ(context.device(), Device::cuda(0));
  EXPECT_NE(context.stream(), StreamRef{});  // not the legacy default stream
  EXPECT_FALSE(context.poisoned());
  EXPECT_TRUE(context.poison_reason().empty());
  context.activate();
  context.synchronize();
  std::thread other([&] { context.activate(); });
  other.join();
}

TEST(CudaContextGpu, MissingDevicesAndCpuAreRejected) {
  TENAX_SKIP_WITHOUT_CUDA();
  EXPECT_THROW((void)cuda::context(Device::cuda(cuda::availability().device_count)),
               EnvironmentError);
  EXPECT_THROW((void)cuda::context(Device::cpu()), UsageError);
}

TEST(CudaContextGpu, DevicePropertiesDescribeTheDevice) {
  TENAX_SKIP_WITHOUT_CUDA();
  const cuda::DeviceProperties p = cuda::device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.compute_major, 3);
  EXPECT_GT(p.total_memory, 0u);
  EXPECT_LE(p.free_memory, p.total_memory);
  EXPECT_GT(p.multiprocessor_count, 0);
  EXPECT_FALSE(p.pci_bus_id.empty());
}

TEST(CudaContextGpu, NonStickyErrorsRaiseWithoutPoisoning) {
  TENAX_SKIP_WITHOUT_CUDA();
  cuda::Context& context = cuda::context(Device::cuda(0));
  context.check(0, "nothing");
  EXPECT_THROW(context.check(kCudaErrorMemoryAllocation, "cudaMalloc"), OutOfMemoryError);
  EXPECT_FALSE(context.poisoned());
  context.activate();
}

// Feeds the context a sticky status instead of faulting the device for real: the context must
// refuse every later use with the first reason. Last in the file, so a run of the whole
// program checks the healthy context first.
TEST(CudaContextGpu, StickyErrorsPoisonTheContext) {
  TENAX_SKIP_WITHOUT_CUDA();
  cuda::Context& context = cuda::context(Device::cuda(0));
  EXPECT_THROW(context.check(kCudaErrorIllegalAddress, "my_kernel"), DeviceFaultError);
  ASSERT_TRUE(context.poisoned());
  EXPECT_NE(context.poison_reason().find("cudaErrorIllegalAddress"), std::string::npos);
  EXPECT_NE(context.poison_reason().find("my_kernel"), std::string::npos);
  try {
    context.activate();
    FAIL() << "a poisoned context must refuse activate()";
  } catch (const DeviceFaultError& e) {
    EXPECT_NE(e.cause().find("my_kernel"), std::string::npos) << e.what();
    EXPECT_EQ(exit_code_for(e.fault_class()), kRestartExitCode);
  }
  EXPECT_THROW(context.check(kCudaErrorMemoryAllocation, "cudaMalloc"), DeviceFaultError);
  EXPECT_THROW(context.synchronize(), DeviceFaultError);
}

}  // namespace
}  // namespace tenax
