/// Reductions over vectors split across the ranks of a Communicator, with the bits of one process
/// (kernels/sharded_reduction.hpp): while a ShardedReductions is alive on a rank's thread,
/// ops::dot, nrm2, sum, max, count_nonfinite and the fused Krylov kernels on this rank's shard
/// return the global result, on every rank, bitwise equal to the single-process value over the
/// whole vector, for any number of ranks. Each such call is one all_gather_bytes of the
/// communicator (a few hundred bytes), so it is collective: every rank makes the same reductions in
/// the same order.
/// @file
/// @code{.cpp}
///   const kernels::ShardRange range = kernels::block_aligned_range(n, comm.size(), comm.rank());
///   Tensor x = ...;  // range.count elements: global elements [range.first, range.first + count)
///   ShardedReductions reductions(comm, range);
///   const double norm = ops::nrm2(x);  // the norm of the whole vector
/// @endcode
#pragma once

#include <cstddef>
#include <span>

#include "tenax/kernels/sharded_reduction.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime {

/// The ShardGather of a Communicator: its ranks and all_gather_bytes.
class CommunicatorShardGather final : public kernels::ShardGather {
 public:
  /// Keeps a pointer to `comm`, which must outlive this object.
  explicit CommunicatorShardGather(Communicator& comm) : comm_(&comm) {}
  /// Communicator::size().
  [[nodiscard]] int ranks() const noexcept override { return comm_->size(); }
  /// Communicator::rank().
  [[nodiscard]] int rank() const noexcept override { return comm_->rank(); }
  void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    comm_->all_gather_bytes(mine, all);
  }

 private:
  Communicator* comm_;
};

/// Installs a ShardedReductionScope for `range` over `comm` on this thread while alive (the range
/// must be aligned to reduction blocks: block_aligned_range; UsageError otherwise).
class ShardedReductions {
 public:
  /// Not collective itself (the reductions in its lifetime are). `comm` must outlive it. Throws
  /// UsageError when a scope is already active on this thread (scopes do not nest) or when
  /// `range` is not a block-aligned range of range.total elements. Inside the scope, a
  /// reduction of a tensor that is not this rank's shard (range.count elements) throws
  /// UsageError.
  ShardedReductions(Communicator& comm, const kernels::ShardRange& range)
      : gather_(comm), scope_(gather_, range) {}
  ShardedReductions(const ShardedReductions&) = delete;
  ShardedReductions& operator=(const ShardedReductions&) = delete;

 private:
  CommunicatorShardGather gather_;
  kernels::ShardedReductionScope scope_;
};

}  // namespace tenax::runtime
