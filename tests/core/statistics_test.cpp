#include "tenax/core/memory/statistics_resource.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "core/fake_virtual_memory.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/limiting_resource.hpp"
#include "tenax/core/memory/memory_stats.hpp"

namespace tenax {
namespace {

using testing::CountingResource;

TEST(StatisticsResource, TracksCurrentPeakAndTotalBytesAndBlocks) {
  auto upstream = std::make_shared<CountingResource>();
  StatisticsResource stats(upstream);
  void* a = stats.allocate(100);
  void* b = stats.allocate(300);
  stats.deallocate(a, 100);
  void* c = stats.allocate(50);
  auto n = stats.counters();
  EXPECT_EQ(n.bytes.current, 350);
  EXPECT_EQ(n.bytes.peak, 400);
  EXPECT_EQ(n.bytes.total, 450);
  EXPECT_EQ(n.blocks.current, 2);
  EXPECT_EQ(n.blocks.peak, 2);
  EXPECT_EQ(n.blocks.total, 3);
  stats.deallocate(b, 300);
  stats.reset_peak();
  EXPECT_EQ(stats.counters().bytes.peak, 50);
  stats.deallocate(c, 50);
  EXPECT_EQ(stats.counters().bytes.current, 0);
  EXPECT_EQ(upstream->allocate_calls, 3);
  EXPECT_EQ(upstream->deallocate_calls, 3);
}

TEST(StatisticsResource, CountsUpstreamFailuresAndLetsThemThrough) {
  auto limited = std::make_shared<LimitingResource>(std::make_shared<CountingResource>(), 512);
  StatisticsResource stats(limited);
  EXPECT_THROW((void)stats.allocate(1024), OutOfMemoryError);
  EXPECT_EQ(stats.counters().failures, 1u);
  EXPECT_EQ(stats.counters().bytes.current, 0);
  EXPECT_EQ(stats.device(), Device::cpu());
}

TEST(StatCounter, PeakFollowsCurrentAndTotalSumsIncreases) {
  StatCounter c;
  c.increase(5);
  c.decrease(3);
  c.increase(1);
  EXPECT_EQ(c.current, 3);
  EXPECT_EQ(c.peak, 5);
  EXPECT_EQ(c.total, 6);
  c.reset_peak();
  EXPECT_EQ(c.peak, 3);
}

TEST(MemoryStats, FormatBytesUsesBinaryUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(std::size_t{3} << 30), "3.00 GiB");
}

TEST(MemoryStats, SummaryHasOneRowPerQuantity) {
  MemoryStats s;
  s.capacity = std::size_t{1} << 30;
  s.allocated_bytes.increase(2048);
  s.reserved_bytes.increase(4096);
  s.reserved_unallocated = 2048;
  s.largest_free_block = 1024;
  s.fragmentation = 0.5;
  s.free_blocks = 3;
  s.ooms = 2;
  const std::string text = format_memory_summary(s);
  EXPECT_NE(text.find("Allocated memory"), std::string::npos);
  EXPECT_NE(text.find("2.00 KiB"), std::string::npos);
  EXPECT_NE(text.find("Reserved memory"), std::string::npos);
  EXPECT_NE(text.find("4.00 KiB"), std::string::npos);
  EXPECT_NE(text.find("0.500"), std::string::npos);
  EXPECT_NE(text.find("OOMs 2"), std::string::npos);
  EXPECT_GT(std::count(text.begin(), text.end(), '\n'), 10);
}

}  // namespace
}  // namespace tenax
