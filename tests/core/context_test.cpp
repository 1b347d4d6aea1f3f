#include "tenax/core/context.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"

namespace tenax {
namespace {

using Range = std::pair<std::int64_t, std::int64_t>;

std::vector<Range> chunks_of(CpuContext& context, std::int64_t begin, std::int64_t end,
                             std::int64_t min_chunk) {
  std::mutex mutex;
  std::vector<Range> chunks;
  context.parallel_for(begin, end, min_chunk, [&](std::int64_t b, std::int64_t e) {
    std::lock_guard lock(mutex);
    chunks.emplace_back(b, e);
  });
  std::sort(chunks.begin(), chunks.end());
  return chunks;
}

TEST(CpuContext, RejectsNonPositiveThreadCounts) {
  EXPECT_THROW(CpuContext(0), UsageError);
  EXPECT_THROW(CpuContext(-3), UsageError);
}

TEST(CpuContext, InstanceHasAtLeastOneThread) {
  EXPECT_GE(CpuContext::instance().num_threads(), 1);
}

TEST(CpuContext, CoversEveryIndexExactlyOnce) {
  CpuContext context(4);
  for (std::int64_t n : {0, 1, 3, 4, 5, 17, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    context.parallel_for(0, n, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
    });
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<std::size_t>(i)], 1) << n;
  }
}

TEST(CpuContext, OffsetRangesAndEmptyRanges) {
  CpuContext context(3);
  EXPECT_TRUE(chunks_of(context, 10, 10, 1).empty());
  EXPECT_TRUE(chunks_of(context, 10, 5, 1).empty());
  const auto chunks = chunks_of(context, -5, 7, 1);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks.front().first, -5);
  EXPECT_EQ(chunks.back().second, 7);
}

TEST(CpuContext, SplitIsStaticContiguousAndRespectsMinChunk) {
  CpuContext context(4);
  // 10 indices on 4 threads: 3, 3, 2, 2.
  EXPECT_EQ(chunks_of(context, 0, 10, 1), (std::vector<Range>{{0, 3}, {3, 6}, {6, 8}, {8, 10}}));
  // min_chunk 4 allows only 2 chunks of 10 indices.
  EXPECT_EQ(chunks_of(context, 0, 10, 4), (std::vector<Range>{{0, 5}, {5, 10}}));
  // Fewer indices than min_chunk: one chunk.
  EXPECT_EQ(chunks_of(context, 0, 3, 8), (std::vector<Range>{{0, 3}}));
  // Repeated calls split identically.
  const auto first = chunks_of(context, 0, 12345, 7);
  for (int repeat = 0; repeat < 20; ++repeat) EXPECT_EQ(chunks_of(context, 0, 12345, 7), first);
  EXPECT_EQ(first.size(), 4u);
}

TEST(CpuContext, SingleThreadRunsOneChunk) {
  CpuContext context(1);
  EXPECT_EQ(chunks_of(context, 0, 100, 1), (std::vector<Range>{{0, 100}}));
}

TEST(CpuContext, ExceptionsPropagateAndThePoolStaysUsable) {
  CpuContext context(4);
  EXPECT_THROW(context.parallel_for(0, 100, 1,
                                    [](std::int64_t b, std::int64_t) {
                                      if (b >= 50) throw std::runtime_error("late chunk");
                                    }),
               std::runtime_error);
  // The calling thread's own chunk (the first) failing is reported too.
  EXPECT_THROW(context.parallel_for(0, 100, 1,
                                    [](std::int64_t b, std::int64_t) {
                                      if (b == 0) throw UsageError("first chunk", "none");
                                    }),
               UsageError);
  // When several chunks fail the lowest chunk's error wins, every time.
  for (int repeat = 0; repeat < 10; ++repeat) {
    try {
      context.parallel_for(0, 4, 1, [](std::int64_t b, std::int64_t) {
        throw std::runtime_error("chunk " + std::to_string(b));
      });
      FAIL() << "expected an exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "chunk 0");
    }
  }
  std::atomic<std::int64_t> sum = 0;
  context.parallel_for(0, 1000, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum, 999 * 1000 / 2);
}

TEST(CpuContext, NestedCallsRunSeriallyWithTheSameSplit) {
  CpuContext context(4);
  std::atomic<std::int64_t> total = 0;
  std::atomic<int> inner_calls = 0;
  context.parallel_for(0, 8, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      std::vector<Range> inner;  // no lock: nested chunks run serially on this thread
      context.parallel_for(0, 10, 1, [&](std::int64_t ib, std::int64_t ie) {
        inner.emplace_back(ib, ie);
        for (std::int64_t j = ib; j < ie; ++j) total += j;
      });
      inner_calls += 1;
      EXPECT_EQ(inner, (std::vector<Range>{{0, 3}, {3, 6}, {6, 8}, {8, 10}}));
    }
  });
  EXPECT_EQ(inner_calls, 8);
  EXPECT_EQ(total, 8 * 45);
}

