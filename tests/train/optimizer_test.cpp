// nn::SGD, Adam and AdamW: every PyTorch reference case of optim_reference.hpp through the
// Optimizer classes and make_optimizer, the state-dict round trip continuing bit for bit, no
// pool allocation in step(), and the usage errors of the classes, the factory and loading.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "kernels/optim_test_helpers.hpp"
#include "kernels/tensor_values.hpp"
#include "kernels/usage_error.hpp"
#include "solvers/counted_allocations.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/nn/linear.hpp"
#include "tenax/train/nn/optimizer.hpp"

namespace tenax::train::nn {
namespace {

using autodiff::Variable;
using testing::CountedAllocations;
using testing::expect_contains;
using testing::make_tensor;
using testing::philox_uniform;
using testing::same_bytes;
using testing::usage_error;
using testing::values_of;
namespace ref = testing::optim_reference;

constexpr DType kDtypes[] = {DType::f64, DType::f32};

std::string exact(double v) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, v);
  return std::string(text, end);
}

// The make_optimizer option text of a reference case.
std::string options_text(const ref::Case& c) {
  std::string text = "lr=" + exact(c.lr) + ",wd=" + exact(c.weight_decay);
  if (testing::is_sgd(c)) {
    text += ",momentum=" + exact(c.momentum) + ",dampening=" + exact(c.dampening) +
            ",nesterov=" + (c.nesterov ? "1" : "0");
  } else {
    text += " beta1=" + exact(c.beta1) + " beta2=" + exact(c.beta2) + " eps=" + exact(c.eps);
  }
  return text;
}

// The same case built from the options structs.
std::unique_ptr<Optimizer> typed_optimizer(const ref::Case& c, std::vector<Variable> params) {
  const std::string kind = c.optimizer;
  if (kind == "sgd") {
    return std::make_unique<SGD>(
        std::move(params), SgdOptions{c.lr, c.momentum, c.dampening, c.weight_decay, c.nesterov});
  }
  if (kind == "adam") {
    return std::make_unique<Adam>(std::move(params),
                                  AdamOptions{c.lr, {c.beta1, c.beta2}, c.eps, c.weight_decay});
  }
  return std::make_unique<AdamW>(std::move(params),
                                 AdamWOptions{c.lr, {c.beta1, c.beta2}, c.eps, c.weight_decay});
}

void expect_case_matches_pytorch(const ref::Case& c, DType dtype, bool use_factory) {
  const Variable p = Variable::parameter(testing::reference_param(dtype));
  const std::unique_ptr<Optimizer> opt =
      use_factory ? make_optimizer(c.optimizer, {p}, options_text(c)) : typed_optimizer(c, {p});
  EXPECT_EQ(opt->name(), c.optimizer);
  const ref::Values& want = testing::reference_values(c, dtype);
  for (int k = 0; k < ref::kSteps; ++k) {
    ops::copy(p.grad(), testing::reference_grad(k, dtype));
    opt->step(c.grad_scale);
    EXPECT_EQ(opt->steps_taken(), k + 1);
    testing::expect_reference(p.value(), want.params[k], dtype,
                              std::string(c.name) + " step " + std::to_string(k + 1));
  }
  const StateDict state = opt->state_dict();
  if (testing::is_sgd(c)) {
    if (c.momentum != 0.0) {
      testing::expect_reference(state.tensor("momentum_buffer/0"), want.buffer0, dtype, c.name);
    }
  } else {
    testing::expect_reference(state.tensor("exp_avg/0"), want.buffer0, dtype, c.name);
    testing::expect_reference(state.tensor("exp_avg_sq/0"), want.buffer1, dtype, c.name);
  }
}

TEST(Optimizer, EveryPyTorchCaseThroughTheClassesAndTheFactory) {
  for (const ref::Case& c : ref::kCases) {
    for (const DType dtype : kDtypes) {
      for (const bool factory : {false, true}) {
        SCOPED_TRACE(std::string(c.name) + " " + std::string(to_string(dtype)) +
                     (factory ? " via make_optimizer(\"" + options_text(c) + "\")" : ""));
        expect_case_matches_pytorch(c, dtype, factory);
      }
    }
  }
}

