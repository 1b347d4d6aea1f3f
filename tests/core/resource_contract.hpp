// The contract every memory resource keeps (memory_resource.hpp), written once and passed by
// every resource (RMM's pattern): resource_contract_test.cpp instantiates it for the host
// resources and adaptors, resource_contract_gpu_test.cpp for the CUDA ones (the device pool over
// virtual memory, the stream-ordered allocator, pinned host memory and its pool), skipped with the
// reason where no GPU is usable.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tenax/core/copy.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory_resource.hpp"

namespace tenax::testing {

struct ResourceCase {
  std::string name;                                       // the instance's name (letters only)
  std::function<std::shared_ptr<MemoryResource>()> make;  // a fresh resource, or the shared one
};

inline std::string resource_case_name(const ::testing::TestParamInfo<ResourceCase>& info) {
  return info.param.name;
}

class ResourceContract : public ::testing::TestWithParam<ResourceCase> {
 protected:
  void SetUp() override {
    try {
      resource_ = GetParam().make();
    } catch (const EnvironmentError& e) {
      GTEST_SKIP() << GetParam().name << " cannot be made here: " << e.what();
    } catch (const NotCompiledError& e) {
      GTEST_SKIP() << GetParam().name << " is not in this build: " << e.what();
    }
    ASSERT_NE(resource_, nullptr);
  }

  // Writes `bytes` bytes of a pattern seeded by `seed` at `ptr` (on the resource's device) and
  // reads them back: whether the memory holds what was written.
  [[nodiscard]] bool holds_a_pattern(void* ptr, std::size_t bytes, std::uint8_t seed) const {
    std::vector<std::uint8_t> pattern(bytes), back(bytes);
    for (std::size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<std::uint8_t>(i * 31 + seed);
    copy_bytes(ptr, resource_->device(), pattern.data(), Device::cpu(), bytes);
    copy_bytes(back.data(), Device::cpu(), ptr, resource_->device(), bytes);
    return back == pattern;
  }

  std::shared_ptr<MemoryResource> resource_;
};

TEST_P(ResourceContract, ZeroBytesIsNullAndNullIsIgnored) {
  EXPECT_EQ(resource_->allocate(0), nullptr);
  resource_->deallocate(nullptr, 0);
  resource_->deallocate(nullptr, 64);
}

TEST_P(ResourceContract, BlocksAreAlignedUsableAndDisjoint) {
  const std::size_t sizes[] = {
      1, 255, 256, 257, 4096, 12345, (std::size_t{1} << 20) + 3, std::size_t{8} << 20};
  std::vector<std::pair<std::uintptr_t, std::size_t>> live;
  std::uint8_t seed = 1;
  for (int round = 0; round < 3; ++round) {
    for (const std::size_t bytes : sizes) {
      void* ptr = resource_->allocate(bytes);
      ASSERT_NE(ptr, nullptr) << bytes << " bytes";
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(ptr) % MemoryResource::kAlignment, 0u)
          << bytes << " bytes at " << ptr;
      EXPECT_TRUE(holds_a_pattern(ptr, bytes, seed++)) << bytes << " bytes";
      live.emplace_back(reinterpret_cast<std::uintptr_t>(ptr), bytes);
    }
  }
  std::sort(live.begin(), live.end());
  for (std::size_t i = 1; i < live.size(); ++i) {
    EXPECT_LE(live[i - 1].first + live[i - 1].second, live[i].first)
        << "blocks of " << live[i - 1].second << " and " << live[i].second << " bytes overlap";
  }
  for (const auto& [addr, bytes] : live)
    resource_->deallocate(reinterpret_cast<void*>(addr), bytes);
}

TEST_P(ResourceContract, FreedMemoryIsUsableAgainAndTheCacheCanBeReleased) {
  for (int round = 0; round < 50; ++round) {
    const std::size_t bytes = (std::size_t{1} << (round % 22)) + static_cast<std::size_t>(round);
    void* ptr = resource_->allocate(bytes);
    ASSERT_NE(ptr, nullptr);
    if (round % 10 == 0) {
      EXPECT_TRUE(holds_a_pattern(ptr, std::min<std::size_t>(bytes, 4096), 7));
    }
    resource_->deallocate(ptr, bytes);
  }
  (void)resource_->release_cache();
  void* ptr = resource_->allocate(1 << 20);
  EXPECT_TRUE(holds_a_pattern(ptr, 1 << 20, 3));
  resource_->deallocate(ptr, 1 << 20);
}

// A request no machine has is an OutOfMemoryError (never nullptr, never std::bad_alloc), and
// the resource works afterwards.
TEST_P(ResourceContract, AnImpossibleRequestIsOutOfMemoryAndTheResourceGoesOn) {
  for (const std::size_t bytes : {SIZE_MAX / 2, SIZE_MAX - 7, std::size_t{1} << 52}) {
    EXPECT_THROW((void)resource_->allocate(bytes), OutOfMemoryError) << bytes << " bytes";
  }
  void* ptr = resource_->allocate(4096);
  ASSERT_NE(ptr, nullptr);
  EXPECT_TRUE(holds_a_pattern(ptr, 4096, 9));
  resource_->deallocate(ptr, 4096);
}

TEST_P(ResourceContract, ThreadsAllocateAndFreeAtOnce) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        std::vector<std::pair<void*, std::size_t>> mine;
        for (int round = 0; round < kRounds; ++round) {
          const std::size_t bytes =
              64 + static_cast<std::size_t>((round * 7919 + t * 104729) % 70000);
          void* ptr = resource_->allocate(bytes);
          if (ptr == nullptr || !holds_a_pattern(ptr, 64, static_cast<std::uint8_t>(t))) ++failures;
          mine.emplace_back(ptr, bytes);
          if (round % 3 == 2) {
            resource_->deallocate(mine.front().first, mine.front().second);
            mine.erase(mine.begin());
          }
        }
        for (const auto& [ptr, bytes] : mine) resource_->deallocate(ptr, bytes);
      } catch (...) {
        ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace tenax::testing