TEST(CpuContext, ManyConsecutiveCalls) {
  CpuContext context(4);
  std::atomic<std::int64_t> count = 0;
  for (int call = 0; call < 2000; ++call) {
    context.parallel_for(0, 4, 1, [&](std::int64_t b, std::int64_t e) { count += e - b; });
  }
  EXPECT_EQ(count, 8000);
}

TEST(CpuContext, ThreadCountFromEnvironmentIsValidated) {
  // Each case runs in a freshly started child, where the process-wide instance does not exist yet.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("TENAX_NUM_THREADS", "zero", 1);
        try {
          (void)CpuContext::instance();
        } catch (const UsageError& e) {
          const std::string what = e.what();
          std::exit(what.find("TENAX_NUM_THREADS") != std::string::npos ? 3 : 4);
        }
        std::exit(5);
      },
      testing::ExitedWithCode(3), "");
  EXPECT_EXIT(
      {
        setenv("TENAX_NUM_THREADS", "3", 1);
        std::exit(CpuContext::instance().num_threads());
      },
      testing::ExitedWithCode(3), "");
  for (const char* bad : {"0", "-2", "", "4x", "99999"}) {
    EXPECT_EXIT(
        {
          setenv("TENAX_NUM_THREADS", bad, 1);
          try {
            (void)CpuContext::instance();
          } catch (const UsageError&) {
            std::exit(3);
          }
          std::exit(4);
        },
        testing::ExitedWithCode(3), "")
        << bad;
  }
}

TEST(SelectDevice, CpuIsAlwaysAvailable) { EXPECT_EQ(select_device("cpu"), Device::cpu()); }

TEST(SelectDevice, RejectsUnknownRequests) {
  EXPECT_THROW((void)select_device("gpu"), UsageError);
  EXPECT_THROW((void)select_device("cuda:x"), UsageError);
  EXPECT_THROW((void)select_device(""), UsageError);
}

TEST(SelectDevice, AutoFallsBackToTheCpuWithOneLineSayingWhy) {
  const cuda::Availability& cuda = cuda::availability();
  testing::internal::CaptureStderr();
  const Device device = select_device("auto");
  const std::string err = testing::internal::GetCapturedStderr();
  if (cuda.usable) {
    EXPECT_EQ(device, Device::cuda(0));
    EXPECT_TRUE(err.empty()) << err;
    return;
  }
  EXPECT_EQ(device, Device::cpu());
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find(cuda.reason), std::string::npos) << err;
  if (!cuda::compiled()) {
    EXPECT_NE(err.find("without CUDA"), std::string::npos) << err;
  } else if (cuda.driver_version == 0) {
    EXPECT_NE(err.find("driver"), std::string::npos) << err;
  }
}

TEST(SelectDevice, ExplicitCudaSaysWhyItIsUnusable) {
  const cuda::Availability& cuda = cuda::availability();
  if (!cuda::compiled()) {
    EXPECT_THROW((void)select_device("cuda"), NotCompiledError);
    EXPECT_THROW((void)select_device("cuda:1"), NotCompiledError);
    return;
  }
  if (cuda.usable) {
    EXPECT_EQ(select_device("cuda"), Device::cuda(0));
    EXPECT_THROW((void)select_device("cuda:" + std::to_string(cuda.device_count)),
                 EnvironmentError);
    return;
  }
  try {
    (void)select_device("cuda:0");
    FAIL() << "expected EnvironmentError";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(e.cause().find(cuda.reason), std::string::npos) << e.what();
    EXPECT_FALSE(e.fix().empty());
    if (cuda.driver_version == 0) {
      EXPECT_NE(e.cause().find("no NVIDIA driver"), std::string::npos) << e.what();
    }
  }
}

TEST(CudaContext, UnusableCudaRaisesInsteadOfHandingOutAContext) {
  if (cuda::availability().usable) GTEST_SKIP() << "CUDA is usable here; see the gpu tests";
  if (cuda::compiled()) {
    EXPECT_THROW((void)cuda::context(Device::cuda(0)), EnvironmentError);
  } else {
    EXPECT_THROW((void)cuda::context(Device::cuda(0)), NotCompiledError);
  }
}

}  // namespace
}  // namespace tenax
