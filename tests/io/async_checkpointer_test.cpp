#include "tenax/io/async_checkpointer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>

#include "io/io_test_helpers.hpp"

namespace tenax::io {
namespace {

using testing::bitwise_equal;
using testing::sample_state;
using testing::ScratchDir;

TEST(AsyncCheckpointer, SnapshotIsIndependentOfTheCallersTensors) {
  ScratchDir dir;
  FaultPlan plan;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  CheckpointOptions options;
  options.fault_plan = &plan;
  // Hold the writer at its first phase until the caller has overwritten its tensors.
  options.on_phase = [&](CheckpointPhase phase, std::int64_t) {
    if (phase == CheckpointPhase::after_data_write) released.wait();
  };
  CheckpointStore store(dir.path(), options);
  AsyncCheckpointer writer(store);

  StateDict state = sample_state(1);
  const StateDict expected = sample_state(1);
  writer.save(1, state);
  EXPECT_TRUE(writer.busy());
  EXPECT_FALSE(writer.try_save(2, state));  // at most one write in flight
  for (const auto& [name, value] : state.entries()) {
    if (const auto* t = std::get_if<Tensor>(&value); t != nullptr && t->nbytes() > 0) {
      std::memset(t->data(), 0xab, t->nbytes());
    }
  }
  release.set_value();
  writer.wait();
  EXPECT_FALSE(writer.busy());
  const LoadedCheckpoint loaded = store.load_latest();
  EXPECT_EQ(loaded.step, 1);
  EXPECT_TRUE(bitwise_equal(loaded.state, expected));
}

TEST(AsyncCheckpointer, SecondSaveWaitsForTheFirst) {
  ScratchDir dir;
  FaultPlan plan;
  CheckpointOptions options;
  options.fault_plan = &plan;
  options.keep_last = 5;
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  options.on_phase = [&](CheckpointPhase phase, std::int64_t) {
    if (phase == CheckpointPhase::after_data_write) {
      most = std::max(most.load(), ++in_flight);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } else if (phase == CheckpointPhase::after_commit_dir_fsync) {
      --in_flight;
    }
  };
  CheckpointStore store(dir.path(), options);
  AsyncCheckpointer writer(store);
  for (int step = 1; step <= 4; ++step) writer.save(step, sample_state(step));
  writer.wait();
  EXPECT_EQ(most.load(), 1);
  EXPECT_EQ(store.committed_steps(), (std::vector<std::int64_t>{4, 3, 2, 1}));
  EXPECT_TRUE(bitwise_equal(store.load_latest().state, sample_state(4)));
}

TEST(AsyncCheckpointer, WriteErrorsReachTheNextCallAndThePreviousCheckpointStays) {
  ScratchDir dir;
  FaultPlan plan = FaultPlan::parse("enospc@checkpoint=2");
  CheckpointOptions options;
  options.fault_plan = &plan;
  CheckpointStore store(dir.path(), options);
  AsyncCheckpointer writer(store);
  writer.save(1, sample_state(1));
  writer.save(2, sample_state(2));                         // fails in the background
  EXPECT_THROW(writer.save(3, sample_state(3)), IoError);  // reported once, 3 not started
  writer.wait();                                           // nothing pending any more
  EXPECT_EQ(store.load_latest().step, 1);
  writer.save(3, sample_state(3));
  EXPECT_NO_THROW(writer.wait());
  EXPECT_EQ(store.load_latest().step, 3);

  writer.save(4, StateDict{});
  StateDict undefined;
  undefined.set("t", Tensor());
  writer.save(5, undefined);
  EXPECT_THROW(writer.wait(), UsageError);
  EXPECT_EQ(store.load_latest().step, 4);
}

}  // namespace
}  // namespace tenax::io
