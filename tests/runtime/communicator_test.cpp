// The communicator contract on the in-process threads communicator (the reference every other
// implementation follows) at 2, 3 and 4 ranks, and the settle() rule of the step agreement.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime {
namespace {

// Runs body(rank, comm) on one thread per rank; returns each rank's error text ("" if none).
std::vector<std::string> on_ranks(int size, double timeout,
                                  const std::function<void(int, Communicator&)>& body) {
  CommOptions options;
  options.timeout_seconds = timeout;
  auto comms = make_thread_communicators(size, options);
  std::vector<std::string> errors(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r, *comms[static_cast<std::size_t>(r)]);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

class ThreadCommunicator : public ::testing::TestWithParam<int> {};

TEST_P(ThreadCommunicator, AgreementTakesTheMostSevereProposalAndNamesItsRank) {
  const int size = GetParam();
  std::vector<StepAgreement> agreed(static_cast<std::size_t>(size));
  const auto errors = on_ranks(size, 10, [&](int r, Communicator& comm) {
    StepProposal p;
    p.step = 12;
    if (r == 1) p.decision = StepDecision::retry, p.reason = StepReason::out_of_memory;
    if (r == size - 1) p.decision = StepDecision::backoff, p.reason = StepReason::out_of_memory;
    if (r == size / 2) p.signal = 10;
    p.checkpoint_due = r == 0;
    p.seconds = r == 1 ? 2.0 : 1.0;
    agreed[static_cast<std::size_t>(r)] = comm.agree(p);
  });
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(errors[static_cast<std::size_t>(r)], "");
    const StepAgreement& a = agreed[static_cast<std::size_t>(r)];
    EXPECT_EQ(a.step, 12);
    EXPECT_EQ(a.decision, StepDecision::backoff);
    EXPECT_EQ(a.asking_rank, size - 1);
    EXPECT_EQ(a.reason, StepReason::out_of_memory);
    EXPECT_EQ(a.signal, 10);
    EXPECT_EQ(a.signal_rank, size / 2);
    EXPECT_TRUE(a.checkpoint_due);
    EXPECT_EQ(a.slowest_rank, 1);
    EXPECT_EQ(a.slowest_seconds, 2.0);
  }
}

TEST_P(ThreadCommunicator, CollectivesGiveEveryRankTheSameResult) {
  const int size = GetParam();
  const auto errors = on_ranks(size, 10, [&](int r, Communicator& comm) {
    for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{1000}}) {
      Tensor sum = Tensor::empty({n}, DType::i64);
      Tensor maximum = Tensor::empty({n}, DType::f64);
      for (std::int64_t i = 0; i < n; ++i) {
        sum.data_as<std::int64_t>()[i] = i + 100 * r;
        maximum.data_as<double>()[i] = static_cast<double>((i * 7 + r) % 5);
      }
      comm.all_reduce(sum, ReduceOp::sum);
      comm.all_reduce(maximum, ReduceOp::max);
      for (std::int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(sum.data_as<std::int64_t>()[i], size * i + 100 * size * (size - 1) / 2);
        double expected = 0;
        for (int k = 0; k < size; ++k) {
          expected = std::max(expected, static_cast<double>((i * 7 + k) % 5));
        }
        ASSERT_EQ(maximum.data_as<double>()[i], expected);
      }
    }
    Tensor mine = Tensor::empty({3}, DType::i32);
    for (int i = 0; i < 3; ++i) mine.data_as<std::int32_t>()[i] = 10 * r + i;
    Tensor all = Tensor::empty({3 * size}, DType::i32);
    comm.all_gather(mine, all);
    for (int k = 0; k < size; ++k) {
      for (int i = 0; i < 3; ++i) ASSERT_EQ(all.data_as<std::int32_t>()[3 * k + i], 10 * k + i);
    }
    for (int root = 0; root < size; ++root) {
      Tensor b = Tensor::empty({2}, DType::f32);
      b.data_as<float>()[0] = static_cast<float>(r);
      b.data_as<float>()[1] = -1;
      comm.broadcast(b, root);
      ASSERT_EQ(b.data_as<float>()[0], static_cast<float>(root));
    }
    // A ring: everyone sends right, then receives from the left (sends are buffered).
    Tensor out = Tensor::empty({4}, DType::f64);
    for (int i = 0; i < 4; ++i) out.data_as<double>()[i] = r * 1.5 + i;
    Tensor in = Tensor::empty({4}, DType::f64);
    if (size > 1) {
      comm.send(out, (r + 1) % size, 5);
      comm.receive(in, (r + size - 1) % size, 5);
      ASSERT_EQ(in.data_as<double>()[0], ((r + size - 1) % size) * 1.5);
    }
    comm.barrier();
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

TEST_P(ThreadCommunicator, AMissingRankIsNamedByEveryWaitingRankWithinTheDeadline) {
  const int size = GetParam();
  const int missing = size - 1;
  const auto start = std::chrono::steady_clock::now();
  const auto errors = on_ranks(size, 0.5, [&](int r, Communicator& comm) {
    comm.set_step(40);
    if (r == missing) {
      while (!comm.abort_seen()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      return;
    }
    StepProposal p;
    p.step = 40;
    (void)comm.agree(p);
  });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
  for (int r = 0; r < size; ++r) {
    if (r == missing) continue;
    const std::string& e = errors[static_cast<std::size_t>(r)];
    EXPECT_NE(e.find("agree #1 at step 40"), std::string::npos) << e;
    EXPECT_NE(e.find("rank(s) " + std::to_string(missing) + " did not arrive"), std::string::npos)
        << e;
  }
}

TEST_P(ThreadCommunicator, ADesyncIsReportedAndLaterCallsFailAtOnce) {
  const int size = GetParam();
  const auto errors = on_ranks(size, 5, [&](int r, Communicator& comm) {
    try {
      if (r == 0) {
        comm.barrier();
      } else {
        (void)comm.agree(StepProposal{});
      }
    } catch (const CommFaultError&) {
      EXPECT_TRUE(comm.aborted());
      const auto t = std::chrono::steady_clock::now();
      EXPECT_THROW(comm.barrier(), CommFaultError);
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), 0.1);
      throw;
    }
  });
  for (const auto& e : errors) EXPECT_NE(e.find("desync"), std::string::npos) << e;
}

TEST_P(ThreadCommunicator, StepsThatDisagreeAreADesyncNamingBothSteps) {
  const int size = GetParam();
  const auto errors = on_ranks(size, 5, [&](int r, Communicator& comm) {
    StepProposal p;
    p.step = r == size - 1 ? 8 : 7;
    (void)comm.agree(p);
  });
  for (const auto& e : errors) {
    EXPECT_NE(e.find("rank 0 is at step 7 and rank " + std::to_string(size - 1) + " at step 8"),
              std::string::npos)
        << e;
  }
}

TEST_P(ThreadCommunicator, AnAbortWakesPeersBlockedInACollective) {
  const int size = GetParam();
  const auto start = std::chrono::steady_clock::now();
  const auto errors = on_ranks(size, 30, [&](int r, Communicator& comm) {
    if (r == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      comm.abort("rank 0 gave up");
      return;
    }
    comm.barrier();
  });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
  for (int r = 1; r < size; ++r) {
    EXPECT_NE(errors[static_cast<std::size_t>(r)].find("rank 0 gave up"), std::string::npos)
        << errors[static_cast<std::size_t>(r)];
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ThreadCommunicator, ::testing::Values(2, 3, 4));

TEST(Communicator, BadArgumentsAreUsageErrorsNamingTheValue) {
  SingleRankCommunicator one;
  const Tensor half = Tensor::empty({4}, DType::f16);
  EXPECT_THROW(one.all_reduce(half, ReduceOp::sum), UsageError);
  const Tensor t = Tensor::empty({4}, DType::f64);
  EXPECT_THROW(one.broadcast(t, 1), UsageError);
  EXPECT_THROW(one.send(t, 0, 1), UsageError);
  EXPECT_THROW(one.all_gather(t, Tensor::empty({3}, DType::f64)), UsageError);
  EXPECT_THROW((void)make_thread_communicators(0), UsageError);
  CommOptions bad;
  bad.timeout_seconds = -1;
  EXPECT_THROW(SingleRankCommunicator{bad}, UsageError);
  bad.timeout_seconds = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(SingleRankCommunicator{bad}, UsageError);
  EXPECT_THROW((void)parse_comm_kind("tcp"), UsageError);
  EXPECT_EQ(parse_comm_kind("auto"), CommKind::automatic);
}

}  // namespace
}  // namespace tenax::runtime
