/// Fault injection points: a plan of faults to inject, read from the TENAX_FAULTS environment
/// variable, so that every recovery path of a long job can be exercised on purpose.
/// @file
/// Grammar (white space around items and their parts is ignored; an empty string is an empty
/// plan):
/// @code{.unparsed}
///   plan  := item ("," item)*
///   item  := kind "@" point "=" N ["x" M] [":" phase] [":rank=" R]
///   kind  := oom | nan | inf | device | comm | io | kill | enospc | overflow | hang
///   point := alloc | step | checkpoint
///   phase := [a-z0-9_]+
/// @endcode
/// N (from 1) is the occurrence of the point at which the fault fires; `xM` makes it fire on M
/// consecutive occurrences N .. N+M-1. `:phase` narrows the fault to one phase of the point (the
/// owner of the point names its phases, e.g. the checkpoint store's commit-protocol steps); an
/// item without a phase fires at the first phase the owner checks. `:rank=R` (step and checkpoint
/// points) fires only on rank R of a multi-rank job; without it an item fires on every rank.
/// Examples:
/// @code{.unparsed}
///   oom@alloc=37       the 37th allocation through the fault-injecting resource fails
///   oom@alloc=37x3     allocations 37, 38 and 39 fail
///   oom@step=12, nan@step=50, device@step=120, kill@step=75
///   kill@checkpoint=2:after_data_fsync   SIGKILL during the 2nd checkpoint, after the data fsync
///   enospc@checkpoint=3                  the 3rd checkpoint fails as if the disk were full
///   overflow@step=7                      step 7's gradients overflow (an Inf, as f16 makes)
///   hang@step=40:rank=1                  rank 1 stops making progress in step 40 (a hung rank)
///   enospc@checkpoint=2:rank=1           rank 1's file of the 2nd checkpoint hits a full disk
///   bitflip@step=6:rank=1                one bit of rank 1's state flips after step 6
/// @endcode
/// What a fault means at a point is up to the code that owns the point (the fault-injecting
/// memory resource for alloc, the runner for step and checkpoint). The runner reads N of a step
/// item as the step number and `xM` as M attempts of that step (a retried or rolled-back step is
/// attempted again), so `oom@step=12x3` fails the first three attempts of step 12.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tenax {

/// What goes wrong when an item fires. Each kind means something only at the points whose owner
/// checks for it; at other points it is parsed and ignored.
enum class FaultKind : unsigned char {
  oom,       ///< alloc: the allocation throws OutOfMemoryError; step: the step throws it
  nan,       ///< step: a NaN is written into the state after the step, for the anomaly scan
  inf,       ///< step: as nan, with an infinity
  device,    ///< step: the step throws DeviceFaultError
  comm,      ///< step: the step throws CommFaultError
  io,        ///< a name only: nothing in tenax injects it, so the grammar refuses it
  kill,      ///< step or checkpoint (phase): the process raises SIGKILL
  enospc,    ///< checkpoint (phase): the write fails with ENOSPC, as on a full disk
  overflow,  ///< step: the step's gradients overflow (an Inf, as f16 makes)
  hang,      ///< step: the rank stops making progress until its peers give up on it
  bitflip    ///< step: one bit of the state flips after the step, as silent corruption does
};
/// Where a fault is injected, and whose counter N counts.
enum class FaultPoint : unsigned char {
  alloc,      ///< allocations through a FaultInjectingResource, counted by that resource
  step,       ///< the runner's steps (N is the step number)
  checkpoint  ///< checkpoint writes of the checkpoint store, counted through advance()
};

/// @name Names
///@{

/// The name the grammar uses (`"oom"`, `"alloc"`, ...; `"unknown"` outside the enumeration).
[[nodiscard]] std::string_view to_string(FaultKind kind) noexcept;
[[nodiscard]] std::string_view to_string(FaultPoint point) noexcept;
///@}

