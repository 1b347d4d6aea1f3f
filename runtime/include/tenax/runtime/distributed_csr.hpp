// A square sparse matrix whose rows are split across the ranks of a Communicator, as a
// LinearOperator over each rank's shard of the vectors: the Krylov solvers run on it unchanged,
// inside a ShardedReductions scope (sharded_reductions.hpp) for their dot products and norms.
//
// Each rank holds rows [range.first, range.first + range.count) of the global n x n matrix; the
// vectors' shards are the same ranges (block-aligned: kernels::block_aligned_range, so that the
// reductions keep the single-process bits). The columns a rank's rows touch outside its range are
// its ghosts, fetched by a HaloExchange (halo_exchange.hpp) in every apply(), which then runs one
// ops::spmv over [ghosts below | local entries | ghosts above]. A vector from make_vector() (the
// Krylov solvers' work vectors) lies inside room for its ghosts, so its product copies nothing;
// any other x is copied next to the ghosts first. Each row keeps
// its entries in their stored order, so y = A x has, row for row, the bits of the single-process
// ops::spmv on the whole matrix, for any number of ranks.
//
// Contract: construction and every apply are collective (every rank, the same order). The
// vectors are CPU tensors for now (the ghost gather is a host loop; UsageError for other
// devices). Not thread-safe: apply() uses the operator's own exchange buffers. diagonal() is the
// shard's diagonal (Jacobi preconditioning); with_dtype() is not offered (mixed precision runs on
// one rank). The communication is not overlapped with the local rows' product.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tenax/kernels/csr_matrix.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/halo_exchange.hpp"
#include "tenax/solvers/linear_operator.hpp"

namespace tenax::runtime {

class DistributedCsrOperator final : public solvers::LinearOperator {
 public:
  // `rows` is this rank's range of the global rows; `local_rows` holds those rows (range.count x
  // range.total, global column indices, f64 or f32, on the CPU). Collective. Throws UsageError
  // for shapes that do not agree or ranges that do not tile the rows (on every rank).
  DistributedCsrOperator(Communicator& comm, const kernels::ShardRange& rows,
                         const CsrMatrix& local_rows);

  [[nodiscard]] const kernels::ShardRange& range() const noexcept { return range_; }
  [[nodiscard]] std::int64_t ghost_count() const noexcept { return halo_->ghost_count(); }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] bool has_diagonal() const noexcept override { return true; }

 private:
  void apply_impl(const Tensor& x, const Tensor& y) const override;
  // The exchange, then ops::spmv_dot over [ghosts below | x | ghosts above] (one pass: the
  // product and x.y).
  double apply_dot_impl(const Tensor& x, const Tensor& y) const override;
  Dots apply_dots_impl(const Tensor& x, const Tensor& y, const Tensor& w,
                       bool with_yy) const override;
  // Sends the entries the neighbours need and returns x with its ghosts around it: the vector of
  // make_vector() that x lies in (nothing copied), or extended_x_ with x copied in.
  Tensor exchange(const Tensor& x) const;
  Tensor diagonal_impl() const override;
  // A vector inside [room for the ghosts below | x | room above], kept in made_ while in use.
  Tensor make_vector_impl() const override;

  Communicator* comm_;
  kernels::ShardRange range_;
  CsrMatrix extended_;  // range.count x (ghosts + range.count): [below | local | above] columns
  std::optional<HaloExchange> halo_;
  Tensor extended_x_;                 // [ghosts below | a copy of x | ghosts above]
  mutable std::vector<Tensor> made_;  // the whole vectors around make_vector()'s
};

// Rows [range.first, range.first + range.count) of `matrix` (on the CPU), with their columns:
// what one rank of a DistributedCsrOperator holds, cut from a matrix every rank built whole.
[[nodiscard]] CsrMatrix csr_rows(const CsrMatrix& matrix, const kernels::ShardRange& range);

}  // namespace tenax::runtime
