// Fixed-grain batch reductions: what makes gradient accumulation independent of the micro-batch.
//
// A gradient over a batch is a sum over its samples. Floating-point sums depend on their order,
// and a GEMM's order depends on its shape, so a batch of 256 processed as one micro-batch and
// as four micro-batches of 64 would give different bits. Inside a GrainScope of g rows, the ops
// that reduce over the batch (rows of their first dimension) split the batch into grains of g
// rows (the last may be shorter) and treat each grain the same way whatever micro-batch it came
// in:
//  - linear runs its forward and backward GEMMs one grain at a time (every GEMM has the shape of
//    a grain, so its summation order is that of a grain), and adds each grain's weight and bias
//    gradient to the accumulated gradient in grain order;
//  - losses sum each grain on its own (in f64) and add the grain sums, in order, to the scope's
//    running loss_sum().
// Element-wise ops are independent per element and need nothing. When a micro-batch is a whole
// number of grains, the sequence of floating-point operations on every parameter gradient is
// then the same for every micro-batch size: halving the micro-batch and doubling the
// accumulation (an out-of-memory backoff) changes nothing bit for bit.
//
// Without a scope, the whole batch is one grain. Scopes are per thread and do not nest.
#pragma once

#include <cstdint>

namespace tenax::solvers::autodiff {

class GrainScope {
 public:
  // rows >= 1 (UsageError otherwise). Throws UsageError when a scope is already active.
  explicit GrainScope(std::int64_t rows);
  GrainScope(const GrainScope&) = delete;
  GrainScope& operator=(const GrainScope&) = delete;
  ~GrainScope();

  // Grain rows of the active scope, 0 when none.
  [[nodiscard]] static std::int64_t rows() noexcept;
  // Sum of the per-grain loss sums (before a loss's division by its batch size) added by loss
  // ops since the scope began, in the order they ran; 0 without a scope.
  [[nodiscard]] static double loss_sum() noexcept;

  // For loss ops: adds one grain's loss sum (no-op without a scope).
  static void add_loss(double grain_sum) noexcept;
};

// The row ranges [begin, end) of the grains of a batch of `rows` rows under the active scope
// (one range without a scope). Calls f(begin, end) for each, in order.
template <typename F>
void for_each_grain(std::int64_t rows, F&& f) {
  const std::int64_t grain = GrainScope::rows() > 0 ? GrainScope::rows() : rows;
  if (rows == 0) return;
  for (std::int64_t begin = 0; begin < rows; begin += grain) {
    f(begin, begin + grain < rows ? begin + grain : rows);
  }
}

}  // namespace tenax::solvers::autodiff
