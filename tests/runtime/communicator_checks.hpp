// The communicator contract (tenax/runtime/communicator.hpp) as checks written once for every
// implementation: each rank calls them with its own Communicator. The threads communicator runs
// them on N threads of one process (communicator_test.cpp), the MPI one on N processes under
// mpirun (mpi/mpi_communicator_test.cpp).
//
// Every check is collective: all ranks call the same checks in the same order. A failure is a
// GoogleTest failure of the rank that saw it; checks do not return between collectives, so one
// rank's failure does not leave its peers waiting.
//
// Reductions use values whose sums are exact in every order (quarters, integers), so the checks
// hold for any implementation's order; bitwise rank order is checked only where the
// implementation promises it (Promises::rank_order_sums).
//
// The barrier check compares steady_clock readings of different ranks, so the ranks must share a
// host. The fault checks are in communicator_fault_checks.hpp.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "tenax/core/cuda_runtime.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime::checks {

using Clock = std::chrono::steady_clock;

// What an implementation promises beyond the shared contract.
struct Promises {
  // Floating-point sums are folded in rank order from rank 0's value (threads); MPI and NCCL sum
  // in the library's order.
  bool rank_order_sums = false;
};

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Element counts: none, one, a few, past the small-message sizes, and past 2^20.
inline constexpr std::int64_t kSizes[] = {0, 1, 7, 4097, (std::int64_t{1} << 20) + 3};

template <class T, class Value>
Tensor filled(std::int64_t n, Value value) {
  Tensor t = Tensor::empty({n}, dtype_of<T>);
  T* data = t.data_as<T>();
  for (std::int64_t i = 0; i < n; ++i) data[i] = value(i);
  return t;
}

template <class T>
std::string type_name() {
  return std::string(to_string(dtype_of<T>));
}

// Element i of rank r, exact under every order of summation over up to 4 ranks: quarters for
// floats; integers past 2^53 (i64) and 2^24 (i32), whose low bits a trip through a floating
// type would lose.
template <class T>
T exact_value(int rank, std::int64_t i) {
  const std::int64_t k = (i * 7 + std::int64_t{rank} * 13) % 401 - 200;
  if constexpr (std::is_same_v<T, std::int64_t>) {
    return (std::int64_t{1} << 54) + rank * std::int64_t{1000003} + k;
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    return static_cast<std::int32_t>((1 << 26) + rank * 1009 + k);
  } else {
    return static_cast<T>(k) / 4;
  }
}

template <class T>
bool is_nan(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(value);
  } else {
    return false;
  }
}

// The reference op, NaN winning max and min as the contract's implementations do.
template <class T>
T fold(ReduceOp op, T a, T b) {
  if (op != ReduceOp::sum && (is_nan(a) || is_nan(b))) return is_nan(a) ? a : b;
  switch (op) {
    case ReduceOp::sum:
      return static_cast<T>(a + b);
    case ReduceOp::max:
      return b > a ? b : a;
    case ReduceOp::min:
      return b < a ? b : a;
  }
  return a;
}

template <class T>
bool same_value(T a, T b) {
  if (is_nan(a) || is_nan(b)) return is_nan(a) && is_nan(b);
  return a == b;
}

// Compares a tensor with expected(i); reports how many elements differ and the first of them.
template <class T, class Expected>
void expect_elements(const Tensor& got, std::int64_t n, Expected expected,
                     const std::string& what) {
  ASSERT_EQ(got.numel(), n) << what;
  const T* data = got.data_as<T>();
  std::int64_t differ = 0;
  std::int64_t first = -1;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!same_value(data[i], expected(i))) {
      if (first < 0) first = i;
      ++differ;
    }
  }
  if (differ > 0) {
    ADD_FAILURE() << what << ": " << differ << " of " << n << " elements differ; element " << first
                  << " is " << data[first] << ", expected " << expected(first);
  }
}

// ---- The step agreement -------------------------------------------------------------------------

