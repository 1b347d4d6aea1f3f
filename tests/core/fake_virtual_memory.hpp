// Test doubles for memory tests: a virtual memory arena that counts and checks every call and
// can be told to fail, and a counting upstream resource.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/memory/virtual_memory.hpp"
#include "tenax/core/memory_resource.hpp"

namespace tenax::testing {

// Backs the reserved range with readable, writable, never-committed host memory so tests can
// write into blocks; keeps its own book of what is "mapped" and records misuse in `errors`.
class FakeVirtualMemory final : public VirtualMemory {
 public:
  explicit FakeVirtualMemory(std::size_t physical = std::size_t{1} << 30,
                             Device device = Device::cpu(), std::size_t granularity = 4096)
      : physical_(physical), device_(device), granularity_(granularity) {}

  int reserve_calls = 0;
  int map_calls = 0;
  int unmap_calls = 0;
  int synchronize_calls = 0;
  int fail_next_maps = 0;    // the next this-many map calls throw OutOfMemoryError
  bool fail_always = false;  // every map call throws
  std::size_t largest_reservation = SIZE_MAX;  // a larger reserve call throws OutOfMemoryError
  std::size_t mapped_bytes = 0;
  std::string errors;  // empty while the pool used the arena correctly

 private:
  [[nodiscard]] Device do_device() const noexcept override { return device_; }
  [[nodiscard]] std::size_t do_granularity() const noexcept override { return granularity_; }
  [[nodiscard]] std::size_t do_physical_bytes() const override { return physical_; }

  void* do_reserve(std::size_t bytes) override {
    ++reserve_calls;
    if (bytes > largest_reservation) {
      throw OutOfMemoryError("fake arena refused to reserve " + std::to_string(bytes) + " B",
                             "none");
    }
    void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) throw OutOfMemoryError("fake reserve failed", "none");
    base_ = reinterpret_cast<std::uintptr_t>(base);
    size_ = bytes;
    return base;
  }
  void do_release(void* base, std::size_t bytes) noexcept override {
    if (mapped_bytes != 0) errors += "release with pages still mapped; ";
    ::munmap(base, bytes);
  }
  void do_map(void* addr, std::size_t bytes) override {
    ++map_calls;
    if (fail_always || fail_next_maps > 0) {
      if (fail_next_maps > 0) --fail_next_maps;
      throw OutOfMemoryError("fake arena refused to map " + std::to_string(bytes) + " B", "none");
    }
    check_range(addr, bytes);
    for (std::size_t off = 0; off < bytes; off += granularity_) {
      auto [it, inserted] = pages_.emplace(reinterpret_cast<std::uintptr_t>(addr) + off, true);
      if (!inserted) errors += "page mapped twice; ";
    }
    mapped_bytes += bytes;
  }
  void do_unmap(void* addr, std::size_t bytes) noexcept override {
    ++unmap_calls;
    check_range(addr, bytes);
    for (std::size_t off = 0; off < bytes; off += granularity_) {
      if (pages_.erase(reinterpret_cast<std::uintptr_t>(addr) + off) == 0) {
        errors += "unmap of a page not mapped; ";
      }
    }
    mapped_bytes -= bytes;
  }
  void do_synchronize() noexcept override { ++synchronize_calls; }

  void check_range(void* addr, std::size_t bytes) {
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    if (a % granularity_ != 0 || bytes % granularity_ != 0) errors += "unaligned range; ";
    if (a < base_ || a + bytes > base_ + size_) errors += "range outside the reservation; ";
  }

  std::size_t physical_;
  Device device_;
  std::size_t granularity_;
  std::uintptr_t base_ = 0;
  std::size_t size_ = 0;
  std::map<std::uintptr_t, bool> pages_;
};

// An upstream that serves aligned host memory and counts calls.
class CountingResource final : public MemoryResource {
 public:
  int allocate_calls = 0;
  int deallocate_calls = 0;
  std::size_t outstanding = 0;

 private:
  void* do_allocate(std::size_t bytes, StreamRef /*stream*/) override {
    ++allocate_calls;
    outstanding += bytes;
    return std::aligned_alloc(kAlignment, align_up(bytes, kAlignment));
  }
  void do_deallocate(void* ptr, std::size_t bytes, StreamRef /*stream*/) noexcept override {
    ++deallocate_calls;
    outstanding -= bytes;
    std::free(ptr);
  }
  [[nodiscard]] Device do_device() const noexcept override { return Device::cpu(); }
};

}  // namespace tenax::testing
