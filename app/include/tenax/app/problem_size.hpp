/// Checks of a problem's size before anything is built: a size whose bytes overflow 64 bits, or
/// whose smallest footprint exceeds what the memory pool of the device may hold, is refused
/// naming the setting and the largest size that fits. Without them a grid of 20000^2 would reach
/// the pool only after gigabytes of host assembly, or the kernel's OOM killer. @file
#pragma once

#include <cstdint>
#include <string>

#include "tenax/core/device.hpp"

namespace tenax::app {

/// Refuses (OutOfMemoryError) a problem whose smallest footprint, `bytes` (the arrays it cannot
/// run without), exceeds what the memory pool of `device` may hold: TENAX_MEMORY_LIMIT, or the
/// device's memory. `what` names the settings ("--n 20000 --dim 2"), `fix` the largest size that
/// fits.
void expect_fits_memory(Device device, std::int64_t bytes, const std::string& what,
                        const std::string& fix);

/// The points of a grid with `side` points along each of `dims` axes, checked: UsageError when
/// side^dims * bytes_per_point overflows, and expect_fits_memory's refusal when it exceeds the
/// pool of `device`, both naming `flag` ("--n 6074001000") and the largest side that fits.
/// `bytes_per_point`: the smallest footprint per point (the arrays the program cannot run
/// without), >= 1; `extra_bytes`: what it needs besides, of a size that does not grow with the
/// grid (work buffers), >= 0. The largest side named leaves room for both.
[[nodiscard]] std::int64_t expect_grid_fits(Device device, const std::string& flag,
                                            std::int64_t side, int dims,
                                            std::int64_t bytes_per_point,
                                            std::int64_t extra_bytes = 0);

}  // namespace tenax::app