inline void expect_agreement(const StepAgreement& a, const StepAgreement& want) {
  EXPECT_EQ(a.step, want.step);
  EXPECT_EQ(a.decision, want.decision) << to_string(a.decision);
  EXPECT_EQ(a.reason, want.reason) << to_string(a.reason);
  EXPECT_EQ(a.asking_rank, want.asking_rank);
  EXPECT_EQ(a.signal, want.signal);
  EXPECT_EQ(a.signal_rank, want.signal_rank);
  EXPECT_EQ(a.checkpoint_due, want.checkpoint_due);
  EXPECT_EQ(a.finished, want.finished);
  EXPECT_EQ(a.slowest_seconds, want.slowest_seconds);
  EXPECT_EQ(a.slowest_rank, want.slowest_rank);
}

// The settle rule on every rank: the most severe decision, from the lowest rank that proposed
// it, with that rank's reason; the first signal in rank order with its rank; checkpoint due and
// finished if any rank says so; the slowest rank (the lowest of equal times).
inline void check_agreement(Communicator& comm) {
  const int rank = comm.rank();
  const int last = comm.size() - 1;
  const std::uint64_t sequence = comm.sequence();
  std::uint64_t agreements = 0;
  std::int64_t step = std::int64_t{1} << 40;  // past 32 bits: steps travel whole
  comm.set_step(step);
  {
    SCOPED_TRACE("every rank proceeds");
    StepProposal p;
    p.step = step;
    StepAgreement want;
    want.step = step;
    expect_agreement(comm.agree(p), want);
    ++agreements;
  }
  for (int k = 0; k <= last; ++k) {
    SCOPED_TRACE("rank " + std::to_string(k) + " alone asks, signals, is due, finished, slowest");
    StepProposal p;
    p.step = ++step;
    p.seconds = 1.0;
    if (rank == k) {
      p.decision = StepDecision::rollback;
      p.reason = StepReason::anomaly;
      p.signal = 15;
      p.checkpoint_due = true;
      p.finished = true;
      p.seconds = 2.5;
    }
    const StepAgreement want{
        step, StepDecision::rollback, StepReason::anomaly, k, 15, k, true, true, 2.5, k};
    expect_agreement(comm.agree(p), want);
    ++agreements;
  }
  {
    SCOPED_TRACE("ties: the lowest rank of the most severe decision, the first signal");
    StepProposal p;
    p.step = ++step;
    p.seconds = 0.75;
    if (rank % 2 == 1) {
      p.decision = StepDecision::stop;
      p.reason = rank == 1 ? StepReason::overflow : StepReason::anomaly;
    } else if (rank > 0) {
      p.decision = StepDecision::backoff;
      p.reason = StepReason::out_of_memory;
    } else {
      p.decision = StepDecision::retry;
      p.reason = StepReason::out_of_memory;
    }
    if (rank > 0) p.signal = 10 + rank;
    StepAgreement want{step, StepDecision::stop, StepReason::overflow, 1, 11, 1, false, false, 0.75,
                       0};
    if (last == 0) {
      want = StepAgreement{
          step, StepDecision::retry, StepReason::out_of_memory, 0, 0, -1, false, false, 0.75, 0};
    }
    expect_agreement(comm.agree(p), want);
    ++agreements;
  }
  {
    SCOPED_TRACE("a more severe decision of a higher rank wins");
    StepProposal p;
    p.step = ++step;
    if (rank == 0) {
      p.decision = StepDecision::stop;
      p.reason = StepReason::usage;
    }
    if (rank == last) {
      p.decision = StepDecision::restart;
      p.reason = StepReason::comm_fault;
    }
    const StepAgreement want{
        step, StepDecision::restart, StepReason::comm_fault, last, 0, -1, false, false, 0.0, 0};
    expect_agreement(comm.agree(p), want);
    ++agreements;
  }
  // Every decision and every reason reaches the other ranks.
  for (const StepDecision decision :
       {StepDecision::retry, StepDecision::backoff, StepDecision::rollback, StepDecision::stop,
        StepDecision::restart}) {
    for (const StepReason reason :
         {StepReason::none, StepReason::out_of_memory, StepReason::anomaly, StepReason::overflow,
          StepReason::device_fault, StepReason::comm_fault, StepReason::usage}) {
      SCOPED_TRACE(std::string(to_string(decision)) + " for " + std::string(to_string(reason)));
      StepProposal p;
      p.step = ++step;
      p.seconds = 0.5 + 0.125 * rank;
      if (rank == last) {
        p.decision = decision;
        p.reason = reason;
        p.signal = 2;
      }
      const StepAgreement want{step,  decision,           reason, last, 2, last, false,
                               false, 0.5 + 0.125 * last, last};
      expect_agreement(comm.agree(p), want);
      ++agreements;
    }
  }
  EXPECT_EQ(comm.sequence(), sequence + agreements) << "each agreement is one collective";
}

