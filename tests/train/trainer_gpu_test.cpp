// Data-parallel training on a GPU: ranks as threads sharing one device, their gradients, the
// exchange's buffers and the optimizer on CUDA. The exact reduction gives every rank the
// single-rank CUDA model bit for bit (the exchange's buffers live where the gradients do; over
// NCCL, one GPU per rank, the same code carries them). Skips without a usable GPU.
#include <gtest/gtest.h>

#include "tenax/core/cuda_runtime.hpp"
#include "train/trainer_ranks.hpp"

namespace tenax::train {
namespace {

class TrainerRanksGpu : public ::testing::TestWithParam<int> {};

TEST_P(TrainerRanksGpu, EveryRankTakesTheSingleRankStep) {
  if (!cuda::availability().usable) {
    GTEST_SKIP() << "no usable CUDA device: " << cuda::availability().reason;
  }
  check_every_rank_takes_the_single_process_step(GetParam(), Device::cuda(0));
}

INSTANTIATE_TEST_SUITE_P(Ranks, TrainerRanksGpu, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace tenax::train