TEST(Optimizer, AdamWDefaultsToPyTorchsWeightDecay) {
  const Variable p = Variable::parameter(make_tensor({1.0}, DType::f32));
  EXPECT_EQ(AdamW({p}).options().weight_decay, 0.01);
  EXPECT_TRUE(AdamW({p}).decoupled_weight_decay());
  EXPECT_EQ(Adam({p}, AdamOptions{}).options().weight_decay, 0.0);
  const auto made = make_optimizer("adamw", {p}, "lr=0.5");
  EXPECT_EQ(dynamic_cast<AdamW&>(*made).options().weight_decay, 0.01);
  EXPECT_EQ(made->lr(), 0.5);
}

TEST(Optimizer, ZeroGradLrAndStepCount) {
  const Variable p = Variable::parameter(make_tensor({1.0, 2.0}, DType::f64));
  SGD opt({p}, SgdOptions{0.5});
  ops::fill(p.grad(), 1.0);
  opt.step();
  EXPECT_EQ(values_of(p.value()), (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(values_of(p.grad()), (std::vector<double>{1.0, 1.0})) << "step() keeps the grads";
  opt.zero_grad();
  EXPECT_EQ(values_of(p.grad()), (std::vector<double>{0.0, 0.0}));
  ops::fill(p.grad(), 1.0);
  opt.set_lr(0.25);
  EXPECT_EQ(opt.lr(), 0.25);
  opt.step(2.0);  // grad_scale 2
  EXPECT_EQ(values_of(p.value()), (std::vector<double>{0.0, 1.0}));
  EXPECT_EQ(opt.steps_taken(), 2);
}

// ---- state dict ----

// `steps` training steps of mlp on fixed batches (seeded by the step number).
void train(const MLP& mlp, Optimizer& opt, int steps) {
  for (int i = 0; i < steps; ++i) {
    const auto k = static_cast<std::uint64_t>(opt.steps_taken());
    const Variable x = Variable::constant(philox_uniform({16, 5}, DType::f32, 2 * k + 1));
    const Variable y = Variable::constant(philox_uniform({16, 3}, DType::f32, 2 * k + 2));
    opt.zero_grad();
    autodiff::backward(autodiff::mse_loss(mlp.forward(x), y));
    opt.step(0.9);
  }
}

TEST(Optimizer, StateDictRoundTripContinuesBitForBit) {
  for (const char* kind : {"sgd", "adam", "adamw"}) {
    SCOPED_TRACE(kind);
    const char* options =
        std::string(kind) == "sgd" ? "lr=0.1,momentum=0.9,nesterov=1,wd=1e-3" : "lr=0.01,wd=0.1";
    MLP model({5, 8, 3}, Activation::tanh, DType::f32, Device::cpu(), 1);
    const auto opt = make_optimizer(kind, model.parameters(), options);
    train(model, *opt, 3);
    const StateDict model_state = model.state_dict().clone();
    const StateDict opt_state = opt->state_dict().clone();
    train(model, *opt, 3);

    MLP resumed({5, 8, 3}, Activation::tanh, DType::f32, Device::cpu(), 77);
    const auto resumed_opt = make_optimizer(kind, resumed.parameters(), options);
    resumed.load_state_dict(model_state);
    resumed_opt->load_state_dict(opt_state);
    EXPECT_EQ(resumed_opt->steps_taken(), 3);
    train(resumed, *resumed_opt, 3);

    EXPECT_EQ(resumed_opt->steps_taken(), 6);
    for (std::size_t i = 0; i < model.parameters().size(); ++i) {
      EXPECT_TRUE(same_bytes(resumed.parameters()[i].value(), model.parameters()[i].value()))
          << "parameter " << i;
    }
    const StateDict a = opt->state_dict();
    const StateDict b = resumed_opt->state_dict();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a.entries()[i].first, b.entries()[i].first);
      if (const Tensor* t = std::get_if<Tensor>(&a.entries()[i].second)) {
        EXPECT_TRUE(same_bytes(*t, std::get<Tensor>(b.entries()[i].second)))
            << a.entries()[i].first;
      }
    }
  }
}