// ---- all_reduce ---------------------------------------------------------------------------------

template <class T>
void check_all_reduce_of(Communicator& comm, std::int64_t n) {
  for (const ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
    const std::string what = type_name<T>() + " " + std::string(to_string(op)) + " of " +
                             std::to_string(n) + " elements";
    const Tensor t = filled<T>(n, [&](std::int64_t i) { return exact_value<T>(comm.rank(), i); });
    comm.all_reduce(t, op);
    expect_elements<T>(
        t, n,
        [&](std::int64_t i) {
          T want = exact_value<T>(0, i);
          for (int r = 1; r < comm.size(); ++r) want = fold(op, want, exact_value<T>(r, i));
          return want;
        },
        what);
  }
}

// Sum, max and min of every dtype and size, the same on every rank; the tensor's shape does not
// matter, and a view (a slice) reduces its own elements only.
inline void check_all_reduce(Communicator& comm) {
  for (const std::int64_t n : kSizes) {
    check_all_reduce_of<double>(comm, n);
    check_all_reduce_of<float>(comm, n);
    check_all_reduce_of<std::int64_t>(comm, n);
    check_all_reduce_of<std::int32_t>(comm, n);
  }
  const Tensor rows = Tensor::empty({5, 3}, DType::f64);
  for (std::int64_t i = 0; i < 15; ++i) rows.data_as<double>()[i] = static_cast<double>(i);
  comm.all_reduce(rows.slice(1, 4), ReduceOp::sum);
  expect_elements<double>(
      rows.reshape({15}), 15,
      [&](std::int64_t i) {
        return i >= 3 && i < 12 ? static_cast<double>(i * comm.size()) : static_cast<double>(i);
      },
      "sum of rows 1 to 3 of a [5, 3] tensor");
}

// Values of very different magnitudes and signs, so that the order of a floating-point sum shows
// in its bits.
template <class T>
T spread_value(int rank, std::int64_t i) {
  std::uint64_t h =
      static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull * (rank + 1);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  const int exponent = static_cast<int>(h % 41) - 20;
  const double mantissa = 1.0 + static_cast<double>((h >> 8) % 1000003) / 1000003.0;
  return static_cast<T>(((h >> 40) & 1 ? -1.0 : 1.0) * std::ldexp(mantissa, exponent));
}

