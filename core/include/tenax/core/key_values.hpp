/// "key=value,key=value" option text (solver, optimizer, schedule and loss-scaler options): @file
/// splitting and typed values, with errors that name the owner, the entry and the valid keys.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tenax {

/// One `key=value` entry of option text. Both parts are views into the text given to
/// split_key_values(): valid only while that text lives.
struct KeyValue {
  std::string_view key;    ///< the part before the first '=' (never empty)
  std::string_view value;  ///< the part after it, possibly empty; not trimmed or converted
};

/// The names joined by ", " (`"a, b, c"`; empty for no names), for error messages.
[[nodiscard]] std::string join_names(std::span<const std::string_view> names);

/// What a key given twice means: an error, or the later entry wins (text that layers a user's
/// entries over defaults written before them).
enum class RepeatedKey {
  refuse,    ///< a key given twice is a UsageError
  last_wins  ///< every entry is returned; the caller applies them in order, so the last one wins
};

/// The entries of `text`, separated by commas, spaces, tabs or line breaks, in order (views into
/// `text`); '#' starts a comment that runs to the end of the line. Empty text gives no entries.
/// `who` names the caller in errors (e.g. `make_optimizer("sgd")`); `keys` are the valid keys.
/// UsageError for an entry without '=' or with nothing before it, an unknown key (the error lists
/// the valid ones) and, with RepeatedKey::refuse, a key given twice; with RepeatedKey::last_wins
/// every entry is returned and the caller applies them in order. Values are not checked here.
[[nodiscard]] std::vector<KeyValue> split_key_values(std::string_view who, std::string_view text,
                                                     std::span<const std::string_view> keys,
                                                     RepeatedKey repeated = RepeatedKey::refuse);

/// `kv.value` as a number: the whole value must be one decimal or scientific number (`0.001`,
/// `1e-3`), read as `parse_whole<double>` reads it (text.hpp). UsageError naming `who` and the
/// entry otherwise.
[[nodiscard]] double parse_real_value(std::string_view who, const KeyValue& kv);
/// `kv.value` as a whole decimal number that fits std::int64_t (parse_whole() rules: no '+', no
/// white space, no fraction). UsageError naming `who` and the entry otherwise.
[[nodiscard]] std::int64_t parse_integer_value(std::string_view who, const KeyValue& kv);
/// `kv.value` as a boolean: exactly `1` or `true` (true), `0` or `false` (false),
/// case-sensitive. UsageError naming `who` and the entry otherwise.
[[nodiscard]] bool parse_bool_value(std::string_view who, const KeyValue& kv);

}  // namespace tenax
