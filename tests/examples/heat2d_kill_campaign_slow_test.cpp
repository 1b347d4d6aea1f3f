// The long kill campaign (label slow): many more kills of heat2d under the supervisor, at random
// steps and at random phases of random checkpoints, with synchronous and asynchronous writes;
// every run must end bitwise equal to the uninterrupted one.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "heat2d_runs.hpp"
#include "tenax/io/checkpoint_store.hpp"

namespace tenax {
namespace {

using KillCampaign = testing::Heat2dRuns;
using testing::kSteps;
using testing::Outcome;

TEST_F(KillCampaign, TwoHundredRandomKillsAllResumeBitwise) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> step(1, kSteps);
  std::uniform_int_distribution<int> checkpoint(1, kSteps / 10 + 1);
  std::uniform_int_distribution<int> phase(0, std::size(io::kAllCheckpointPhases) - 1);
  std::bernoulli_distribution async(0.5);
  for (int trial = 0; trial < 200; ++trial) {
    const bool use_async = async(random);
    std::string fault;
    if (trial % 2 == 0) {
      fault = "kill@step=" + std::to_string(step(random));
    } else {
      fault = "kill@checkpoint=" + std::to_string(checkpoint(random)) + ":" +
              std::string(io::to_string(io::kAllCheckpointPhases[phase(random)]));
    }
    const std::string name = "campaign-" + std::to_string(trial);
    const Outcome outcome =
        run(name, use_async ? std::vector<std::string>{"--async"} : std::vector<std::string>{},
            fault, true);
    expect_bitwise_reference(name, outcome);
    EXPECT_LE(count(outcome.events, "\"event\":\"restart\""), 1u) << name << " " << fault;
  }
}

}  // namespace
}  // namespace tenax
