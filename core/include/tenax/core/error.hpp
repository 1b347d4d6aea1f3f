/// Errors: every failure tenax reports is a tenax::Error that carries where it was raised, what
/// went wrong (the cause), what to do about it (the fix), and a fault class that the runtime acts
/// on (see FaultClass). Classification always comes from status codes, never from message
/// text. @file
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tenax {

/// What the runtime does about an error. The values are stable: they are written to event logs.
enum class FaultClass {
  usage,          ///< bad argument, shape/dtype/device mismatch: fail fast, retry nothing
  out_of_memory,  ///< allocator exhausted: free cache, retry, back off the batch
  overflow,       ///< inf/NaN under loss scaling: skip the step, back off the scale
  anomaly,        ///< NaN/Inf in loss, state or residual: roll back to the last good checkpoint
  device_fault,   ///< sticky device error: stop using the device, exit with the restart code
  comm_fault,     ///< collective failure or timeout: abort the communicator, exit to restart
  io,             ///< disk full, corrupt checkpoint: keep the previous checkpoint
  not_compiled,   ///< the feature was not built in: rebuild with it enabled
  environment,    ///< the machine cannot do what was asked (no driver, wrong version)
};

/// The enumerator's name (`"usage"`, `"out_of_memory"`, ...; `"unknown"` outside the
/// enumeration), as event logs and error messages spell it.
[[nodiscard]] std::string_view to_string(FaultClass fault) noexcept;

/// Exit status that tells a supervisor to restart the job (it resumes from its checkpoint).
inline constexpr int kRestartExitCode = 75;

/// Process exit status the runtime uses when an error of this class ends a job: the restart code
/// for device and communication faults, 1 for everything else.
[[nodiscard]] int exit_code_for(FaultClass fault) noexcept;

/// Base of every tenax exception. Code that handles failures catches the subclass of the fault
/// class it can act on (UsageError, OutOfMemoryError, ...) or Error for all of them, and reads
/// fault_class(), cause() and fix() rather than parsing what(). There is one subclass per fault
/// class, each constructed as `Name(cause, fix)` plus an optional std::source_location that
/// defaults to the place that constructs it.
class Error : public std::runtime_error {
 public:
  /// An error of class `fault`. `cause` says what went wrong, `fix` what to do about it (may be
  /// empty); `where` defaults to the place that constructs the error. what() is
  /// `tenax <fault> error: <cause> -- fix: <fix> [<file>:<line>]`, without the fix part when
  /// `fix` is empty.
  Error(FaultClass fault, std::string cause, std::string fix,
        std::source_location where = std::source_location::current());

  /// What the runtime does about this error.
  [[nodiscard]] FaultClass fault_class() const noexcept { return fault_; }
  /// What went wrong, as given to the constructor.
  [[nodiscard]] const std::string& cause() const noexcept { return cause_; }
  /// What to do about it, as given to the constructor (may be empty).
  [[nodiscard]] const std::string& fix() const noexcept { return fix_; }
  /// Source file where the error was raised (a string with static storage duration).
  [[nodiscard]] const char* file() const noexcept { return file_; }
  /// Line in file() where the error was raised.
  [[nodiscard]] unsigned line() const noexcept { return line_; }

 private:
  FaultClass fault_;
  std::string cause_;
  std::string fix_;
  const char* file_;
  unsigned line_;
};

/// @class tenax::UsageError
/// @extends tenax::Error
/// FaultClass::usage: a bad argument or a shape, dtype or device mismatch; fail fast, retry
/// nothing.

/// @class tenax::OutOfMemoryError
/// @extends tenax::Error
/// FaultClass::out_of_memory: an allocator is exhausted; the runtime frees caches, retries and
/// backs off the batch.

/// @class tenax::OverflowError
/// @extends tenax::Error
/// FaultClass::overflow: Inf/NaN under loss scaling; the step is skipped and the scale lowered.

/// @class tenax::AnomalyError
/// @extends tenax::Error
/// FaultClass::anomaly: NaN/Inf in a loss, state or residual; the run rolls back to its last
/// good checkpoint.

/// @class tenax::DeviceFaultError
/// @extends tenax::Error
/// FaultClass::device_fault: a sticky device error; the device is not used again and the process
/// exits with kRestartExitCode.

/// @class tenax::CommFaultError
/// @extends tenax::Error
/// FaultClass::comm_fault: a collective failed or timed out; the communicator is aborted and the
/// process exits with kRestartExitCode.

/// @class tenax::IoError
/// @extends tenax::Error
/// FaultClass::io: a file could not be read or written (disk full, corrupt checkpoint); the
/// previous checkpoint is kept.

/// @class tenax::NotCompiledError
/// @extends tenax::Error
/// FaultClass::not_compiled: the feature was not built in; see throw_not_compiled().

/// @class tenax::EnvironmentError
/// @extends tenax::Error
/// FaultClass::environment: the machine cannot do what was asked (no driver, wrong version, no
/// such device).

/// @cond
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
/// @endcond

/// Fault class of an errno value from a failed system call: ENOMEM is out_of_memory; ENOSPC,
/// EDQUOT, EIO, EROFS, ENOENT, EEXIST, EACCES, EPERM, EBADF and EFBIG are io; EINVAL, EDOM and
/// ERANGE are usage; every other value is environment.
[[nodiscard]] FaultClass classify_errno(int errnum) noexcept;

/// Throws a NotCompiledError naming the missing `feature` (e.g. "the CUDA backend") and the CMake
/// option that enables it (e.g. "TENAX_WITH_CUDA"), raised at `where`.
[[noreturn]] void throw_not_compiled(std::string_view feature, std::string_view cmake_option,
                                     std::source_location where = std::source_location::current());

/// What current_cause_and_fix() returns.
struct CauseAndFix {
  std::string cause;  ///< Error::cause(), or what() of another std::exception
  std::string fix;    ///< Error::fix(); empty for an exception that is not a tenax::Error
};
/// The cause and fix of the exception being handled, for reports that must not throw: a
/// tenax::Error's own, what() of another std::exception (fix empty), a fixed sentence for an
/// exception of any other type. Call it inside a catch block: outside one there is nothing to
/// rethrow and the program terminates.
[[nodiscard]] CauseAndFix current_cause_and_fix() noexcept;

}  // namespace tenax

/// Checks a precondition of a public function; on failure throws `ErrorType(cause, fix)` (an
/// Error subclass) from the caller's file and line. `cause` and `fix` are only evaluated when the
/// check fails, so they may build strings freely.
#define TENAX_EXPECTS(condition, ErrorType, cause, fix) \
  do {                                                  \
    if (!(condition)) [[unlikely]] {                    \
      throw ErrorType((cause), (fix));                  \
    }                                                   \
  } while (false)
