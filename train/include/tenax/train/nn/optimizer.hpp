/// Optimizers over autodiff parameters: SGD, Adam and AdamW with PyTorch's semantics
/// (torch.optim.SGD / Adam / AdamW, single-tensor, amsgrad=False, maximize=False), each step one
/// fused kernel call per parameter (ops::sgd_update / ops::adam_update, ops_optim.hpp).
/// @file
/// Parameters are autodiff::Variable::parameter leaves of dtype f32 or f64 (master weights) on
/// any device, each with its gradient (same dtype, shape and device). Every state buffer is
/// allocated, and zeroed, at construction: step() never allocates, so an out-of-memory error can
/// never leave the model half-updated, and a training loop's memory use is fixed from the start.
///
/// step(grad_scale) multiplies every gradient by grad_scale inside the update (a gradient
/// clipping coefficient, or 1 / loss scale, folded in without an extra pass over the gradients).
/// The step count starts at 0; steps_taken() is the number of completed step() calls (Adam's
/// bias corrections use steps_taken() after the increment, as PyTorch's state["step"]).
///
/// state_dict() holds everything needed to continue bit for bit:
/// ```
/// "optimizer"  the name ("sgd", "adam", "adamw")    "step"  steps_taken()    "lr"  lr()
/// "momentum_buffer/<i>"                    (SGD with momentum != 0)
/// "exp_avg/<i>", "exp_avg_sq/<i>"          (Adam, AdamW)
/// ```
/// with `<i>` the index of the parameter in the constructor's list. The tensors are the live
/// buffers (views, not copies): serialise or clone them before the next step(). Hyperparameters
/// other than lr are configuration, not state: build the optimizer with the same options before
/// loading. load_state_dict is strict and checks everything before changing anything.
///
/// Errors are UsageError naming the value, the expectation and the fix. Not thread-safe; use an
/// optimizer from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/train/autodiff/variable.hpp"
#include "tenax/train/nn/module.hpp"

namespace tenax::train::nn {

/// Parameters and whether the optimizer's weight decay applies to them: PyTorch's param_groups,
/// for the one option that differs between groups in practice (no decay on biases and
/// normalisation gains). An optimizer built from groups updates their parameters in group order;
/// the `<i>` of its state entries counts them in that order.
struct ParameterGroup {
  std::vector<autodiff::Variable> params;  ///< the group's parameters
  bool weight_decay = true;  ///< false: the optimizer's weight decay is not applied to them
};

/// The two groups of GPT-2-style training: parameters of two or more dimensions (the weights of
/// Linear layers, embeddings) decay, the others (biases, LayerNorm gains and shifts) do not;
/// each in model.parameters() order, an empty group left out.
[[nodiscard]] std::vector<ParameterGroup> weight_decay_groups(const Module& model);

/// Base of the optimizers: holds the parameters, the learning rate and the step count, and
/// saves them with the subclass's state buffers (see the file description). A subclass
/// allocates its buffers in its constructor and implements the fused per-parameter update.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter from its current gradient, with the gradient multiplied by
  /// grad_scale (finite, >= 0). Does not zero the gradients. Allocates nothing. On CUDA the
  /// updates are enqueued on the device's stream.
  void step(double grad_scale = 1.0);
  /// Sets every parameter's gradient to zero (keeping its storage).
  void zero_grad();

  /// The learning rate the next step() uses.
  [[nodiscard]] double lr() const noexcept { return lr_; }
  /// For schedules (lr_schedule.hpp): takes effect from the next step(). Finite and >= 0
  /// (UsageError otherwise).
  void set_lr(double lr);
  /// The number of completed step() calls (0 at construction; restored by load_state_dict).
  [[nodiscard]] std::int64_t steps_taken() const noexcept { return steps_; }

