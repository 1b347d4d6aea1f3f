#include "tenax/app/problem_size.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "tenax/core/checked_size.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/host_memory.hpp"

namespace tenax::app {

namespace {

// What of a pool's capacity arrays can count on: the pool maps memory a granule at a time and
// rounds blocks up, so the last granule mapped is partly used and the blocks hold a little more
// than they were asked for. Two granules are kept as the slack for both.
std::size_t usable(const MemoryStats& pool) {
  const std::size_t slack = 2 * pool.map_granule;
  return pool.capacity > slack ? pool.capacity - slack : 0;
}

// On the host without TENAX_MEMORY_LIMIT, the pool's capacity is the machine's whole RAM: what
// the kernel has available now (and what the pool holds already) bounds a job more tightly.
std::optional<std::size_t> host_available(Device device, const MemoryStats& pool) {
  if (!device.is_cpu() || memory_limit_from_environment() != 0) return std::nullopt;
  const std::optional<std::size_t> available = host_memory_available();
  if (!available) return std::nullopt;
  return *available + pool.reserved_bytes.current;
}

// The bytes a problem may count on: usable(pool), or less on a host with less available.
std::size_t budget(Device device, const MemoryStats& pool) {
  const std::optional<std::size_t> available = host_available(device, pool);
  return available ? std::min(usable(pool), *available) : usable(pool);
}

}  // namespace

void expect_fits_memory(Device device, std::int64_t bytes, const std::string& what,
                        const std::string& fix) {
  const MemoryStats pool = memory_stats(device);
  const std::size_t capacity = pool.capacity;
  if (capacity == 0 || static_cast<std::uint64_t>(bytes) <= budget(device, pool)) return;
  const std::optional<std::size_t> available = host_available(device, pool);
  if (available && *available < usable(pool)) {
    throw OutOfMemoryError(
        what + " needs at least " + format_bytes(static_cast<std::size_t>(bytes)) + " on " +
            to_string(device) + ", more than the " + format_bytes(*available) +
            " of host memory available now (the kernel's MemAvailable, and what this process "
            "holds) of the machine's " +
            format_bytes(capacity),
        fix + ", or free memory on this machine (other jobs, caches that do not give back)");
  }
  throw OutOfMemoryError(what + " needs at least " + format_bytes(static_cast<std::size_t>(bytes)) +
                             " on " + to_string(device) + ", more than the " +
                             format_bytes(usable(pool)) + " that arrays can count on of the " +
                             format_bytes(capacity) +
                             " this process may use there (TENAX_MEMORY_LIMIT, or the memory "
                             "the device has; the pool maps it " +
                             format_bytes(pool.map_granule) + " at a time and rounds blocks up)",
                         fix + ", or raise TENAX_MEMORY_LIMIT where the machine has the memory");
}

std::int64_t expect_grid_fits(Device device, const std::string& flag, std::int64_t side, int dims,
                              std::int64_t bytes_per_point, std::int64_t extra_bytes) {
  TENAX_EXPECTS(dims >= 1 && bytes_per_point >= 1 && side >= 1 && extra_bytes >= 0, UsageError,
                flag + ": a grid of side " + std::to_string(side) + " in " + std::to_string(dims) +
                    " dimensions at " + std::to_string(bytes_per_point) + " bytes per point",
                "use a side, dimensions and bytes per point of at least 1");
  const MemoryStats pool = memory_stats(device);
  const auto limit = static_cast<std::int64_t>(
      std::min<std::uint64_t>(pool.capacity == 0 ? INT64_MAX : budget(device, pool), INT64_MAX));
  // The extra bytes grow with the side given (a halo row per side, say): for a side far too
  // large they exceed the limit, and leave no room to advise from ("at most 0 points per
  // side"). Then the grid alone is counted, less a sixteenth for the extras of a side that fits.
  const std::int64_t room = extra_bytes <= limit / 2 ? limit - extra_bytes : limit - limit / 16;
  const std::string largest = "use at most " +
                              std::to_string(largest_root(room / bytes_per_point, dims)) +
                              " points per side here";
  std::int64_t points = 1;
  for (int axis = 0; axis < dims; ++axis) {
    points = size_product(flag + ": the grid's points", {points, side}, largest);
  }
  const std::int64_t bytes =
      size_sum(flag + ": the grid's bytes",
               size_product(flag + ": the grid's bytes", {points, bytes_per_point}, largest),
               extra_bytes, largest);
  expect_fits_memory(device, bytes,
                     flag + " (" + std::to_string(points) + " points, " +
                         std::to_string(bytes_per_point) + " bytes each)",
                     largest);
  return points;
}

}  // namespace tenax::app
