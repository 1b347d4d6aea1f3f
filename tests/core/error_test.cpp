#include "tenax/core/error.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

namespace tenax {
namespace {

TEST(Error, CarriesCauseFixLocationAndFaultClass) {
  const unsigned line = __LINE__ + 2;
  try {
    throw OutOfMemoryError("pool exhausted", "lower the batch size");
  } catch (const Error& e) {
    EXPECT_EQ(e.fault_class(), FaultClass::out_of_memory);
    EXPECT_EQ(e.cause(), "pool exhausted");
    EXPECT_EQ(e.fix(), "lower the batch size");
    EXPECT_EQ(e.line(), line);
    EXPECT_NE(std::string(e.file()).find("error_test.cpp"), std::string::npos);
    const std::string what = e.what();
    EXPECT_NE(what.find("out_of_memory"), std::string::npos);
    EXPECT_NE(what.find("pool exhausted -- fix: lower the batch size"), std::string::npos);
  }
}

TEST(Error, EachSubclassReportsItsClass) {
  EXPECT_EQ(UsageError("c", "f").fault_class(), FaultClass::usage);
  EXPECT_EQ(OverflowError("c", "f").fault_class(), FaultClass::overflow);
  EXPECT_EQ(AnomalyError("c", "f").fault_class(), FaultClass::anomaly);
  EXPECT_EQ(DeviceFaultError("c", "f").fault_class(), FaultClass::device_fault);
  EXPECT_EQ(CommFaultError("c", "f").fault_class(), FaultClass::comm_fault);
  EXPECT_EQ(IoError("c", "f").fault_class(), FaultClass::io);
  EXPECT_EQ(NotCompiledError("c", "f").fault_class(), FaultClass::not_compiled);
  EXPECT_EQ(EnvironmentError("c", "f").fault_class(), FaultClass::environment);
}

TEST(Error, RestartCodeOnlyForDeviceAndCommFaults) {
  EXPECT_EQ(exit_code_for(FaultClass::device_fault), kRestartExitCode);
  EXPECT_EQ(exit_code_for(FaultClass::comm_fault), 75);
  EXPECT_EQ(exit_code_for(FaultClass::usage), 1);
  EXPECT_EQ(exit_code_for(FaultClass::out_of_memory), 1);
}

TEST(Error, ErrnoClassification) {
  EXPECT_EQ(classify_errno(ENOMEM), FaultClass::out_of_memory);
  EXPECT_EQ(classify_errno(ENOSPC), FaultClass::io);
  EXPECT_EQ(classify_errno(EIO), FaultClass::io);
  EXPECT_EQ(classify_errno(EINVAL), FaultClass::usage);
}

TEST(Error, NotCompiledNamesTheOption) {
  try {
    throw_not_compiled("the CUDA backend", "TENAX_WITH_CUDA");
  } catch (const NotCompiledError& e) {
    EXPECT_NE(e.fix().find("-DTENAX_WITH_CUDA=ON"), std::string::npos);
  }
}

TEST(Error, ExpectsThrowsOnlyWhenFalse) {
  auto check = [](int value) {
    TENAX_EXPECTS(value > 0, UsageError, "value is " + std::to_string(value), "pass > 0");
    return value;
  };
  EXPECT_EQ(check(3), 3);
  EXPECT_THROW(check(-1), UsageError);
}

}  // namespace
}  // namespace tenax

namespace tenax {
namespace {

TEST(CurrentCauseAndFix, TakesATenaxErrorsOwnAndAnyOtherExceptionsWhat) {
  try {
    throw EnvironmentError("the library is missing", "install it");
  } catch (...) {
    const CauseAndFix got = current_cause_and_fix();
    EXPECT_EQ(got.cause, "the library is missing");
    EXPECT_EQ(got.fix, "install it");
  }
  try {
    throw std::runtime_error("plain");
  } catch (...) {
    const CauseAndFix got = current_cause_and_fix();
    EXPECT_EQ(got.cause, "plain");
    EXPECT_TRUE(got.fix.empty());
  }
  try {
    throw 42;
  } catch (...) {
    EXPECT_NE(current_cause_and_fix().cause.find("not a std::exception"), std::string::npos);
  }
}

}  // namespace
}  // namespace tenax
