/// The host memory available to new allocations now, as the kernel estimates it (Linux:
/// MemAvailable of /proc/meminfo: free memory plus what the page cache and reclaimable caches
/// would give back). A size check against the machine's whole RAM lets a job start that the
/// kernel's out-of-memory killer ends later; against this, it is refused up front. @file
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace tenax {

/// MemAvailable in bytes; nullopt where the kernel does not say (not Linux, /proc unreadable).
[[nodiscard]] std::optional<std::size_t> host_memory_available();

/// The MemAvailable line of a /proc/meminfo text (`MemAvailable:   123456 kB`), in bytes; nullopt
/// when the line is missing or malformed, or the value overflows.
[[nodiscard]] std::optional<std::size_t> parse_mem_available(std::string_view meminfo);

}  // namespace tenax
