#include "tenax/train/nn/module.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"

namespace tenax::train::nn {

using autodiff::Variable;

struct Module::Node {
  std::string type;
  bool training = true;
  std::vector<NamedVariable> parameters;  // names relative to this node
  std::vector<NamedVariable> buffers;
  std::vector<std::pair<std::string, std::shared_ptr<Node>>> children;

  [[nodiscard]] bool holds(const std::string& name) const {
    const auto named = [&](const NamedVariable& v) { return v.name == name; };
    return std::any_of(parameters.begin(), parameters.end(), named) ||
           std::any_of(buffers.begin(), buffers.end(), named) ||
           std::any_of(children.begin(), children.end(),
                       [&](const auto& child) { return child.first == name; });
  }

  [[nodiscard]] bool contains(const Node* other) const {
    if (this == other) return true;
    return std::any_of(children.begin(), children.end(),
                       [&](const auto& child) { return child.second->contains(other); });
  }
};

namespace {

std::string joined(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// Visits the tensors of the tree below `node` (parameters or buffers, by `member`), depth first
// in the order of the file description, with their full paths.
template <class NodeT, class Member, class Visit>
void visit(const NodeT& node, Member member, const std::string& prefix, Visit&& visit_one) {
  for (const NamedVariable& v : node.*member) visit_one(joined(prefix, v.name), v.variable);
  for (const auto& [name, child] : node.children) {
    visit(*child, member, joined(prefix, name), visit_one);
  }
}

template <class NodeT, class Member>
std::vector<NamedVariable> unique_named(const NodeT& node, Member member) {
  std::vector<NamedVariable> out;
  visit(node, member, "", [&](const std::string& path, const Variable& v) {
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&](const NamedVariable& known) { return known.variable == v; });
    if (!seen) out.push_back({path, v});
  });
  return out;
}

void check_name(const std::string& type, const std::string& what, const std::string& name) {
  TENAX_EXPECTS(
      !name.empty() && name.find_first_of("./") == std::string::npos, UsageError,
      "nn::" + type + ": the " + what + " name '" + name + "' is empty or holds '.' or '/'",
      "name each parameter, buffer and submodule with a plain word ('weight', "
      "'blocks'); '.' joins the path and '/' scopes a StateDict");
}

}  // namespace

Module::Module(std::string type) : node_(std::make_shared<Node>()) {
  node_->type = std::move(type);
}

Variable Module::register_parameter(const std::string& name, Tensor value) {
  check_name(node_->type, "parameter", name);
  TENAX_EXPECTS(!node_->holds(name), UsageError,
                "nn::" + node_->type + ": the name '" + name + "' is registered twice",
                "give each parameter, buffer and submodule of a module its own name");
  Variable parameter = Variable::parameter(std::move(value));
  node_->parameters.push_back({name, parameter});
  return parameter;
}

Variable Module::register_buffer(const std::string& name, Tensor value) {
  check_name(node_->type, "buffer", name);
  TENAX_EXPECTS(!node_->holds(name), UsageError,
                "nn::" + node_->type + ": the name '" + name + "' is registered twice",
                "give each parameter, buffer and submodule of a module its own name");
  TENAX_EXPECTS(value.defined(), UsageError,
                "nn::" + node_->type + ": the buffer '" + name + "' is an undefined tensor",
                "register a tensor made by Tensor::empty/zeros (or a computed one)");
  Variable buffer = Variable::constant(std::move(value));
  node_->buffers.push_back({name, buffer});
  return buffer;
}

void Module::register_module(const std::string& name, const Module& child) {
  check_name(node_->type, "submodule", name);
  TENAX_EXPECTS(!node_->holds(name), UsageError,
                "nn::" + node_->type + ": the name '" + name + "' is registered twice",
                "give each parameter, buffer and submodule of a module its own name");
  TENAX_EXPECTS(!child.node_->contains(node_.get()), UsageError,
                "nn::" + node_->type + ": registering the submodule '" + name +
                    "' would make the module its own descendant",
                "register a different module (a tree has no cycles)");
  node_->children.emplace_back(name, child.node_);
}

std::vector<NamedVariable> Module::named_parameters() const {
  return unique_named(*node_, &Node::parameters);
}

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  for (NamedVariable& p : named_parameters()) out.push_back(std::move(p.variable));
  return out;
}

std::vector<NamedVariable> Module::named_buffers() const {
  return unique_named(*node_, &Node::buffers);
}

