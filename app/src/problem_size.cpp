#include "tenax/app/problem_size.hpp"

#include <algorithm>
#include <cstdint>

#include "tenax/core/checked_size.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/device_memory.hpp"

namespace tenax::app {

void expect_fits_memory(Device device, std::int64_t bytes, const std::string& what,
                        const std::string& fix) {
  const std::size_t capacity = memory_stats(device).capacity;
  if (capacity == 0 || static_cast<std::uint64_t>(bytes) <= capacity) return;
  throw OutOfMemoryError(what + " needs at least " + format_bytes(static_cast<std::size_t>(bytes)) +
                             " on " + to_string(device) + ", more than the " +
                             format_bytes(capacity) +
                             " this process may use there (TENAX_MEMORY_LIMIT, or the memory "
                             "the device has)",
                         fix + ", or raise TENAX_MEMORY_LIMIT where the machine has the memory");
}

std::int64_t expect_grid_fits(Device device, const std::string& flag, std::int64_t side, int dims,
                              std::int64_t bytes_per_point) {
  TENAX_EXPECTS(dims >= 1 && bytes_per_point >= 1 && side >= 1, UsageError,
                flag + ": a grid of side " + std::to_string(side) + " in " + std::to_string(dims) +
                    " dimensions at " + std::to_string(bytes_per_point) + " bytes per point",
                "use a side, dimensions and bytes per point of at least 1");
  const std::size_t capacity = memory_stats(device).capacity;
  const auto limit = static_cast<std::int64_t>(
      std::min<std::uint64_t>(capacity == 0 ? INT64_MAX : capacity, INT64_MAX));
  const std::string largest = "use at most " +
                              std::to_string(largest_root(limit / bytes_per_point, dims)) +
                              " points per side here";
  std::int64_t points = 1;
  for (int axis = 0; axis < dims; ++axis) {
    points = size_product(flag + ": the grid's points", {points, side}, largest);
  }
  const std::int64_t bytes =
      size_product(flag + ": the grid's bytes", {points, bytes_per_point}, largest);
  expect_fits_memory(device, bytes,
                     flag + " (" + std::to_string(points) + " points, " +
                         std::to_string(bytes_per_point) + " bytes each)",
                     largest);
  return points;
}

}  // namespace tenax::app
