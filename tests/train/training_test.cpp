// A Training built from a recipe is the Trainer a program would wire by hand (the same bits), its
// state saved and loaded as one goes on bit for bit, and a recipe's mistakes are refused naming
// the option.
#include "tenax/train/training.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/nn/linear.hpp"

namespace tenax::train {
namespace {

constexpr std::int64_t kBatch = 16;

// A small regression model and its data.
struct Model {
  Model() : mlp({3, 8, 2}, nn::Activation::tanh, DType::f32, Device::cpu(), 7) {
    x = Tensor::empty(Shape{kBatch, 3}, DType::f32);
    ops::random_uniform(x, 11, 0, -1.0, 1.0);
    y = Tensor::empty(Shape{kBatch, 2}, DType::f32);
    ops::random_uniform(y, 12, 0, -1.0, 1.0);
  }
  Trainer::MicroBatchLoss loss() {
    return [this](std::int64_t begin, std::int64_t end) {
      const autodiff::Variable out = mlp.forward(autodiff::Variable::constant(x.slice(begin, end)));
      return autodiff::mse_loss(out, autodiff::Variable::constant(y.slice(begin, end)),
                                {.divisor = static_cast<double>(kBatch * 2)});
    };
  }
  // The parameters' bytes.
  std::string bytes() const {
    std::string out;
    for (const autodiff::Variable& p : mlp.parameters()) {
      out.append(static_cast<const char*>(p.value().data()), p.value().nbytes());
    }
    return out;
  }
  nn::MLP mlp;
  Tensor x, y;
};

TrainingRecipe recipe() {
  TrainingRecipe r;
  r.optimizer = "adam";
  r.lr = 1e-2;
  r.trainer.batch = kBatch;
  r.trainer.grain = 4;
  return r;
}

TEST(Training, IsTheTrainerAProgramWouldWireByHand) {
  Model built;
  Training training(built.mlp.parameters(), recipe());
  Model wired;
  nn::Adam adam(wired.mlp.parameters(), nn::AdamOptions{.lr = 1e-2});
  DynamicLossScaler scaler({.enabled = false});
  const nn::LrSchedule schedule = nn::LrSchedule::constant(1e-2);
  Trainer trainer(wired.mlp.parameters(), adam, scaler, schedule, {.batch = kBatch, .grain = 4});
  for (std::int64_t s = 0; s < 5; ++s) {
    (void)training.step(s, 8, built.loss());
    training.commit();
    (void)trainer.step(s, 8, wired.loss());
    trainer.commit();
  }
  EXPECT_EQ(built.bytes(), wired.bytes());
  EXPECT_EQ(training.optimizer().steps_taken(), 5);
  EXPECT_FALSE(training.scaler().enabled()) << "f32 trains without loss scaling";
}

TEST(Training, TheRateIsTheRecipesToTheLastDigit) {
  Model model;
  TrainingRecipe r = recipe();
  r.lr = 1.2345678901234567e-7;  // "0.000000" if written with six decimals
  const Training training(model.mlp.parameters(), r);
  EXPECT_EQ(training.optimizer().lr(), r.lr);
}

TEST(Training, F16TurnsTheLossScalerOnWithTheRecipesOptions) {
  Model model;
  TrainingRecipe r = recipe();
  r.precision = Precision::f16;
  r.loss_scaler.init_scale = 1024;
  const Training training(model.mlp.parameters(), r);
  EXPECT_TRUE(training.scaler().enabled());
  EXPECT_EQ(training.scaler().scale(), 1024.0);
  EXPECT_EQ(training.precision().compute_dtype(), DType::f16);
}

TEST(Training, ItsStateSavedAndLoadedGoesOnBitForBit) {
  Model whole;
  Training straight(whole.mlp.parameters(), recipe());
  for (std::int64_t s = 0; s < 6; ++s) {
    (void)straight.step(s, kBatch, whole.loss());
    straight.commit();
  }
  Model first;
  Training before(first.mlp.parameters(), recipe());
  for (std::int64_t s = 0; s < 3; ++s) {
    (void)before.step(s, kBatch, first.loss());
    before.commit();
  }
  const StateDict saved = before.state_dict();
  EXPECT_TRUE(saved.contains("optimizer/step"));
  EXPECT_TRUE(saved.contains("scaler/scale"));
  Model second;  // a fresh process: the model's weights restored, then the training's state
  second.mlp.load_state_dict(first.mlp.state_dict());
  Training after(second.mlp.parameters(), recipe());
  after.load_state_dict(saved);
  for (std::int64_t s = 3; s < 6; ++s) {
    (void)after.step(s, kBatch, second.loss());
    after.commit();
  }
  EXPECT_EQ(second.bytes(), whole.bytes());
}

TEST(Training, ARecipesMistakeIsRefusedNamingTheOption) {
  Model model;
  const auto refusal = [&](const TrainingRecipe& r) -> std::string {
    try {
      const Training training(model.mlp.parameters(), r);
    } catch (const UsageError& e) {
      return e.cause() + " -- fix: " + e.fix();
    }
    return "";
  };
  TrainingRecipe r = recipe();
  r.optimizer = "adagrad";
  EXPECT_NE(refusal(r).find("adagrad"), std::string::npos) << refusal(r);
  r = recipe();
  r.lr = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(refusal(r).find("TrainingRecipe::lr"), std::string::npos) << refusal(r);
  r = recipe();
  r.optimizer_options = "lr=0.5";  // the rate has its own field
  EXPECT_NE(refusal(r).find("lr"), std::string::npos) << refusal(r);
  r = recipe();
  r.schedule = "cosine";
  r.total_steps = 0;  // a cosine schedule spans the run: it needs its length
  EXPECT_FALSE(refusal(r).empty());
  r = recipe();
  r.schedule = "sawtooth";
  EXPECT_NE(refusal(r).find("sawtooth"), std::string::npos) << refusal(r);
  r = recipe();
  r.precision = static_cast<Precision>(9);  // not one of the enumerators
  EXPECT_NE(refusal(r).find("TrainingRecipe::precision is 9"), std::string::npos) << refusal(r);
}

}  // namespace
}  // namespace tenax::train
