// How a `tenax` subcommand ends: its body runs here, and a tenax error becomes one message on
// stderr ("tenax <command>: <cause>" and "  fix: <fix>") and an exit status: 2 for usage errors
// (a bad path or value), 1 for anything else. Written once for every subcommand.
#pragma once

#include <iostream>
#include <string_view>

#include "tenax/core/error.hpp"

namespace tenax::tools {

inline constexpr int kExitUsage = 2;
inline constexpr int kExitFailure = 1;

template <class Run>
[[nodiscard]] int run_reporting_errors(std::string_view command, Run&& run) {
  try {
    return run();
  } catch (const Error& e) {
    std::cout.flush();
    std::cerr << "tenax " << command << ": " << e.cause() << "\n  fix: " << e.fix() << '\n';
    return e.fault_class() == FaultClass::usage ? kExitUsage : kExitFailure;
  }
}

}  // namespace tenax::tools
