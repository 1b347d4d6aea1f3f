#include "tenax/train/nn/optimizer.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/key_values.hpp"
#include "tenax/core/text.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/kernels/ops_optim.hpp"

namespace tenax::train::nn {
namespace {

using autodiff::Variable;
using tenax::format_number;

std::string param_name(std::size_t i) { return "parameter " + std::to_string(i); }

void check_non_negative(std::string_view who, std::string_view name, double value) {
  TENAX_EXPECTS(std::isfinite(value) && value >= 0.0, UsageError,
                std::string(who) + ": " + std::string(name) + " = " + format_number(value) +
                    " but it must be finite and >= 0",
                "pass a finite non-negative " + std::string(name));
}

void check_beta(std::string_view who, std::string_view name, double beta) {
  TENAX_EXPECTS(beta >= 0.0 && beta < 1.0, UsageError,
                std::string(who) + ": " + std::string(name) + " = " + format_number(beta) +
                    " but it must lie in [0, 1)",
                "pass a decay rate in [0, 1) (PyTorch's betas default to 0.9 and 0.999)");
}

void check_sgd_options(const SgdOptions& o) {
  constexpr std::string_view who = "nn::SGD";
  check_non_negative(who, "momentum", o.momentum);
  TENAX_EXPECTS(std::isfinite(o.dampening), UsageError,
                "nn::SGD: dampening = " + format_number(o.dampening) + " but it must be finite",
                "pass a dampening in [0, 1] (0 by default)");
  check_non_negative(who, "weight_decay", o.weight_decay);
  TENAX_EXPECTS(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0), UsageError,
                "nn::SGD: nesterov is set with momentum = " + format_number(o.momentum) +
                    " and dampening = " + format_number(o.dampening) +
                    ", but Nesterov momentum requires momentum > 0 and zero dampening",
                "set momentum > 0 and dampening = 0, or turn nesterov off");
}

void check_adam_options(std::string_view who, const AdamOptions& o) {
  check_beta(who, "beta1", o.betas.first);
  check_beta(who, "beta2", o.betas.second);
  check_non_negative(who, "eps", o.eps);
  check_non_negative(who, "weight_decay", o.weight_decay);
}

}  // namespace

// ---- Optimizer ----

std::vector<ParameterGroup> weight_decay_groups(const Module& model) {
  ParameterGroup decay{{}, true};
  ParameterGroup no_decay{{}, false};
  for (Variable& p : model.parameters()) {
    (p.value().shape().rank() >= 2 ? decay : no_decay).params.push_back(std::move(p));
  }
  std::vector<ParameterGroup> groups;
  for (ParameterGroup* g : {&decay, &no_decay}) {
    if (!g->params.empty()) groups.push_back(std::move(*g));
  }
  return groups;
}

namespace {

std::vector<ParameterGroup> one_group(std::vector<Variable> params) {
  std::vector<ParameterGroup> groups;
  groups.push_back({std::move(params), true});
  return groups;
}

}  // namespace

