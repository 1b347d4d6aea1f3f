#include "tenax/core/error.hpp"

#include <cerrno>
#include <string>

namespace tenax {

std::string_view to_string(FaultClass fault) noexcept {
  switch (fault) {
    case FaultClass::usage:
      return "usage";
    case FaultClass::out_of_memory:
      return "out_of_memory";
    case FaultClass::overflow:
      return "overflow";
    case FaultClass::anomaly:
      return "anomaly";
    case FaultClass::device_fault:
      return "device_fault";
    case FaultClass::comm_fault:
      return "comm_fault";
    case FaultClass::io:
      return "io";
    case FaultClass::not_compiled:
      return "not_compiled";
    case FaultClass::environment:
      return "environment";
  }
  return "unknown";
}

int exit_code_for(FaultClass fault) noexcept {
  switch (fault) {
    case FaultClass::device_fault:
    case FaultClass::comm_fault:
      return kRestartExitCode;
    default:
      return 1;
  }
}

namespace {

std::string compose_message(FaultClass fault, const std::string& cause, const std::string& fix,
                            const std::source_location& where) {
  std::string message;
  message.reserve(cause.size() + fix.size() + 96);
  message += "tenax ";
  message += to_string(fault);
  message += " error: ";
  message += cause;
  if (!fix.empty()) {
    message += " -- fix: ";
    message += fix;
  }
  message += " [";
  message += where.file_name();
  message += ':';
  message += std::to_string(where.line());
  message += ']';
  return message;
}

}  // namespace

Error::Error(FaultClass fault, std::string cause, std::string fix, std::source_location where)
    : std::runtime_error(compose_message(fault, cause, fix, where)),
      fault_(fault),
      cause_(std::move(cause)),
      fix_(std::move(fix)),
      file_(where.file_name()),
      line_(where.line()) {}

FaultClass classify_errno(int errnum) noexcept {
  switch (errnum) {
    case ENOMEM:
      return FaultClass::out_of_memory;
    case ENOSPC:
    case EDQUOT:
    case EIO:
    case EROFS:
    case ENOENT:
    case EEXIST:
    case EACCES:
    case EPERM:
    case EBADF:
    case EFBIG:
      return FaultClass::io;
    case EINVAL:
    case EDOM:
    case ERANGE:
      return FaultClass::usage;
    default:
      return FaultClass::environment;
  }
}

void throw_not_compiled(std::string_view feature, std::string_view cmake_option,
                        std::source_location where) {
  throw NotCompiledError(
      std::string(feature) + " is not available: this tenax was built without it",
      "rebuild tenax with -D" + std::string(cmake_option) +
          "=ON (and the toolkit it needs installed)",
      where);
}

CauseAndFix current_cause_and_fix() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    return {e.cause(), e.fix()};
  } catch (const std::exception& e) {
    return {e.what(), {}};
  } catch (...) {
    return {"an exception that is not a std::exception", {}};
  }
}

}  // namespace tenax
