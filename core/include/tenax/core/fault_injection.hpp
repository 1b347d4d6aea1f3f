// Fault injection points: a plan of faults to inject, read from the TENAX_FAULTS environment
// variable, so that every recovery path of a long job can be exercised on purpose.
//
// Grammar (whitespace around items is ignored; an empty string is an empty plan):
//   plan  := item ("," item)*
//   item  := kind "@" point "=" N ["x" M] [":" phase] [":rank=" R]
//   kind  := oom | nan | inf | device | comm | io | kill | enospc | overflow | hang
//   point := alloc | step | checkpoint
//   phase := [a-z0-9_]+
// N (from 1) is the occurrence of the point at which the fault fires; "xM" makes it fire on M
// consecutive occurrences N .. N+M-1. ":phase" narrows the fault to one phase of the point (the
// owner of the point names its phases, e.g. the checkpoint store's commit-protocol steps); an
// item without a phase fires at the first phase the owner checks. ":rank=R" (step and checkpoint
// points) fires only on rank R of a multi-rank job; without it an item fires on every rank.
// Examples:
//   oom@alloc=37       the 37th allocation through the fault-injecting resource fails
//   oom@alloc=37x3     allocations 37, 38 and 39 fail
//   oom@step=12, nan@step=50, device@step=120, kill@step=75
//   kill@checkpoint=2:after_data_fsync   SIGKILL during the 2nd checkpoint, after the data fsync
//   enospc@checkpoint=3                  the 3rd checkpoint fails as if the disk were full
//   overflow@step=7                      step 7's gradients overflow (an Inf, as f16 makes)
//   hang@step=40:rank=1                  rank 1 stops making progress in step 40 (a hung rank)
//   enospc@checkpoint=2:rank=1           rank 1's file of the 2nd checkpoint hits a full disk
// What a fault means at a point is up to the code that owns the point (the fault-injecting
// memory resource for alloc, the runner for step and checkpoint).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tenax {

enum class FaultKind : unsigned char {
  oom,
  nan,
  inf,
  device,
  comm,
  io,
  kill,
  enospc,
  overflow,
  hang
};
enum class FaultPoint : unsigned char { alloc, step, checkpoint };

[[nodiscard]] std::string_view to_string(FaultKind kind) noexcept;
[[nodiscard]] std::string_view to_string(FaultPoint point) noexcept;

struct FaultSpec {
  FaultKind kind = FaultKind::oom;
  FaultPoint point = FaultPoint::alloc;
  std::uint64_t first = 1;  // occurrence of the point, counted from 1
  std::uint64_t count = 1;  // consecutive occurrences that fail
  std::string phase;        // empty: any phase of the point
  int rank = -1;            // the only rank it fires on; -1: every rank

  friend bool operator==(const FaultSpec&, const FaultSpec&) = default;
};

class FaultPlan {
 public:
  FaultPlan() = default;
  explicit FaultPlan(std::vector<FaultSpec> faults);
  FaultPlan(const FaultPlan& other);
  FaultPlan& operator=(const FaultPlan& other);

  // Throws UsageError naming the bad item or token and listing the valid kinds and points.
  [[nodiscard]] static FaultPlan parse(std::string_view text);
  // parse(getenv("TENAX_FAULTS")); an empty plan when the variable is unset.
  [[nodiscard]] static FaultPlan from_environment();

  [[nodiscard]] bool empty() const noexcept { return faults_.empty(); }
  [[nodiscard]] bool has(FaultPoint point) const noexcept;
  [[nodiscard]] const std::vector<FaultSpec>& faults() const noexcept { return faults_; }

  // True when a fault of `kind` is planned at occurrence `counter` (from 1) of `point`.
  [[nodiscard]] bool should_fire(FaultKind kind, FaultPoint point,
                                 std::uint64_t counter) const noexcept;
  // As above, for one phase of the point: items without a phase match every phase, items with
  // one match only that phase.
  [[nodiscard]] bool should_fire(FaultKind kind, FaultPoint point, std::uint64_t counter,
                                 std::string_view phase) const noexcept;

  // Counts one more occurrence of `point` and returns its number (from 1). Thread-safe; for
  // points that have a single owner, e.g. the runner's steps.
  std::uint64_t advance(FaultPoint point) noexcept;
  [[nodiscard]] std::uint64_t count(FaultPoint point) const noexcept;

  // The plan in the grammar above; parse(to_string()) gives an equal plan.
  [[nodiscard]] std::string to_string() const;

  // The items that fire on `rank` (those without a rank and those for it), counters reset.
  [[nodiscard]] FaultPlan for_rank(int rank) const;

 private:
  std::vector<FaultSpec> faults_;
  std::array<std::atomic<std::uint64_t>, 3> counters_{};
};

// The process-wide plan, read from TENAX_FAULTS on first use (which throws UsageError for a bad
// value, and tries again at the next call).
[[nodiscard]] FaultPlan& process_fault_plan();

}  // namespace tenax
