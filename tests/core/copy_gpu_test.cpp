// Host<->device and device<->device byte copies: every path (small, pinned, staged pageable
// with a partial last chunk) must deliver the exact bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "tenax/core/copy.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/memory/cuda_memory.hpp"
#include "tenax/core/tensor.hpp"

namespace tenax {
namespace {

class CopyGpu : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    if (!cuda::availability().usable) {
      GTEST_SKIP() << "no usable CUDA device: " << cuda::availability().reason;
    }
  }
};

std::vector<std::uint8_t> pattern(std::size_t bytes) {
  std::vector<std::uint8_t> data(bytes);
  for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<std::uint8_t>((i * 131 + 7) % 251);
  return data;
}

TEST_P(CopyGpu, PageableRoundTripThroughTheDeviceIsExact) {
  const std::size_t bytes = GetParam();
  const std::vector<std::uint8_t> source = pattern(bytes);
  Tensor on_device = Tensor::empty({static_cast<std::int64_t>(bytes)}, DType::u8, Device::cuda(0));
  copy_bytes(on_device.data(), Device::cuda(0), source.data(), Device::cpu(), bytes);
  Tensor second = Tensor::empty_like(on_device);
  copy_bytes(second.data(), Device::cuda(0), on_device.data(), Device::cuda(0), bytes);
  std::vector<std::uint8_t> back(bytes, 0);
  copy_bytes(back.data(), Device::cpu(), second.data(), Device::cuda(0), bytes);
  EXPECT_EQ(back, source);
}

TEST_P(CopyGpu, PinnedRoundTripIsExact) {
  const std::size_t bytes = GetParam();
  auto pinned = cuda::make_pinned_host_resource();
  Tensor host = Tensor::empty({static_cast<std::int64_t>(bytes)}, DType::u8, pinned);
  const std::vector<std::uint8_t> source = pattern(bytes);
  std::copy(source.begin(), source.end(), host.data_as<std::uint8_t>());
  Tensor on_device = host.to(Device::cuda(0));
  Tensor back = on_device.to(Device::cpu());
  EXPECT_TRUE(std::equal(source.begin(), source.end(), back.data_as<std::uint8_t>()));
}

// Below the staging threshold, exactly one chunk, and several chunks with a partial last one.
INSTANTIATE_TEST_SUITE_P(Sizes, CopyGpu,
                         ::testing::Values(std::size_t{1}, std::size_t{4096}, std::size_t{4} << 20,
                                           (std::size_t{13} << 20) + 12345));

}  // namespace
}  // namespace tenax
