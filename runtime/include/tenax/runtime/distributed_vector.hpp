/// A vector whose elements are split across the ranks of a Communicator: its partition (the
/// communicator and this rank's kernels::ShardRange) and its local part (a Tensor), with dot,
/// nrm2, sum, max and count_nonfinite that are global by construction.
/// @file
/// Each rank holds the contiguous elements [range.first, range.first + range.count) of a vector of
/// range.total elements. The reductions are collective (every rank calls the same ones in the same
/// order; each is one all_gather_bytes of a few hundred bytes) and return, on every rank, bitwise
/// the value one process computes over the whole vector in the fixed order of
/// kernels/reduction_order.hpp, for any number of ranks, uneven ranges and empty ranks.
///
/// What cannot go wrong any more: a DistributedVector is not a Tensor, so a local reduction of it
/// (ops::nrm2(v)) does not compile; its local part is reached only by the explicit local(), whose
/// reductions are this rank's alone. A local part whose length is not the range's, or a range that
/// is not made of whole reduction blocks (use kernels::block_aligned_range), is refused at
/// construction (UsageError, cause and fix). Ranges that do not tile the vector across ranks, or
/// ranks that disagree on its length, throw UsageError on every rank at the first reduction. A dot
/// of two vectors split differently throws UsageError before any communication.
///
/// The solvers run on the local parts unchanged: a distributed operator's partition() is the same
/// partition (DistributedCsrOperator, DistributedLaplacian2dOperator), so a Krylov solve on it is
/// global with nothing in the caller: `cg.solve(a, b.local(), x.local())`.
///
/// Thread-safety: a value type sharing its Tensor's storage (copies alias it); the reductions use
/// the communicator, so they follow its rules (one collective at a time per rank). The
/// communicator must outlive every copy.
/// @code{.cpp}
///   DistributedVector x = DistributedVector::empty(comm, n, DType::f64);
///   ops::fill(x.local(), 1.0);
///   const double norm = x.nrm2();  // sqrt(n) on every rank, the bits of one process
/// @endcode
#pragma once

#include <cstdint>
#include <string>

#include "tenax/core/device.hpp"
#include "tenax/core/dtype.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/kernels/sharded_reduction.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/communicator_shard_gather.hpp"
#include "tenax/solvers/linear_operator.hpp"

namespace tenax::runtime {

/// One rank's part of a vector split across `comm`'s ranks; see the file's contract.
class DistributedVector {
 public:
  /// Wraps `local` (shared, not copied) as this rank's elements `range` of a vector of
  /// range.total elements. Not collective. Throws UsageError when `local` is not a defined 1-D
  /// floating-point tensor of range.count elements, when `range` is not a range of range.total
  /// elements, or when a non-empty `range` does not start and end at reduction blocks.
  DistributedVector(Communicator& comm, const kernels::ShardRange& range, Tensor local);

  /// A new, uninitialised vector of `total` elements split over `comm`'s ranks as
  /// kernels::block_aligned_range splits it (the split of the distributed operators).
  [[nodiscard]] static DistributedVector empty(Communicator& comm, std::int64_t total, DType dtype,
                                               Device device = Device::cpu());
  /// A new, uninitialised vector of the domain of `a`, a distributed operator over `comm` (its
  /// partition(), its dtype and device; the local part from a.make_vector(), so applying `a` to
  /// it copies nothing). Throws UsageError when `a` is not split over `comm`'s ranks.
  [[nodiscard]] static DistributedVector of_operator(Communicator& comm,
                                                     const solvers::LinearOperator& a);

  /// @name The data
  ///@{

  /// This rank's elements (range().count of them). ops on it are local: this rank's alone.
  [[nodiscard]] const Tensor& local() const noexcept { return local_; }
  /// This rank's elements of the whole vector.
  [[nodiscard]] const kernels::ShardRange& range() const noexcept { return range_; }
  /// The number of elements of the whole vector (range().total).
  [[nodiscard]] std::int64_t size() const noexcept { return range_.total; }
  /// The communicator whose ranks hold the vector.
  [[nodiscard]] Communicator& communicator() const noexcept { return gather_.communicator(); }
  /// The partition as the reductions and operators see it (LinearOperator::partition()).
  [[nodiscard]] kernels::ShardPartition partition() const noexcept { return {&gather_, range_}; }
  ///@}

  /// @name Global reductions (collective; bitwise the single-process values)
  ///@{

  /// x.y summed in f64 in the fixed order of ops::dot. Throws UsageError, before any
  /// communication, when `y` is split differently (another communicator or range) or has
  /// another dtype or device.
  [[nodiscard]] double dot(const DistributedVector& y) const;
  /// ||x||_2, as ops::nrm2 over the whole vector.
  [[nodiscard]] double nrm2() const;
  /// The sum of the elements, as ops::sum over the whole vector.
  [[nodiscard]] double sum() const;
  /// The largest element (NaN if any is NaN), as ops::max over the whole vector; empty ranks are
  /// fine. Throws UsageError for a vector of no elements at all.
  [[nodiscard]] double max() const;
  /// The number of infinite or NaN elements of the whole vector.
  [[nodiscard]] std::int64_t count_nonfinite() const;
  ///@}

  /// Collective: the whole vector (every rank's part in rank order) as a CPU tensor of size()
  /// elements on rank `root`; an undefined tensor on the others. UsageError for a root outside
  /// the ranks. On one rank, a CPU vector's local part itself (no copy).
  [[nodiscard]] Tensor gather(int root = 0) const;

  /// For messages: "f64 elements [0, +1024) of 3000 over 3 ranks (this is rank 0)".
  [[nodiscard]] std::string describe() const;

 private:
  mutable CommunicatorShardGather gather_;
  kernels::ShardRange range_;
  Tensor local_;
};

}  // namespace tenax::runtime
