// The communicator contract on the in-process threads communicator (the reference every other
// implementation follows) at 2, 3 and 4 ranks: the checks every implementation passes
// (communicator_checks.hpp; the MPI one runs them in mpi/mpi_communicator_test.cpp), what only
// the threads one promises (sums in rank order, peers' mismatched calls and tensors detected, an
// abort that wakes its peers), and the single-rank communicator.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "runtime/communicator_checks.hpp"
#include "runtime/communicator_fault_checks.hpp"
#include "runtime/thread_ranks.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/kernels/reduction_order.hpp"
#include "tenax/runtime/communicator.hpp"
#include "tenax/runtime/halo_exchange.hpp"

namespace tenax::runtime {
namespace {

// Long enough for the biggest check on a loaded machine; a hang still ends as a failure.
constexpr double kTimeout = 60;
// The fault checks wait for the deadline.
constexpr double kFaultTimeout = 0.5;

// Runs body(rank, comm) on one thread per rank; returns each rank's error text ("" if none).
std::vector<std::string> on_ranks(int size, double timeout,
                                  const std::function<void(int, Communicator&)>& body) {
  return testing::on_thread_ranks(size, timeout, body);
}

class ThreadCommunicator : public ::testing::TestWithParam<int> {
 protected:
  // Runs a check on every rank of a fresh group; the check reports its own failures, and
  // nothing may escape it.
  static void run(double timeout, const std::function<void(Communicator&)>& check) {
    const auto errors =
        on_ranks(GetParam(), timeout, [&](int, Communicator& comm) { check(comm); });
    for (std::size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  }
};

TEST_P(ThreadCommunicator, AgreementSettlesEveryField) { run(kTimeout, checks::check_agreement); }

TEST_P(ThreadCommunicator, AllReduceOfEveryDTypeAndSize) {
  run(kTimeout, checks::check_all_reduce);
}

TEST_P(ThreadCommunicator, FloatSumsAreInRankOrderAndTheSameOnEveryRank) {
  run(kTimeout, [](Communicator& comm) {
    checks::check_float_sums(comm, checks::Promises{.rank_order_sums = true});
  });
}

TEST_P(ThreadCommunicator, NanOnAnyRankWinsMaxAndMin) { run(kTimeout, checks::check_nan_and_inf); }

TEST_P(ThreadCommunicator, IntegerMaxAndMinReachTheEndsOfTheRange) {
  run(kTimeout, checks::check_integer_extremes);
}

TEST_P(ThreadCommunicator, AllGatherInRankOrder) { run(kTimeout, checks::check_all_gather); }

TEST_P(ThreadCommunicator, BroadcastFromEveryRoot) { run(kTimeout, checks::check_broadcast); }

TEST_P(ThreadCommunicator, HaloExchangeOnARing) { run(kTimeout, checks::check_halo_exchange); }

TEST_P(ThreadCommunicator, BarrierWaitsForTheLastRank) { run(kTimeout, checks::check_barrier); }

TEST_P(ThreadCommunicator, InvalidGhostsOnOneRankStopEveryRankAtOnce) {
  const int size = GetParam();
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  // The last rank names a ghost inside its own range; the others are valid. Every rank throws
  // within the construction, none waits for the (long) deadline.
  const auto start = std::chrono::steady_clock::now();
  const auto errors = on_ranks(size, kTimeout, [&](int rank, Communicator& comm) {
    const kernels::ShardRange range{.first = 16 * rank, .count = 16, .total = 16 * size};
    std::vector<std::int64_t> ghosts;
    if (rank == size - 1) {
      ghosts.push_back(range.first);  // its own entry: refused
    } else {
      ghosts.push_back((range.first + range.count) % range.total);  // the next rank's first
    }
    const HaloExchange halo(comm, range, ghosts, DType::f64, "test");
  });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  for (int r = 0; r < size; ++r) {
    const std::string& e = errors[static_cast<std::size_t>(r)];
    if (r == size - 1) {
      EXPECT_NE(e.find("ghost " + std::to_string(16 * r) + " (entry 0)"), std::string::npos) << e;
    } else {
      EXPECT_NE(e.find("rank " + std::to_string(size - 1) + " named invalid ghosts"),
                std::string::npos)
          << "rank " << r << ": " << e;
    }
  }
}

TEST_P(ThreadCommunicator, BadArgumentsAreUsageErrorsNamingTheValue) {
  run(kTimeout, checks::check_usage_errors);
}

TEST_P(ThreadCommunicator, AMissingRankIsNamedByEveryWaitingRankWithinTheDeadline) {
  for (const int missing : {GetParam() - 1, 0}) {
    SCOPED_TRACE("rank " + std::to_string(missing) + " missing");
    run(kFaultTimeout,
        [&](Communicator& comm) { checks::check_fault_missing_rank(comm, missing); });
  }
}

TEST_P(ThreadCommunicator, AReceiveTimeoutNamesOnlyThePeer) {
  run(kFaultTimeout, checks::check_fault_receive_timeout);
}

TEST_P(ThreadCommunicator, AShortMessageIsAFaultNamingBothSizes) {
  run(kFaultTimeout, checks::check_fault_short_message);
}

TEST_P(ThreadCommunicator, StepsThatDisagreeAreADesyncNamingBothSteps) {
  run(kFaultTimeout, checks::check_fault_step_desync);
}

TEST_P(ThreadCommunicator, ACollectiveMoreOnOneRankIsADesync) {
  run(kFaultTimeout, checks::check_fault_sequence_desync);
}

TEST_P(ThreadCommunicator, AnAbortedRankFailsAtOnceAndItsPeersWithinTheDeadline) {
  run(kFaultTimeout, [](Communicator& comm) { (void)checks::check_fault_abort(comm); });
}

// ---- What only the threads communicator promises ----

// It sees which collective each peer called, not only in the agreement.
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

// It sees the peers' tensors: every rank finds a mismatch itself, before it reads any peer's
// buffer (a rank that left first could free a buffer another rank still reads).
TEST_P(ThreadCommunicator, PeersWithDifferentTensorsAreAFaultFoundByEveryRank) {
  const int size = GetParam();
  const int last = size - 1;
  struct Case {
    std::string name;
    std::function<void(Communicator&)> call;
    std::string finding;
  };
  const std::vector<Case> cases = {
      {"all_reduce of another size",
       [&](Communicator& comm) {
         comm.all_reduce(Tensor::empty({comm.rank() == last ? 5 : 4}, DType::f64), ReduceOp::sum);
       },
       "ranks reduce different tensors or operations"},
      {"all_reduce with another op",
       [&](Communicator& comm) {
         comm.all_reduce(Tensor::empty({4}, DType::f32),
                         comm.rank() == last ? ReduceOp::max : ReduceOp::sum);
       },
       "ranks reduce different tensors or operations"},
      {"broadcast of another size",
       [&](Communicator& comm) {
         comm.broadcast(Tensor::empty({comm.rank() == last ? 5 : 4}, DType::f64), 0);
       },
       "ranks broadcast different sizes or roots"},
      {"broadcast from another root",
       [&](Communicator& comm) {
         comm.broadcast(Tensor::empty({1 << 20}, DType::f64), comm.rank() == last ? 0 : last);
       },
       "ranks broadcast different sizes or roots"},
      {"all_gather_bytes of another size",
       [&](Communicator& comm) {
         const std::size_t bytes = comm.rank() == last ? 5 : 4;
         std::vector<std::byte> send(bytes);
         std::vector<std::byte> out(bytes * static_cast<std::size_t>(comm.size()));
         comm.all_gather_bytes(send, out);
       },
       "bytes, this rank"},
  };
  for (const Case& c : cases) {
    const auto errors = on_ranks(size, 5, [&](int, Communicator& comm) { c.call(comm); });
    for (int r = 0; r < size; ++r) {
      const std::string& e = errors[static_cast<std::size_t>(r)];
      const std::string own = "on rank " + std::to_string(r) + " of " + std::to_string(size) + ": ";
      EXPECT_NE(e.find(own), std::string::npos) << c.name << ", rank " << r << ": " << e;
      EXPECT_NE(e.find(c.finding), std::string::npos) << c.name << ", rank " << r << ": " << e;
    }
  }
}

// Its abort reaches peers blocked in a collective at once, with the reason.
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

// One rank: collectives return its own data, and the same checks hold.
TEST(SingleRankCommunicator, PassesTheChecksOfEveryCommunicator) {
  CommOptions options;
  options.timeout_seconds = kTimeout;
  SingleRankCommunicator one(options);
  checks::check_agreement(one);
  checks::check_all_reduce(one);
  checks::check_float_sums(one, checks::Promises{.rank_order_sums = true});
  checks::check_nan_and_inf(one);
  checks::check_integer_extremes(one);
  checks::check_all_gather(one);
  checks::check_broadcast(one);
  checks::check_barrier(one);
  checks::check_usage_errors(one);
}

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

// Whether a library whose file name contains `name` is mapped into this process.
bool library_loaded(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(name) != std::string::npos) return true;
  }
  return false;
}

// Outside a launcher the NCCL communicator bootstraps over a single rank: no MPI is loaded, so
// a GPU machine without Open MPI installed starts it (MPI_Init without one aborts the process).
// Here (no GPU, or a build without NCCL) the construction fails with tenax's error, after
// choosing its host communicator; on a GPU machine it succeeds at world size 1.
TEST(Communicator, NcclOutsideALauncherLoadsNoMpi) {
  if (launched_by_mpi_launcher()) GTEST_SKIP() << "started by an MPI launcher";
  if (library_loaded("libtenax_comm_mpi") || library_loaded("libmpi.so")) {
    GTEST_SKIP() << "MPI was loaded by an earlier test in this process";
  }
  try {
    const std::shared_ptr<Communicator> comm = make_communicator(CommKind::nccl);
    EXPECT_EQ(comm->size(), 1);
    EXPECT_EQ(comm->name(), "nccl");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("MPI"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(library_loaded("libtenax_comm_mpi"));
  EXPECT_FALSE(library_loaded("libmpi.so"));
}

}  // namespace
}  // namespace tenax::runtime
