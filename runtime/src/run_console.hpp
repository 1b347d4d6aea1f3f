// What a run says on its console (stderr): one line per event that changes the run, prefixed
// with the rank in a job of several, each written with one call so that ranks sharing a terminal
// never interleave within a line, and above the progress line rather than glued to it. One idea:
// the Runner's console.
#pragma once

#include <cstdio>
#include <exception>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/runtime/option_flags.hpp"
#include "tenax/runtime/progress.hpp"

namespace tenax::runtime::detail {

class RunConsole {
 public:
  // `flags`: the program's flags for the API options a message names (kept by reference).
  RunConsole(int rank, int world, const OptionFlags& flags)
      : rank_(rank), world_(world), flags_(flags) {}

  // The progress line the messages are printed above (none until the step loop starts).
  void attach(Progress* progress) noexcept { progress_ = progress; }

  // A printf-style line.
  template <class... Args>
  void say(const char* format, Args... args) const {
    if (progress_ != nullptr) progress_->clear_line();
    char body[2048];
    std::snprintf(body, sizeof(body), format, args...);
    std::string line =
        world_ > 1 ? "tenax [rank " + std::to_string(rank_) + "/" + std::to_string(world_) + "]: "
                   : std::string("tenax: ");
    line += flags_.empty() ? std::string(body) : with_flags(body, flags_);
    line += '\n';
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  }

 private:
  int rank_;
  int world_;
  const OptionFlags& flags_;
  Progress* progress_ = nullptr;
};

// An error as a console line says it: its cause and fix, without the source location (which
// means nothing to a user; the event log keeps it, see where()).
inline std::string say_error(const std::exception& e) {
  if (const auto* error = dynamic_cast<const Error*>(&e)) {
    return error->fix().empty() ? error->cause() : error->cause() + " -- fix: " + error->fix();
  }
  return e.what();
}

// The source location of a tenax error ("train/src/trainer.cpp:120"), empty for others.
inline std::string where(const std::exception& e) {
  if (const auto* error = dynamic_cast<const Error*>(&e)) {
    return std::string(error->file()) + ":" + std::to_string(error->line());
  }
  return {};
}

}  // namespace tenax::runtime::detail
