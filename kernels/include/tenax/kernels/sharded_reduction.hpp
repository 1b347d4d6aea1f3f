// Reductions over a vector whose elements are split across ranks, with the bits of one process.
//
// A distributed vector keeps on each rank a contiguous run of its elements (a ShardRange of whole
// reduction blocks, see reduction_order.hpp). While a ShardedReductionScope is alive on a thread,
// every reduction op called on that thread — ops::sum, dot, nrm2, max, count_nonfinite and the
// fused Krylov kernels (spmv_dot, laplacian_*_dot, cg_residual, bicgstab_update, ...) — computes
// this rank's block partials as usual, then combines them with every rank's through the scope's
// ShardGather (one all-gather of at most 2 log2(blocks) + 2 tree nodes per rank, 16 bytes each
// plus 8 per term) and returns the global result: bitwise the value one process computes over the
// whole vector, on every rank, for any number of ranks. So a Krylov solver runs unchanged on
// distributed vectors; the distribution lives in the vectors' ranges, the operator (which
// exchanges halos) and this scope.
//
// Contract:
//  - every rank enters the same reductions in the same order (they are collective), each over
//    exactly range.count elements of the same global vector length (UsageError otherwise, before
//    any communication for a local mismatch; ranks that disagree on the global length or whose
//    ranges do not tile the vector throw UsageError after the gather, on every rank);
//  - the range is aligned() (UsageError otherwise, naming block_aligned_range);
//  - ops::find_nonfinite and ops::unscale_and_measure stay local (they check one rank's tensor);
//  - scopes do not nest (UsageError) and belong to the thread that made them.
// The gather's errors (a CommFaultError from a dead peer) propagate to the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tenax/kernels/reduction_order.hpp"

namespace tenax::kernels {

// What the ranks provide: their number and one all-gather of a record of the same size on every
// rank. The runtime's communicators provide it (runtime/sharded_reductions.hpp).
class ShardGather {
 public:
  virtual ~ShardGather() = default;
  [[nodiscard]] virtual int ranks() const noexcept = 0;
  [[nodiscard]] virtual int rank() const noexcept = 0;
  // `all` (ranks() * mine.size() bytes) receives every rank's `mine`, in rank order.
  virtual void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
};

// How a reduction's partials combine (the combining functions of reduce_bodies.hpp).
enum class ReduceCombine : std::uint8_t { plus, max };

class ShardedReductionScope {
 public:
  ShardedReductionScope(ShardGather& ranks, ShardRange range);
  ShardedReductionScope(const ShardedReductionScope&) = delete;
  ShardedReductionScope& operator=(const ShardedReductionScope&) = delete;
  ~ShardedReductionScope();

  // The scope active on this thread, or nullptr.
  [[nodiscard]] static ShardedReductionScope* active() noexcept;
  [[nodiscard]] const ShardRange& range() const noexcept { return range_; }

  // For the backends: combines this rank's partials of a reduction over `elements` local
  // elements — `terms` sequences of range-block partials, term-major — with every rank's, into
  // out[0, terms): the single-process tree's roots.
  void combine(std::span<const double> partials, int terms, ReduceCombine how,
               std::int64_t elements, std::span<double> out);

 private:
  ShardGather* ranks_;
  ShardRange range_;
};

}  // namespace tenax::kernels
