#include "tenax/core/memory/host_virtual_memory.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/memory/memory_stats.hpp"

namespace tenax {
namespace {

// The x86-64 and AArch64 (4 KiB base pages) PMD huge page.
constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

}  // namespace

std::size_t HostVirtualMemory::do_granularity() const noexcept {
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

std::size_t HostVirtualMemory::do_physical_bytes() const {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  TENAX_EXPECTS(pages > 0, EnvironmentError, "sysconf(_SC_PHYS_PAGES) cannot tell the RAM size",
                "set TENAX_MEMORY_LIMIT to the host memory tenax may use, e.g. 8GiB");
  return static_cast<std::size_t>(pages) * do_granularity();
}

std::size_t VirtualMemory::do_reservable_bytes() const { return SIZE_MAX; }

std::size_t HostVirtualMemory::do_reservable_bytes() const {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  // The process's address space in use now: the first field of /proc/self/statm, in pages.
  std::size_t used_pages = 0;
  if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%zu", &used_pages) != 1) used_pages = 0;
    std::fclose(statm);
  }
  const std::size_t used = used_pages * do_granularity();
  const auto cap = static_cast<std::size_t>(limit.rlim_cur);
  return cap > used ? cap - used : 0;
}

void* HostVirtualMemory::do_reserve(std::size_t bytes) {
  // PROT_NONE and MAP_NORESERVE: addresses only, no commit charge until pages are mapped. One
  // huge page more than asked, then the slack around a huge-page-aligned base is returned, so
  // that the pool's blocks (offsets from the base) can be backed by whole huge pages.
  const std::size_t padded = bytes + kHugePageBytes;
  void* raw = MAP_FAILED;
  if (padded > bytes) {
    raw = ::mmap(nullptr, padded, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  } else {
    errno = ENOMEM;  // bytes + one huge page overflows: no such range exists
  }
  void* base = raw;
  if (raw != MAP_FAILED) {
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
    const std::size_t head = aligned - start;
    if (head > 0) ::munmap(raw, head);
    if (kHugePageBytes - head > 0) {
      ::munmap(reinterpret_cast<void*>(aligned + bytes), kHugePageBytes - head);
    }
    base = reinterpret_cast<void*>(aligned);
  }
  if (base == MAP_FAILED) {
    const int err = errno;
    const std::size_t left = do_reservable_bytes();
    const std::string limit = left == SIZE_MAX ? std::string()
                                               : " (the address-space limit, ulimit -v, leaves " +
                                                     format_bytes(left) + ")";
    throw OutOfMemoryError("reserving " + format_bytes(bytes) +
                               " of host address space failed: mmap: " + std::strerror(err) + limit,
                           left == SIZE_MAX
                               ? "set TENAX_MEMORY_LIMIT to the host memory tenax may use"
                               : "raise the limit (ulimit -v unlimited), or set TENAX_MEMORY_LIMIT "
                                 "to at most " +
                                     format_bytes(static_cast<double>(left / 2)));
  }
  return base;
}

void HostVirtualMemory::do_release(void* base, std::size_t bytes) noexcept {
  ::munmap(base, bytes);
}

void HostVirtualMemory::do_map(void* addr, std::size_t bytes) {
  if (::mprotect(addr, bytes, PROT_READ | PROT_WRITE) != 0) {
    const int err = errno;
    throw OutOfMemoryError("mapping " + format_bytes(bytes) +
                               " of host memory failed: mprotect: " + std::strerror(err),
                           "free host memory, lower the batch size, or set TENAX_MEMORY_LIMIT "
                           "below the memory this machine can commit");
  }
  // Ask for transparent huge pages where the range covers at least one: the solvers and stencils
  // stream vectors of tens of MB, and with 4 KiB pages the TLB misses of those streams cost a
  // CSR CG iteration on the 2-D Poisson 2048^2 problem 21.4 ms instead of 18.4 ms on a 2-core
  // Xeon VM (bench/RESULTS.md). Advice only: where the kernel's THP mode is "never", or no huge
  // page is free, the range keeps 4 KiB pages; a failure changes nothing.
  if (bytes >= kHugePageBytes) (void)::madvise(addr, bytes, MADV_HUGEPAGE);
}

void HostVirtualMemory::do_unmap(void* addr, std::size_t bytes) noexcept {
  // MADV_DONTNEED returns the pages now; PROT_NONE makes a stray use fault instead of silently
  // committing them again.
  ::madvise(addr, bytes, MADV_DONTNEED);
  ::mprotect(addr, bytes, PROT_NONE);
}

}  // namespace tenax
