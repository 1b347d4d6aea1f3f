#include "tenax/core/memory/host_virtual_memory.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "tenax/core/memory/pool_resource.hpp"

namespace tenax {
namespace {

TEST(HostVirtualMemory, ReservesMapsAndUnmapsPages) {
  HostVirtualMemory vm;
  const std::size_t page = vm.granularity();
  EXPECT_GE(page, 4096u);
  EXPECT_EQ(page & (page - 1), 0u);
  EXPECT_GT(vm.physical_bytes(), 0u);
  EXPECT_EQ(vm.device(), Device::cpu());
  const std::size_t bytes = std::size_t{1} << 30;  // addresses only: nothing is committed yet
  auto* base = static_cast<unsigned char*>(vm.reserve(bytes));
  ASSERT_NE(base, nullptr);
  vm.map(base + 16 * page, 4 * page);
  std::memset(base + 16 * page, 0xab, 4 * page);
  EXPECT_EQ(base[16 * page + 3 * page], 0xab);
  vm.unmap(base + 16 * page, 4 * page);
  vm.map(base + 16 * page, 4 * page);
  EXPECT_EQ(base[16 * page], 0) << "unmapped pages come back zeroed";
  vm.unmap(base + 16 * page, 4 * page);
  vm.release(base, bytes);
}

TEST(HostVirtualMemory, BacksAPoolEndToEnd) {
  PoolOptions options;
  options.capacity = std::size_t{256} << 20;
  PoolResource pool(std::make_shared<HostVirtualMemory>(), options);
  EXPECT_EQ(pool.device(), Device::cpu());
  auto* a = static_cast<double*>(pool.allocate(1000 * sizeof(double)));
  auto* b = static_cast<double*>(pool.allocate(std::size_t{20} << 20));
  for (int i = 0; i < 1000; ++i) a[i] = i;
  std::memset(b, 0, std::size_t{20} << 20);
  EXPECT_EQ(a[999], 999.0);
  pool.deallocate(b, std::size_t{20} << 20);
  EXPECT_GT(pool.empty_cache(), 0u);
  EXPECT_EQ(a[500], 500.0) << "empty_cache must not touch live blocks";
  pool.deallocate(a, 1000 * sizeof(double));
  EXPECT_EQ(pool.stats().allocated_bytes.current, 0);
}

}  // namespace
}  // namespace tenax
