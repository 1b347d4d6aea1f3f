/// Fixed-grain batch reductions: what makes gradient accumulation independent of the micro-batch
/// and of the number of ranks.
/// @file
/// A gradient over a batch is a sum over its samples. Floating-point sums depend on their order,
/// and a GEMM's order depends on its shape, so a batch of 256 processed as one micro-batch and
/// as four micro-batches of 64 would give different bits. Inside a GrainScope of g rows, the ops
/// that reduce over the batch (rows of their first dimension) split the batch into grains of g
/// rows (the last may be shorter), numbered from the first row of the whole batch, and treat each
/// grain the same way whatever micro-batch (or rank) it came in:
///  - linear runs its forward and backward GEMMs one grain at a time (every GEMM has the shape of
///    a grain, so its summation order is that of a grain) and hands each grain's weight and bias
///    gradient to the scope (add_gradient), which combines them by the pairwise tree over the
///    global grain index of reduction_order.hpp: a binary counter that merges two sibling nodes
///    as soon as both are complete, so at most log2(grains) + 1 partial gradients are held per
///    parameter. finish_gradients() adds each tree's root to its parameter's gradient;
///  - losses sum each grain on its own (in f64) and add the grain sums, in order, to the scope's
///    running loss_sum() (and grain_losses()).
/// Element-wise ops are independent per element and need nothing. When a micro-batch is a whole
/// number of grains, the operations on every parameter gradient are then the same for every
/// micro-batch size, and for every split of the grains across ranks: a rank that held grains
/// [a, b) holds whole nodes of the tree (take_gradients), and the ranks' nodes assemble into the
/// single-process root (runtime's data-parallel Trainer).
///
/// Contract: grains reach each parameter in increasing order without gaps (set_row_offset before
/// each micro-batch); a gradient of an earlier grain is a UsageError (a missing set_row_offset, or
/// a weight used by two grain-wise ops of one forward pass, which a scope does not support).
/// Until finish_gradients() (or take_gradients()) a parameter's gradient is in its tree, and
/// Variable::grad() on it throws UsageError saying so. Gradients added with Tape::accumulate_grad
/// to a leaf inside the scope (ops that are not grain-wise) are counted by plain_gradients().
///
/// Without a scope, the whole batch is one grain. Scopes are per thread and do not nest.
#pragma once

#include <cstdint>
#include <vector>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/train/autodiff/variable.hpp"

namespace tenax::train::autodiff {

/// Makes the ops that reduce over the batch work grain by grain on this thread while it lives
/// (see the file description). Its static functions act on the calling thread's active scope,
/// for the ops and the training loop; only one scope may be active per thread.
class GrainScope {
 public:
  /// rows >= 1 (UsageError otherwise). Throws UsageError when a scope is already active.
  explicit GrainScope(std::int64_t rows);
  GrainScope(const GrainScope&) = delete;
  GrainScope& operator=(const GrainScope&) = delete;
  /// Drops gradient trees not finished or taken (a step that threw leaves no trace).
  ~GrainScope();

  /// Grain rows of the active scope, 0 when none.
  [[nodiscard]] static std::int64_t rows() noexcept;
  /// The row of the whole batch where the rows the next ops see begin (the micro-batch's first
  /// row, a multiple of rows(): UsageError otherwise); 0 when the scope starts.
  static void set_row_offset(std::int64_t row);
  /// The row of the whole batch where the current rows begin (set_row_offset's); 0 without a
  /// scope. Ops keyed by global sample index (dropout) add it to their local row.
  [[nodiscard]] static std::int64_t row_offset() noexcept;
  /// The global index of the grain that starts at local row `local_row` of the current rows.
  [[nodiscard]] static std::int64_t grain_index(std::int64_t local_row) noexcept;

  /// Sum of the per-grain loss sums (before a loss's division by its batch size) added by loss
  /// ops since the scope began, in the order they ran; 0 without a scope.
  [[nodiscard]] static double loss_sum() noexcept;
  /// The same per-grain loss sums, in the order they were added.
  [[nodiscard]] static const std::vector<double>& grain_losses() noexcept;
  /// For loss ops: adds one grain's loss sum (no-op without a scope).
  static void add_loss(double grain_sum) noexcept;

  /// For grain-wise ops (through Tape::accumulate_grain_grad): `gradient` is the gradient of
  /// `parameter` from grain `grain`. Copied (or added into a held node) before it returns.
  static void add_gradient(const Variable& parameter, const Tensor& gradient, std::int64_t grain);
  /// For Tape::accumulate_grad: counts a gradient added to a leaf outside the grain-wise ops.
  static void note_plain_gradient(const Variable& parameter) noexcept;
  /// How many such gradients were added since the scope began.
  [[nodiscard]] static std::int64_t plain_gradients() noexcept;

  /// One parameter's tree: the whole nodes (reduction_order.hpp) over the grains it received, in
  /// order, with their values.
  struct GradientTree {
    Variable parameter;                    ///< the parameter the gradient belongs to
    std::vector<kernels::TreeNode> nodes;  ///< the whole nodes, left to right
    std::vector<Tensor> values;            ///< each node's gradient sum, in the order of nodes
    std::int64_t first_grain = 0;          ///< the first grain received
    std::int64_t end_grain = 0;            ///< one past the last grain received
  };
  /// The trees, in the order their parameters first received a gradient; the scope forgets them.
  [[nodiscard]] static std::vector<GradientTree> take_gradients();
  /// Adds each tree's root (its nodes combined right to left: for grains [0, n) the root of the
  /// tree over n grains) to its parameter's gradient (accumulate_grad).
  static void finish_gradients();
  /// One tree's nodes combined right to left.
  [[nodiscard]] static Tensor fold(const GradientTree& tree);
  /// Whether the active scope holds a tree of `parameter` not yet finished or taken.
  [[nodiscard]] static bool holds_gradient_of(const Variable& parameter) noexcept;
};

/// The row ranges [begin, end) of the grains of a batch of `rows` rows under the active scope
/// (one range without a scope). Calls f(begin, end) for each, in order.
template <typename F>
void for_each_grain(std::int64_t rows, F&& f) {
  const std::int64_t grain = GrainScope::rows() > 0 ? GrainScope::rows() : rows;
  if (rows == 0) return;
  for (std::int64_t begin = 0; begin < rows; begin += grain) {
    f(begin, begin + grain < rows ? begin + grain : rows);
  }
}

}  // namespace tenax::train::autodiff
