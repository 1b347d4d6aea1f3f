#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/history_resource.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/fault_injecting_resource.hpp"
#include "tenax/core/memory/pool_resource.hpp"
#include "tenax/core/memory/resource_adaptor.hpp"

namespace tenax {
namespace {

TEST(ParseByteSize, AcceptsNumbersWithDecimalAndBinaryUnits) {
  EXPECT_EQ(parse_byte_size("1073741824"), 1073741824u);
  EXPECT_EQ(parse_byte_size("2GiB"), std::size_t{2} << 30);
  EXPECT_EQ(parse_byte_size("512MiB"), std::size_t{512} << 20);
  EXPECT_EQ(parse_byte_size("1.5GB"), 1500000000u);
  EXPECT_EQ(parse_byte_size("1.5 gib"), std::size_t{3} << 29);
  EXPECT_EQ(parse_byte_size("4G"), std::size_t{4} << 30);
  EXPECT_EQ(parse_byte_size("64k"), 65536u);
  EXPECT_EQ(parse_byte_size("10KB"), 10000u);
  EXPECT_EQ(parse_byte_size(" 100 B "), 100u);
  EXPECT_EQ(parse_byte_size("1TiB"), std::size_t{1} << 40);
}

TEST(ParseByteSize, RejectsAnythingElseGivingTheSyntax) {
  for (const char* bad :
       {"", "GiB", "-1GiB", "2 GiBs", "1.2.3", "lots", "2GiB4", "1e9", "9e99TB"}) {
    try {
      (void)parse_byte_size(bad);
      ADD_FAILURE() << "'" << bad << "' should not parse";
    } catch (const UsageError& e) {
      EXPECT_NE(e.fix().find("2GiB, 512MiB, 1.5GB"), std::string::npos) << e.what();
    }
  }
}

TEST(MemoryLimit, ReadsTenaxMemoryLimit) {
  ::unsetenv("TENAX_MEMORY_LIMIT");
  EXPECT_EQ(memory_limit_from_environment(), 0u);
  ::setenv("TENAX_MEMORY_LIMIT", "1.5GiB", 1);
  EXPECT_EQ(memory_limit_from_environment(), std::size_t{3} << 29);
  ::setenv("TENAX_MEMORY_LIMIT", "half", 1);
  try {
    (void)memory_limit_from_environment();
    ADD_FAILURE() << "a bad limit must be rejected";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find("TENAX_MEMORY_LIMIT"), std::string::npos);
  }
  ::setenv("TENAX_MEMORY_LIMIT", "0", 1);
  EXPECT_THROW((void)memory_limit_from_environment(), UsageError);
  ::unsetenv("TENAX_MEMORY_LIMIT");
}

TEST(DefaultResource, CpuStackIsAPoolCappedByTheLimit) {
  ::setenv("TENAX_MEMORY_LIMIT", "64MiB", 1);
  ::unsetenv("TENAX_FAULTS");
  auto resource = make_default_resource(Device::cpu());
  ::unsetenv("TENAX_MEMORY_LIMIT");
  // The history on top, the pool right under it.
  auto* history = dynamic_cast<HistoryResource*>(resource.get());
  ASSERT_NE(history, nullptr);
  auto* pool = dynamic_cast<PoolResource*>(history->upstream().get());
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->capacity(), std::size_t{64} << 20);
  void* p = resource->allocate(std::size_t{60} << 20);
  EXPECT_THROW((void)resource->allocate(std::size_t{8} << 20), OutOfMemoryError);
  resource->deallocate(p, std::size_t{60} << 20);
}

TEST(DefaultResource, AllocFaultsAddAnInjectingResourceOnTop) {
  ::setenv("TENAX_FAULTS", "oom@alloc=2,nan@step=3", 1);
  auto resource = make_default_resource(Device::cpu());
  ::unsetenv("TENAX_FAULTS");
  // Under the history, which records the injected failures too.
  auto* history = dynamic_cast<HistoryResource*>(resource.get());
  ASSERT_NE(history, nullptr);
  ASSERT_NE(dynamic_cast<FaultInjectingResource*>(history->upstream().get()), nullptr);
  EXPECT_NE(find_in_stack<PoolResource>(resource.get()), nullptr);
  void* a = resource->allocate(100);
  EXPECT_THROW((void)resource->allocate(100), OutOfMemoryError);
  void* c = resource->allocate(100);
  resource->deallocate(a, 100);
  resource->deallocate(c, 100);
  const std::vector<AllocationRecord> records = history->records();
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[1].kind, AllocationRecord::Kind::failed);
  EXPECT_EQ(records[1].bytes, 100u);
  EXPECT_EQ(records[4].kind, AllocationRecord::Kind::free);
  EXPECT_EQ(records[4].outstanding, 0u);
}

TEST(DefaultResource, StatsSummaryAndEmptyCacheReachThePool) {
  const Device cpu = Device::cpu();
  auto resource = current_resource(cpu);
  void* p = resource->allocate(std::size_t{8} << 20);
  const MemoryStats stats = memory_stats(cpu);
  EXPECT_GE(stats.allocated_bytes.current, std::int64_t{8} << 20);
  EXPECT_NE(memory_summary(cpu).find("Allocated memory"), std::string::npos);
  resource->deallocate(p, std::size_t{8} << 20);
  EXPECT_GT(empty_cache(cpu), 0u);
  EXPECT_EQ(memory_stats(cpu).reserved_bytes.current, 0) << memory_summary(cpu);
}

TEST(DefaultResource, CudaStackNeedsAUsableDevice) {
  if (cuda::availability().usable) GTEST_SKIP() << "a usable GPU is present";
  EXPECT_THROW((void)make_default_resource(Device::cuda(0)), Error);
}

}  // namespace
}  // namespace tenax
