#include "tenax/io/run_config.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_set>

#include "tenax/core/error.hpp"

namespace tenax::io {
namespace {

using nlohmann::json;

// The widest a value or key is shown in a message: a hostile configuration must not flood it.
constexpr std::size_t kShownBytes = 80;

struct FlatConfig {
  std::vector<std::pair<std::string, json>> entries;  // in text order

  [[nodiscard]] const json* find(std::string_view key) const {
    for (const auto& [name, value] : entries) {
      if (name == key) return &value;
    }
    return nullptr;
  }
};

// Builds a FlatConfig straight from the parser's events, so that a nested value is refused
// when it starts (nothing of it is built) and a repeated key is seen (a DOM keeps the last one).
class FlatReader {
 public:
  explicit FlatReader(FlatConfig& out) : out_(out) {}

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(json::number_integer_t v) { return value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value(v); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return value(v); }
  bool string(json::string_t& v) { return value(v); }
  bool binary(json::binary_t& /*v*/) { return fail("it holds binary data"); }
  bool start_object(std::size_t /*size*/) {
    if (depth_ == 0) {
      depth_ = 1;
      return true;
    }
    return fail("the value of key " + shown_key(key_) + " is an object; a configuration is flat");
  }
  bool key(json::string_t& name) {
    if (!seen_.insert(name).second) return fail("the key " + shown_key(name) + " appears twice");
    key_ = name;
    return true;
  }
  bool end_object() {
    depth_ = 0;
    return true;
  }
  bool start_array(std::size_t /*size*/) {
    if (depth_ == 0) return fail("it is a JSON array, not an object");
    return fail("the value of key " + shown_key(key_) + " is an array; a configuration is flat");
  }
  bool end_array() { return true; }
  bool parse_error(std::size_t position, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) {
    if (problem_.empty())
      problem_ = "it is not valid JSON (error at byte " + std::to_string(position) + ")";
    return false;
  }

  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }

  static std::string shown_key(std::string_view key) {
    const bool plain = !key.empty() && key.size() <= kShownBytes &&
                       std::all_of(key.begin(), key.end(), [](char c) {
                         return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
                       });
    if (plain) return std::string(key);
    std::string text = json(std::string(key)).dump(-1, ' ', true, json::error_handler_t::replace);
    if (text.size() > kShownBytes) {
      text = text.substr(0, kShownBytes - 20) + "... (" + std::to_string(key.size()) + " bytes)";
    }
    return text;
  }

 private:
  bool value(json v) {
    if (depth_ == 0)
      return fail("it is a single JSON " + std::string(v.type_name()) + ", not an object");
    out_.entries.emplace_back(key_, std::move(v));
    return true;
  }
  bool fail(std::string problem) {
    problem_ = std::move(problem);
    return false;
  }