template <class T>
void check_float_sum_of(Communicator& comm, std::int64_t n, const Promises& promises) {
  const int size = comm.size();
  const std::string what = type_name<T>() + " sum of " + std::to_string(n) + " elements";
  const Tensor t = filled<T>(n, [&](std::int64_t i) { return spread_value<T>(comm.rank(), i); });
  comm.all_reduce(t, ReduceOp::sum);
  // Every rank holds the same bits: gathered, each rank's result is compared with this one's.
  const Tensor all = Tensor::empty({n * size}, dtype_of<T>);
  comm.all_gather(t, all);
  for (int r = 0; r < size; ++r) {
    const T* mine = t.data_as<T>();
    const T* theirs = all.data_as<T>() + r * n;
    std::int64_t differ = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      differ += std::memcmp(&mine[i], &theirs[i], sizeof(T)) != 0;
    }
    EXPECT_EQ(differ, 0) << what << ": elements whose bits differ from rank " << r << "'s";
  }
  if (!promises.rank_order_sums) return;
  std::int64_t reverse_differs = 0;
  expect_elements<T>(
      t, n,
      [&](std::int64_t i) {
        T want = spread_value<T>(0, i);
        for (int r = 1; r < size; ++r) want = static_cast<T>(want + spread_value<T>(r, i));
        T reverse = spread_value<T>(size - 1, i);
        for (int r = size - 2; r >= 0; --r) {
          reverse = static_cast<T>(reverse + spread_value<T>(r, i));
        }
        reverse_differs += std::memcmp(&want, &reverse, sizeof(T)) != 0;
        return want;
      },
      what + " in rank order");
  // The values tell the orders apart (with two ranks, a + b is b + a).
  if (size >= 3 && n >= 4097) EXPECT_GT(reverse_differs, 0) << what;
}

// Floating-point sums: the same bits on every rank (a data-parallel replica that drifted by one
// bit would diverge silently) and, where promised, the bits of a loop over the ranks in order.
inline void check_float_sums(Communicator& comm, const Promises& promises) {
  for (const std::int64_t n : {std::int64_t{7}, std::int64_t{4097}, kSizes[4]}) {
    check_float_sum_of<double>(comm, n, promises);
    check_float_sum_of<float>(comm, n, promises);
  }
}

// What each element holds on each rank in the NaN and infinity check.
enum class Special {
  nan_last,
  nan_first,
  nan_middle,
  nan_all,
  inf_first_minus_inf_last,
  inf_last,
  minus_inf_middle,
  nan_last_inf_first,
  nan_first_minus_inf_last,
  none
};

inline Special special_at(std::int64_t i, std::int64_t n) {
  // At the start, the middle and the end: implementations reduce segments on different ranks.
  constexpr std::int64_t kKinds = static_cast<std::int64_t>(Special::none);
  for (const std::int64_t start : {std::int64_t{0}, n / 2, n - kKinds}) {
    if (i >= start && i < start + kKinds) return static_cast<Special>(i - start);
  }
  return Special::none;
}

template <class T>
T special_value(int rank, int size, std::int64_t i, std::int64_t n) {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T inf = std::numeric_limits<T>::infinity();
  const int last = size - 1;
  const int middle = size / 2;
  // Negative finite values: a max that starts from zero would show.
  const T finite = static_cast<T>(-1 - rank - i % 5);
  switch (special_at(i, n)) {
    case Special::nan_last:
      return rank == last ? nan : finite;
    case Special::nan_first:
      return rank == 0 ? nan : finite;
    case Special::nan_middle:
      return rank == middle ? nan : finite;
    case Special::nan_all:
      return nan;
    case Special::inf_first_minus_inf_last:
      return rank == 0 ? inf : rank == last ? -inf : finite;
    case Special::inf_last:
      return rank == last ? inf : finite;
    case Special::minus_inf_middle:
      return rank == middle ? -inf : finite;
    case Special::nan_last_inf_first:
      return rank == last ? nan : rank == 0 ? inf : finite;
    case Special::nan_first_minus_inf_last:
      return rank == 0 ? nan : rank == last ? -inf : finite;
    case Special::none:
      break;
  }
  return finite;
}

