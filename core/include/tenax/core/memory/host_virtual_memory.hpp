/// Virtual memory arena over host pages: mmap(PROT_NONE, MAP_NORESERVE) reserves addresses
/// without committing memory, mprotect(read|write) maps, madvise(MADV_DONTNEED) plus @file
/// mprotect(PROT_NONE) unmaps. Pages are committed by the kernel on first touch. The base is
/// aligned to 2 MiB and every mapped range of at least 2 MiB is advised MADV_HUGEPAGE, so that
/// where the kernel's transparent huge pages are "madvise" or "always" the pool's large blocks
/// get huge pages (fewer TLB misses for the streaming kernels); with "never" nothing changes.
#pragma once

#include "tenax/core/memory/virtual_memory.hpp"

namespace tenax {

/// The host arena described in host_virtual_memory.hpp: device() is the CPU, granularity() the
/// system page size, physical_bytes() the machine's RAM (EnvironmentError when the system cannot
/// tell it). reserve() and map() throw OutOfMemoryError naming the failed system call.
class HostVirtualMemory final : public VirtualMemory {
 private:
  [[nodiscard]] Device do_device() const noexcept override { return Device::cpu(); }
  [[nodiscard]] std::size_t do_granularity() const noexcept override;
  [[nodiscard]] std::size_t do_physical_bytes() const override;
  [[nodiscard]] std::size_t do_reservable_bytes() const override;
  void* do_reserve(std::size_t bytes) override;
  void do_release(void* base, std::size_t bytes) noexcept override;
  void do_map(void* addr, std::size_t bytes) override;
  void do_unmap(void* addr, std::size_t bytes) noexcept override;
};

}  // namespace tenax
