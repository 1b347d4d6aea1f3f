#include "tenax/core/state_dict.hpp"

#include <gtest/gtest.h>

namespace tenax {
namespace {

TEST(StateDict, KeepsInsertionOrderAndReplacesInPlace) {
  StateDict state;
  state.set("step", std::int64_t{7});
  state.set("lr", 0.5);
  state.set("name", std::string("adam"));
  state.set("step", std::int64_t{8});
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state.entries()[0].first, "step");
  EXPECT_EQ(state.integer("step"), 8);
  EXPECT_DOUBLE_EQ(state.real("lr"), 0.5);
  EXPECT_EQ(state.text("name"), "adam");
}

TEST(StateDict, WrongKindOrMissingNameIsAUsageErrorNamingTheEntry) {
  StateDict state;
  state.set("lr", 0.5);
  try {
    (void)state.integer("lr");
    FAIL() << "reading a real as an integer must throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'lr' holds a real number"), std::string::npos);
  }
  EXPECT_THROW((void)state.tensor("weights"), UsageError);
  EXPECT_THROW(state.set("", 1.0), UsageError);
}

TEST(StateDict, MergeAndScopeAreInverse) {
  StateDict optimizer;
  optimizer.set("beta1", 0.9);
  Tensor moment = Tensor::empty({3}, DType::f32);
  optimizer.set("m", moment);
  StateDict job;
  job.set("step", std::int64_t{1});
  job.merge("optimizer", optimizer);
  EXPECT_TRUE(job.contains("optimizer/beta1"));
  StateDict back = job.scope("optimizer");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_DOUBLE_EQ(back.real("beta1"), 0.9);
  EXPECT_EQ(back.tensor("m").data(), moment.data());
}

}  // namespace
}  // namespace tenax
