/// Modules: a model as a tree of named parts, each holding named parameters and buffers, in the
/// spirit of torch.nn.Module. @file
/// A layer or a model derives from Module and registers, in its constructor, its parameters
/// (trained: autodiff::Variable::parameter leaves), its buffers (state that is not trained: a
/// running statistic, a fixed mask) and its submodules, each under a name. The tree then names
/// every tensor by its path, as PyTorch does: the weight of the `qkv` Linear of the `attn` of
/// the first of the `blocks` is `blocks.0.attn.qkv.weight`. From the tree come the parameter list
/// for the optimizer, the state dict for checkpoints and files, the train/eval mode and the move
/// to a device, with nothing kept by hand.
///
/// A Module is a handle, like a Variable or a Tensor: a copy refers to the same tree (the same
/// parameters), so layers can be held by value in members and vectors and copied into a parent's
/// registry. Registration keeps the child's tree, not the member: assigning a new layer to a
/// member after registering it leaves the registered one in the tree (register the final one).
///
/// Order: a module's own parameters (or buffers) in registration order, then its submodules'
/// in their registration order, depth first -- the order of PyTorch's named_parameters() and
/// state_dict(). Names are non-empty and hold neither '.' (it joins the path) nor '/' (it scopes
/// a StateDict); a name is used once per module across parameters, buffers and submodules.
/// Errors are UsageError naming the module path, the name and the fix.
///
/// Not thread-safe: a model is used by one thread at a time (the autodiff tape is per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tenax/core/device.hpp"
#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/train/autodiff/variable.hpp"

namespace tenax::train::nn {

/// A tensor of a module tree with its path (`blocks.0.attn.qkv.weight`).
struct NamedVariable {
  std::string name;             ///< the path from the module asked, joined by '.'
  autodiff::Variable variable;  ///< the live parameter or buffer (a handle, not a copy)
};

/// The base of layers and models (see the file description).
class Module {
 public:
  virtual ~Module() = default;
  /// A handle to the same tree (see the file description).
  Module(const Module&) = default;
  /// Takes over the handle.
  Module(Module&&) noexcept = default;
  /// Refers to `other`'s tree from now on.
  Module& operator=(const Module& other) = default;
  /// Takes over the handle.
  Module& operator=(Module&&) noexcept = default;

  /// @name The tree's tensors
  ///@{

  /// Every parameter of the tree, named by its path, in the order of the file description. A
  /// parameter registered in two places (shared weights) is listed once, under its first name.
  [[nodiscard]] std::vector<NamedVariable> named_parameters() const;
  /// The variables of named_parameters(), in that order: what an optimizer or a Training takes.
  [[nodiscard]] std::vector<autodiff::Variable> parameters() const;
  /// Every buffer of the tree, named by its path, in the same order (shared ones listed once).
  [[nodiscard]] std::vector<NamedVariable> named_buffers() const;
  /// The number of trained numbers: the sum of the parameters' element counts.
  [[nodiscard]] std::int64_t parameter_count() const;
  ///@}

  /// @name State
  ///@{

  /// Every parameter and buffer by its path (each module's parameters, then its buffers, then
  /// its submodules'), as PyTorch's state_dict() names them. The tensors are the live ones
  /// (handles, not copies): serialise or clone them before the next update.
  [[nodiscard]] StateDict state_dict() const;
  /// Copies each entry of `state` into the parameter or buffer of that path (from any device; a
  /// floating dtype other than the live one is converted). Strict, and checked before anything
  /// is copied: UsageError naming a missing entry, an entry that is not a tensor, a shape
  /// mismatch (expected vs found) or an entry the tree does not have.
  void load_state_dict(const StateDict& state);
  ///@}

  /// @name Mode and device
  ///@{

  /// Sets training mode (true) or evaluation mode (false) on this module and every submodule:
  /// layers whose forward differs between the two (dropout) read is_training().
  void train(bool training = true);
  /// Evaluation mode: train(false).
  void eval() { train(false); }
  /// Whether this module is in training mode (true from construction).
  [[nodiscard]] bool is_training() const noexcept;
  /// Moves every parameter and buffer of the tree, and every gradient already allocated, to
  /// `device`, in place: every handle to them sees the move. Move a model before building its
  /// optimizer (whose buffers live on the parameters' device).
  void to(Device device);
  ///@}

 protected:
  /// An empty module in training mode; `type` names the kind in messages ("Linear").
  explicit Module(std::string type);

  /// Registers `value` (a defined tensor of a floating dtype) as a trained parameter called
  /// `name` and returns its Variable::parameter (its gradient zeroed).
  autodiff::Variable register_parameter(const std::string& name, Tensor value);
  /// Registers `value` (a defined tensor) as a buffer called `name`: saved and moved with the
  /// module, not trained. Returns it as a Variable::constant.
  autodiff::Variable register_buffer(const std::string& name, Tensor value);
  /// Registers `child`'s tree as the submodule `name`. UsageError when `child` is this module or
  /// holds it (a tree has no cycles).
  void register_module(const std::string& name, const Module& child);

 private:
  struct Node;
  std::shared_ptr<Node> node_;
};

/// A list of modules of one kind, registered as submodules `0`, `1`, ... (torch.nn.ModuleList):
/// the `blocks` of a transformer.
template <class M>
class ModuleList final : public Module {
 public:
  ModuleList() : Module("ModuleList") {}

  /// Appends `module` and registers it under the next index.
  void push_back(M module) {
    items_.push_back(std::move(module));
    register_module(std::to_string(items_.size() - 1), items_.back());
  }
  /// The number of modules.
  [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }
  /// Module i (unchecked, as std::vector's).
  [[nodiscard]] const M& operator[](std::size_t i) const { return items_[i]; }
  /// Module i (unchecked, as std::vector's).
  [[nodiscard]] M& operator[](std::size_t i) { return items_[i]; }
  /// Iteration in order.
  [[nodiscard]] auto begin() const noexcept { return items_.begin(); }
  /// Iteration in order.
  [[nodiscard]] auto end() const noexcept { return items_.end(); }

 private:
  std::vector<M> items_;
};

}  // namespace tenax::train::nn