  /// The entries listed in the file description. The tensors are the live buffers (views, not
  /// copies): serialise or clone them before the next step().
  [[nodiscard]] StateDict state_dict() const;
  /// Restores a state_dict() of an optimizer of the same kind over parameters of the same shapes
  /// and dtype (any device): UsageError naming a missing, mismatched or unexpected entry.
  void load_state_dict(const StateDict& state);

  /// The parameters given to the constructor, in order (`<i>` of the state entries; the groups'
  /// parameters one group after the other).
  [[nodiscard]] const std::vector<autodiff::Variable>& parameters() const noexcept {
    return params_;
  }
  /// Whether the weight decay applies to parameter i (its group's ParameterGroup::weight_decay;
  /// true for a plain parameter list).
  [[nodiscard]] bool decays(std::size_t i) const { return decays_.at(i) != 0; }
  /// "sgd", "adam" or "adamw".
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;

 protected:
  /// Validates the parameters (non-empty list, no repeats, f32/f64 leaves with gradients) and lr.
  Optimizer(std::vector<ParameterGroup> groups, double lr);

  /// A zeroed tensor shaped like parameter i (for state buffers; constructors only).
  [[nodiscard]] Tensor zeros_like_param(std::size_t i) const;
  /// One fused update of parameter i; `step` is the 1-based number of this step.
  virtual void update(std::size_t i, std::int64_t step, double grad_scale) = 0;
  /// The state buffers by name ("exp_avg", ...), one tensor per parameter each.
  using Buffers = std::vector<std::pair<std::string_view, const std::vector<Tensor>*>>;
  /// The subclass's state buffers, which state_dict() saves and load_state_dict() restores
  /// (empty when it keeps none); the pointers refer to members of the subclass.
  [[nodiscard]] virtual Buffers buffers() const = 0;

 private:
  std::vector<autodiff::Variable> params_;
  std::vector<unsigned char> decays_;  ///< per parameter: 1 when the weight decay applies
  double lr_;
  std::int64_t steps_ = 0;
};

/// torch.optim.SGD's options (its defaults; lr has none in older PyTorch and 1e-3 in newer).
struct SgdOptions {
  double lr = 1e-3;           ///< learning rate (finite, >= 0)
  double momentum = 0.0;      ///< momentum factor (finite, >= 0); 0 keeps no momentum buffer
  double dampening = 0.0;     ///< dampening of the momentum: 1 - dampening scales g (finite)
  double weight_decay = 0.0;  ///< L2 penalty added to the gradient (finite, >= 0)
  bool nesterov = false;      ///< needs momentum > 0 and dampening == 0
};

/// torch.optim.SGD, "sgd" for make_optimizer; the arithmetic is ops::sgd_update's.
class SGD final : public Optimizer {
 public:
  /// Validates the parameters and options (UsageError) and, when momentum != 0, allocates one
  /// zeroed momentum buffer per parameter.
  SGD(std::vector<autodiff::Variable> params, const SgdOptions& options);
  /// As above over parameter groups (weight decay only on the groups that ask for it).
  SGD(std::vector<ParameterGroup> groups, const SgdOptions& options);
  [[nodiscard]] std::string_view name() const noexcept override { return "sgd"; }
  /// The options given to the constructor (set_lr() changes lr(), not options().lr).
  [[nodiscard]] const SgdOptions& options() const noexcept { return options_; }

 private:
  void update(std::size_t i, std::int64_t step, double grad_scale) override;
  [[nodiscard]] Buffers buffers() const override;

  SgdOptions options_;
  std::vector<Tensor> momentum_buffers_;  ///< empty when momentum == 0
};

/// torch.optim.Adam's options and defaults (weight decay added to the gradient).
struct AdamOptions {
  double lr = 1e-3;                                ///< learning rate (finite, >= 0)
  std::pair<double, double> betas = {0.9, 0.999};  ///< decay rates of the moments, in [0, 1)
  double eps = 1e-8;                               ///< added to the denominator (finite, >= 0)
  double weight_decay = 0.0;  ///< L2 penalty added to the gradient (finite, >= 0)
};