template <class T>
void check_nan_and_inf_of(Communicator& comm) {
  const int rank = comm.rank();
  const int size = comm.size();
  const std::int64_t n = 4097;
  for (const ReduceOp op : {ReduceOp::max, ReduceOp::min, ReduceOp::sum}) {
    const std::string what = type_name<T>() + " " + std::string(to_string(op)) +
                             " with NaN and infinities on some ranks";
    const Tensor t =
        filled<T>(n, [&](std::int64_t i) { return special_value<T>(rank, size, i, n); });
    comm.all_reduce(t, op);
    expect_elements<T>(
        t, n,
        [&](std::int64_t i) {
          T want = special_value<T>(0, size, i, n);
          for (int r = 1; r < size; ++r) want = fold(op, want, special_value<T>(r, size, i, n));
          return want;
        },
        what);
  }
  // A NaN on one rank, each in turn, in a one-element tensor.
  for (int k = 0; k < size; ++k) {
    for (const ReduceOp op : {ReduceOp::max, ReduceOp::min}) {
      const Tensor t = filled<T>(1, [&](std::int64_t) {
        return rank == k ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(rank);
      });
      comm.all_reduce(t, op);
      EXPECT_TRUE(std::isnan(t.data_as<T>()[0]))
          << type_name<T>() << " " << to_string(op) << ": rank " << k << "'s NaN became "
          << t.data_as<T>()[0];
    }
  }
}

// A NaN on any rank wins max and min on every rank (f64 and f32); infinities order as numbers.
inline void check_nan_and_inf(Communicator& comm) {
  check_nan_and_inf_of<double>(comm);
  check_nan_and_inf_of<float>(comm);
}

template <class T>
void check_integer_extremes_of(Communicator& comm) {
  const int rank = comm.rank();
  const int size = comm.size();
  constexpr T lowest = std::numeric_limits<T>::min();
  constexpr T highest = std::numeric_limits<T>::max();
  const auto value = [&](int r, std::int64_t i) -> T {
    if (i == 0) return static_cast<T>(lowest + r);
    if (i == 1) return static_cast<T>(highest - r);
    return static_cast<T>(-1000 * (r + 1));
  };
  for (const ReduceOp op : {ReduceOp::max, ReduceOp::min}) {
    const Tensor t = filled<T>(3, [&](std::int64_t i) { return value(rank, i); });
    comm.all_reduce(t, op);
    expect_elements<T>(
        t, 3,
        [&](std::int64_t i) {
          T want = value(0, i);
          for (int r = 1; r < size; ++r) want = fold(op, want, value(r, i));
          return want;
        },
        type_name<T>() + " " + std::string(to_string(op)) + " at the ends of the range");
  }
}

// Integer max and min reach the ends of their range (no trip through a floating type, no start
// from zero).
inline void check_integer_extremes(Communicator& comm) {
  check_integer_extremes_of<std::int64_t>(comm);
  check_integer_extremes_of<std::int32_t>(comm);
}

// ---- all_gather, broadcast, send/receive, barrier -----------------------------------------------

template <class T>
T tagged_value(int rank, std::int64_t i) {
  return static_cast<T>(std::int64_t{rank} * 100003 + i % 100000);
}

template <class T>
void check_all_gather_of(Communicator& comm, std::int64_t n) {
  const int size = comm.size();
  const Tensor mine = filled<T>(n, [&](std::int64_t i) { return tagged_value<T>(comm.rank(), i); });
  const Tensor all = filled<T>(n * size, [](std::int64_t) { return T{-1}; });
  comm.all_gather(mine, all);
  expect_elements<T>(
      all, n * size,
      [&](std::int64_t j) { return tagged_value<T>(static_cast<int>(j / n), j % n); },
      type_name<T>() + " all_gather of " + std::to_string(n) + " elements per rank");
}

// Every rank's part, in rank order, on every rank; all_gather_bytes the same for raw bytes.
inline void check_all_gather(Communicator& comm) {
  const int size = comm.size();
  for (const std::int64_t n : kSizes) check_all_gather_of<float>(comm, n);
  for (const std::int64_t n :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{4097}}) {
    check_all_gather_of<double>(comm, n);
    check_all_gather_of<std::int32_t>(comm, n);
  }
  const auto byte = [](int r, std::size_t i) {
    return static_cast<std::byte>((static_cast<std::size_t>(r) * 31 + i) & 0xff);
  };
  for (const std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{32}, std::size_t{5000}}) {
    std::vector<std::byte> send(bytes);
    for (std::size_t i = 0; i < bytes; ++i) send[i] = byte(comm.rank(), i);
    std::vector<std::byte> out(bytes * static_cast<std::size_t>(size), std::byte{0xee});
    comm.all_gather_bytes(send, out);
    std::size_t differ = 0;
    for (std::size_t j = 0; j < out.size(); ++j) {
      differ += out[j] != byte(static_cast<int>(j / bytes), j % bytes);
    }
    EXPECT_EQ(differ, 0u) << "all_gather_bytes of " << bytes << " bytes per rank";
  }
}

