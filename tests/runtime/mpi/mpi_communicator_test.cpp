// The communicator contract on the MPI communicator (runtime/mpi/mpi_communicator.cpp): the
// checks every implementation passes (communicator_checks.hpp), run by N processes under mpirun.
// tests/CMakeLists.txt registers this program at -np 2, 3 and 4.
//
// Every rank runs the same tests in the same order, each on a fresh communicator (a fault test
// leaves its communicator aborted, and a fresh one is all a later test needs: the checks show the
// process goes on). Rank 0 prints GoogleTest's report, the other ranks only their failures; at
// the end the ranks' failure counts are gathered, so the exit status is non-zero on every rank
// when any rank failed. Collectives run under a deadline, so a hang fails a test instead of
// stalling the run (and CTest's timeout bounds the whole).
//
// What MPI does not promise, and so is not checked here: sums in rank order (the library's
// order), and mismatched tensors across ranks (seen only by the threads communicator).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "runtime/communicator_checks.hpp"
#include "runtime/communicator_fault_checks.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime {
namespace {

// Long enough for the biggest check on a loaded machine; a hang still ends as a failure.
constexpr double kTimeout = 60;
// The fault checks wait for the deadline; short, but long enough for the ranks that do arrive
// to find each other after it (the MPI communicator gives them a grace of half the timeout).
constexpr double kFaultTimeout = 2;

std::shared_ptr<Communicator> mpi_communicator(double timeout) {
  CommOptions options;
  options.timeout_seconds = timeout;
  return make_communicator(CommKind::mpi, options);
}

class MpiCommunicator : public ::testing::Test {
 protected:
  void SetUp() override { comm_ = mpi_communicator(kTimeout); }
  Communicator& comm() { return *comm_; }
  std::shared_ptr<Communicator> comm_;
};

TEST_F(MpiCommunicator, IsTheMpiOneOverEveryLaunchedRank) {
  EXPECT_EQ(comm().name(), "mpi");
  int world_rank = -1;
  int world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  EXPECT_EQ(comm().rank(), world_rank);
  EXPECT_EQ(comm().size(), world_size);
  EXPECT_GE(comm().local_rank(), 0);
  EXPECT_LT(comm().local_rank(), comm().size());
  const Tensor mine = checks::filled<std::int32_t>(1, [&](std::int64_t) { return comm().rank(); });
  const Tensor all = Tensor::empty({comm().size()}, DType::i32);
  comm().all_gather(mine, all);
  for (int r = 0; r < comm().size(); ++r) EXPECT_EQ(all.data_as<std::int32_t>()[r], r);
}

TEST_F(MpiCommunicator, AgreementSettlesEveryField) { checks::check_agreement(comm()); }

TEST_F(MpiCommunicator, AllReduceOfEveryDTypeAndSize) { checks::check_all_reduce(comm()); }

TEST_F(MpiCommunicator, FloatSumsAreTheSameOnEveryRank) {
  checks::check_float_sums(comm(), checks::Promises{.rank_order_sums = false});
}

TEST_F(MpiCommunicator, NanOnAnyRankWinsMaxAndMin) { checks::check_nan_and_inf(comm()); }

TEST_F(MpiCommunicator, IntegerMaxAndMinReachTheEndsOfTheRange) {
  checks::check_integer_extremes(comm());
}

TEST_F(MpiCommunicator, AllGatherInRankOrder) { checks::check_all_gather(comm()); }

TEST_F(MpiCommunicator, BroadcastFromEveryRoot) { checks::check_broadcast(comm()); }

TEST_F(MpiCommunicator, HaloExchangeOnARing) { checks::check_halo_exchange(comm()); }

TEST_F(MpiCommunicator, BarrierWaitsForTheLastRank) { checks::check_barrier(comm()); }

TEST_F(MpiCommunicator, BadArgumentsAreUsageErrorsNamingTheValue) {
  checks::check_usage_errors(comm());
  // The options are refused before MPI is touched (the call is not collective then).
  for (const double seconds : {0.0, -1.0, 8 * 86400.0}) {
    checks::expect_usage_error([&] { (void)mpi_communicator(seconds); }, {"timeout"},
                               "a communication timeout of " + std::to_string(seconds) + " s");
  }
}

// Each fault test makes its communicator with a short timeout.
class MpiCommunicatorFault : public MpiCommunicator {
 protected:
  void SetUp() override {
    comm_ = mpi_communicator(kFaultTimeout);
    if (comm_->size() < 2) GTEST_SKIP() << "a fault between ranks needs mpirun -np 2 or more";
  }
};

TEST_F(MpiCommunicatorFault, AMissingRankIsNamedByEveryWaitingRankWithinTheDeadline) {
  for (const int missing : {comm().size() - 1, 0}) {
    SCOPED_TRACE("rank " + std::to_string(missing) + " missing");
    comm_ = mpi_communicator(kFaultTimeout);
    checks::check_fault_missing_rank(comm(), missing);
  }
}

TEST_F(MpiCommunicatorFault, AReceiveTimeoutNamesOnlyThePeer) {
  checks::check_fault_receive_timeout(comm());
}

TEST_F(MpiCommunicatorFault, AShortMessageIsAFaultNamingBothSizes) {
  checks::check_fault_short_message(comm());
}

TEST_F(MpiCommunicatorFault, StepsThatDisagreeAreADesyncNamingBothSteps) {
  checks::check_fault_step_desync(comm());
}

TEST_F(MpiCommunicatorFault, ACollectiveMoreOnOneRankIsADesync) {
  checks::check_fault_sequence_desync(comm());
}

// abort() is local here (no MPI_Abort): the peers learn of it by their deadline.
TEST_F(MpiCommunicatorFault, AnAbortedRankIsNamedByItsPeersAfterTheDeadline) {
  const std::string e = checks::check_fault_abort(comm());
  if (comm().rank() != 0) EXPECT_NE(e.find("rank(s) 0 did not arrive"), std::string::npos) << e;
}

// After the faults (GoogleTest runs suites in the order they are defined), a fresh communicator
// works as before: the process goes on.
class MpiCommunicatorAfterFaults : public MpiCommunicator {};

TEST_F(MpiCommunicatorAfterFaults, AFreshCommunicatorWorks) {
  checks::check_agreement(comm());
  checks::check_halo_exchange(comm());
  checks::check_integer_extremes(comm());
}

// Prints this rank's failures, each marked with the rank (ranks other than 0 print only these).
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() != nullptr ? result.file_name() : "unknown",
                 result.line_number(), result.message());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
    }
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace tenax::runtime

