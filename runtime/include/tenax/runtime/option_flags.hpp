/// Messages that name the flag a program gives for an API option.
/// @file
/// The library's messages name the API option a fix needs (`TrainerOptions::detect_anomaly`,
/// `RunnerOptions::telemetry_seconds`): the library cannot know a program's flags. A program
/// built on the app layer declares which option each of its settings sets
/// (`Setting::sets_option`); its messages then name the flag beside the option
/// ("TrainerOptions::detect_anomaly (--detect-anomaly)"), on the Runner's console
/// (RunnerOptions::option_flags) and in the program's last line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tenax::runtime {

/// An API option and the flag that sets it.
struct OptionFlag {
  std::string option;  ///< as messages name it: "TrainerOptions::detect_anomaly"
  std::string flag;    ///< as a user types it: "--detect-anomaly"
};

/// A program's options and their flags.
using OptionFlags = std::vector<OptionFlag>;

/// `message` with " (FLAG)" after each mention of an option in `flags` (a mention is the option's
/// name not followed by more of an identifier: "RunnerOptions::keep_last" is not a mention of
/// "RunnerOptions::keep"). A mention already followed by " (--" is left as it is.
[[nodiscard]] std::string with_flags(std::string_view message, const OptionFlags& flags);

}  // namespace tenax::runtime
