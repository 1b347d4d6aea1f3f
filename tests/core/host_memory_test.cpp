// The host memory available now: MemAvailable read strictly from a /proc/meminfo text, and the
// machine's own value within its RAM.
#include "tenax/core/memory/host_memory.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <string>

namespace tenax {
namespace {

TEST(HostMemory, MemAvailableIsReadFromItsOwnLineInBytes) {
  const std::string text =
      "MemTotal:       24563956 kB\nMemFree:        20000000 kB\n"
      "MemAvailable:   23012345 kB\nBuffers:           12345 kB\n";
  EXPECT_EQ(parse_mem_available(text), std::size_t{23012345} * 1024);
  EXPECT_EQ(parse_mem_available("MemAvailable: 0 kB"), std::size_t{0});
}

TEST(HostMemory, MissingMalformedOrOverflowingLinesAreUnknown) {
  for (const std::string text :
       {"", "MemTotal: 1 kB\n", "MemAvailable:\n", "MemAvailable: abc kB\n", "MemAvailable: 12\n",
        "MemAvailable: 12 MB\n", "XMemAvailable: 12 kB\n", "MemAvailable: -5 kB\n",
        "MemAvailable: 99999999999999999999999 kB\n", "MemAvailable: 18014398509481984 kB\n"}) {
    EXPECT_FALSE(parse_mem_available(text).has_value()) << "'" << text << "'";
  }
}

TEST(HostMemory, ThisMachinesValueIsWithinItsRam) {
  const auto available = host_memory_available();
  if (!available) GTEST_SKIP() << "this kernel has no /proc/meminfo MemAvailable";
  const auto ram = static_cast<std::size_t>(::sysconf(_SC_PHYS_PAGES)) *
                   static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_GT(*available, 0u);
  EXPECT_LE(*available, ram);
}

}  // namespace
}  // namespace tenax
