// The Trainer test fixture (a small regression model trained with Adam, its state as bytes) and
// the data-parallel check shared by the CPU and GPU trainer tests: with the threads communicator,
// each rank computes its grains, and the exact reduction gives every rank the single-process
// model bit for bit at any number of ranks; the fast one gives every rank the same model.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tenax/core/tensor.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/loss_scaler.hpp"
#include "tenax/train/nn/linear.hpp"
#include "tenax/train/nn/lr_schedule.hpp"
#include "tenax/train/nn/optimizer.hpp"
#include "tenax/train/trainer.hpp"

namespace tenax::train {

// A Trainer step as the Runner takes it on a single rank: computed, then committed.
template <class... Args>
TrainStepResult step_and_commit(Trainer& trainer, Args&&... args) {
  const TrainStepResult result = trainer.step(std::forward<Args>(args)...);
  trainer.commit();
  return result;
}

using runtime::CommOptions;
using runtime::Communicator;
using runtime::make_thread_communicators;

constexpr std::int64_t kBatch = 32;

// A small regression model and its data, trained with Adam under an f16 or f32 policy.
struct Training {
  explicit Training(DType compute, LossScalerOptions scaler_options = {}, double clip = 0,
                    Communicator* comm = nullptr,
                    GradientReduction reduction = GradientReduction::exact,
                    Device device = Device::cpu())
      : compute(compute),
        mlp({3, 8, 2}, nn::Activation::tanh, DType::f32, device, 7),
        params(mlp.parameters()),
        optimizer(params, nn::AdamOptions{.lr = 1e-2}),
        scaler([&] {
          scaler_options.enabled = compute == DType::f16;
          return scaler_options;
        }()),
        schedule(nn::LrSchedule::constant(1e-2)),
        trainer(params, optimizer, scaler, schedule,
                TrainerOptions{.batch = kBatch,
                               .grain = 4,
                               .clip_grad_norm = clip,
                               .comm = comm,
                               .reduction = reduction}) {
    Tensor x64 = Tensor::empty(Shape{kBatch, 3}, DType::f32);
    ops::random_uniform(x64, 11, 0, -1.0, 1.0);
    x = ops::cast(x64, compute).to(device);
    y = Tensor::empty(Shape{kBatch, 2}, DType::f32);
    ops::random_uniform(y, 12, 0, -1.0, 1.0);
    y = y.to(device);
  }

  Trainer::MicroBatchLoss loss() {
    return [this](std::int64_t begin, std::int64_t end) {
      const autodiff::Variable out = mlp.forward(autodiff::Variable::constant(x.slice(begin, end)));
      return autodiff::mse_loss(out, autodiff::Variable::constant(y.slice(begin, end)),
                                {.divisor = static_cast<double>(kBatch * 2)});
    };
  }

  // Everything a step may change, as bytes.
  std::string snapshot() const {
    std::string bytes;
    auto append = [&](const StateDict& state) {
      for (const auto& [name, value] : state.entries()) {
        bytes += name;
        if (const Tensor* t = std::get_if<Tensor>(&value)) {
          const Tensor host = t->to(Device::cpu());
          bytes.append(static_cast<const char*>(host.data()), host.nbytes());
        } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
          bytes += std::to_string(*i);
        } else if (const auto* d = std::get_if<double>(&value)) {
          bytes.append(reinterpret_cast<const char*>(d), sizeof(double));
        }
      }
    };
    append(mlp.state_dict());
    append(optimizer.state_dict());
    return bytes;
  }

  DType compute;
  nn::MLP mlp;
  std::vector<autodiff::Variable> params;
  nn::Adam optimizer;
  DynamicLossScaler scaler;
  nn::LrSchedule schedule;
  Trainer trainer;
  Tensor x;
  Tensor y;
};

inline void check_every_rank_takes_the_single_process_step(int ranks, Device device) {
  constexpr int kSteps = 6;
  for (const DType compute : {DType::f32, DType::f16}) {
    Training single(compute, {}, 0, nullptr, GradientReduction::exact, device);
    for (int k = 0; k < kSteps; ++k) {
      (void)single.trainer.step(k, 8, single.loss());
      ASSERT_FALSE(single.trainer.combine().has_value());
      single.trainer.commit();
    }
    for (const GradientReduction reduction : {GradientReduction::exact, GradientReduction::fast}) {
      auto comms = make_thread_communicators(ranks, CommOptions{.timeout_seconds = 30});
      std::vector<std::string> snapshots(static_cast<std::size_t>(ranks));
      std::vector<std::string> errors(static_cast<std::size_t>(ranks));
      std::vector<double> losses(static_cast<std::size_t>(ranks));
      std::vector<std::thread> threads;
      for (int r = 0; r < ranks; ++r) {
        threads.emplace_back([&, r] {
          try {
            Training mine(compute, {}, 0, comms[static_cast<std::size_t>(r)].get(), reduction,
                          device);
            // The rows this rank's loss function was asked for: its grains only.
            std::int64_t first_row = kBatch, end_row = 0, row_count = 0;
            const Trainer::MicroBatchLoss counted = [&, loss = mine.loss()](std::int64_t b,
                                                                            std::int64_t e) {
              first_row = std::min(first_row, b);
              end_row = std::max(end_row, e);
              row_count += e - b;
              return loss(b, e);
            };
            for (int k = 0; k < kSteps; ++k) {
              // Each rank its own micro-batch: the bits do not depend on it.
              (void)mine.trainer.step(k, 4 * (1 + r % 2), counted);
              if (auto anomaly = mine.trainer.combine()) throw std::runtime_error(*anomaly);
              mine.trainer.commit();
            }
            // 8 grains of 4 rows, split 8/1, 4/4, 3/3/2, 2/2/2/2.
            const std::int64_t base = 8 / ranks, extra = 8 % ranks;
            const std::int64_t first = r * base + std::min<std::int64_t>(r, extra);
            const std::int64_t count = base + (r < extra ? 1 : 0);
            EXPECT_EQ(mine.trainer.grains().first, first) << "rank " << r;
            EXPECT_EQ(mine.trainer.grains().end, first + count) << "rank " << r;
            EXPECT_EQ(first_row, 4 * first) << "rank " << r;
            EXPECT_EQ(end_row, 4 * (first + count)) << "rank " << r;
            EXPECT_EQ(row_count, kSteps * 4 * count) << "rank " << r;
            snapshots[static_cast<std::size_t>(r)] = mine.snapshot();
            losses[static_cast<std::size_t>(r)] = mine.trainer.last_result().loss;
          } catch (const std::exception& e) {
            errors[static_cast<std::size_t>(r)] = e.what();
          }
        });
      }
      for (auto& t : threads) t.join();
      for (int r = 0; r < ranks; ++r) {
        ASSERT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
        if (reduction == GradientReduction::exact) {
          EXPECT_EQ(snapshots[static_cast<std::size_t>(r)], single.snapshot())
              << "rank " << r << " of " << ranks << ", " << to_string(compute);
          EXPECT_EQ(losses[static_cast<std::size_t>(r)], single.trainer.last_result().loss);
        } else {
          // Every rank takes the same step, whatever the library's order.
          EXPECT_EQ(snapshots[static_cast<std::size_t>(r)], snapshots[0]) << "rank " << r;
          EXPECT_NEAR(losses[static_cast<std::size_t>(r)], single.trainer.last_result().loss, 1e-5);
        }
      }
    }
  }
}

}  // namespace tenax::train
