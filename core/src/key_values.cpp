#include "tenax/core/key_values.hpp"

#include <charconv>
#include <system_error>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"

namespace tenax {

std::string join_names(std::span<const std::string_view> names) {
  std::string list;
  for (const std::string_view name : names) {
    list += (list.empty() ? "" : ", ") + std::string(name);
  }
  return list;
}

std::vector<KeyValue> split_key_values(std::string_view who, std::string_view text,
                                       std::span<const std::string_view> keys,
                                       RepeatedKey repeated) {
  const auto is_separator = [](char c) {
    return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
  };
  std::vector<KeyValue> entries;
  std::size_t i = 0;
  while (i < text.size()) {
    if (is_separator(text[i])) {
      ++i;
      continue;
    }
    if (text[i] == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && !is_separator(text[end]) && text[end] != '#') ++end;
    const std::string_view entry = text.substr(i, end - i);
    i = end;
    const std::size_t equals = entry.find('=');
    TENAX_EXPECTS(equals != std::string_view::npos && equals > 0, UsageError,
                  std::string(who) + ": option '" + std::string(entry) +
                      "' is not of the form key=value (no value)",
                  "write key=value entries separated by commas; valid keys: " + join_names(keys));
    const KeyValue kv{entry.substr(0, equals), entry.substr(equals + 1)};
    bool known = false;
    for (const std::string_view key : keys) known = known || key == kv.key;
    TENAX_EXPECTS(known, UsageError,
                  std::string(who) + ": unknown option '" + std::string(kv.key) + "'",
                  "use one of: " + join_names(keys));
    for (const KeyValue& seen : entries) {
      TENAX_EXPECTS(repeated == RepeatedKey::last_wins || seen.key != kv.key, UsageError,
                    std::string(who) + ": option '" + std::string(kv.key) + "' is given twice",
                    "give each option once");
    }
    entries.push_back(kv);
  }
  return entries;
}

namespace {

template <class T>
T parse_number(std::string_view who, const KeyValue& kv, const char* what, const char* example) {
  const std::optional<T> result = parse_whole<T>(kv.value);
  TENAX_EXPECTS(result.has_value(), UsageError,
                std::string(who) + ": option '" + std::string(kv.key) + "=" +
                    std::string(kv.value) + "' does not hold " + what,
                std::string("write ") + example);
  return *result;
}

}  // namespace

double parse_real_value(std::string_view who, const KeyValue& kv) {
  return parse_number<double>(who, kv, "a number", "a decimal number such as 0.001 or 1e-3");
}

std::int64_t parse_integer_value(std::string_view who, const KeyValue& kv) {
  return parse_number<std::int64_t>(who, kv, "a whole number", "an integer such as 100");
}

bool parse_bool_value(std::string_view who, const KeyValue& kv) {
  if (kv.value == "1" || kv.value == "true") return true;
  if (kv.value == "0" || kv.value == "false") return false;
  throw UsageError(std::string(who) + ": option '" + std::string(kv.key) + "=" +
                       std::string(kv.value) + "' does not hold a boolean",
                   "write 1, 0, true or false");
}

}  // namespace tenax
