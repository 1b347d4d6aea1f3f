/// Per-phase profiles of a run: spans (a step, a micro-batch's forward and backward, the gradient
/// all-reduce, a checkpoint's snapshot, write and commit, a NaN scan, a wait for the other ranks)
/// recorded in memory and written as a Chrome trace event file, which Perfetto
/// (ui.perfetto.dev) and chrome://tracing open.
/// @file
/// One profile per process at a time (a Runner with RunnerOptions::profile_path starts it and
/// writes it when the run ends). A span is an RAII object:
/// @code
/// { profiling::Span span("checkpoint.write"); ... }   // recorded when it goes out of scope
/// @endcode
/// Cost: with no profile recording, a Span is one relaxed atomic load; while recording, two clock
/// reads and an append under a mutex (well under a microsecond), so spans mark phases, not kernel
/// calls. Spans on one thread nest as the code's scopes do; each thread is its own track. At most
/// `max_events` spans are kept (1 000 000 by default, 40 bytes each); later ones are counted as
/// dropped and the count is written into the file, so memory stays bounded on any run length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace tenax::profiling {

/// Whether a profile is being recorded.
[[nodiscard]] bool enabled() noexcept;

/// Starts recording a new profile of at most `max_events` spans and returns true. Returns false
/// (and changes nothing) when a profile is already recording in this process. `max_events` must
/// be at least 1 (UsageError).
bool start(std::size_t max_events = 1'000'000);

/// Stops recording and writes the trace to `path` (parent directories must exist), written to a
/// temporary file and renamed into place; the spans go under process id `rank`, named
/// `rank N`. Returns the number of spans written. Throws UsageError when `path` exists and is
/// not a regular file (a device, a FIFO, a directory, a symbolic link: never replaced; see
/// regular_file.hpp), IoError naming the path when it cannot be written; the spans are dropped
/// either way. Nothing happens (returns 0) when no profile is
/// recording.
std::size_t stop_and_write(const std::filesystem::path& path, int rank);

/// Stops recording and drops the spans (a run that ends without writing its profile).
void discard() noexcept;

/// One timed phase: begins at construction, recorded (name, start, duration, step, thread) when
/// destroyed. It is kept when a profile was recording at construction and one still is at
/// destruction, and the profile has room (`max_events`; otherwise it is counted as dropped).
/// Non-copyable; create it on the stack of the thread whose work it times.
class Span {
 public:
  /// `name` must outlive the profile (a string literal): only the pointer is kept. `step` is shown
  /// as the span's argument when >= 0.
  explicit Span(const char* name, std::int64_t step = -1) noexcept;
  ~Span();  ///< records the span (see the class); never throws
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* name_;
  std::int64_t step_;
  std::int64_t begin_ns_ = -1;  ///< -1: not recording
};

}  // namespace tenax::profiling
