/// A virtual memory arena: reserve one large range of addresses up front, then back pieces of it
/// with physical pages on demand and give the pages back without giving up the addresses.
/// @file
/// This is what lets the pool keep every block in one contiguous address range, so that freed
/// neighbours always merge, and return memory to the system (empty_cache) without moving any
/// live block. Implementations: HostVirtualMemory (mmap/mprotect/madvise) and the CUDA arena
/// (cuMemAddressReserve/cuMemCreate/cuMemMap, see cuda_memory.hpp); tests use a fake.
///
/// Contract:
///  - granularity() is a power of two; reserve/map/unmap lengths and addresses are multiples.
///  - reserve(bytes) returns the base of `bytes` of address space with nothing mapped, or throws
///    OutOfMemoryError. release(base, bytes) gives the range back; everything must be unmapped.
///  - map(addr, bytes) makes [addr, addr + bytes) readable and writable on device(); it throws
///    OutOfMemoryError when the pages cannot be had, and maps nothing of a failed call.
///    unmap(addr, bytes) returns the pages; their contents are lost. Ranges passed to unmap are
///    unions of ranges passed to map, split only at granularity() boundaries.
///  - synchronize() waits until no queued device work can touch the arena's pages (a no-op on
///    the host); the pool calls it before it unmaps pages or hands a block to another stream.
///  - Not thread-safe: the pool serialises calls under its own lock.
#pragma once

#include <cstddef>

#include "tenax/core/device.hpp"

namespace tenax {

/// The arena interface (see the contract in virtual_memory.hpp). Callers use the public
/// non-virtual functions; an implementation overrides the private `do_*` hooks
/// (do_synchronize() only when device work can touch its pages). Non-copyable; shared as
/// `std::shared_ptr<VirtualMemory>`.
class VirtualMemory {
 public:
  VirtualMemory() = default;
  VirtualMemory(const VirtualMemory&) = delete;
  VirtualMemory& operator=(const VirtualMemory&) = delete;
  virtual ~VirtualMemory() = default;

  /// The device whose memory the arena maps (the CPU for host arenas, pinned ones included).
  [[nodiscard]] Device device() const noexcept { return do_device(); }
  /// Bytes, a power of two: the unit of every length and address passed to reserve(), map()
  /// and unmap().
  [[nodiscard]] std::size_t granularity() const noexcept { return do_granularity(); }
  /// Bytes of physical memory behind the arena (host RAM, device memory): the default capacity.
  [[nodiscard]] std::size_t physical_bytes() const { return do_physical_bytes(); }
  /// Bytes of address space this process may still reserve (what an address-space limit such
  /// as `ulimit -v` leaves); SIZE_MAX when nothing limits it (the default).
  [[nodiscard]] std::size_t reservable_bytes() const { return do_reservable_bytes(); }

  /// Reserves `bytes` of address space with nothing mapped and returns its base; throws
  /// OutOfMemoryError when the addresses cannot be had.
  [[nodiscard]] void* reserve(std::size_t bytes) { return do_reserve(bytes); }
  /// Gives back a range that reserve() returned, with the same `bytes`; nothing in it may be
  /// mapped any more.
  void release(void* base, std::size_t bytes) noexcept { do_release(base, bytes); }
  /// Backs [addr, addr + bytes) of a reserved range with pages, readable and writable on
  /// device(). Throws OutOfMemoryError when the pages cannot be had; a failed call maps nothing.
  void map(void* addr, std::size_t bytes) { do_map(addr, bytes); }
  /// Returns the pages of [addr, addr + bytes), a union of mapped ranges split only at
  /// granularity() boundaries; their contents are lost, the addresses stay reserved.
  void unmap(void* addr, std::size_t bytes) noexcept { do_unmap(addr, bytes); }
  /// Waits until no queued device work can touch the arena's pages; a no-op on the host.
  void synchronize() noexcept { do_synchronize(); }

 private:
  [[nodiscard]] virtual Device do_device() const noexcept = 0;
  [[nodiscard]] virtual std::size_t do_granularity() const noexcept = 0;
  [[nodiscard]] virtual std::size_t do_physical_bytes() const = 0;
  virtual void* do_reserve(std::size_t bytes) = 0;
  virtual void do_release(void* base, std::size_t bytes) noexcept = 0;
  virtual void do_map(void* addr, std::size_t bytes) = 0;
  virtual void do_unmap(void* addr, std::size_t bytes) noexcept = 0;
  virtual void do_synchronize() noexcept {}
  [[nodiscard]] virtual std::size_t do_reservable_bytes() const;
};

}  // namespace tenax
