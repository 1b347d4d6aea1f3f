// "key=value,key=value" option text (solver, optimizer, schedule and loss-scaler options):
// splitting and typed values, with errors that name the owner, the entry and the valid keys.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tenax {

struct KeyValue {
  std::string_view key;
  std::string_view value;
};

// "a, b, c".
[[nodiscard]] std::string join_names(std::span<const std::string_view> names);

// What a key given twice means: an error, or the later entry wins (text that layers a user's
// entries over defaults written before them).
enum class RepeatedKey { refuse, last_wins };

// The entries of `text`, separated by commas or white space, in order (views into `text`); '#'
// starts a comment that runs to the end of the line. `who` names the caller in errors (e.g.
// "make_optimizer(\"sgd\")"); `keys` are the valid keys. UsageError for an entry without '=',
// an unknown key (the error lists the valid ones) and, with RepeatedKey::refuse, a key given
// twice; with RepeatedKey::last_wins every entry is returned and the caller applies them in
// order.
[[nodiscard]] std::vector<KeyValue> split_key_values(std::string_view who, std::string_view text,
                                                     std::span<const std::string_view> keys,
                                                     RepeatedKey repeated = RepeatedKey::refuse);

// The value as a number, a whole number or a boolean (1, 0, true, false); UsageError naming
// `who` and the entry otherwise.
[[nodiscard]] double parse_real_value(std::string_view who, const KeyValue& kv);
[[nodiscard]] std::int64_t parse_integer_value(std::string_view who, const KeyValue& kv);
[[nodiscard]] bool parse_bool_value(std::string_view who, const KeyValue& kv);

}  // namespace tenax