// Every rank ends with the root's tensor, for every root.
inline void check_broadcast(Communicator& comm) {
  const int rank = comm.rank();
  for (int root = 0; root < comm.size(); ++root) {
    for (const std::int64_t n : kSizes) {
      const Tensor t = filled<double>(
          n, [&](std::int64_t i) { return rank == root ? tagged_value<double>(root, i) : -1.0; });
      comm.broadcast(t, root);
      expect_elements<double>(
          t, n, [&](std::int64_t i) { return tagged_value<double>(root, i); },
          "f64 broadcast of " + std::to_string(n) + " elements from root " + std::to_string(root));
    }
    const Tensor small = filled<std::int32_t>(
        7, [&](std::int64_t i) { return rank == root ? tagged_value<std::int32_t>(root, i) : 0; });
    comm.broadcast(small, root);
    expect_elements<std::int32_t>(
        small, 7, [&](std::int64_t i) { return tagged_value<std::int32_t>(root, i); },
        "i32 broadcast from root " + std::to_string(root));
  }
}

// A halo exchange on a ring, for several steps: each rank sends to its right neighbour and to
// its left one (different tags) before receiving, then receives in the other order: sends are
// buffered, receives match by peer and tag. send/receive are not counted as collectives.
inline void check_halo_exchange(Communicator& comm) {
  const int rank = comm.rank();
  const int size = comm.size();
  if (size < 2) return;
  const int left = (rank + size - 1) % size;
  const int right = (rank + 1) % size;
  const auto value = [](int from, int to, int tag, std::int64_t i) {
    return static_cast<double>(from) * 1e9 + to * 1e7 + tag * 1e5 + static_cast<double>(i % 10007);
  };
  const std::uint64_t sequence = comm.sequence();
  const std::int64_t counts[] = {0, 7, 4097, kSizes[4], 1};
  for (int step = 0; step < 10; ++step) {
    const std::int64_t n = counts[step % 5];
    const int to_right = 2 * step;
    const int to_left = 2 * step + 1;
    comm.send(filled<double>(n, [&](std::int64_t i) { return value(rank, right, to_right, i); }),
              right, to_right);
    comm.send(filled<double>(n, [&](std::int64_t i) { return value(rank, left, to_left, i); }),
              left, to_left);
    const Tensor from_right = Tensor::empty({n}, DType::f64);
    const Tensor from_left = Tensor::empty({n}, DType::f64);
    comm.receive(from_right, right, to_left);
    comm.receive(from_left, left, to_right);
    const std::string what =
        "step " + std::to_string(step) + ", " + std::to_string(n) + " elements";
    expect_elements<double>(
        from_right, n, [&](std::int64_t i) { return value(right, rank, to_left, i); },
        what + " from the right");
    expect_elements<double>(
        from_left, n, [&](std::int64_t i) { return value(left, rank, to_right, i); },
        what + " from the left");
  }
  EXPECT_EQ(comm.sequence(), sequence) << "send and receive are not collectives";
  comm.barrier();
}

