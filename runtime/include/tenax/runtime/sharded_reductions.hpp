/// A scope that makes every reduction on this thread global over a Communicator's ranks, with the
/// bits of one process (kernels/sharded_reduction.hpp). Not for jobs or solvers: ranks live in
/// the data. A vector split across ranks is a DistributedVector (distributed_vector.hpp), whose
/// dot, nrm2, sum and max are global by construction; the solvers make their reductions global
/// through a distributed operator's partition() (solvers/linear_operator.hpp), with no scope in
/// the caller.
/// @file
/// Who still needs this scope, and why: code that calls the shardable kernels on shards directly,
/// outside any vector or operator — the tests of the sharded reductions and of the fused Krylov
/// kernels (tests/runtime/sharded_reductions*_test.cpp) and the reduction benchmark
/// (bench/mpi/comm_bench.cpp). The thread-local scope underneath stays for the reasons given in
/// kernels/sharded_reduction.hpp. A scope over the same communicator and range as a distributed
/// operator is joined by the solvers; one over another partition makes them throw UsageError.
///
/// While a ShardedReductions is alive on a rank's thread, ops::dot, nrm2, sum, max,
/// count_nonfinite and the fused Krylov kernels on this rank's shard return the global result, on
/// every rank, bitwise equal to the single-process value over the whole vector, for any number of
/// ranks. Each such call is one all_gather_bytes of the communicator (a few hundred bytes), so it
/// is collective: every rank makes the same reductions in the same order.
/// @code{.cpp}
///   const kernels::ShardRange range = kernels::block_aligned_range(n, comm.size(), comm.rank());
///   ShardedReductions reductions(comm, range);
///   const double rr = ops::cg_residual(alpha, q, r).rr;  // r.r over the whole vector
/// @endcode
#pragma once

#include <cstddef>
#include <span>

#include "tenax/kernels/sharded_reduction.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/communicator_shard_gather.hpp"

namespace tenax::runtime {

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
