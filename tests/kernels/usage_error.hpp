// Assertions on the UsageError messages of tenax::ops: that a call throws one, and what it says.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <initializer_list>
#include <string>

#include "tenax/core/error.hpp"

namespace tenax::testing {

// Runs `call`, which must throw UsageError, and returns its message.
template <class F>
std::string usage_error(F&& call) {
  try {
    call();
  } catch (const UsageError& e) {
    EXPECT_EQ(e.fault_class(), FaultClass::usage);
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected UsageError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected UsageError, nothing was thrown";
  return {};
}

inline void expect_contains(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' missing from: " << text;
  }
}

// Runs `fn`, which must throw UsageError whose cause contains cause_part and whose fix contains
// fix_part.
template <class Fn>
void expect_usage_error(Fn&& fn, const std::string& cause_part, const std::string& fix_part) {
  try {
    fn();
    ADD_FAILURE() << "no UsageError; expected one containing '" << cause_part << "'";
  } catch (const UsageError& e) {
    EXPECT_NE(e.cause().find(cause_part), std::string::npos) << e.cause();
    EXPECT_NE(e.fix().find(fix_part), std::string::npos) << e.fix();
  }
}

}  // namespace tenax::testing