TEST(Optimizer, StateDictEntries) {
  const Variable w = Variable::parameter(make_tensor({2, 2}, DType::f32, {1, 2, 3, 4}));
  const Variable b = Variable::parameter(make_tensor({1.0, 2.0}, DType::f32));
  const StateDict adam = Adam({w, b}, AdamOptions{0.1}).state_dict();
  std::vector<std::string> names;
  for (const auto& entry : adam.entries()) names.push_back(entry.first);
  EXPECT_EQ(names, (std::vector<std::string>{"optimizer", "step", "lr", "exp_avg/0", "exp_avg/1",
                                             "exp_avg_sq/0", "exp_avg_sq/1"}));
  EXPECT_EQ(adam.text("optimizer"), "adam");
  EXPECT_EQ(adam.integer("step"), 0);
  EXPECT_EQ(adam.real("lr"), 0.1);
  EXPECT_EQ(values_of(adam.tensor("exp_avg/0")), (std::vector<double>(4, 0.0))) << "zeroed";
  EXPECT_EQ(SGD({w}, SgdOptions{0.1}).state_dict().size(), 3u) << "no momentum, no buffers";
  const StateDict sgd = SGD({w, b}, SgdOptions{0.1, 0.9}).state_dict();
  EXPECT_TRUE(sgd.contains("momentum_buffer/1"));
  EXPECT_EQ(values_of(sgd.tensor("momentum_buffer/1")), (std::vector<double>(2, 0.0)));
}

TEST(Optimizer, LoadStateDictIsStrictAndChangesNothingOnError) {
  const Variable w = Variable::parameter(make_tensor({2, 2}, DType::f32, {1, 2, 3, 4}));
  const Variable b = Variable::parameter(make_tensor({1.0, 2.0}, DType::f32));
  Adam opt({w, b}, AdamOptions{0.1});
  ops::fill(w.grad(), 1.0);
  opt.step();
  const StateDict good = opt.state_dict().clone();
  opt.step();
  const std::vector<double> exp_avg = values_of(opt.state_dict().tensor("exp_avg/0"));

  StateDict from_sgd = good.clone();
  from_sgd.set("optimizer", std::string("sgd"));
  expect_contains(usage_error([&] { opt.load_state_dict(from_sgd); }),
                  {"saved by optimizer 'sgd'", "'adam' optimizer"});
  StateDict missing;
  for (const auto& [name, value] : good.entries()) {
    if (name != "exp_avg_sq/1") missing.set(name, value);
  }
  expect_contains(usage_error([&] { opt.load_state_dict(missing); }), {"no entry 'exp_avg_sq/1'"});
  StateDict wrong_shape = good.clone();
  wrong_shape.set("exp_avg/1", Tensor::empty({3}, DType::f32));
  expect_contains(usage_error([&] { opt.load_state_dict(wrong_shape); }),
                  {"'exp_avg/1'", "f32[3]", "parameter 1 needs f32[2]"});
  StateDict wrong_dtype = good.clone();
  wrong_dtype.set("exp_avg/0", Tensor::empty({2, 2}, DType::f64));
  expect_contains(usage_error([&] { opt.load_state_dict(wrong_dtype); }), {"'exp_avg/0'", "f64"});
  StateDict extra = good.clone();
  extra.set("momentum_buffer/0", Tensor::empty({2, 2}, DType::f32));
  expect_contains(usage_error([&] { opt.load_state_dict(extra); }),
                  {"unexpected entry 'momentum_buffer/0'"});
  StateDict bad_step = good.clone();
  bad_step.set("step", 2.5);
  expect_contains(usage_error([&] { opt.load_state_dict(bad_step); }), {"'step'"});
  // A step count the next step() could not increment.
  bad_step.set("step", std::numeric_limits<std::int64_t>::max());
  expect_contains(usage_error([&] { opt.load_state_dict(bad_step); }),
                  {"'step' is 9223372036854775807"});

  EXPECT_EQ(opt.steps_taken(), 2) << "nothing changed";
  EXPECT_EQ(values_of(opt.state_dict().tensor("exp_avg/0")), exp_avg);
  opt.load_state_dict(good);
  EXPECT_EQ(opt.steps_taken(), 1);
}

// ---- no allocation ----

TEST(Optimizer, StepAndZeroGradAllocateNothing) {
  for (const char* kind : {"sgd", "adam", "adamw"}) {
    for (const DType dtype : kDtypes) {
      CountedAllocations allocations;
      MLP model({32, 64, 10}, Activation::relu, dtype, Device::cpu(), 3);
      const auto opt = make_optimizer(
          kind, model.parameters(),
          "lr=0.01,wd=0.01" +
              std::string(std::string(kind) == "sgd" ? ",momentum=0.9,nesterov=1" : ""));
      for (const Variable& p : model.parameters()) ops::fill(p.grad(), 0.5);
      const std::int64_t after_construction = allocations.blocks();
      for (int i = 0; i < 3; ++i) {
        opt->step(0.5);
        opt->zero_grad();
        opt->set_lr(0.001 * (i + 1));
      }
      (void)opt->state_dict();
      EXPECT_EQ(allocations.blocks(), after_construction) << kind << " " << to_string(dtype);
    }
  }
}

