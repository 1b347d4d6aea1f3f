#include "tenax/core/memory/limiting_resource.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "core/fake_virtual_memory.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/host_resource.hpp"

namespace tenax {
namespace {

using testing::CountingResource;

TEST(LimitingResource, RequestAtLimitMinusOneSucceedsAndAboveFailsWithoutCallingUpstream) {
  auto upstream = std::make_shared<CountingResource>();
  const std::size_t limit = 1 << 20;
  LimitingResource limited(upstream, limit);
  void* p = limited.allocate(limit - 1);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(upstream->allocate_calls, 1);
  limited.deallocate(p, limit - 1);
  EXPECT_EQ(limited.used(), 0u);
  try {
    (void)limited.allocate(limit + 1);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(e.cause().find(std::to_string(limit + 1) + " B"), std::string::npos) << e.cause();
    EXPECT_NE(e.cause().find("limit of 1.00 MiB"), std::string::npos) << e.cause();
    EXPECT_NE(e.cause().find("already in use"), std::string::npos) << e.cause();
  }
  EXPECT_EQ(upstream->allocate_calls, 1) << "the upstream must not be asked";
}

TEST(LimitingResource, RequestsNearSizeMaxAreRefusedNotChargedAsZero) {
  auto upstream = std::make_shared<CountingResource>();
  LimitingResource limited(upstream, std::size_t{1} << 20);
  EXPECT_THROW((void)limited.allocate(SIZE_MAX - 1), OutOfMemoryError);
  EXPECT_EQ(upstream->allocate_calls, 0);
  EXPECT_EQ(limited.used(), 0u);
}

TEST(LimitingResource, CountsOutstandingBytesAndFreesMakeRoom) {
  auto upstream = std::make_shared<CountingResource>();
  LimitingResource limited(upstream, 4096);
  void* a = limited.allocate(2048);
  void* b = limited.allocate(2048);
  EXPECT_EQ(limited.used(), 4096u);
  EXPECT_THROW((void)limited.allocate(1), OutOfMemoryError);
  limited.deallocate(a, 2048);
  void* c = limited.allocate(1000);
  EXPECT_EQ(limited.used(), 2048u + 1024u);  // charged rounded up to kAlignment
  limited.deallocate(b, 2048);
  limited.deallocate(c, 1000);
  EXPECT_EQ(limited.used(), 0u);
  EXPECT_EQ(upstream->outstanding, 0u);
}

TEST(LimitingResource, UpstreamFailureGivesTheBytesBack) {
  auto upstream = std::make_shared<CountingResource>();
  auto inner = std::make_shared<LimitingResource>(upstream, 1024);
  LimitingResource outer(inner, 1 << 20);
  EXPECT_THROW((void)outer.allocate(4096), OutOfMemoryError);
  EXPECT_EQ(outer.used(), 0u);
}

TEST(LimitingResource, ConcurrentRequestsNeverOvershootTheLimit) {
  LimitingResource limited(std::make_shared<HostResource>(), 64 * 256);
  std::vector<std::thread> threads;
  std::atomic<bool> overshoot{false};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        try {
          void* p = limited.allocate(256);
          if (limited.used() > limited.limit()) overshoot = true;
          limited.deallocate(p, 256);
        } catch (const OutOfMemoryError&) {
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(overshoot.load());
  EXPECT_EQ(limited.used(), 0u);
}

TEST(LimitingResource, ForwardsDeviceAndReleaseCacheAndRejectsNull) {
  auto upstream = std::make_shared<CountingResource>();
  LimitingResource limited(upstream, 100);
  EXPECT_EQ(limited.device(), Device::cpu());
  EXPECT_EQ(limited.upstream(), upstream);
  EXPECT_EQ(limited.release_cache(), 0u);
  EXPECT_THROW(LimitingResource(nullptr, 1), UsageError);
}

}  // namespace
}  // namespace tenax
