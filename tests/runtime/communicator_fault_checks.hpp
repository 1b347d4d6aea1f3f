// The communicator contract's faults as checks written once for every implementation (see
// communicator_checks.hpp for how they are run): a rank that does not arrive, a receive whose
// peer never sends, a short message, desyncs, abort(). Each check is collective and leaves the
// communicator aborted on some ranks or all: give each check a fresh communicator with a short
// timeout (a check takes about timeout + 3 s). Every fault must reach the ranks as a
// CommFaultError within the deadline, after which every call fails at once.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "runtime/communicator_checks.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime::checks {

// A rank that takes no part in a fault check: it waits until it sees its peers' fault (where it
// can: threads) or until they must have reported it, then leaves its communicator aborted, as a
// job's rank would, so that nothing more is sent on it.
inline void stay_away(Communicator& comm) {
  const auto until =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(comm.options().timeout_seconds + 3));
  while (!comm.abort_seen() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  comm.abort("this rank stayed away from the test's calls");
}

// Runs `call`, which must throw CommFaultError within the deadline (plus the few seconds an
// implementation may take to find who is missing); returns what() ("" after a failure).
template <class F>
std::string expect_comm_fault(Communicator& comm, F&& call, const std::string& what) {
  const auto start = Clock::now();
  const double timeout = comm.options().timeout_seconds;
  try {
    call();
    ADD_FAILURE() << what << " did not fail";
    return "";
  } catch (const CommFaultError& e) {
    EXPECT_LT(seconds_since(start), timeout + 10) << what << ": " << e.what();
    EXPECT_TRUE(comm.aborted()) << what << ": a fault leaves the communicator aborted";
    // Later calls fail at once, without communicating.
    const auto later = Clock::now();
    EXPECT_THROW(comm.barrier(), CommFaultError);
    EXPECT_THROW(comm.all_reduce(Tensor::empty({1}, DType::f64), ReduceOp::sum), CommFaultError);
    EXPECT_LT(seconds_since(later), 1.0) << what;
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " threw something else than a CommFaultError: " << e.what();
    return "";
  }
}

// One rank does not arrive in an agreement: every other rank's agreement fails after the
// deadline, not before, naming the call and the missing rank.
inline void check_fault_missing_rank(Communicator& comm, int missing) {
  comm.set_step(40);
  if (comm.rank() == missing) {
    stay_away(comm);
    return;
  }
  const auto start = Clock::now();
  StepProposal p;
  p.step = 40;
  const std::string e = expect_comm_fault(
      comm, [&] { (void)comm.agree(p); }, "an agreement without rank " + std::to_string(missing));
  EXPECT_GE(seconds_since(start), 0.9 * comm.options().timeout_seconds) << e;
  EXPECT_NE(e.find("agree #1 at step 40 on rank " + std::to_string(comm.rank())), std::string::npos)
      << e;
  EXPECT_NE(e.find("timed out"), std::string::npos) << e;
  EXPECT_NE(e.find("rank(s) " + std::to_string(missing) + " did not arrive"), std::string::npos)
      << e;
}

// A receive whose peer never sends fails after the deadline naming that peer, and only it.
inline void check_fault_receive_timeout(Communicator& comm) {
  if (comm.rank() != 1) {
    stay_away(comm);
    return;
  }
  const Tensor t = Tensor::empty({3}, DType::f64);
  const std::string e = expect_comm_fault(
      comm, [&] { comm.receive(t, 0, 9); }, "a receive from a silent rank 0");
  EXPECT_NE(e.find("receive"), std::string::npos) << e;
  EXPECT_NE(e.find("rank(s) 0 did not arrive"), std::string::npos) << e;
}

// A message shorter than the receiving tensor is a fault naming both sizes.
inline void check_fault_short_message(Communicator& comm) {
  if (comm.rank() == 0) {
    comm.send(Tensor::empty({4}, DType::f64), 1, 3);
  } else if (comm.rank() == 1) {
    const Tensor t = Tensor::empty({8}, DType::f64);
    const std::string e = expect_comm_fault(
        comm, [&] { comm.receive(t, 0, 3); }, "a receive of a short message");
    EXPECT_NE(e.find("expected 64 bytes from rank 0 and got 32"), std::string::npos) << e;
  }
}

// Ranks at different steps in an agreement: every rank reports the desync, naming both steps.
inline void check_fault_step_desync(Communicator& comm) {
  const int last = comm.size() - 1;
  StepProposal p;
  p.step = comm.rank() == last ? 8 : 7;
  const std::string e = expect_comm_fault(
      comm, [&] { (void)comm.agree(p); }, "ranks at steps 7, 8");
  EXPECT_NE(e.find("rank 0 is at step 7 and rank " + std::to_string(last) + " at step 8"),
            std::string::npos)
      << e;
}

// Rank 0 calls one collective more (a zero-element all_reduce, which some implementations finish
// without communicating) before the agreement: the agreement's record, which carries the
// sequence number, tells every rank of the desync.
inline void check_fault_sequence_desync(Communicator& comm) {
  const std::string e = expect_comm_fault(
      comm,
      [&] {
        if (comm.rank() == 0) comm.all_reduce(Tensor::empty({0}, DType::f64), ReduceOp::sum);
        (void)comm.agree(StepProposal{});
      },
      "an agreement after one collective more on rank 0");
  EXPECT_NE(e.find("desync"), std::string::npos) << e;
}

// abort(): later calls of the aborting rank fail at once with its reason; its peers' calls fail
// within the deadline. Returns a peer's error ("" on the aborting rank).
inline std::string check_fault_abort(Communicator& comm) {
  if (comm.rank() == 0) {
    comm.abort("rank 0 gave up");
    EXPECT_TRUE(comm.aborted());
    EXPECT_TRUE(comm.abort_seen());
    const std::uint64_t sequence = comm.sequence();
    const auto start = Clock::now();
    try {
      comm.barrier();
      ADD_FAILURE() << "a barrier after abort() was attempted";
    } catch (const CommFaultError& e) {
      EXPECT_NE(std::string(e.what()).find("rank 0 gave up"), std::string::npos) << e.what();
    }
    EXPECT_THROW(comm.send(Tensor::empty({1}, DType::f64), comm.size() - 1, 0), CommFaultError);
    EXPECT_LT(seconds_since(start), 1.0);
    EXPECT_EQ(comm.sequence(), sequence) << "a call after abort() is not attempted";
    return "";
  }
  return expect_comm_fault(
      comm, [&] { comm.barrier(); }, "a barrier with an aborted rank 0");
}

}  // namespace tenax::runtime::checks
