/// Run configurations, and what may change in one when a run resumes.
/// @file
/// A configuration is the text a program stores in every checkpoint (FileMetadata::config): a
/// flat JSON object of the settings that decide its results, one scalar per key (string, number,
/// bool or null), with `"program": "<name>"`. Settings that do not change results (progress
/// display, checkpoint cadence, the run directory) do not belong in it.
///
/// When a run resumes, the configuration it is started with is compared with the stored one, key
/// by key (a key added or removed is a change, shown as "(absent)"), under the program's
/// ConfigPolicy:
///  - free keys may change without anything said beyond a notice: how far to run (`steps`),
///    which extends or shortens a run without changing the steps already taken;
///  - safe keys may change when the user asks for it with `--allow-config-change KEY`
///    (ConfigPolicy::allowed): the stored state stays a valid starting point, but the steps
///    still to run differ from those of an uninterrupted run (a learning rate, a time step);
///  - all others are refused whatever the flags: with them changed, the stored state means
///    something else (grid size, model, data, initial condition, physics).
///
/// A resume with any change that is not accepted is refused before the state is loaded, and the
/// message lists every changed key as `key: old -> new` and names which of them are safe.
///
/// Both texts are untrusted: at most kMaxConfigBytes are parsed, a nested value, a key given
/// twice, a non-object or invalid JSON is refused with a message, never a crash; values are shown
/// escaped and shortened.
///
/// Thread-safety: free functions without shared state; a ConfigWriter is a plain value.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenax::io {

/// Largest configuration text that is parsed (a real one is a few hundred bytes).
inline constexpr std::size_t kMaxConfigBytes = std::size_t{64} << 10;

/// Which configuration keys of a program may change when a run resumes (see this file).
struct ConfigPolicy {
  std::vector<std::string> free_keys;  ///< may change on resume (reported as a notice)
  std::vector<std::string> safe_keys;  ///< may change when listed in `allowed`
  std::vector<std::string> allowed;    ///< what the user passed as `--allow-config-change KEY`
};

/// One accepted change. Values are JSON text (`200`, `"gauss"`), or "(absent)" for a key that
/// one side lacks.
struct ConfigChange {
  std::string key;        ///< the configuration key
  std::string old_value;  ///< its value in the stored configuration
  std::string new_value;  ///< its value in the current configuration
  bool allowed = false;   ///< a safe key accepted through ConfigPolicy::allowed (false: a free key)
};

/// Compares the configuration stored in `run_dir`'s checkpoint with the current one and returns
/// the accepted changes (free keys, and safe keys the policy allows), in the current
/// configuration's key order, for the caller to print and log. Throws UsageError when:
///  - `stored` is empty (a checkpoint written before configurations were recorded), too large,
///    not JSON or not a flat object;
///  - the stored configuration names another program ("run directory R was written by
///    train_mlp, not heat2d");
///  - any key changed that the policy does not accept (every changed key listed);
///  - the policy is wrong for `current` (see check_allowed_changes).
[[nodiscard]] std::vector<ConfigChange> check_resume_config(std::string_view stored,
                                                            std::string_view current,
                                                            const ConfigPolicy& policy,
                                                            const std::filesystem::path& run_dir);

/// Checks the policy against the current configuration, so that a mistaken flag is refused even
/// when the run starts fresh: every key in `allowed` must be in the configuration and be a safe
/// (or free) key; no key may be both free and safe; `current` must be a flat JSON object (or
/// empty, with nothing allowed). Throws UsageError naming the key and the keys that would do.
void check_allowed_changes(std::string_view current, const ConfigPolicy& policy);

/// Builds a configuration text: "program" first, then each key in the order set, numbers in the
/// shortest form that reads back exactly (non-finite ones as the strings "inf", "-inf", "nan",
/// which JSON cannot hold), strings escaped. Throws UsageError for an empty or repeated key.
class ConfigWriter {
 public:
  /// A configuration whose first key is "program", set to `program`.
  explicit ConfigWriter(std::string_view program);

  /// Appends `key` with `value`: a bool, any integer (written exactly, unsigned ones too), a
  /// floating-point number (as a double) or anything convertible to std::string_view (a JSON
  /// string; invalid UTF-8 is replaced by U+FFFD). Other types do not compile. Returns `*this`
  /// for chaining. Throws UsageError for an empty key or one already set ("program" included).
  template <class T>
  ConfigWriter& set(std::string_view key, const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      add_bool(key, value);
    } else if constexpr (std::signed_integral<T>) {
      add_integer(key, static_cast<std::int64_t>(value));
    } else if constexpr (std::unsigned_integral<T>) {
      add_unsigned(key, static_cast<std::uint64_t>(value));
    } else if constexpr (std::floating_point<T>) {
      add_real(key, static_cast<double>(value));
    } else {
      static_assert(std::is_convertible_v<const T&, std::string_view>,
                    "a configuration value is a bool, a number or a string");
      add_string(key, std::string_view(value));
    }
    return *this;
  }

  /// The JSON object, compact (no spaces), keys in the order set.
  [[nodiscard]] std::string text() const;

 private:
  void add_bool(std::string_view key, bool value);
  void add_integer(std::string_view key, std::int64_t value);
  void add_unsigned(std::string_view key, std::uint64_t value);
  void add_real(std::string_view key, double value);
  void add_string(std::string_view key, std::string_view value);
  void add(std::string_view key, std::string json_value);

  std::vector<std::pair<std::string, std::string>> entries_;  ///< key, value as JSON text
};

}  // namespace tenax::io
