// Small helpers shared by the Matrix Market reader and writer (private to io/src).
#pragma once

#include <cstdint>
#include <string>

#include "tenax/core/checked_size.hpp"

namespace tenax::io::detail {

inline std::string str(std::int64_t v) { return std::to_string(v); }

}  // namespace tenax::io::detail