Optimizer::Optimizer(std::vector<ParameterGroup> groups, double lr) {
  for (ParameterGroup& group : groups) {
    for (Variable& p : group.params) {
      params_.push_back(std::move(p));
      decays_.push_back(group.weight_decay ? 1 : 0);
    }
  }
  TENAX_EXPECTS(!params_.empty(), UsageError, "nn::Optimizer: the parameter list is empty",
                "pass the model's parameters (e.g. mlp.parameters())");
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Variable& p = params_[i];
    TENAX_EXPECTS(p.defined() && p.requires_grad() && p.is_leaf(), UsageError,
                  "nn::Optimizer: " + param_name(i) +
                      " is not a parameter (an undefined Variable, a constant or an op result)",
                  "pass leaves made with autodiff::Variable::parameter");
    const Tensor& value = p.value();
    TENAX_EXPECTS(value.dtype() == DType::f32 || value.dtype() == DType::f64, UsageError,
                  "nn::Optimizer: " + param_name(i) + " is " + value.describe() +
                      " but optimizers update f32 or f64 master weights",
                  "keep the parameters in f32 (or f64) and run the forward pass in f16/bf16 "
                  "if needed");
    const Tensor& grad = p.grad();
    TENAX_EXPECTS(grad.defined() && grad.dtype() == value.dtype() &&
                      grad.shape() == value.shape() && grad.device() == value.device(),
                  UsageError,
                  "nn::Optimizer: the gradient of " + param_name(i) + " is " +
                      (grad.defined() ? grad.describe() : std::string("undefined")) +
                      " but the parameter is " + value.describe(),
                  "pass leaves made with autodiff::Variable::parameter (their gradient matches)");
    for (std::size_t j = 0; j < i; ++j) {
      TENAX_EXPECTS(!(params_[j] == p), UsageError,
                    "nn::Optimizer: " + param_name(i) + " is " + param_name(j) + " again",
                    "list each parameter once (it would be updated twice per step)");
    }
  }
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  check_non_negative("nn::Optimizer", "lr", lr);
  lr_ = lr;
}

Tensor Optimizer::zeros_like_param(std::size_t i) const {
  const Tensor& value = params_[i].value();
  Tensor t = Tensor::empty(value.shape(), value.dtype(), value.device());
  ops::fill(t, 0.0);
  return t;
}

void Optimizer::step(double grad_scale) {
  TENAX_EXPECTS(std::isfinite(grad_scale) && grad_scale >= 0.0, UsageError,
                "nn::Optimizer::step: grad_scale = " + format_number(grad_scale) +
                    " but it must be finite and >= 0",
                "pass the clipping coefficient (or 1 / loss scale); skip the step instead when "
                "the gradients overflowed");
  const std::int64_t next = steps_ + 1;
  for (std::size_t i = 0; i < params_.size(); ++i) update(i, next, grad_scale);
  steps_ = next;
}

void Optimizer::zero_grad() {
  for (const Variable& p : params_) p.zero_grad();
}

StateDict Optimizer::state_dict() const {
  StateDict state;
  state.set("optimizer", std::string(name()));
  state.set("step", steps_);
  state.set("lr", lr_);
  for (const auto& [buffer, tensors] : buffers()) {
    for (std::size_t i = 0; i < tensors->size(); ++i) {
      state.set(std::string(buffer) + "/" + std::to_string(i), (*tensors)[i]);
    }
  }
  return state;
}

