// Numbers, lists of names and state entry names, as messages and saved state spell them.
// Internal.
#pragma once

#include <string>
#include <string_view>

#include "tenax/core/key_values.hpp"
#include "tenax/core/text.hpp"

namespace tenax::solvers::detail {

// 6 significant digits: "1e-08", "0.333333", "inf" (the core rule).
using tenax::format_number;

// "<prefix>/<name>", the name of a state entry in a scope.
[[nodiscard]] inline std::string scoped_name(std::string_view prefix, std::string_view name) {
  return std::string(prefix) + "/" + std::string(name);
}

// "a, b, c" (the core helper, also used by the option parsers).
using tenax::join_names;

}  // namespace tenax::solvers::detail
