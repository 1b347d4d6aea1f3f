/// One setting of a job, declared once: its name, type, default, bounds or choices, help, and what
/// a resume does when it changes. The declaration gives the flag (`--name VALUE`), its check (a
/// bad value is refused naming the flag, the value, what is expected and the fix), its line in
/// `--help` and `--print-config`, its entry in the configuration stored with every checkpoint and
/// the resume policy (io/run_config.hpp). Settings are declared through App::setting (app.hpp).
/// @file
///
/// Thread-safety: a setting is written while the App parses its sources, before the job's body
/// runs; from then on it is read-only and may be read from any thread.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/io/run_config.hpp"

namespace tenax::app {

/// What a resume does when a setting's value differs from the one stored with the checkpoint.
enum class OnResume : std::uint8_t {
  /// The setting decides the results (a grid size, a model): recorded in the configuration, and a
  /// resume with another value is refused, naming it. The default of App::setting.
  must_match,
  /// Recorded; another value is accepted when the user asks with `--allow-config-change NAME`
  /// (a time step, a learning rate: the stored state stays valid, the steps still to run change).
  change_when_allowed,
  /// Recorded; another value is accepted with a notice (`--steps`: a longer or shorter run of the
  /// same steps).
  change_freely,
  /// How the job runs, not what it computes (`--run-dir`, `--progress`): not recorded.
  not_recorded,
};

/// Where a setting's value came from, later sources winning: the declaration's default, the file
/// of `--config FILE`, the environment variable TENAX_ARGS, the command line.
enum class Source : std::uint8_t { default_value, file, environment, command_line };

/// "default", "file", "environment" or "command line".
[[nodiscard]] std::string_view to_string(Source source) noexcept;

/// The type-independent part of a setting (see Setting).
class SettingBase {
 public:
  virtual ~SettingBase() = default;
  SettingBase(const SettingBase&) = delete;
  SettingBase& operator=(const SettingBase&) = delete;

  /// The name, as the flag spells it without its two dashes: letters, digits, dashes, and a dot
  /// between a component and its own settings ("solver.tol").
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// Its key in the stored configuration: the name with each dash written as an underscore
  /// ("solver_tol").
  [[nodiscard]] std::string config_key() const;
  /// What it sets, for `--help`.
  [[nodiscard]] const std::string& help() const noexcept { return help_; }
  /// The heading it is listed under in `--help`.
  [[nodiscard]] const std::string& section() const noexcept { return section_; }
  /// What a resume does when it changes.
  [[nodiscard]] OnResume on_resume() const noexcept { return on_resume_; }
  /// Where the value came from.
  [[nodiscard]] Source source() const noexcept { return source_; }
  /// Whether it is in the stored configuration now: not `not_recorded`, and the condition of
  /// recorded_when() (if any) holds.
  [[nodiscard]] bool recorded() const;
  /// The value as a user writes it (`0.5`, `sine`, `true`, `a,b`).
  [[nodiscard]] virtual std::string value_text() const = 0;
  /// The default as a user writes it.
  [[nodiscard]] virtual std::string default_text() const = 0;
  /// What a value must be: "an integer >= 1", "one of sine, gauss, random", "a number in (0, 1]".
  [[nodiscard]] virtual std::string expectation() const = 0;
  /// Whether the flag takes no value (a bool: `--async` means true).
  [[nodiscard]] virtual bool is_switch() const noexcept { return false; }
  /// The API options this setting sets ("TrainerOptions::detect_anomaly"), or the words the
  /// library's messages use for them ("the training precision"): messages that name one name this
  /// setting's flag beside it (option_flags.hpp).
  [[nodiscard]] const std::vector<std::string>& options() const noexcept { return options_; }
  /// How the value was given, for messages: `--n 20000`, `n = 20000 (run.conf line 3)`,
  /// `--n 20000 (in TENAX_ARGS)`, or `--n 256 (the default)`.
  [[nodiscard]] const std::string& given() const noexcept { return given_; }

  /// Sets the value from `text` given at `where` (as given() shows it). Throws UsageError naming
  /// `where`, the expectation and the fix when `text` is not a valid value. For the App's parser.
  void assign(std::string_view text, Source source, std::string where);
  /// Appends this setting to a configuration. For the App.
  virtual void record(io::ConfigWriter& config) const = 0;

 protected:
  /// A setting named `name` with its `help`, listed under `section`.
  SettingBase(std::string name, std::string help, std::string section);
  /// Parses and checks `text`; throws UsageError(cause) with `where` in it.
  virtual void parse(std::string_view text, const std::string& where, bool append) = 0;
  /// The value's check after a change, throwing UsageError naming given().
  void refuse(const std::string& what_is_wrong, const std::string& fix) const;

  std::string name_;                           ///< name()
  std::string help_;                           ///< help()
  std::string section_;                        ///< section()
  OnResume on_resume_ = OnResume::must_match;  ///< on_resume()
  Source source_ = Source::default_value;      ///< source()
  std::string given_;                          ///< given()
  std::function<bool()> recorded_when_;        ///< the condition of recorded(), if any
  std::vector<std::string> options_;           ///< options()
  std::string empty_means_;  ///< what the default "" means (Setting<std::string>::empty_means)
};

/// A setting of type T: bool, int, std::int64_t, std::uint64_t, double, std::string or
/// std::vector<std::string> (a list: the flag repeated or values separated by commas). Read it
/// with `setting()`. Modifiers return the setting for chaining and are meant for its declaration.
template <class T>
class Setting final : public SettingBase {
  static_assert(std::is_same_v<T, bool> || std::is_same_v<T, int> ||
                    std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t> ||
                    std::is_same_v<T, double> || std::is_same_v<T, std::string> ||
                    std::is_same_v<T, std::vector<std::string>>,
                "a setting is a bool, int, std::int64_t, std::uint64_t, double, std::string or "
                "std::vector<std::string>");

