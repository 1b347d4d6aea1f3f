#include "tenax/core/memory/host_virtual_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/memory/memory_stats.hpp"

namespace tenax {

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

void* HostVirtualMemory::do_reserve(std::size_t bytes) {
  // PROT_NONE and MAP_NORESERVE: addresses only, no commit charge until pages are mapped.
  void* base =
      ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    throw OutOfMemoryError("reserving " + format_bytes(bytes) +
                               " of host address space failed: mmap: " + std::strerror(err),
                           "lower PoolOptions::address_space or TENAX_MEMORY_LIMIT, or raise "
                           "the address-space limit (ulimit -v)");
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
}

void HostVirtualMemory::do_unmap(void* addr, std::size_t bytes) noexcept {
  // MADV_DONTNEED returns the pages now; PROT_NONE makes a stray use fault instead of silently
  // committing them again.
  ::madvise(addr, bytes, MADV_DONTNEED);
  ::mprotect(addr, bytes, PROT_NONE);
}

}  // namespace tenax
