/// -Δh on a 2-D grid whose points are split across the ranks of a Communicator, as a
/// LinearOperator over each rank's shard of the vectors: solvers::Laplacian2dOperator (the 5-point
/// stencil, Dirichlet-zero boundaries) for any number of ranks, with the same bits.
/// @file
/// The grid [ny, nx] is flattened row-major (index y * nx + x), and each rank holds the points
/// [range.first, range.first + range.count) of it: block-aligned ranges
/// (kernels::block_aligned_range), so that the solvers' reductions, global over its partition()
/// with no scope in the caller, keep the single-process bits. A range need not start or end on a
/// grid row. A rank's ghosts are the up to nx points before and after its range (the rows above and
/// below), fetched by a HaloExchange (halo_exchange.hpp) in every apply(); each point is then the
/// stencil bodies' laplacian_5pt_point of its gathered neighbours, the expression every backend of
/// ops::laplacian_5pt_dot evaluates, so y = A x equals the single-process product bit for bit.
/// apply_dot adds ops::dot(x, y), a reduction across the ranks.
///
/// Contract: construction and every apply are collective (every rank, the same order). Vectors
/// are f64 or f32 CPU tensors (UsageError otherwise). Not thread-safe: apply() uses the
/// operator's own buffers. diagonal() is the constant 2 (1/hx^2 + 1/hy^2) on the shard.
#pragma once

#include <cstdint>
#include <string>

#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/communicator_shard_gather.hpp"
#include "tenax/runtime/halo_exchange.hpp"
#include "tenax/solvers/linear_operator.hpp"

namespace tenax::runtime {

/// One rank's points of the distributed 2-D Laplacian, as the LinearOperator of its vector
/// shard; see the file's contract. Keeps a pointer to the communicator, which must outlive it.
class DistributedLaplacian2dOperator final : public solvers::LinearOperator {
 public:
  /// `ny`, `nx` >= 1 grid points; `hy`, `hx` > 0 and finite grid spacings; range.total ==
  /// ny * nx; `dtype` f64 or f32. Collective. Throws UsageError otherwise (on every rank for
  /// ranges that do not tile the grid).
  DistributedLaplacian2dOperator(Communicator& comm, const kernels::ShardRange& range,
                                 std::int64_t ny, std::int64_t nx, double hy, double hx,
                                 DType dtype = DType::f64);

  /// This rank's points of the flattened grid.
  [[nodiscard]] const kernels::ShardRange& range() const noexcept { return range_; }
  /// The points outside range() that the stencil reads: up to nx on each side, fewer at the
  /// grid's first and last rows (0 for an empty range).
  [[nodiscard]] std::int64_t ghost_count() const noexcept { return halo_.ghost_count(); }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] bool has_diagonal() const noexcept override { return true; }
  /// The communicator's ranks and range(): the solvers' reductions over this operator's vectors
  /// are global (solvers/linear_operator.hpp), with no scope in the caller.
  [[nodiscard]] kernels::ShardPartition partition() const noexcept override {
    return {&gather_, range_};
  }

 private:
  void apply_impl(const Tensor& x, const Tensor& y) const override;
  double apply_dot_impl(const Tensor& x, const Tensor& y) const override;
  Tensor diagonal_impl() const override;
  template <class T>
  void apply_typed(const Tensor& x, const Tensor& y) const;

  Communicator* comm_;
  mutable CommunicatorShardGather gather_;  ///< comm_ as the reductions' ranks
  kernels::ShardRange range_;
  std::int64_t ny_;
  std::int64_t nx_;
  double hy_;
  double hx_;
  std::int64_t lo_;  ///< the first point of [ghosts before | shard | ghosts after]
  HaloExchange halo_;
  Tensor ghosts_;    ///< as the exchange fills them: the points before the shard, then after
  Tensor extended_;  ///< points [lo_, lo_ + ghosts + range.count): the shard with its ghosts
};

}  // namespace tenax::runtime