 public:
  /// Made by App::setting.
  Setting(std::string name, T default_value, std::string help, std::string section)
      : SettingBase(std::move(name), std::move(help), std::move(section)),
        value_(std::move(default_value)),
        default_(value_) {
    given_ = "--" + name_ + " " + value_text() + " (the default)";
  }

  /// The value (after App::main has read the sources: the default until then).
  [[nodiscard]] const T& operator()() const noexcept { return value_; }
  /// The value.
  [[nodiscard]] const T& value() const noexcept { return value_; }

  /// Values below `bound` are refused (numbers).
  Setting& at_least(T bound) requires std::is_arithmetic_v<T> &&(!std::is_same_v<T, bool>) {
    low_ = bound;
    has_low_ = true;
    low_open_ = false;
    return checked();
  }
  /// Values at or below `bound` are refused (numbers): `above(0)` is "positive".
  Setting& above(T bound) requires std::is_arithmetic_v<T> &&(!std::is_same_v<T, bool>) {
    low_ = bound;
    has_low_ = true;
    low_open_ = true;
    return checked();
  }
  /// Values above `bound` are refused (numbers).
  Setting& at_most(T bound) requires std::is_arithmetic_v<T> &&(!std::is_same_v<T, bool>) {
    high_ = bound;
    has_high_ = true;
    return checked();
  }
  /// Accepts `inf` (positive infinity) besides finite numbers: a limit that can be switched off
  /// (a divergence factor). NaN stays refused.
  Setting& allow_infinity() requires std::is_same_v<T, double> {
    allow_infinity_ = true;
    return *this;
  }
  /// Only these values are accepted (text).
  Setting& one_of(std::vector<std::string> choices) requires std::is_same_v<T, std::string> {
    choices_ = std::move(choices);
    return checked();
  }
  /// A check of the job's own: values for which `valid` is false are refused with "expected
  /// `expectation`" (e.g. "a power of two").
  Setting& expect(std::function<bool(const T&)> valid, std::string expectation) {
    custom_ = std::move(valid);
    custom_expectation_ = std::move(expectation);
    return checked();
  }
  /// A resume may change it with `--allow-config-change NAME` (OnResume::change_when_allowed).
  Setting& safe_to_change() {
    on_resume_ = OnResume::change_when_allowed;
    return *this;
  }
  /// A resume may change it, with a notice (OnResume::change_freely).
  Setting& free_to_change() {
    on_resume_ = OnResume::change_freely;
    return *this;
  }
  /// Not part of the stored configuration (OnResume::not_recorded).
  Setting& not_recorded() {
    on_resume_ = OnResume::not_recorded;
    return *this;
  }
  /// Recorded only while `condition` holds (it reads other settings: heat2d records its Courant
  /// fraction only when no --dt is given, since the fraction then has no effect).
  Setting& recorded_when(std::function<bool()> condition) {
    recorded_when_ = std::move(condition);
    return *this;
  }
  /// For a text whose default "" means something ("the built-in problem"): an empty value given
  /// by a source (`--matrix ''`, an unset shell variable) is refused, naming that meaning.
  Setting& empty_means(std::string meaning) requires std::is_same_v<T, std::string> {
    empty_means_ = std::move(meaning);
    return *this;
  }
  /// Says which API option the setting sets ("TrainerOptions::detect_anomaly"; once per option
  /// when it sets several), so that the library's messages naming that option name this flag too.
  Setting& sets_option(std::string option) {
    options_.push_back(std::move(option));
    return *this;
  }
  /// Changes the default (a program's own default of a standard setting: `--steps 2000`).
  Setting& default_value(T value) {
    TENAX_EXPECTS(source_ == Source::default_value, UsageError,
                  "the default of --" + name_ + " changed after a value was given",
                  "set defaults when declaring the settings, before App::main");
    value_ = std::move(value);
    default_ = value_;
    given_ = "--" + name_ + " " + value_text() + " (the default)";
    return checked();
  }

  [[nodiscard]] std::string value_text() const override { return text_of(value_); }
  [[nodiscard]] std::string default_text() const override { return text_of(default_); }
  [[nodiscard]] std::string expectation() const override;
  [[nodiscard]] bool is_switch() const noexcept override { return std::is_same_v<T, bool>; }
  void record(io::ConfigWriter& config) const override {
    if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      config.set(config_key(), value_text());
    } else {
      config.set(config_key(), value_);
    }
  }

 protected:
  void parse(std::string_view text, const std::string& where, bool append) override;

 private:
  [[nodiscard]] static std::string text_of(const T& value);
  // Checks the current value (the default when declared: a declaration that contradicts itself
  // is the program's mistake, refused at once).
  Setting& checked();
  [[nodiscard]] std::string violation() const;

  T value_;
  T default_;
  T low_{};
  T high_{};
  bool has_low_ = false;
  bool low_open_ = false;
  bool has_high_ = false;
  bool allow_infinity_ = false;
  std::vector<std::string> choices_;
  std::function<bool(const T&)> custom_;
  std::string custom_expectation_;
};

}  // namespace tenax::app
