#include "tenax/app/setting.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <system_error>

namespace tenax::app {
namespace {

// The shortest text that reads back as `value`.
std::string number_text(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof(text), value);
  return error == std::errc{} ? std::string(text, end) : std::to_string(value);
}

template <class T>
std::string bound_text(T value) {
  if constexpr (std::is_same_v<T, double>) {
    return number_text(value);
  } else {
    return std::to_string(value);
  }
}

// The value shown in a message: quoted and shortened when it is long or has odd characters.
std::string shown(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 64)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", static_cast<unsigned char>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  if (text.size() > 64) out += "...";
  return out;
}

template <class T>
bool parse_integer(std::string_view text, T& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc{} && end == text.data() + text.size() && !text.empty();
}

bool parse_real(std::string_view text, double& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), out, std::chars_format::general);
  return error == std::errc{} && end == text.data() + text.size() && !text.empty();
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

}  // namespace

std::string_view to_string(Source source) noexcept {
  switch (source) {
    case Source::default_value:
      return "default";
    case Source::file:
      return "file";
    case Source::environment:
      return "environment";
    case Source::command_line:
      return "command line";
  }
  return "unknown";
}

SettingBase::SettingBase(std::string name, std::string help, std::string section)
    : name_(std::move(name)), help_(std::move(help)), section_(std::move(section)) {}

std::string SettingBase::config_key() const {
  std::string key = name_;
  for (char& c : key) {
    if (c == '-') c = '_';
  }
  return key;
}

bool SettingBase::recorded() const {
  return on_resume_ != OnResume::not_recorded && (!recorded_when_ || recorded_when_());
}

void SettingBase::assign(std::string_view text, Source source, std::string where) {
  // A list given again by a later source replaces the earlier one; within one source it grows.
  const bool append = source_ == source;
  // "" is the default's meaning ("no output file"): on the command line or in TENAX_ARGS it is a
  // mistake (an unset shell variable), not a request for the default. A settings file writes the
  // default as `name = ` (--print-config), so there it is the default.
  if (text.empty() && !empty_means_.empty() && source != Source::file) {
    throw UsageError("--" + name_ + " ''" +
                         (source == Source::environment ? std::string(" (in TENAX_ARGS)") : "") +
                         ": an empty value",
                     "give --" + name_ + " a value, or leave it out for " + empty_means_);
  }
  parse(text, where, append);
  source_ = source;
  given_ = std::move(where);
}

void SettingBase::refuse(const std::string& what_is_wrong, const std::string& fix) const {
  throw UsageError(given_ + ": " + what_is_wrong, fix);
}

template <class T>
std::string Setting<T>::text_of(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return join(value, ",");
  } else {
    return bound_text(value);
  }
}

template <class T>
std::string Setting<T>::expectation() const {
  std::string out;
  if constexpr (std::is_same_v<T, bool>) {
    out = "true or false";
  } else if constexpr (std::is_same_v<T, std::string>) {
    out = !choices_.empty() ? "one of " + join(choices_, ", ") : custom_ ? "" : "a text";
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    out = "a list of names separated by commas";
  } else {
    out = !std::is_same_v<T, double> ? "an integer"
          : allow_infinity_          ? "a number (inf allowed)"
                                     : "a finite number";
    if (has_low_ && has_high_) {
      out += std::string(" in ") + (low_open_ ? "(" : "[") + bound_text(low_) + ", " +
             bound_text(high_) + "]";
    } else if (has_low_) {
      out += (low_open_ ? " > " : " >= ") + bound_text(low_);
    } else if (has_high_) {
      out += " <= " + bound_text(high_);
    }
  }
  if (custom_) out += (out.empty() ? "" : ", ") + custom_expectation_;
  return out;
}

template <class T>
std::string Setting<T>::violation() const {
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    const bool low = has_low_ && (low_open_ ? !(value_ > low_) : !(value_ >= low_));
    const bool high = has_high_ && !(value_ <= high_);
    if (low || high) return "expected " + expectation();
  }
  if constexpr (std::is_same_v<T, std::string>) {
    if (!choices_.empty()) {
      bool known = false;
      for (const std::string& choice : choices_) known = known || choice == value_;
      if (!known) return "not one of " + join(choices_, ", ");
    }
  }
  if (custom_ && !custom_(value_)) return "expected " + custom_expectation_;
  return {};
}

template <class T>
Setting<T>& Setting<T>::checked() {
  if (const std::string problem = violation(); !problem.empty()) {
    refuse(problem, source_ == Source::default_value
                        ? "the program declares a default its own check refuses: fix the "
                          "declaration of --" +
                              name_
                        : "give --" + name_ + " " + expectation());
  }
  return *this;
}

template <class T>
void Setting<T>::parse(std::string_view text, const std::string& where, bool append) {
  const std::string fix = "give --" + name_ + " " + expectation();
  auto bad = [&](const std::string& problem) { throw UsageError(where + ": " + problem, fix); };
  T parsed{};
  if constexpr (std::is_same_v<T, bool>) {
    if (text == "true" || text == "1" || text == "yes" || text == "on") {
      parsed = true;
    } else if (text == "false" || text == "0" || text == "no" || text == "off") {
      parsed = false;
    } else {
      bad("'" + shown(text) + "' is not true or false");
    }
  } else if constexpr (std::is_same_v<T, std::string>) {
    parsed = std::string(text);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    if (append) parsed = value_;
    std::size_t start = 0;
    while (!text.empty() && start <= text.size()) {  // "" is the empty list
      const std::size_t comma = std::min(text.find(',', start), text.size());
      const std::string_view item = text.substr(start, comma - start);
      if (item.empty()) bad("an empty name in the list '" + shown(text) + "'");
      parsed.emplace_back(item);
      start = comma + 1;
    }
  } else if constexpr (std::is_same_v<T, double>) {
    if (!parse_real(text, parsed)) bad("'" + shown(text) + "' is not a number");
    const bool infinity_allowed = allow_infinity_ && std::isinf(parsed) && parsed > 0;
    if (!std::isfinite(parsed) && !infinity_allowed) {
      bad("'" + shown(text) + "' is not a finite number");
    }
  } else {
    if (!parse_integer(text, parsed)) {
      double real = 0;
      if (parse_real(text, real) && std::isfinite(real) && real == std::trunc(real)) {
        bad("'" + shown(text) + "' is outside the integers this setting holds (" +
            std::to_string(std::numeric_limits<T>::min()) + " to " +
            std::to_string(std::numeric_limits<T>::max()) + ")");
      }
      bad("'" + shown(text) + "' is not an integer");
    }
  }
  const T previous = value_;
  value_ = std::move(parsed);
  if (const std::string problem = violation(); !problem.empty()) {
    value_ = previous;
    bad(problem);
  }
}

template class Setting<bool>;
template class Setting<int>;
template class Setting<std::int64_t>;
template class Setting<std::uint64_t>;
template class Setting<double>;
template class Setting<std::string>;
template class Setting<std::vector<std::string>>;

}  // namespace tenax::app