// No rank leaves a barrier before the last one entered it (each rank late in turn).
inline void check_barrier(Communicator& comm) {
  const int rank = comm.rank();
  for (int late = 0; late < comm.size(); ++late) {
    comm.barrier();
    if (rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const double entered = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    comm.barrier();
    const double left = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    const Tensor late_entry = filled<double>(1, [&](std::int64_t) { return entered; });
    comm.broadcast(late_entry, late);
    EXPECT_GE(left, late_entry.data_as<double>()[0])
        << "rank " << rank << " left the barrier before rank " << late << " entered it";
  }
}

// ---- Usage errors -------------------------------------------------------------------------------

// Runs `call`, which must throw UsageError whose cause contains every one of `names`.
template <class F>
void expect_usage_error(F&& call, std::initializer_list<std::string> names,
                        const std::string& what) {
  try {
    call();
    ADD_FAILURE() << what << " was accepted";
  } catch (const UsageError& e) {
    for (const std::string& name : names) {
      EXPECT_NE(e.cause().find(name), std::string::npos) << what << ": " << e.cause();
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " threw something else than a UsageError: " << e.what();
  }
}

// Bad arguments are refused locally, before any communication, naming the value; they neither
// count as a collective nor abort the communicator.
inline void check_usage_errors(Communicator& comm) {
  const int rank = comm.rank();
  const int size = comm.size();
  const std::string ranks = std::to_string(size);
  const std::uint64_t sequence = comm.sequence();
  const Tensor t = Tensor::empty({4}, DType::f64);
  expect_usage_error([&] { comm.all_reduce(Tensor{}, ReduceOp::sum); }, {"undefined"},
                     "all_reduce of an undefined tensor");
  for (const DType dtype : {DType::f16, DType::bf16, DType::u8}) {
    expect_usage_error([&] { comm.all_reduce(Tensor::empty({4}, dtype), ReduceOp::max); },
                       {std::string(to_string(dtype))}, "all_reduce of a 16- or 8-bit tensor");
  }
  const Tensor too_short = Tensor::empty({4 * size - 1}, DType::f64);
  expect_usage_error([&] { comm.all_gather(t, too_short); },
                     {t.describe(), too_short.describe(), ranks + " ranks"},
                     "all_gather into a tensor of the wrong size");
  const Tensor other_dtype = Tensor::empty({4 * size}, DType::f32);
  expect_usage_error([&] { comm.all_gather(t, other_dtype); }, {other_dtype.describe()},
                     "all_gather into a tensor of another dtype");
  expect_usage_error([&] { comm.all_gather(Tensor{}, t); }, {"undefined"},
                     "all_gather of an undefined tensor");
  if (cuda::availability().usable) {
    const Tensor on_gpu = Tensor::empty({4 * size}, DType::f64, Device::cuda(0));
    expect_usage_error([&] { comm.all_gather(t, on_gpu); }, {on_gpu.describe()},
                       "all_gather into a tensor on another device");
  }
  for (const int root : {-1, size}) {
    expect_usage_error([&] { comm.broadcast(t, root); },
                       {"root " + std::to_string(root), ranks + " ranks"},
                       "broadcast from a bad root");
  }
  for (const int peer : {-1, rank, size}) {
    const std::string peer_text = "rank " + std::to_string(peer);
    expect_usage_error([&] { comm.send(t, peer, 1); }, {"send to " + peer_text},
                       "send to a bad peer");
    expect_usage_error([&] { comm.receive(t, peer, 1); }, {"receive from " + peer_text},
                       "receive from a bad peer");
  }
  const int peer = (rank + 1) % size;
  if (peer != rank) {
    expect_usage_error([&] { comm.send(t, peer, -3); }, {"tag -3"}, "send with a negative tag");
    expect_usage_error([&] { comm.receive(t, peer, -3); }, {"tag -3"},
                       "receive with a negative tag");
  }
  std::vector<std::byte> send(5);
  std::vector<std::byte> out(5 * static_cast<std::size_t>(size) + 1);
  expect_usage_error([&] { comm.all_gather_bytes(send, out); },
                     {"5 bytes into " + std::to_string(out.size())},
                     "all_gather_bytes into the wrong size");
  EXPECT_FALSE(comm.aborted());
  EXPECT_EQ(comm.sequence(), sequence) << "a refused call is not a collective";
  comm.barrier();  // the communicator still works
}

}  // namespace tenax::runtime::checks
