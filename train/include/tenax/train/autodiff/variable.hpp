/// Reverse-mode automatic differentiation: Variable, the per-thread Tape, NoGradScope, backward.
/// @file
/// A Variable is a shared handle (copying it copies the handle, not the data) to a value Tensor
/// and, when it requires grad, a gradient Tensor of the same shape, dtype and device. Leaves are
/// made by the user: Variable::parameter(t) requires grad (its gradient starts at zero),
/// Variable::constant(t) does not. Every differentiable op of ops.hpp computes its value with
/// tenax::ops and, when recording is on and one of its inputs requires grad, returns a Variable
/// that requires grad and pushes a node (a backward closure) onto the tape.
///
/// The tape is thread-local, not passed explicitly: a forward pass reads like ordinary code
/// (`mse_loss(linear(x, w, b), y)`), and threads that each run their own forward and backward do
/// not interfere. The consequence is that a graph lives on the thread that built it: backward()
/// must be called on that thread, and a Variable built on another thread is a leaf here (its
/// gradient is accumulated, but nothing flows further back).
///
/// backward(loss) seeds d loss / d loss = 1 and runs the nodes of this thread's tape in reverse
/// recording order, each once, in that fixed order: two identical runs give bitwise identical
/// gradients. Gradients are accumulated (+=) into every Variable that requires grad, leaves and
/// intermediates alike, so gradients of several backward passes add up until zero_grad(). The
/// tape is then cleared (its nodes and the tensors they saved are released): one forward pass,
/// one backward pass. Running backward again on a loss whose graph was consumed throws
/// UsageError; recompute the forward pass instead. Ops on Variables of an earlier, consumed graph
/// treat them as leaves.
///
/// NoGradScope switches recording off on this thread while it lives (evaluation, parameter
/// updates): ops then only compute values and return Variables that do not require grad.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "tenax/core/tensor.hpp"

namespace tenax::train::autodiff {

/// A value of the autodiff graph: a shared handle (see the file description). Copies refer to
/// the same value, gradient and graph node; a default-constructed Variable refers to nothing.
class Variable {
 public:
  Variable() = default;  ///< undefined: defined() is false; ops reject it

  /// A leaf that requires grad; its gradient is allocated now and set to zero. `value` must be a
  /// defined tensor of a floating dtype (UsageError otherwise). The value is shared, not copied:
  /// an optimizer may update it in place (under NoGradScope, or between forward passes).
  [[nodiscard]] static Variable parameter(Tensor value);
  /// A leaf that does not require grad (inputs, targets). Any defined tensor.
  [[nodiscard]] static Variable constant(Tensor value);

  /// Whether the handle refers to a value (false for a default-constructed Variable).
  [[nodiscard]] bool defined() const noexcept { return impl_ != nullptr; }
  /// The value tensor, shared by every copy of the handle and by the graph nodes that saved it.
  /// UsageError for an undefined Variable (as for the accessors below).
  [[nodiscard]] const Tensor& value() const;
  /// Whether backward() accumulates a gradient into it: parameters, and op results recorded
  /// while an input required grad.
  [[nodiscard]] bool requires_grad() const;
  /// Whether the Variable was made by the user rather than by an op.
  [[nodiscard]] bool is_leaf() const;
  /// The accumulated gradient. For a parameter, always defined (zero before any backward); for
  /// an intermediate, undefined until a backward pass reaches it; for a Variable that does not
  /// require grad, always undefined. UsageError while the active GrainScope still holds a
  /// gradient tree of this Variable (GrainScope::finish_gradients() adds it here).
  [[nodiscard]] const Tensor& grad() const;
  /// Sets the gradient to zero (keeps its storage). No-op for a Variable without a gradient.
  void zero_grad() const;

  /// Whether a and b are handles to the same Variable (identity, not values; two undefined
  /// handles are equal).
  friend bool operator==(const Variable& a, const Variable& b) noexcept {
    return a.impl_ == b.impl_;
  }

