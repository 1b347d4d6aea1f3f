/// The memory resource that tensors on each device allocate from.
/// @file
/// Built on first use per device, from the top:
/// @code{.unparsed}
///   HistoryResource (the last 4096 allocations and frees)
///     -> [FaultInjectingResource, only when TENAX_FAULTS plans alloc faults]
///       -> PoolResource over the device's virtual memory arena (host pages or CUDA VMM),
///          capacity = TENAX_MEMORY_LIMIT when set, else the physical RAM / device memory.
/// @endcode
/// A CUDA device without virtual memory management (cudaDevAttrVirtualMemoryManagementSupported
/// is 0: some virtualised GPUs, old drivers) gets the driver's stream-ordered allocator instead
/// of the pool (cuda::make_device_resource), under a LimitingResource when TENAX_MEMORY_LIMIT is
/// set; a line on stderr says so. memory_stats() is then all zero for that device.
/// Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "tenax/core/device.hpp"
#include "tenax/core/memory/memory_stats.hpp"
#include "tenax/core/memory_resource.hpp"

namespace tenax {

/// The resource that tensors on `device` allocate from: the one set_current_resource()
/// installed, else the default stack, built by make_default_resource() on the first call (and
/// throwing as it does; a failed build is tried again at the next call).
[[nodiscard]] std::shared_ptr<MemoryResource> current_resource(Device device);

/// Replaces the resource of `device` (tests, users bringing their own allocator) and returns the
/// previous one (null when none was built yet). Tensors allocated earlier keep the resource they
/// came from. UsageError when `resource` is null or serves another device.
std::shared_ptr<MemoryResource> set_current_resource(Device device,
                                                     std::shared_ptr<MemoryResource> resource);

/// Builds the default stack (see device_memory.hpp) for `device`, reading TENAX_MEMORY_LIMIT and
/// TENAX_FAULTS now. current_resource() calls it on first use; call it directly to rebuild the
/// stack after changing the environment. Throws UsageError for bad environment values,
/// NotCompiledError / EnvironmentError for a CUDA device that cannot be used.
[[nodiscard]] std::shared_ptr<MemoryResource> make_default_resource(Device device);

/// The process's pool of page-locked host buffers (a PoolResource over
/// cuda::make_pinned_virtual_memory), created on first use: staging buffers for device <-> host
/// copies that are taken again and again (checkpoint snapshots) come from it, so only its first
/// use pays for cudaHostRegister. It may lock at most half of the host's RAM. Thread-safe.
/// NotCompiledError / EnvironmentError where CUDA cannot be used.
[[nodiscard]] std::shared_ptr<MemoryResource> pinned_host_pool();

/// Statistics of the pool in current_resource(device)'s stack; all zero (with the device set)
/// when the stack holds no PoolResource.
[[nodiscard]] MemoryStats memory_stats(Device device);
/// A table of memory_stats(device), or a line saying that the resource is not a pool.
[[nodiscard]] std::string memory_summary(Device device);
/// What led up to now in current_resource(device)'s stack, as one JSON object (the file an
/// out-of-memory stop writes, RUN_DIR/memory-history.json): "device", "stats" (the pool's
/// allocated, reserved, capacity and largest free block), "records" (the HistoryResource's last
/// allocations, frees and failed requests, oldest first: kind, bytes, address, step, tag, seconds,
/// outstanding), "total_records", and "blocks" (the pool's block map: offset, size, free; at most
/// 4096). Parts the stack has no resource for are empty.
[[nodiscard]] std::string memory_history_json(Device device);
/// Returns the cached memory of current_resource(device) to the system; the bytes released.
std::size_t empty_cache(Device device);

/// Parses a byte size: a non-negative number (decimals allowed) with an optional unit, case
/// insensitive, optional space between: B; KB, MB, GB, TB (powers of 1000); KiB, MiB, GiB, TiB
/// and K, M, G, T (powers of 1024). "2GiB", "512MiB", "1.5GB", "1073741824". Throws UsageError
/// giving the accepted syntax for anything else.
[[nodiscard]] std::size_t parse_byte_size(std::string_view text);

/// The value of TENAX_MEMORY_LIMIT in bytes, or 0 when unset. Throws UsageError for a bad or zero
/// value.
[[nodiscard]] std::size_t memory_limit_from_environment();

}  // namespace tenax
