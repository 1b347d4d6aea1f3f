/// Reductions over a vector whose elements are split across ranks, with the bits of one process.
/// @file
/// A distributed vector keeps on each rank a contiguous run of its elements (a ShardRange of whole
/// reduction blocks, see reduction_order.hpp). While a ShardedReductionScope is alive on a thread,
/// every reduction op called on that thread — ops::sum, dot, nrm2, max, count_nonfinite and the
/// fused Krylov kernels (spmv_dot, laplacian_*_dot, cg_residual, bicgstab_update, ...) — computes
/// this rank's block partials as usual, then combines them with every rank's through the scope's
/// ShardGather (one all-gather per reduction: a 32-byte header and 8 bytes per term for each of
/// at most 2 ceil(log2(blocks)) + 2 tree nodes per rank) and returns the global result: bitwise the
/// value one process computes over the whole vector, on every rank, for any number of ranks. So a
/// Krylov solver runs unchanged on distributed vectors; the distribution lives in the vectors'
/// ranges, the operator (which exchanges halos) and this scope.
///
/// Who makes a scope: not the caller of a solver. The data that is split across ranks does:
/// runtime::DistributedVector for its dot/nrm2/sum/max, and the solvers (Krylov, time integrators,
/// mixed-precision refinement) for the vectors of a distributed LinearOperator, through the
/// operator's partition() (solvers/linear_operator.hpp). Both use GlobalReductions below, which
/// joins a scope of the same partition that is already active. The scope itself stays a
/// thread-local because the fused Krylov kernels (ops_krylov.hpp) on both backends reach their
/// last step (finish_reduction_terms, reduce_bodies.hpp) through it: it is the channel from the
/// data's owner to that step, not an API for callers. Its remaining direct users are tests and
/// benchmarks of the kernels themselves (runtime/sharded_reductions.hpp).
///
/// Contract:
///  - every rank enters the same reductions in the same order (they are collective), each over
///    exactly range.count elements of the same global vector length (UsageError otherwise, before
///    any communication for a local mismatch; ranks that disagree on the global length or whose
///    ranges do not tile the vector throw UsageError after the gather, on every rank);
///  - the range is aligned() (UsageError otherwise, naming block_aligned_range);
///  - ops::find_nonfinite and ops::unscale_and_measure stay local (they check one rank's tensor);
///  - scopes do not nest (UsageError) and belong to the thread that made them.
/// The gather's errors (a CommFaultError from a dead peer) propagate to the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "tenax/kernels/reduction_order.hpp"

namespace tenax::kernels {

/// What the ranks provide: their number and one all-gather of a record of the same size on every
/// rank. The runtime's communicators provide it (runtime/sharded_reductions.hpp).
class ShardGather {
 public:
  virtual ~ShardGather() = default;  ///< virtual: implementations may be destroyed through it
  /// The number of ranks taking part, >= 1.
  [[nodiscard]] virtual int ranks() const noexcept = 0;
  /// This process's rank, in [0, ranks()).
  [[nodiscard]] virtual int rank() const noexcept = 0;
  /// Collective: `all` (ranks() * mine.size() bytes) receives every rank's `mine`, in rank
  /// order. Failures (a dead peer) are thrown to the reduction's caller.
  virtual void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
  /// What identifies the group of ranks: two gathers with the same group() (for instance two
  /// gathers over one communicator) reduce over the same ranks. Default: this object.
  [[nodiscard]] virtual const void* group() const noexcept { return this; }
};

/// How a vector's elements are split across ranks, as the reductions see it: the ranks (nullptr
/// for a vector that one process holds whole) and this rank's elements. A value type; `ranks`, when
/// set, must outlive every reduction made over the partition.
struct ShardPartition {
  ShardGather* ranks = nullptr;  ///< the ranks holding the vector; nullptr: one process, local
  ShardRange range;              ///< this rank's elements (the whole vector when local)