  FlatConfig& out_;
  int depth_ = 0;
  std::string key_;
  std::unordered_set<std::string> seen_;
  std::string problem_;
};

// The configuration in `text`, or why it is not one.
std::optional<FlatConfig> parse_flat(std::string_view text, std::string& problem) {
  if (text.size() > kMaxConfigBytes) {
    problem = "it is " + std::to_string(text.size()) + " bytes, more than the " +
              std::to_string(kMaxConfigBytes) + " a configuration may have";
    return std::nullopt;
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    problem = "it is empty";
    return std::nullopt;
  }
  if (text.find('\0') != std::string_view::npos) {
    // The parser takes a NUL byte for the end of the text: whatever follows would go unseen.
    problem = "it holds a NUL byte at byte " + std::to_string(text.find('\0'));
    return std::nullopt;
  }
  FlatConfig config;
  FlatReader reader(config);
  const bool parsed = json::sax_parse(text, &reader, json::input_format_t::json, /*strict=*/true);
  if (!parsed || !reader.problem().empty()) {
    problem = reader.problem().empty() ? "it is not valid JSON" : reader.problem();
    return std::nullopt;
  }
  return config;
}

std::string shown(const json* value) {
  if (value == nullptr) return "(absent)";
  std::string text = value->dump(-1, ' ', true, json::error_handler_t::replace);
  if (text.size() > kShownBytes) {
    text = text.substr(0, kShownBytes - 20) + "... (" + std::to_string(text.size()) + " bytes)";
  }
  return text;
}

// A program name as a message shows it: a string without its quotes, anything else as JSON.
std::string program_name(const json* program) {
  if (program == nullptr) return "";
  if (program->is_string()) {
    const std::string name = shown(program);
    return name.size() >= 2 && name.front() == '"' && name.back() == '"'
               ? name.substr(1, name.size() - 2)
               : name;
  }
  return shown(program);
}

std::string program_of(const FlatConfig& config) {
  const std::string name = program_name(config.find("program"));
  return name.empty() ? "this program" : name;
}

bool contains(const std::vector<std::string>& keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::string joined(const std::vector<std::string>& items, std::string_view separator = ", ") {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

FlatConfig parse_current(std::string_view current) {
  std::string problem;
  std::optional<FlatConfig> config = parse_flat(current, problem);
  if (!config) {
    throw UsageError(
        "the configuration this program gives for its run is not a flat JSON object: " + problem,
        "build RunnerOptions::config with io::ConfigWriter (one scalar per key)");
  }
  return std::move(*config);
}

void check_policy(const FlatConfig& current, const ConfigPolicy& policy) {
  const std::string program = program_of(current);
  for (const std::string& key : policy.free_keys) {
    TENAX_EXPECTS(!contains(policy.safe_keys, key), UsageError,
                  "the configuration policy of " + program + " lists " +
                      FlatReader::shown_key(key) + " as both free and safe to change",
                  "list each key once: free (changes freely) or safe (needs "
                  "--allow-config-change)");
  }
  std::vector<std::string> keys;
  std::vector<std::string> safe_present;
  for (const auto& [key, value] : current.entries) {
    keys.push_back(FlatReader::shown_key(key));
    if (contains(policy.safe_keys, key)) safe_present.push_back(key);
  }
  const std::string accepted = safe_present.empty()
                                   ? program + " has no keys that --allow-config-change accepts"
                                   : "the keys --allow-config-change accepts for " + program +
                                         " are " + joined(safe_present);
  for (const std::string& key : policy.allowed) {
    const std::string shown_key = FlatReader::shown_key(key);
    if (current.find(key) == nullptr) {
      throw UsageError("--allow-config-change " + shown_key + ": the configuration of " + program +
                           " has no key " + shown_key,
                       "its keys are " + joined(keys) + "; " + accepted);
    }
    if (!contains(policy.safe_keys, key) && !contains(policy.free_keys, key)) {
      throw UsageError("--allow-config-change " + shown_key + ": " + shown_key +
                           " cannot change when a run of " + program +
                           " resumes (with another value the stored state means something "
                           "else)",
                       accepted + "; to run with another " + shown_key + ", use a new --run-dir");
    }
  }
}

struct Difference {
  std::string key;
  const json* old_value;
  const json* new_value;
};

}  // namespace

void check_allowed_changes(std::string_view current, const ConfigPolicy& policy) {
  if (current.empty()) {
    TENAX_EXPECTS(policy.allowed.empty(), UsageError,
                  "--allow-config-change " + FlatReader::shown_key(policy.allowed.front()) +
                      " was given, but this program records no configuration to check",
                  "drop --allow-config-change");
    return;
  }
  check_policy(parse_current(current), policy);
}

std::vector<ConfigChange> check_resume_config(std::string_view stored, std::string_view current,
                                              const ConfigPolicy& policy,
                                              const std::filesystem::path& run_dir) {
  const FlatConfig now = parse_current(current);
  check_policy(now, policy);
  const std::string program = program_of(now);
  const std::string where = "run directory " + run_dir.string();
  const std::string start_over = "start over in a new --run-dir";

  std::string problem;
  const std::optional<FlatConfig> then = parse_flat(stored, problem);
  if (!then) {
    if (problem == "it is empty") {
      throw UsageError(where +
                           " holds a checkpoint without a configuration (written before tenax "
                           "recorded one), so whether this run's settings match cannot be "
                           "checked",
                       start_over + ", or resume it with the program version that wrote it");
    }
    throw UsageError(
        "the configuration stored in " + where + " cannot be read: " + problem,
        start_over + " (the checkpoint was not written by " + program + " as it is now)");
  }

  const json* stored_program = then->find("program");
  const json* current_program = now.find("program");
  if (stored_program != nullptr && current_program != nullptr &&
      *stored_program != *current_program) {
    throw UsageError(where + " was written by " + program_name(stored_program) + ", not " + program,
                     "pass another --run-dir (each program keeps its own run directory), or run " +
                         program_name(stored_program) + " to resume that run");
  }

  std::vector<Difference> differences;
  for (const auto& [key, value] : now.entries) {
    const json* before = then->find(key);
    if (before == nullptr || *before != value) differences.push_back({key, before, &value});
  }
  for (const auto& [key, value] : then->entries) {
    if (now.find(key) == nullptr) differences.push_back({key, &value, nullptr});
  }

  std::vector<ConfigChange> accepted;
  std::vector<std::string> refused;
  std::vector<std::string> needs_flag;
  std::vector<std::string> listed;
  for (const Difference& d : differences) {
    const std::string key = FlatReader::shown_key(d.key);
    listed.push_back(key + ": " + shown(d.old_value) + " -> " + shown(d.new_value));
    if (contains(policy.free_keys, d.key)) {
      accepted.push_back({key, shown(d.old_value), shown(d.new_value), false});
    } else if (!contains(policy.safe_keys, d.key)) {
      refused.push_back(key);
    } else if (contains(policy.allowed, d.key)) {
      accepted.push_back({key, shown(d.old_value), shown(d.new_value), true});
    } else {
      needs_flag.push_back(key);
    }
  }
  if (refused.empty() && needs_flag.empty()) return accepted;

  std::string cause = "resuming " + where +
                      " with a configuration that differs from its "
                      "checkpoint's: " +
                      joined(listed, "; ");
  std::string fix;
  const std::string flags =
      "--allow-config-change " + joined(needs_flag, " --allow-config-change ");
  if (!refused.empty()) {
    cause += " (" + joined(refused) + " cannot" + " change when a run of " + program + " resumes)";
    fix = "use a new --run-dir for this configuration, or resume with the stored value of " +
          joined(refused);
    fix += needs_flag.empty()
               ? "; none of the changed keys is safe to change with --allow-config-change"
               : "; of the changed keys, " + joined(needs_flag) +
                     (needs_flag.size() == 1 ? " is" : " are") + " safe to change: pass " + flags +
                     " for it";
  } else {
    fix = joined(needs_flag) + (needs_flag.size() == 1 ? " is" : " are") +
          " safe to change (the stored state stays valid, the steps still to run follow the new "
          "value): pass " +
          flags + " to accept it, or use a new --run-dir";
  }
  throw UsageError(std::move(cause), std::move(fix));
}

ConfigWriter::ConfigWriter(std::string_view program) { add_string("program", program); }

void ConfigWriter::add(std::string_view key, std::string json_value) {
  TENAX_EXPECTS(!key.empty(), UsageError, "a configuration key is empty",
                "give every configuration value a name");
  for (const auto& [name, value] : entries_) {
    TENAX_EXPECTS(name != key, UsageError,
                  "the configuration key " + FlatReader::shown_key(key) + " is set twice",
                  "set each configuration key once");
  }
  entries_.emplace_back(std::string(key), std::move(json_value));
}

void ConfigWriter::add_bool(std::string_view key, bool value) {
  add(key, value ? "true" : "false");
}
void ConfigWriter::add_integer(std::string_view key, std::int64_t value) {
  add(key, std::to_string(value));
}
void ConfigWriter::add_unsigned(std::string_view key, std::uint64_t value) {
  add(key, std::to_string(value));
}
void ConfigWriter::add_real(std::string_view key, double value) {
  if (std::isnan(value)) return add_string(key, "nan");
  if (std::isinf(value)) return add_string(key, value > 0 ? "inf" : "-inf");
  add(key, json(value).dump());
}
void ConfigWriter::add_string(std::string_view key, std::string_view value) {
  add(key, json(std::string(value)).dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string ConfigWriter::text() const {
  std::string out = "{";
  for (const auto& [key, value] : entries_) {
    if (out.size() > 1) out += ',';
    out += json(key).dump(-1, ' ', false, json::error_handler_t::replace);
    out += ':';
    out += value;
  }
  return out + "}";
}

}  // namespace tenax::io