  /// Shared state of a Variable. Public so that the ops of this layer can build graph nodes;
  /// user code has no need for it.
  struct Impl {
    Tensor value;                ///< see value()
    Tensor grad;                 ///< see grad(); undefined until allocated
    bool requires_grad = false;  ///< see requires_grad()
    bool leaf = true;            ///< see is_leaf()
    /// Tape generation that recorded the op producing this Variable (non-leaves only).
    std::uint64_t generation = 0;
    /// Non-leaves, for Tape::accumulate_grad_range: the axis along which grad is known to hold
    /// zeros in the ranges [first, second) of zero_ranges (-1: none known).
    int zero_axis = -1;
    std::vector<std::pair<std::int64_t, std::int64_t>> zero_ranges;  ///< see zero_axis
  };
  /// The shared state (nullptr for an undefined Variable), for the ops of this layer.
  [[nodiscard]] const std::shared_ptr<Impl>& impl() const noexcept { return impl_; }
  /// A handle to existing shared state, for the ops of this layer (Tape::record makes them).
  explicit Variable(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

/// The thread-local record of the forward pass. The static functions act on the calling thread's
/// tape.
class Tape {
 public:
  /// Called with the gradient of the node's output (already accumulated from every consumer);
  /// adds the input gradients with accumulate_grad().
  using Backward = std::function<void(const Tensor& grad_output)>;

  /// Number of nodes recorded on this thread since the last backward() or clear().
  [[nodiscard]] static std::size_t size();
  /// Drops the recorded nodes (and the tensors they keep alive) without running them, e.g. after
  /// a forward pass whose loss turned out to be unusable. Variables of the dropped graph become
  /// unusable as losses of backward().
  static void clear();
  /// Whether ops record now: false inside a NoGradScope.
  [[nodiscard]] static bool recording();

  /// For op implementations: a new non-leaf Variable holding `value` that requires grad, whose
  /// backward closure runs when backward() reaches it. `op` (a string literal: it is not copied)
  /// names the op and `inputs` are its operands in order, for anomaly reports (anomaly.hpp); the
  /// node also records the current TagScope tag. Only call when recording() is true and an input
  /// requires grad.
  [[nodiscard]] static Variable record(const char* op, std::vector<Variable> inputs, Tensor value,
                                       Backward backward);
  /// For op implementations: adds `grad` to v's gradient when v requires grad (allocating it on
  /// first use); `grad` has v's shape, dtype and device and is never written. A leaf's first
  /// gradient is a copy of `grad`; a non-leaf's is `grad` itself, shared (later gradients are then
  /// added into a new tensor, not into the shared one), so the caller must not write `grad` after
  /// the call. In anomaly mode, a non-finite `grad` throws AnomalyDetected naming the node being
  /// run and the position of v among its inputs.
  static void accumulate_grad(const Variable& v, const Tensor& grad);
  /// The same for a gradient handed over: when it is v's first and `grad` is the only holder of
  /// its whole buffer (an op's fresh result, not a view of a gradient other inputs share), it
  /// becomes v's gradient without a copy; otherwise as above. Temporaries bind here.
  static void accumulate_grad(const Variable& v, Tensor&& grad);
  /// For op implementations whose output is the slab [begin, end) of v along `axis` (narrow):
  /// adds `grad`, of the slab's shape, into that slab of v's gradient, as accumulate_grad of
  /// `grad` padded with zeros to v's shape would. For a non-leaf v it takes fewer passes: the
  /// first call makes the padded gradient, and a later one whose slab still holds those zeros
  /// copies into it rather than adding a padded tensor (so the three thirds of an attention's
  /// qkv cost one padded write and two copies, not three padded tensors and two full-width
  /// adds). Anomaly mode scans `grad` as accumulate_grad does.
  static void accumulate_grad_range(const Variable& v, int axis, std::int64_t begin,
                                    std::int64_t end, const Tensor& grad);
  /// For ops that reduce over a batch grain by grain (grain.hpp): `grad` is v's gradient from
  /// grain `grain` (a global grain index). Inside a GrainScope it goes to the scope's gradient
  /// tree of v (GrainScope::add_gradient); without one, to accumulate_grad. Anomaly mode scans it
  /// as accumulate_grad does.
  static void accumulate_grain_grad(const Variable& v, const Tensor& grad, std::int64_t grain);

 private:
  friend void backward(const Variable& loss, double seed);
};

/// Turns recording off on this thread for its lifetime; nests.
class NoGradScope {
 public:
  NoGradScope();
  NoGradScope(const NoGradScope&) = delete;
  NoGradScope& operator=(const NoGradScope&) = delete;
  ~NoGradScope();
};

/// Runs this thread's tape backward from `loss` as described above, seeding d loss / d loss with
/// `seed` (1 by default; the loss scale under dynamic loss scaling, so that every gradient comes
/// out multiplied by it without an extra pass). loss must require grad and hold exactly one
/// element (shape [] or [1], [1, 1], ...): UsageError naming its shape otherwise. Throws
/// UsageError when the loss's graph was already consumed or cleared, or when seed is not finite.
void backward(const Variable& loss, double seed = 1.0);

}  // namespace tenax::train::autodiff