  /// A vector of `n` elements held by this process alone.
  [[nodiscard]] static ShardPartition local(std::int64_t n) noexcept {
    return ShardPartition{nullptr, ShardRange{0, n, n}};
  }
  /// Whether the vector is split across ranks (reductions over it are collective).
  [[nodiscard]] bool distributed() const noexcept { return ranks != nullptr; }
  /// Whether `other` splits a vector the same way: the same group of ranks and the same range.
  [[nodiscard]] bool same_as(const ShardPartition& other) const noexcept {
    const bool same_ranks = ranks == other.ranks || (ranks != nullptr && other.ranks != nullptr &&
                                                     ranks->group() == other.ranks->group());
    return same_ranks && range.first == other.range.first && range.count == other.range.count &&
           range.total == other.range.total;
  }
  /// For messages: "elements [first, +count) of total over N ranks" or "N local elements".
  [[nodiscard]] std::string describe() const;
};

/// How a reduction's partials combine (the combining functions of reduce_bodies.hpp).
enum class ReduceCombine : std::uint8_t {
  plus,  ///< sum (identity 0)
  max    ///< NaN-propagating maximum (identity -inf)
};

/// While alive, makes this thread's shardable reductions global over the ranks of `ranks` (see
/// this file). Neither copyable nor movable; create it on the stack around the solver's work.
class ShardedReductionScope {
 public:
  /// Activates the scope on this thread for a vector of which this rank holds `range`. `ranks`
  /// must outlive the scope. Throws UsageError when a scope is already active on this thread,
  /// when `range` is not a range of its vector, or when a non-empty range is not aligned()
  /// (use block_aligned_range).
  ShardedReductionScope(ShardGather& ranks, ShardRange range);
  ShardedReductionScope(const ShardedReductionScope&) = delete;             ///< not copyable
  ShardedReductionScope& operator=(const ShardedReductionScope&) = delete;  ///< not copyable
  /// Deactivates the scope: later reductions on this thread are local again.
  ~ShardedReductionScope();

  /// The scope active on this thread, or nullptr.
  [[nodiscard]] static ShardedReductionScope* active() noexcept;
  /// This rank's elements of the distributed vector, as given at construction.
  [[nodiscard]] const ShardRange& range() const noexcept { return range_; }
  /// The ranks and this rank's range the scope reduces over.
  [[nodiscard]] ShardPartition partition() const noexcept { return {ranks_, range_}; }

  /// For the backends: combines this rank's partials of a reduction over `elements` local
  /// elements — `terms` sequences of range-block partials, term-major — with every rank's, into
  /// out[0, terms): the single-process tree's roots. Throws UsageError when `elements` is not
  /// range().count, the partials do not match `terms` and the range's blocks, or (after the
  /// gather, on every rank) the ranks disagree on the vector's length or their ranges do not tile
  /// it.
  void combine(std::span<const double> partials, int terms, ReduceCombine how,
               std::int64_t elements, std::span<double> out);

 private:
  ShardGather* ranks_;
  ShardRange range_;
};

/// While alive, this thread's shardable reductions are global over `partition` (the way data that
/// knows its partition makes its reductions global; see this file). For a distributed partition
/// it activates a ShardedReductionScope, or joins the active one when that one reduces over the
/// same partition (same_as: nested solvers, an integrator's inner solve, a caller's scope); for a
/// local partition it changes nothing. Throws UsageError when a scope over another partition is
/// active on this thread (a distributed solve inside another vector's reductions), or for an
/// invalid range (as ShardedReductionScope). Neither copyable nor movable; not collective itself.
class GlobalReductions {
 public:
  /// Makes this thread's reductions global over `partition` until destroyed (see the class).
  explicit GlobalReductions(const ShardPartition& partition);
  GlobalReductions(const GlobalReductions&) = delete;             ///< not copyable
  GlobalReductions& operator=(const GlobalReductions&) = delete;  ///< not copyable
  ~GlobalReductions() = default;

 private:
  std::optional<ShardedReductionScope> own_;  ///< the scope this object activated, if any
};

}  // namespace tenax::kernels
