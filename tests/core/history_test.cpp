// HistoryResource: the last allocations, frees and failed requests with their step, tag and the
// bytes outstanding, in a ring of fixed size; memory_history_json gives them with the pool's
// block map.
#include "tenax/core/memory/history_resource.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/fake_virtual_memory.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/pool_resource.hpp"

namespace tenax {
namespace {

std::shared_ptr<PoolResource> small_pool() {
  PoolOptions options;
  options.capacity = std::size_t{8} << 20;
  return std::make_shared<PoolResource>(
      std::make_shared<testing::FakeVirtualMemory>(std::size_t{1} << 30, Device::cpu()), options);
}

TEST(HistoryResource, RecordsAllocationsFreesAndFailuresWithStepAndTag) {
  HistoryResource history(small_pool(), 16);
  set_allocation_step(7);
  void* a = nullptr;
  {
    const AllocationTag outer("step");
    a = history.allocate(1000);
    {
      const AllocationTag inner("checkpoint");
      EXPECT_THROW((void)history.allocate(std::size_t{64} << 20), OutOfMemoryError);
    }
  }
  set_allocation_step(8);
  history.deallocate(a, 1000);
  set_allocation_step(-1);

  const std::vector<AllocationRecord> records = history.records();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].kind, AllocationRecord::Kind::allocate);
  EXPECT_EQ(records[0].bytes, 1000u);
  EXPECT_EQ(records[0].step, 7);
  EXPECT_STREQ(records[0].tag, "step");
  EXPECT_EQ(records[0].outstanding, 1000u);
  EXPECT_EQ(records[1].kind, AllocationRecord::Kind::failed);
  EXPECT_EQ(records[1].bytes, std::size_t{64} << 20);
  EXPECT_EQ(records[1].address, 0u);
  EXPECT_STREQ(records[1].tag, "checkpoint") << "the innermost tag";
  EXPECT_EQ(records[1].outstanding, 1000u);
  EXPECT_EQ(records[2].kind, AllocationRecord::Kind::free);
  EXPECT_EQ(records[2].step, 8);
  EXPECT_STREQ(records[2].tag, "") << "outside every tag";
  EXPECT_EQ(records[2].outstanding, 0u);
  EXPECT_LE(records[0].seconds, records[2].seconds);
  EXPECT_EQ(std::string(to_string(AllocationRecord::Kind::failed)), "failed");
}

TEST(HistoryResource, KeepsTheLastRecordsInABoundedRing) {
  HistoryResource history(small_pool(), 4);
  for (std::size_t i = 1; i <= 10; ++i) history.deallocate(history.allocate(i * 512), i * 512);
  EXPECT_EQ(history.total(), 20u);
  const std::vector<AllocationRecord> records = history.records();
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].bytes, 9u * 512) << "oldest first";
  EXPECT_EQ(records[0].kind, AllocationRecord::Kind::allocate);
  EXPECT_EQ(records[3].bytes, 10u * 512);
  EXPECT_EQ(records[3].kind, AllocationRecord::Kind::free);
  EXPECT_THROW(HistoryResource(small_pool(), 0), UsageError);
}

TEST(HistoryResource, TheDefaultStackWritesItsHistoryAndBlockMapAsJson) {
  const Device cpu = Device::cpu();
  auto resource = current_resource(cpu);
  void* p = resource->allocate(4096);
  const std::string json = memory_history_json(cpu);
  resource->deallocate(p, 4096);
  EXPECT_EQ(json.rfind("{\"device\":\"cpu\"", 0), 0u) << json.substr(0, 200);
  for (const char* key : {"\"stats\":{\"capacity\":", "\"records\":[", "\"total_records\":",
                          "\"blocks\":[{\"offset\":0,", "\"kind\":\"allocate\",\"bytes\":4096"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json.substr(0, 400);
  }
}

}  // namespace
}  // namespace tenax
