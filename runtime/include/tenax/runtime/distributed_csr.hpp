/// A square sparse matrix whose rows are split across the ranks of a Communicator, as a
/// LinearOperator over each rank's shard of the vectors: the Krylov solvers run on it unchanged,
/// and their dot products and norms are global by construction (partition(): the solvers reduce
/// over the communicator's ranks, solvers/linear_operator.hpp), with no scope in the caller.
/// @file
/// Each rank holds rows [range.first, range.first + range.count) of the global n x n matrix; the
/// vectors' shards are the same ranges (block-aligned: kernels::block_aligned_range, so that the
/// reductions keep the single-process bits). The columns a rank's rows touch outside its range are
/// its ghosts, fetched by a HaloExchange (halo_exchange.hpp) in every apply(), which then runs one
/// ops::spmv over [ghosts below | local entries | ghosts above]. A vector from make_vector() (the
/// Krylov solvers' work vectors) lies inside room for its ghosts, so its product copies nothing;
/// any other x is copied next to the ghosts first. Each row keeps its entries in their stored
/// order, so y = A x has, row for row, the bits of the single-process ops::spmv on the whole
/// matrix, for any number of ranks.
///
/// Contract: construction and every apply are collective (every rank, the same order). The
/// vectors are CPU tensors for now (the ghost gather is a host loop; UsageError for other
/// devices). Not thread-safe: apply() uses the operator's own exchange buffers. diagonal() is the
/// shard's diagonal (Jacobi preconditioning); with_dtype() is not offered (mixed precision runs on
/// one rank). The communication is not overlapped with the local rows' product.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/communicator_shard_gather.hpp"
#include "tenax/runtime/halo_exchange.hpp"
#include "tenax/solvers/linear_operator.hpp"

namespace tenax::runtime {

/// One rank's rows of a distributed sparse matrix, as the LinearOperator of its vector shard;
/// see the file's contract. Keeps a pointer to the communicator, which must outlive it.
class DistributedCsrOperator final : public solvers::LinearOperator {
 public:
  /// `rows` is this rank's range of the global rows; `local_rows` holds those rows (range.count x
  /// range.total, global column indices, f64 or f32, on the CPU); its entries are copied.
  /// Collective. Throws UsageError on every rank for ranges that do not tile the rows; a matrix
  /// not on the CPU or of the wrong shape throws UsageError on its own rank only, and its peers
  /// then fail in the halo setup with CommFaultError at the deadline.
  DistributedCsrOperator(Communicator& comm, const kernels::ShardRange& rows,
                         const CsrMatrix& local_rows);

  /// This rank's rows, which are also its entries of the vectors.
  [[nodiscard]] const kernels::ShardRange& range() const noexcept { return range_; }
  /// The columns outside range() that this rank's rows touch, fetched by every apply().
  [[nodiscard]] std::int64_t ghost_count() const noexcept { return halo_->ghost_count(); }
  /// This rank's rows as the products read them: range().count x (ghosts + range().count), the
  /// columns ordered [ghosts below | local | ghosts above], compacted (CsrMatrix::compacted).
  [[nodiscard]] const CsrMatrix& local_matrix() const noexcept { return extended_; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] bool has_diagonal() const noexcept override { return true; }
  /// The communicator's ranks and range(): the solvers' reductions over this operator's vectors
  /// are global (solvers/linear_operator.hpp), with no scope in the caller.
  [[nodiscard]] kernels::ShardPartition partition() const noexcept override {
    return {&gather_, range_};
  }

 private:
  void apply_impl(const Tensor& x, const Tensor& y) const override;
  /// The exchange, then ops::spmv_dot over [ghosts below | x | ghosts above] (one pass: the
  /// product and x.y).
  double apply_dot_impl(const Tensor& x, const Tensor& y) const override;
  Dots apply_dots_impl(const Tensor& x, const Tensor& y, const Tensor& w,
                       bool with_yy) const override;
  /// Sends the entries the neighbours need and returns x with its ghosts around it: the vector of
  /// make_vector() that x lies in (nothing copied), or extended_x_ with x copied in.
  Tensor exchange(const Tensor& x) const;
  Tensor diagonal_impl() const override;
  /// A vector inside [room for the ghosts below | x | room above], kept in made_ while in use.
  Tensor make_vector_impl() const override;

  Communicator* comm_;
  mutable CommunicatorShardGather gather_;  ///< comm_ as the reductions' ranks
  kernels::ShardRange range_;
  CsrMatrix extended_;  ///< range.count x (ghosts + range.count): [below | local | above] columns
  std::optional<HaloExchange> halo_;
  Tensor extended_x_;                 ///< [ghosts below | a copy of x | ghosts above]
  mutable std::vector<Tensor> made_;  ///< the whole vectors around make_vector()'s
};

/// Rows [range.first, range.first + range.count) of `matrix` (on the CPU), with their columns:
/// what one rank of a DistributedCsrOperator holds, cut from a matrix every rank built whole.
/// Not collective. UsageError when the rows are not within the matrix's.
[[nodiscard]] CsrMatrix csr_rows(const CsrMatrix& matrix, const kernels::ShardRange& range);

}  // namespace tenax::runtime