int main(int argc, char** argv) {
  using namespace tenax;
  using namespace tenax::runtime;
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  int size = 1;
  {
    const auto comm = make_communicator(CommKind::mpi);  // initialises MPI
    rank = comm->rank();
    size = comm->size();
  }
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  const int result = RUN_ALL_TESTS();
  const int failed =
      result == 0 ? 0 : std::max(1, ::testing::UnitTest::GetInstance()->failed_test_count());

  // Every rank's count, on a fresh communicator: one rank's failure fails the program on all.
  const Tensor counts = Tensor::empty({size}, DType::i32);
  try {
    CommOptions options;
    options.timeout_seconds = 60;
    const auto comm = make_communicator(CommKind::mpi, options);
    const Tensor mine = Tensor::empty({1}, DType::i32);
    mine.data_as<std::int32_t>()[0] = failed;
    comm->all_gather(mine, counts);
  } catch (const std::exception& e) {
    // MPI_Finalize would wait for the rank that did not answer; mpirun ends the others.
    std::fprintf(stderr, "[rank %d] the ranks' results could not be gathered: %s\n", rank,
                 e.what());
    std::fflush(nullptr);
    std::_Exit(1);
  }
  int failing_ranks = 0;
  std::string report;
  for (int r = 0; r < size; ++r) {
    const int n = counts.data_as<std::int32_t>()[r];
    if (n == 0) continue;
    ++failing_ranks;
    report += " rank " + std::to_string(r) + " (" + std::to_string(n) + " failed)";
  }
  if (rank == 0) {
    if (failing_ranks == 0) {
      std::printf("All %d ranks passed.\n", size);
    } else {
      std::printf("%d of %d ranks failed:%s\n", failing_ranks, size, report.c_str());
    }
    std::fflush(stdout);
  }
  // The fault tests aborted communicators, after which the library leaves MPI unfinalised (a
  // job exits for a restart then, and a dead peer would make MPI_Finalize hang); here every rank
  // has just answered, so MPI ends normally and mpirun reports the exit status.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
  return failing_ranks == 0 ? 0 : 1;
}
