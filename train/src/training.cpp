#include "tenax/train/training.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "tenax/core/error.hpp"

namespace tenax::train {
namespace {

// The optimizer's options text: the base rate, written with every digit it has (a rate of 1e-7
// stays 1e-7), then the others.
std::string optimizer_options(const TrainingRecipe& recipe) {
  TENAX_EXPECTS(std::isfinite(recipe.lr) && recipe.lr > 0, UsageError,
                "TrainingRecipe::lr is " + std::to_string(recipe.lr),
                "give the learning rate a finite value > 0 (e.g. 1e-3)");
  char rate[40];
  std::snprintf(rate, sizeof rate, "lr=%.17g", recipe.lr);
  return recipe.optimizer_options.empty() ? std::string(rate)
                                          : std::string(rate) + "," + recipe.optimizer_options;
}

Precision checked_precision(Precision precision) {
  TENAX_EXPECTS(
      precision == Precision::f32 || precision == Precision::f16 || precision == Precision::bf16,
      UsageError,
      "TrainingRecipe::precision is " + std::to_string(static_cast<int>(precision)) +
          ", not a Precision",
      "pass Precision::f32, Precision::f16 or Precision::bf16 (parse_precision reads "
      "the text of a flag)");
  return precision;
}

LossScalerOptions scaler_options(const TrainingRecipe& recipe) {
  LossScalerOptions options = recipe.loss_scaler;
  options.enabled = PrecisionPolicy{recipe.precision}.uses_loss_scaling();
  return options;
}

}  // namespace

Training::Training(std::vector<autodiff::Variable> params, const TrainingRecipe& recipe)
    : Training(std::vector<nn::ParameterGroup>{{std::move(params), true}}, recipe) {}

Training::Training(std::vector<nn::ParameterGroup> groups, const TrainingRecipe& recipe)
    : precision_{checked_precision(recipe.precision)},
      optimizer_(
          nn::make_optimizer(recipe.optimizer, std::move(groups), optimizer_options(recipe))),
      schedule_(nn::parse_lr_schedule(recipe.schedule, recipe.lr, recipe.total_steps)),
      scaler_(scaler_options(recipe)),
      trainer_(optimizer_->parameters(), *optimizer_, scaler_, schedule_, recipe.trainer) {}

StateDict Training::state_dict() const {
  StateDict state;
  state.merge("optimizer", optimizer_->state_dict());
  state.merge("scaler", scaler_.state_dict());
  return state;
}

void Training::load_state_dict(const StateDict& state) {
  // Each part's loader checks everything before changing anything. The loss scaler (a few
  // numbers) goes first and is put back when the optimizer refuses its part, so that a refused
  // state changes nothing -- without a copy of the optimizer's buffers.
  const StateDict scaler_before = scaler_.state_dict();
  scaler_.load_state_dict(state.scope("scaler"));
  try {
    optimizer_->load_state_dict(state.scope("optimizer"));
  } catch (...) {
    scaler_.load_state_dict(scaler_before);
    throw;
  }
}

}  // namespace tenax::train
