/// Synthetic training sets drawn from the counter-based Philox generator: the same samples for a
/// seed on every machine, rank count and run, with nothing to download. @file
/// Both are ArrayData (array_data.hpp) of two f32 inputs per sample, for trying a model, a
/// precision or a fault policy before a real data set: train_mlp's --task uses them.
#pragma once

#include <cstdint>

#include "tenax/train/array_data.hpp"

namespace tenax::train {

/// Regression: x uniform on [-1, 1]^2 and y = sin(pi x0) cos(pi x1) + x0 x1 / 2 plus Gaussian
/// noise of standard deviation `noise` ([samples, 1] f32 targets). UsageError for samples < 1
/// or a noise that is negative or not finite.
[[nodiscard]] ArrayData regression_data(std::int64_t samples, double noise, std::uint64_t seed);

/// Classification: two interleaved spirals, sample i of class i % 2 at radius t and angle
/// 3 pi t + class pi, t uniform in [0.05, 1), plus Gaussian noise of standard deviation `noise`
/// on both coordinates (2 classes, [samples] i64 labels). UsageError as regression_data's.
[[nodiscard]] ArrayData spirals_data(std::int64_t samples, double noise, std::uint64_t seed);

}  // namespace tenax::train
