// The pinned host pool: buffers come back from the cache (no new page-locking on reuse), and
// copies through them deliver exact bytes, including after the pool unmapped part of a range it
// had registered in one piece.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tenax/core/copy.hpp"
#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/pool_resource.hpp"
#include "tenax/core/tensor.hpp"

namespace tenax {
namespace {

class PinnedPoolGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::availability().usable) {
      GTEST_SKIP() << "no usable CUDA device: " << cuda::availability().reason;
    }
  }
};

void expect_round_trip(const Tensor& pinned) {
  const auto bytes = static_cast<std::size_t>(pinned.nbytes());
  auto* host = static_cast<std::uint8_t*>(pinned.data());
  for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<std::uint8_t>((i * 131 + 7) % 251);
  Tensor on_device = Tensor::empty(pinned.shape(), pinned.dtype(), Device::cuda(0));
  copy_bytes(on_device.data(), Device::cuda(0), pinned.data(), Device::cpu(), bytes);
  std::vector<std::uint8_t> back(bytes, 0);
  copy_bytes(back.data(), Device::cpu(), on_device.data(), Device::cuda(0), bytes);
  for (std::size_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(back[i], static_cast<std::uint8_t>((i * 131 + 7) % 251)) << "byte " << i;
  }
}

TEST_F(PinnedPoolGpu, ReusesItsBuffersAndCopiesExactly) {
  std::shared_ptr<MemoryResource> pool = pinned_host_pool();
  ASSERT_EQ(pool->device(), Device::cpu());
  const auto* stats_of = dynamic_cast<const PoolResource*>(pool.get());
  ASSERT_NE(stats_of, nullptr);
  const std::int64_t n = std::int64_t{24} << 20;
  {
    Tensor first = Tensor::empty({n}, DType::u8, pool);
    expect_round_trip(first);
  }
  const std::int64_t reserved = stats_of->stats().reserved_bytes.current;
  {
    Tensor again = Tensor::empty({n}, DType::u8, pool);
    EXPECT_EQ(stats_of->stats().reserved_bytes.current, reserved)
        << "the cached block was not reused";
    expect_round_trip(again);
  }
}

TEST_F(PinnedPoolGpu, PartlyReleasedRegistrationsStayUsable) {
  std::shared_ptr<MemoryResource> pool = pinned_host_pool();
  auto* pinned_pool = dynamic_cast<PoolResource*>(pool.get());
  ASSERT_NE(pinned_pool, nullptr);
  // One large block mapped (and registered) in one piece, then freed and the cache emptied while
  // a small block in the same range stays live: the pool unmaps around it.
  Tensor small;
  {
    Tensor large = Tensor::empty({std::int64_t{64} << 20}, DType::u8, pool);
    large = Tensor();
    small = Tensor::empty({std::int64_t{1} << 20}, DType::u8, pool);
    (void)pinned_pool->empty_cache();
  }
  expect_round_trip(small);
  expect_round_trip(Tensor::empty({std::int64_t{8} << 20}, DType::u8, pool));
}

}  // namespace
}  // namespace tenax