std::int64_t Module::parameter_count() const {
  std::int64_t count = 0;
  for (const NamedVariable& p : named_parameters()) count += p.variable.value().numel();
  return count;
}

namespace {

// Every entry of a state dict, each module's parameters then buffers, then its submodules'.
template <class NodeT, class Visit>
void visit_state(const NodeT& node, const std::string& prefix, Visit&& visit_one) {
  for (const NamedVariable& v : node.parameters) visit_one(joined(prefix, v.name), v.variable);
  for (const NamedVariable& v : node.buffers) visit_one(joined(prefix, v.name), v.variable);
  for (const auto& [name, child] : node.children) {
    visit_state(*child, joined(prefix, name), visit_one);
  }
}

}  // namespace

StateDict Module::state_dict() const {
  StateDict state;
  visit_state(*node_, "",
              [&](const std::string& path, const Variable& v) { state.set(path, v.value()); });
  return state;
}

void Module::load_state_dict(const StateDict& state) {
  const std::string who = "nn::" + node_->type + "::load_state_dict: ";
  const std::string fix =
      "load a state saved by a module of the same structure (state_dict() names each tensor by "
      "its path, e.g. 'blocks.0.attn.qkv.weight')";
  std::vector<std::pair<Tensor, const Tensor*>> copies;  // (live tensor, saved tensor)
  std::vector<std::string> expected;
  visit_state(*node_, "", [&](const std::string& path, const Variable& v) {
    expected.push_back(path);
    TENAX_EXPECTS(state.contains(path), UsageError, who + "the state has no entry '" + path + "'",
                  fix);
    const Tensor* saved = std::get_if<Tensor>(&state.at(path));
    const Tensor& live = v.value();
    TENAX_EXPECTS(saved != nullptr && saved->defined(), UsageError,
                  who + "entry '" + path + "' does not hold a defined tensor", fix);
    TENAX_EXPECTS(saved->dtype() == live.dtype() ||
                      (is_floating(saved->dtype()) && is_floating(live.dtype())),
                  UsageError,
                  who + "entry '" + path + "' is " + saved->describe() + " but the module holds " +
                      live.describe(),
                  fix);
    TENAX_EXPECTS(saved->shape() == live.shape(), UsageError,
                  who + "entry '" + path + "' has shape " + to_string(saved->shape()) +
                      " but the module expects " + to_string(live.shape()),
                  fix);
    copies.emplace_back(live, saved);
  });
  for (const auto& entry : state.entries()) {
    TENAX_EXPECTS(std::find(expected.begin(), expected.end(), entry.first) != expected.end(),
                  UsageError,
                  who + "unexpected entry '" + entry.first + "' (the module has " +
                      std::to_string(expected.size()) + " tensors)",
                  fix);
  }
  for (const auto& [live, saved] : copies) {
    if (saved->dtype() == live.dtype()) {
      ops::copy(live, *saved);
    } else {
      ops::cast_into(live, *saved);
    }
  }
}

void Module::train(bool training) {
  const std::function<void(Node&)> set = [&](Node& node) {
    node.training = training;
    for (auto& child : node.children) set(*child.second);
  };
  set(*node_);
}

bool Module::is_training() const noexcept { return node_->training; }

void Module::to(Device device) {
  // Every copy is made before any is installed: a copy that fails (out of memory, no device)
  // leaves the whole tree where it was, never half moved.
  struct Move {
    Variable::Impl* impl;
    Tensor value;
    Tensor grad;
  };
  std::vector<Move> moves;
  const auto copy = [&](const std::string&, const Variable& v) {
    Variable::Impl& impl = *v.impl();
    if (std::any_of(moves.begin(), moves.end(), [&](const Move& m) { return m.impl == &impl; })) {
      return;  // a shared parameter, already moved under another name
    }
    Move move{&impl, impl.value, impl.grad};
    if (move.value.device() != device) move.value = move.value.to(device);
    if (move.grad.defined() && move.grad.device() != device) move.grad = move.grad.to(device);
    moves.push_back(std::move(move));
  };
  visit(*node_, &Node::parameters, "", copy);
  visit(*node_, &Node::buffers, "", copy);
  for (Move& move : moves) {
    move.impl->value = std::move(move.value);
    move.impl->grad = std::move(move.grad);
  }
}

}  // namespace tenax::train::nn