void Optimizer::load_state_dict(const StateDict& state) {
  const std::string who = "nn::Optimizer::load_state_dict (" + std::string(name()) + ")";
  const std::string fix = "load a state_dict() saved by a '" + std::string(name()) +
                          "' optimizer built with the same options over the same " +
                          std::to_string(params_.size()) + " parameters";
  auto entry = [&](const std::string& key) -> const StateDict::Value& {
    TENAX_EXPECTS(state.contains(key), UsageError, who + ": the state has no entry '" + key + "'",
                  fix);
    return state.at(key);
  };
  const auto* saved_name = std::get_if<std::string>(&entry("optimizer"));
  TENAX_EXPECTS(saved_name != nullptr && *saved_name == name(), UsageError,
                who + ": the state was saved by optimizer '" +
                    (saved_name != nullptr ? *saved_name : std::string("?")) + "'",
                fix);
  const auto* step = std::get_if<std::int64_t>(&entry("step"));
  // Below the largest int64, so that the next step() can count itself.
  TENAX_EXPECTS(step != nullptr && *step >= 0 && *step < std::numeric_limits<std::int64_t>::max(),
                UsageError,
                who + ": entry 'step' is " +
                    (step != nullptr ? std::to_string(*step) : std::string("not an integer")) +
                    ", not a step count (an integer in [0, 2^63 - 1))",
                fix);
  const auto* lr = std::get_if<double>(&entry("lr"));
  TENAX_EXPECTS(lr != nullptr && std::isfinite(*lr) && *lr >= 0.0, UsageError,
                who + ": entry 'lr' is not a learning rate (a real >= 0)", fix);

  std::vector<std::string> expected = {"optimizer", "step", "lr"};
  std::vector<std::pair<Tensor, const Tensor*>> copies;  // (live buffer, saved tensor)
  for (const auto& [buffer, tensors] : buffers()) {
    for (std::size_t i = 0; i < tensors->size(); ++i) {
      const std::string key = std::string(buffer) + "/" + std::to_string(i);
      expected.push_back(key);
      const Tensor* saved = std::get_if<Tensor>(&entry(key));
      const Tensor& live = (*tensors)[i];
      TENAX_EXPECTS(saved != nullptr && saved->defined(), UsageError,
                    who + ": entry '" + key + "' does not hold a tensor", fix);
      TENAX_EXPECTS(saved->shape() == live.shape() && saved->dtype() == live.dtype(), UsageError,
                    who + ": entry '" + key + "' is " + saved->describe() + " but " +
                        param_name(i) + " needs " + std::string(to_string(live.dtype())) +
                        to_string(live.shape()),
                    fix);
      copies.emplace_back(live, saved);
    }
  }
  for (const auto& [key, value] : state.entries()) {
    bool known = false;
    for (const std::string& name : expected) known = known || name == key;
    TENAX_EXPECTS(known, UsageError, who + ": unexpected entry '" + key + "'", fix);
  }
  for (const auto& [live, saved] : copies) ops::copy(live, *saved);
  steps_ = *step;
  lr_ = *lr;
}

// ---- SGD ----

SGD::SGD(std::vector<Variable> params, const SgdOptions& options)
    : SGD(one_group(std::move(params)), options) {}

SGD::SGD(std::vector<ParameterGroup> groups, const SgdOptions& options)
    : Optimizer(std::move(groups), options.lr), options_(options) {
  check_sgd_options(options_);
  if (options_.momentum != 0.0) {
    // Zeroed although the first step only writes them: state_dict() before any step must not
    // hold garbage (the runner scans state tensors for NaN).
    for (std::size_t i = 0; i < parameters().size(); ++i) {
      momentum_buffers_.push_back(zeros_like_param(i));
    }
  }
}

void SGD::update(std::size_t i, std::int64_t step, double grad_scale) {
  const Variable& p = parameters()[i];
  ops::SgdStep s;
  s.lr = lr();
  s.momentum = options_.momentum;
  s.dampening = options_.dampening;
  s.weight_decay = decays(i) ? options_.weight_decay : 0.0;
  s.nesterov = options_.nesterov;
  s.first_step = step == 1;
  s.grad_scale = grad_scale;
  ops::sgd_update(p.value(), p.grad(), momentum_buffers_.empty() ? Tensor() : momentum_buffers_[i],
                  s);
}

Optimizer::Buffers SGD::buffers() const {
  if (momentum_buffers_.empty()) return {};
  return {{"momentum_buffer", &momentum_buffers_}};
}

// ---- Adam, AdamW ----

Adam::Adam(std::vector<Variable> params, const AdamOptions& options)
    : Adam(one_group(std::move(params)), options, false) {}

Adam::Adam(std::vector<ParameterGroup> groups, const AdamOptions& options)
    : Adam(std::move(groups), options, false) {}

Adam::Adam(std::vector<ParameterGroup> groups, const AdamOptions& options, bool decoupled)
    : Optimizer(std::move(groups), options.lr), options_(options), decoupled_(decoupled) {
  check_adam_options(decoupled ? "nn::AdamW" : "nn::Adam", options_);
  for (std::size_t i = 0; i < parameters().size(); ++i) {
    exp_avg_.push_back(zeros_like_param(i));
    exp_avg_sq_.push_back(zeros_like_param(i));
  }
}

