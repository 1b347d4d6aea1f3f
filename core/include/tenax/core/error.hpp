// Errors: every failure tenax reports is a tenax::Error that carries where it was raised, what
// went wrong (the cause), what to do about it (the fix), and a fault class that the runtime acts
// on (see FaultClass). Classification always comes from status codes, never from message text.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tenax {

// What the runtime does about an error. The values are stable: they are written to event logs.
enum class FaultClass {
  usage,          // bad argument, shape/dtype/device mismatch: fail fast, retry nothing
  out_of_memory,  // allocator exhausted: free cache, retry, back off the batch
  overflow,       // inf/NaN under loss scaling: skip the step, back off the scale
  anomaly,        // NaN/Inf in loss, state or residual: roll back to the last good checkpoint
  device_fault,   // sticky device error: stop using the device, exit with the restart code
  comm_fault,     // collective failure or timeout: abort the communicator, exit to restart
  io,             // disk full, corrupt checkpoint: keep the previous checkpoint
  not_compiled,   // the feature was not built in: rebuild with it enabled
  environment,    // the machine cannot do what was asked (no driver, wrong version)
};

[[nodiscard]] std::string_view to_string(FaultClass fault) noexcept;

// Exit status that tells a supervisor to restart the job (it resumes from its checkpoint).
inline constexpr int kRestartExitCode = 75;

// Process exit status the runtime uses when an error of this class ends a job: the restart code
// for device and communication faults, 1 for everything else.
[[nodiscard]] int exit_code_for(FaultClass fault) noexcept;

class Error : public std::runtime_error {
 public:
  Error(FaultClass fault, std::string cause, std::string fix,
        std::source_location where = std::source_location::current());

  [[nodiscard]] FaultClass fault_class() const noexcept { return fault_; }
  [[nodiscard]] const std::string& cause() const noexcept { return cause_; }
  [[nodiscard]] const std::string& fix() const noexcept { return fix_; }
  [[nodiscard]] const char* file() const noexcept { return file_; }
  [[nodiscard]] unsigned line() const noexcept { return line_; }

 private:
  FaultClass fault_;
  std::string cause_;
  std::string fix_;
  const char* file_;
  unsigned line_;
};

// One subclass per fault class so that callers can catch what they can act on.
#define TENAX_DECLARE_ERROR(Name, fault)                                       \
  class Name : public Error {                                                  \
   public:                                                                     \
    Name(std::string cause, std::string fix,                                   \
         std::source_location where = std::source_location::current())         \
        : Error(FaultClass::fault, std::move(cause), std::move(fix), where) {} \
  }

TENAX_DECLARE_ERROR(UsageError, usage);
TENAX_DECLARE_ERROR(OutOfMemoryError, out_of_memory);
TENAX_DECLARE_ERROR(OverflowError, overflow);
TENAX_DECLARE_ERROR(AnomalyError, anomaly);
TENAX_DECLARE_ERROR(DeviceFaultError, device_fault);
TENAX_DECLARE_ERROR(CommFaultError, comm_fault);
TENAX_DECLARE_ERROR(IoError, io);
TENAX_DECLARE_ERROR(NotCompiledError, not_compiled);
TENAX_DECLARE_ERROR(EnvironmentError, environment);

#undef TENAX_DECLARE_ERROR

// Fault class of an errno value from a failed system call (ENOMEM -> out_of_memory,
// ENOSPC/EIO/... -> io, EINVAL -> usage).
[[nodiscard]] FaultClass classify_errno(int errnum) noexcept;

// Throws a NotCompiledError naming the missing feature and the CMake option that enables it.
[[noreturn]] void throw_not_compiled(std::string_view feature, std::string_view cmake_option,
                                     std::source_location where = std::source_location::current());

// The cause and fix of the exception being handled, for reports that must not throw: a
// tenax::Error's own, what() of another exception (fix empty). Call it inside a catch block.
struct CauseAndFix {
  std::string cause;
  std::string fix;
};
[[nodiscard]] CauseAndFix current_cause_and_fix() noexcept;

}  // namespace tenax

// Checks a precondition of a public function; on failure throws ErrorType(cause, fix) from the
// caller's file and line. cause and fix are only evaluated when the check fails.
#define TENAX_EXPECTS(condition, ErrorType, cause, fix) \
  do {                                                  \
    if (!(condition)) [[unlikely]] {                    \
      throw ErrorType((cause), (fix));                  \
    }                                                   \
  } while (false)
