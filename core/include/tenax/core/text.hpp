/// Small text rules shared by every parser in tenax (flags, environment variables, option text,
/// file headers), so that " 8 " or "1e3" or "GiB" mean the same everywhere: ASCII white space,
/// ASCII case folding, and numbers read as whole tokens. @file
#pragma once

#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace tenax {

/// Space, tab, CR, LF, vertical tab or form feed (ASCII, whatever the locale).
[[nodiscard]] constexpr bool is_ascii_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/// `text` without leading and trailing ASCII white space (a view into `text`).
[[nodiscard]] constexpr std::string_view trim(std::string_view text) noexcept {
  while (!text.empty() && is_ascii_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_ascii_space(text.back())) text.remove_suffix(1);
  return text;
}

/// `text` with ASCII letters in lower case (other bytes unchanged).
[[nodiscard]] inline std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

/// `text` as a number of type T when the whole token is one, else nullopt: no white space, no
/// leading '+', no trailing characters, no out-of-range value (an integer that overflows T, a
/// floating value beyond T's range). Integers are decimal; floating values are decimal or
/// scientific ("0.5", "1e-8"); "inf" and "nan" are read as std::from_chars reads them.
template <class T>
[[nodiscard]] std::optional<T> parse_whole(std::string_view text) noexcept {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
  if (text.empty()) return std::nullopt;
  T value{};
  const char* const last = text.data() + text.size();
  std::from_chars_result result{};
  if constexpr (std::is_floating_point_v<T>) {
    result = std::from_chars(text.data(), last, value, std::chars_format::general);
  } else {
    result = std::from_chars(text.data(), last, value);
  }
  if (result.ec != std::errc() || result.ptr != last) return std::nullopt;
  return value;
}

/// `value` as messages and option text print it: 6 significant digits (`"1e-08"`,
/// `"0.333333"`, `"inf"`, `"nan"`), so that a value named in an error reads the same in every
/// layer.
[[nodiscard]] inline std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

}  // namespace tenax