// ---- usage errors ----

TEST(Optimizer, ConstructionErrorsNameTheProblem) {
  const Variable p = Variable::parameter(make_tensor({1.0}, DType::f32));
  expect_contains(usage_error([] { SGD(std::vector<Variable>{}, SgdOptions{}); }),
                  {"parameter list is empty"});
  expect_contains(usage_error([&] {
                    SGD({p, Variable::constant(make_tensor({1.0}, DType::f32))}, SgdOptions{});
                  }),
                  {"parameter 1", "not a parameter", "Variable::parameter"});
  expect_contains(
      usage_error([&] { SGD({Variable::parameter(make_tensor({1.0}, DType::f16))}, {}); }),
      {"parameter 0", "f16", "f32 or f64"});
  expect_contains(usage_error([&] {
                    Adam({p, p}, AdamOptions{});
                  }),
                  {"parameter 1 is parameter 0 again"});
  expect_contains(usage_error([&] { SGD({p}, SgdOptions{-0.1}); }),
                  {"lr = -0.1", "finite and >= 0"});
  expect_contains(usage_error([&] {
                    SGD({p}, SgdOptions{0.1, 0.0, 0.0, 0.0, true});
                  }),
                  {"nesterov", "momentum = 0", "momentum > 0 and zero dampening"});
  expect_contains(usage_error([&] {
                    SGD({p}, SgdOptions{0.1, 0.9, 0.1, 0.0, true});
                  }),
                  {"nesterov", "dampening = 0.1"});
  expect_contains(usage_error([&] { SGD({p}, SgdOptions{0.1, -0.5}); }), {"momentum = -0.5"});
  expect_contains(usage_error([&] {
                    Adam({p}, AdamOptions{0.1, {1.0, 0.999}});
                  }),
                  {"nn::Adam", "beta1 = 1", "[0, 1)"});
  expect_contains(usage_error([&] {
                    AdamW({p}, AdamWOptions{0.1, {0.9, 0.999}, -1.0});
                  }),
                  {"nn::AdamW", "eps = -1"});
  SGD opt({p}, SgdOptions{0.1});
  expect_contains(usage_error([&] { opt.set_lr(NAN); }), {"lr = nan"});
  expect_contains(usage_error([&] { opt.step(-1.0); }), {"grad_scale = -1", ">= 0"});
  EXPECT_EQ(opt.steps_taken(), 0);
}

TEST(Optimizer, FactoryErrorsListTheValidChoices) {
  const Variable p = Variable::parameter(make_tensor({1.0}, DType::f32));
  EXPECT_EQ(optimizer_names(), (std::vector<std::string_view>{"sgd", "adam", "adamw"}));
  expect_contains(usage_error([&] { (void)make_optimizer("rmsprop", {p}); }),
                  {"unknown optimizer 'rmsprop'", "sgd, adam, adamw"});
  expect_contains(usage_error([&] { (void)make_optimizer("sgd", {p}, "lr=0.1,beta1=0.9"); }),
                  {"make_optimizer(\"sgd\")", "unknown option 'beta1'",
                   "lr, momentum, dampening, nesterov, wd, weight_decay"});
  expect_contains(usage_error([&] { (void)make_optimizer("adam", {p}, "momentum=0.9"); }),
                  {"unknown option 'momentum'", "lr, beta1, beta2, eps, wd"});
  expect_contains(usage_error([&] { (void)make_optimizer("adam", {p}, "lr=fast"); }),
                  {"'lr=fast'", "number"});
  expect_contains(usage_error([&] { (void)make_optimizer("sgd", {p}, "momentum=0.9,nesterov=2"); }),
                  {"'nesterov=2'", "1, 0, true or false"});
  expect_contains(usage_error([&] { (void)make_optimizer("sgd", {p}, "lr=0.1,lr=0.2"); }),
                  {"'lr' is given twice"});
  expect_contains(usage_error([&] { (void)make_optimizer("adamw", {p}, "wd=0.1,weight_decay=0"); }),
                  {"weight decay is given twice"});
  expect_contains(usage_error([&] { (void)make_optimizer("sgd", {p}, "lr"); }),
                  {"'lr' is not of the form key=value"});
  expect_contains(usage_error([&] { (void)make_optimizer("adam", {p}, "beta2=1.5"); }),
                  {"beta2 = 1.5"});
  const auto sgd = make_optimizer("sgd", {p}, " lr=0.2, momentum=0.5 nesterov=true ");
  EXPECT_EQ(dynamic_cast<SGD&>(*sgd).options().momentum, 0.5);
  EXPECT_TRUE(dynamic_cast<SGD&>(*sgd).options().nesterov);
  EXPECT_EQ(make_optimizer("adam", {p})->lr(), 1e-3) << "defaults";
}

