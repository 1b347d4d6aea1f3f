/// HistoryResource: keeps the last allocations and frees that pass through it (size, address,
/// outcome, the step and tag the code set, the bytes outstanding after it), PyTorch's memory
/// snapshot without a separate tool. The default resource stack of every device has one on top,
/// so that an out-of-memory stop can write what led to it (the Runner writes
/// RUN_DIR/memory-history.json, which `tenax report` draws).
/// @file
/// The records live in a ring of fixed size made at construction: recording never allocates, and
/// costs one uncontended mutex and a clock read per allocation and per free. Failed requests are
/// recorded too (kind `failed`), with the requested size, before the error goes on.
///
/// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tenax/core/memory/resource_adaptor.hpp"

namespace tenax {

/// One allocation, free or failed request seen by a HistoryResource.
struct AllocationRecord {
  /// What happened.
  enum class Kind : std::uint8_t {
    allocate,  ///< an allocation served by the upstream
    free,      ///< a deallocation passed to the upstream
    failed     ///< an allocation the upstream refused (the error went on to the caller)
  };
  Kind kind = Kind::allocate;   ///< what happened
  std::size_t bytes = 0;        ///< as requested
  std::uintptr_t address = 0;   ///< 0 for a failed request
  std::int64_t step = -1;       ///< set_allocation_step() when it was made (-1: none)
  const char* tag = "";         ///< the innermost AllocationTag of the thread ("" outside any)
  double seconds = 0.0;         ///< since the resource was built
  std::size_t outstanding = 0;  ///< bytes allocated through this resource after it
};

/// `"allocate"`, `"free"` or `"failed"` (`"unknown"` outside the enumeration): a static string.
[[nodiscard]] const char* to_string(AllocationRecord::Kind kind) noexcept;

/// An adaptor that passes every request to its upstream unchanged and keeps a ring of the last
/// capacity() AllocationRecords (see history_resource.hpp). Thread-safe.
class HistoryResource final : public ResourceAdaptor {
 public:
  /// Keeps the last `capacity` records (at least 1: UsageError otherwise).
  explicit HistoryResource(std::shared_ptr<MemoryResource> upstream, std::size_t capacity = 4096);

  /// The kept records, oldest first.
  [[nodiscard]] std::vector<AllocationRecord> records() const;
  /// Records ever made (the ring keeps the last capacity() of them).
  [[nodiscard]] std::uint64_t total() const;
  /// How many records the ring keeps, as given to the constructor.
  [[nodiscard]] std::size_t capacity() const noexcept { return ring_.size(); }

 private:
  void* do_allocate(std::size_t bytes, StreamRef stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream) noexcept override;
  void record(AllocationRecord::Kind kind, std::size_t bytes, std::uintptr_t address) noexcept;

  mutable std::mutex mutex_;
  std::vector<AllocationRecord> ring_;
  std::uint64_t next_ = 0;
  std::size_t outstanding_ = 0;
  std::int64_t origin_ns_ = 0;
};

/// The step recorded with every allocation and free from now on, by every HistoryResource and
/// thread of the process (the Runner sets the step it takes). Thread-safe.
void set_allocation_step(std::int64_t step) noexcept;

/// While alive, allocations made on this thread are recorded with `tag` (a string literal: only
/// the pointer is kept); tags nest and the innermost wins.
class AllocationTag {
 public:
  /// Makes `tag` the calling thread's current tag until destruction.
  explicit AllocationTag(const char* tag) noexcept;
  ~AllocationTag();  ///< restores the tag that was current before; destroy on the same thread
  AllocationTag(const AllocationTag&) = delete;
  AllocationTag& operator=(const AllocationTag&) = delete;

 private:
  const char* previous_;
};

}  // namespace tenax