/// torch.optim.AdamW's options and defaults (decoupled weight decay, 0.01 by default).
struct AdamWOptions {
  double lr = 1e-3;                                ///< learning rate (finite, >= 0)
  std::pair<double, double> betas = {0.9, 0.999};  ///< decay rates of the moments, in [0, 1)
  double eps = 1e-8;                               ///< added to the denominator (finite, >= 0)
  double weight_decay = 0.01;                      ///< decoupled decay rate (finite, >= 0)
};

/// torch.optim.Adam, "adam" for make_optimizer, and the base of AdamW; the arithmetic is
/// ops::adam_update's. Two zeroed moment buffers per parameter (exp_avg, exp_avg_sq) are
/// allocated at construction.
class Adam : public Optimizer {
 public:
  /// Adam with L2 weight decay. Validates the parameters and options (UsageError).
  Adam(std::vector<autodiff::Variable> params, const AdamOptions& options);
  /// As above over parameter groups (weight decay only on the groups that ask for it).
  Adam(std::vector<ParameterGroup> groups, const AdamOptions& options);
  [[nodiscard]] std::string_view name() const noexcept override { return "adam"; }
  /// The options given to the constructor (an AdamW's in AdamOptions form); set_lr() changes
  /// lr(), not options().lr.
  [[nodiscard]] const AdamOptions& options() const noexcept { return options_; }
  /// True for AdamW: param *= 1 - lr * weight_decay before the Adam step, instead of the
  /// weight decay being added to the gradient.
  [[nodiscard]] bool decoupled_weight_decay() const noexcept { return decoupled_; }

 protected:
  /// For AdamW: as the public constructor, with decoupled weight decay when `decoupled`.
  Adam(std::vector<ParameterGroup> groups, const AdamOptions& options, bool decoupled);

 private:
  void update(std::size_t i, std::int64_t step, double grad_scale) override;
  [[nodiscard]] Buffers buffers() const override;

  AdamOptions options_;
  bool decoupled_;
  std::vector<Tensor> exp_avg_;
  std::vector<Tensor> exp_avg_sq_;
};

/// Adam with decoupled weight decay: param *= 1 - lr * weight_decay before the Adam step.
class AdamW final : public Adam {
 public:
  /// Validates the parameters and options (UsageError).
  AdamW(std::vector<autodiff::Variable> params, const AdamWOptions& options = {});
  /// As above over parameter groups (weight decay only on the groups that ask for it).
  AdamW(std::vector<ParameterGroup> groups, const AdamWOptions& options = {});
  [[nodiscard]] std::string_view name() const noexcept override { return "adamw"; }
};

/// The optimizers make_optimizer knows: {"sgd", "adam", "adamw"}.
[[nodiscard]] std::vector<std::string_view> optimizer_names();

/// An optimizer by name, configured by "key=value" entries separated by commas (or spaces),
/// starting from the defaults of its options struct. Keys:
///   sgd:         lr, momentum, dampening, nesterov (0/1/true/false), wd (or weight_decay)
///   adam, adamw: lr, beta1, beta2, eps, wd (or weight_decay)
/// e.g. make_optimizer("sgd", params, "lr=0.1,momentum=0.9,nesterov=1,wd=1e-4"). UsageError
/// listing the valid names or keys for an unknown one, a malformed entry or value, a repeated
/// key, or a value out of range.
[[nodiscard]] std::unique_ptr<Optimizer> make_optimizer(std::string_view name,
                                                        std::vector<autodiff::Variable> params,
                                                        std::string_view options = {});
/// As above over parameter groups (e.g. weight_decay_groups(model)).
[[nodiscard]] std::unique_ptr<Optimizer> make_optimizer(std::string_view name,
                                                        std::vector<ParameterGroup> groups,
                                                        std::string_view options = {});

}  // namespace tenax::train::nn