/// One item of a plan, as parsed: `kind@point=first[xcount][:phase][:rank=rank]`.
struct FaultSpec {
  FaultKind kind = FaultKind::oom;       ///< what goes wrong
  FaultPoint point = FaultPoint::alloc;  ///< where
  std::uint64_t first = 1;               ///< occurrence of the point, counted from 1
  std::uint64_t count = 1;               ///< consecutive occurrences that fail
  std::string phase;                     ///< empty: any phase of the point
  int rank = -1;                         ///< the only rank it fires on; -1: every rank

  /// Member-wise equality.
  friend bool operator==(const FaultSpec&, const FaultSpec&) = default;
};

/// A parsed TENAX_FAULTS value: the items, plus one occurrence counter per FaultPoint for owners
/// that count through the plan (advance()). The queries are const and thread-safe; the counters
/// are atomic.
class FaultPlan {
 public:
  FaultPlan() = default;  ///< an empty plan: nothing fires
  /// A plan of these items (not validated: the caller builds them), counters at 0.
  explicit FaultPlan(std::vector<FaultSpec> faults);
  /// @name Copying
  ///@{

  /// Copies the items and the current counter values (each counter read atomically, not all
  /// together). Not safe while another thread advances `other`'s counters and a consistent copy
  /// is needed.
  FaultPlan(const FaultPlan& other);
  FaultPlan& operator=(const FaultPlan& other);
  ///@}

  /// The plan that `text` writes in the grammar of fault_injection.hpp. Throws UsageError naming
  /// the bad item or token and listing the valid kinds and points.
  [[nodiscard]] static FaultPlan parse(std::string_view text);
  /// `parse(getenv("TENAX_FAULTS"))`; an empty plan when the variable is unset.
  [[nodiscard]] static FaultPlan from_environment();

  /// Whether the plan has no items.
  [[nodiscard]] bool empty() const noexcept { return faults_.empty(); }
  /// Whether any item is at `point` (e.g. to skip wrapping a resource when nothing is planned).
  [[nodiscard]] bool has(FaultPoint point) const noexcept;
  /// The items in the order they were given.
  [[nodiscard]] const std::vector<FaultSpec>& faults() const noexcept { return faults_; }

  /// True when an item of `kind` at `point` covers occurrence `counter` (from 1), i.e.
  /// first <= counter < first + count, whatever the item's phase. Ranks are not checked: take
  /// for_rank() of the process's plan first.
  [[nodiscard]] bool should_fire(FaultKind kind, FaultPoint point,
                                 std::uint64_t counter) const noexcept;
  /// Like the overload without a phase, for one phase of the point: items without a phase match
  /// every phase, items with one match only that phase.
  [[nodiscard]] bool should_fire(FaultKind kind, FaultPoint point, std::uint64_t counter,
                                 std::string_view phase) const noexcept;

  /// Counts one more occurrence of `point` and returns its number (from 1). Thread-safe; for
  /// points that have a single owner, e.g. the checkpoint store's writes.
  std::uint64_t advance(FaultPoint point) noexcept;
  /// Occurrences of `point` counted by advance() so far (0 before the first).
  [[nodiscard]] std::uint64_t count(FaultPoint point) const noexcept;

  /// The items in the grammar of fault_injection.hpp, comma-separated (`x1` left out);
  /// parse(to_string()) gives an equal plan.
  [[nodiscard]] std::string to_string() const;

  /// The items that fire on `rank` (those without a rank and those for it), counters reset.
  [[nodiscard]] FaultPlan for_rank(int rank) const;

 private:
  std::vector<FaultSpec> faults_;
  std::array<std::atomic<std::uint64_t>, 3> counters_{};
};

/// The process-wide plan, read from TENAX_FAULTS on first use (which throws UsageError for a bad
/// value, and tries again at the next call).
[[nodiscard]] FaultPlan& process_fault_plan();

}  // namespace tenax
