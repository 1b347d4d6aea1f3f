// TrainingWorkload's evaluation over ranks: each rank evaluates its own block of the validation
// grains (none twice, none left out), and the ranks' grain sums meet in grain order, so every
// rank returns the single rank's validation loss bit for bit.
// Ranks holding different validation sets are refused, on every rank.
#include "tenax/train/training_workload.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/kernels/ops_elementwise.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/train/autodiff/ops.hpp"
#include "tenax/train/nn/linear.hpp"

namespace tenax::train {
namespace {

namespace ad = autodiff;

// Validation grains of 4: 12, the last one short; the training batch 13 grains (one a rank).
constexpr std::int64_t kValidation = 45;

// Inputs [n, 3] and targets [n, 2] drawn from `seed`.
Batch data(std::int64_t n, std::uint64_t seed) {
  Tensor x = Tensor::empty({n, 3}, DType::f32);
  Tensor y = Tensor::empty({n, 2}, DType::f32);
  ops::random_normal(x, seed, 0);
  ops::random_normal(y, seed, 1);
  return {x, y};
}

struct Evaluation {
  double loss = 0;
  std::vector<std::int64_t> first_samples;  // the first sample of each grain the rank evaluated
};

// evaluate() of a fresh workload (the same model on every rank) on rank `comm` (nullptr: one),
// over `samples` validation samples.
Evaluation evaluate_on(runtime::Communicator* comm, std::int64_t samples = kValidation) {
  const nn::Linear model(3, 2, DType::f32, Device::cpu(), 7);
  const Batch validation = data(samples, 11);
  Evaluation result;
  TrainingJob job;
  job.batch = [](std::int64_t step) { return data(52, 100 + static_cast<std::uint64_t>(step)); };
  job.loss = [&](const Batch& micro, const ad::LossOptions& options) {
    if (!ad::Tape::recording()) {  // evaluation: find which samples this is by their values
      for (std::int64_t s = 0; s < samples; ++s) {
        if (std::memcmp(micro[0].data_as<float>(), validation[0].data_as<float>() + s * 3,
                        3 * sizeof(float)) == 0) {
          result.first_samples.push_back(s);
          break;
        }
      }
    }
    return ad::mse_loss(model.forward(ad::Variable::constant(micro[0])),
                        ad::Variable::constant(micro[1]), options);
  };
  job.validation = [&] { return validation; };
  TrainingWorkload workload(
      model, job, {.batch = 52, .grain = 4, .steps = 1, .terms_per_sample = 2, .comm = comm});
  result.loss = workload.evaluate();
  return result;
}

TEST(TrainingWorkload, EachRankEvaluatesItsShareAndAllGetTheSingleRanksLoss) {
  const Evaluation one = evaluate_on(nullptr);
  ASSERT_EQ(one.first_samples.size(), 12u);
  for (const int ranks : {2, 3, 5, 13}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    const auto comms = runtime::make_thread_communicators(ranks);
    std::vector<Evaluation> results(static_cast<std::size_t>(ranks));
    std::vector<std::string> errors(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        try {
          results[static_cast<std::size_t>(r)] =
              evaluate_on(comms[static_cast<std::size_t>(r)].get());
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    }
    for (std::thread& t : threads) t.join();
    std::vector<std::int64_t> seen;
    for (int r = 0; r < ranks; ++r) {
      const Evaluation& mine = results[static_cast<std::size_t>(r)];
      EXPECT_EQ(errors[static_cast<std::size_t>(r)], "");
      EXPECT_EQ(std::memcmp(&mine.loss, &one.loss, sizeof(double)), 0)
          << "rank " << r << ": " << mine.loss << " vs " << one.loss;
      // A contiguous block of grains, at most ceil(12 / ranks) of them, after the rank before.
      EXPECT_LE(mine.first_samples.size(), static_cast<std::size_t>((12 + ranks - 1) / ranks));
      seen.insert(seen.end(), mine.first_samples.begin(), mine.first_samples.end());
    }
    EXPECT_EQ(seen, one.first_samples) << "every grain once, the ranks' blocks in order";
  }
}

TEST(TrainingWorkload, RanksWithDifferentValidationSetsAreRefusedOnEveryRank) {
  const auto comms = runtime::make_thread_communicators(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        (void)evaluate_on(comms[static_cast<std::size_t>(r)].get(), r == 0 ? 45 : 44);
      } catch (const UsageError& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& error : errors) {
    EXPECT_NE(error.find("45 samples on rank 0 and 44 on rank 1"), std::string::npos) << error;
    EXPECT_NE(error.find("the same validation set on every rank"), std::string::npos) << error;
  }
}

// A TrainingWorkload of a Linear 3 -> 2 on data(52, ...) batches, Adam, one grain per rank.
struct SmallJob {
  explicit SmallJob(std::uint64_t seed) : model(3, 2, DType::f32, Device::cpu(), seed) {
    job.batch = [](std::int64_t step) { return data(52, 100 + static_cast<std::uint64_t>(step)); };
    job.loss = [this](const Batch& micro, const ad::LossOptions& options) {
      return ad::mse_loss(model.forward(ad::Variable::constant(micro[0])),
                          ad::Variable::constant(micro[1]), options);
    };
  }
  nn::Linear model;
  TrainingJob job;
};

// Whether two states hold the same entries with the same values (tensors byte for byte).
bool same_state(const StateDict& a, const StateDict& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& [name_a, value_a] = a.entries()[i];
    const auto& [name_b, value_b] = b.entries()[i];
    if (name_a != name_b || value_a.index() != value_b.index()) return false;
    if (const Tensor* t = std::get_if<Tensor>(&value_a)) {
      const Tensor u = std::get<Tensor>(value_b).to(Device::cpu());
      const Tensor v = t->to(Device::cpu());
      if (v.nbytes() != u.nbytes() || std::memcmp(v.data(), u.data(), v.nbytes()) != 0)
        return false;
    } else if (const auto* n = std::get_if<std::int64_t>(&value_a)) {
      if (*n != std::get<std::int64_t>(value_b)) return false;
    } else if (const auto* r = std::get_if<double>(&value_a)) {  // bits: a NaN equals itself
      if (std::memcmp(r, &std::get<double>(value_b), sizeof(double)) != 0) return false;
    } else if (std::get<std::string>(value_a) != std::get<std::string>(value_b)) {
      return false;
    }
  }
  return true;
}

// A state refused by a late check -- the loss scaler's, the optimizer's step, the workload's own
// counts, an entry it never writes -- changes nothing: the model, the optimizer and the scaler
// keep what they held (they had loaded the earlier parts first). A good state still loads.
TEST(TrainingWorkload, ARefusedStateChangesNothing) {
  SmallJob trained(7);
  TrainingWorkload source(trained.model, trained.job, {.batch = 52, .grain = 4, .steps = 2});
  for (std::int64_t k = 0; k < 2; ++k) {
    source.step(k, 52);
    ASSERT_FALSE(source.combine_step().has_value());
    source.commit_step();
  }
  const StateDict saved = source.save_state().clone();
  SmallJob fresh(8);
  TrainingWorkload target(fresh.model, fresh.job, {.batch = 52, .grain = 4, .steps = 2});
  const StateDict before = target.save_state().clone();
  const auto refused = [&](const std::string& name, StateDict::Value value, const char* says) {
    StateDict bad = saved.clone();
    bad.set(name, std::move(value));
    try {
      target.load_state(bad);
      ADD_FAILURE() << name << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    EXPECT_TRUE(same_state(target.save_state(), before)) << "refusing " << name << " changed it";
  };
  refused("training/scaler/scale", std::numeric_limits<double>::quiet_NaN(), "scale");
  refused("training/optimizer/step", std::int64_t{-1}, "step");
  refused("skipped_steps", std::int64_t{-4}, "skipped steps is -4");
  refused("bogus_entry", std::int64_t{1}, "'bogus_entry'");
  // A good scaler part loads first; the optimizer's refusal then puts it back.
  StateDict late = saved.clone();
  late.set("training/scaler/scale", 1024.0);
  late.set("training/optimizer/step", std::int64_t{-1});
  EXPECT_THROW(target.load_state(late), UsageError);
  EXPECT_TRUE(same_state(target.save_state(), before)) << "the scaler kept the refused state's";
  target.load_state(saved);
  EXPECT_TRUE(same_state(target.save_state(), saved));
}

// A batch function that returns no tensors is refused, naming the step, before the loss runs.
TEST(TrainingWorkload, AnEmptyBatchIsRefused) {
  SmallJob small(7);
  bool loss_ran = false;
  small.job.batch = [](std::int64_t) { return Batch{}; };
  const auto loss = small.job.loss;
  small.job.loss = [&](const Batch& micro, const ad::LossOptions& options) {
    loss_ran = true;
    return loss(micro, options);
  };
  TrainingWorkload workload(small.model, small.job, {.batch = 52, .grain = 4, .steps = 1});
  try {
    workload.step(0, 52);
    ADD_FAILURE() << "an empty batch was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the batch of step 0 holds no tensors"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(loss_ran);
}

}  // namespace
}  // namespace tenax::train