TEST(OptimizerGroups, WeightDecayGroupsSplitMatricesFromVectors) {
  const MLP mlp({3, 4, 2}, Activation::relu, DType::f32, Device::cpu(), 1);
  const std::vector<ParameterGroup> groups = weight_decay_groups(mlp);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_TRUE(groups[0].weight_decay);
  EXPECT_FALSE(groups[1].weight_decay);
  const std::vector<Variable> params = mlp.parameters();  // fc0.weight, fc0.bias, fc1.weight, ...
  ASSERT_EQ(groups[0].params.size(), 2u);
  ASSERT_EQ(groups[1].params.size(), 2u);
  EXPECT_TRUE(groups[0].params[0] == params[0] && groups[0].params[1] == params[2]);
  EXPECT_TRUE(groups[1].params[0] == params[1] && groups[1].params[1] == params[3]);
  // A model of vectors only gives one group, without decay.
  class Gains : public Module {
   public:
    Gains() : Module("Gains") { register_parameter("g", philox_uniform({3}, DType::f32, 2)); }
  };
  const std::vector<ParameterGroup> only = weight_decay_groups(Gains());
  ASSERT_EQ(only.size(), 1u);
  EXPECT_FALSE(only[0].weight_decay);
}

// A group without decay steps as if the decay were 0, a group with it as the plain list does,
// bit for bit, for every optimizer; the state entries count the groups' parameters in order.
TEST(OptimizerGroups, DecayAppliesOnlyToTheGroupsThatAskForIt) {
  for (const char* name : {"sgd", "adam", "adamw"}) {
    const std::string options =
        std::string("lr=0.05,wd=0.3") + (std::string(name) == "sgd" ? ",momentum=0.9" : "");
    const std::string no_decay =
        std::string("lr=0.05,wd=0") + (std::string(name) == "sgd" ? ",momentum=0.9" : "");
    const auto param = [](std::uint64_t seed) {
      return Variable::parameter(philox_uniform({3, 5}, DType::f32, seed));
    };
    const Variable w = param(1), b = param(2), w_ref = param(1), b_ref = param(2);
    std::vector<ParameterGroup> groups;
    groups.push_back({{w}, true});
    groups.push_back({{b}, false});
    const std::unique_ptr<Optimizer> grouped = make_optimizer(name, std::move(groups), options);
    EXPECT_TRUE(grouped->decays(0));
    EXPECT_FALSE(grouped->decays(1));
    const std::unique_ptr<Optimizer> decayed = make_optimizer(name, {w_ref}, options);
    const std::unique_ptr<Optimizer> plain = make_optimizer(name, {b_ref}, no_decay);
    for (int k = 0; k < 4; ++k) {
      for (const Variable& v : {w, b, w_ref, b_ref}) {
        ops::copy(v.grad(), philox_uniform({3, 5}, DType::f32, 10 + k));
      }
      grouped->step();
      decayed->step();
      plain->step();
    }
    EXPECT_TRUE(same_bytes(w.value(), w_ref.value())) << name;
    EXPECT_TRUE(same_bytes(b.value(), b_ref.value())) << name;
    if (std::string(name) != "sgd") {
      EXPECT_TRUE(same_bytes(grouped->state_dict().tensor("exp_avg/1"),
                             plain->state_dict().tensor("exp_avg/0")))
          << "the second group's parameter is <i> = 1";
    }
  }
}

}  // namespace
}  // namespace tenax::train::nn