void Adam::update(std::size_t i, std::int64_t step, double grad_scale) {
  const Variable& p = parameters()[i];
  ops::AdamStep s;
  s.lr = lr();
  s.beta1 = options_.betas.first;
  s.beta2 = options_.betas.second;
  s.eps = options_.eps;
  s.weight_decay = decays(i) ? options_.weight_decay : 0.0;
  s.decoupled_weight_decay = decoupled_;
  s.step = step;
  s.grad_scale = grad_scale;
  ops::adam_update(p.value(), p.grad(), exp_avg_[i], exp_avg_sq_[i], s);
}

Optimizer::Buffers Adam::buffers() const {
  return {{"exp_avg", &exp_avg_}, {"exp_avg_sq", &exp_avg_sq_}};
}

AdamW::AdamW(std::vector<Variable> params, const AdamWOptions& options)
    : AdamW(one_group(std::move(params)), options) {}

AdamW::AdamW(std::vector<ParameterGroup> groups, const AdamWOptions& options)
    : Adam(std::move(groups),
           AdamOptions{options.lr, options.betas, options.eps, options.weight_decay}, true) {}

// ---- factory ----

std::vector<std::string_view> optimizer_names() { return {"sgd", "adam", "adamw"}; }

namespace {

constexpr std::string_view kSgdKeys[] = {"lr",       "momentum", "dampening",
                                         "nesterov", "wd",       "weight_decay"};
constexpr std::string_view kAdamKeys[] = {"lr", "beta1", "beta2", "eps", "wd", "weight_decay"};

// Whether the entry sets the weight decay; both spellings at once are an error.
bool is_weight_decay(std::string_view who, const KeyValue& kv, bool& seen) {
  if (kv.key != "wd" && kv.key != "weight_decay") return false;
  TENAX_EXPECTS(!seen, UsageError, std::string(who) + ": the weight decay is given twice",
                "give either wd or weight_decay, once");
  seen = true;
  return true;
}

template <class Options>
Options adam_options(std::string_view who, std::string_view text, Options o) {
  bool decay_seen = false;
  for (const KeyValue& kv : split_key_values(who, text, kAdamKeys)) {
    const double v = parse_real_value(who, kv);
    if (is_weight_decay(who, kv, decay_seen)) {
      o.weight_decay = v;
    } else if (kv.key == "lr") {
      o.lr = v;
    } else if (kv.key == "beta1") {
      o.betas.first = v;
    } else if (kv.key == "beta2") {
      o.betas.second = v;
    } else {
      o.eps = v;
    }
  }
  return o;
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(std::string_view name, std::vector<Variable> params,
                                          std::string_view options) {
  return make_optimizer(name, one_group(std::move(params)), options);
}

std::unique_ptr<Optimizer> make_optimizer(std::string_view name, std::vector<ParameterGroup> groups,
                                          std::string_view options) {
  const std::string who = "make_optimizer(\"" + std::string(name) + "\")";
  if (name == "sgd") {
    SgdOptions o;
    bool decay_seen = false;
    for (const KeyValue& kv : split_key_values(who, options, kSgdKeys)) {
      if (kv.key == "nesterov") {
        o.nesterov = parse_bool_value(who, kv);
        continue;
      }
      const double v = parse_real_value(who, kv);
      if (is_weight_decay(who, kv, decay_seen)) {
        o.weight_decay = v;
      } else if (kv.key == "lr") {
        o.lr = v;
      } else if (kv.key == "momentum") {
        o.momentum = v;
      } else {
        o.dampening = v;
      }
    }
    return std::make_unique<SGD>(std::move(groups), o);
  }
  if (name == "adam") {
    return std::make_unique<Adam>(std::move(groups), adam_options(who, options, AdamOptions{}));
  }
  if (name == "adamw") {
    return std::make_unique<AdamW>(std::move(groups), adam_options(who, options, AdamWOptions{}));
  }
  const std::vector<std::string_view> names = optimizer_names();
  throw UsageError("make_optimizer: unknown optimizer '" + std::string(name) + "'",
                   "use one of: " + join_names(names));
}

}  // namespace tenax::train::nn
