// The MPI communicator: MPI_COMM_WORLD's ranks on a duplicate of it, every operation
// non-blocking and polled under the deadline, so that a hung or dead peer becomes a
// CommFaultError naming the call and the ranks that did not arrive instead of a hang.
// The C API only: OpenMPI and MPICH otherwise pull in their deprecated C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm_backends.hpp"
#include "tenax/core/error.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace tenax::runtime::detail {
namespace {

using Clock = std::chrono::steady_clock;

// MPI is finalised at exit only when no communicator was aborted: MPI_Finalize synchronises
// with the peers, and a hung or dead one would make the exit hang.
std::atomic<bool> any_aborted{false};
std::once_flag init_once;
bool we_initialised = false;

extern "C" void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !any_aborted.load()) MPI_Finalize();
}

void initialise_mpi() {
  std::call_once(init_once, [] {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (initialised) return;
    // OpenMPI's non-blocking all-reduce (libnbc) picks a binomial tree by default, half the
    // bandwidth of the blocking one on large tensors; its ring is on par (bench/RESULTS.md).
    // A value the user set wins.
    ::setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
      throw EnvironmentError("MPI_Init_thread failed",
                             "start the job with mpirun/mpiexec or srun, and check that the MPI "
                             "library found at run time is the one tenax was built with "
                             "(`tenax doctor`)");
    }
    we_initialised = true;
    std::atexit(finalize_at_exit);
  });
}

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return MPI_DOUBLE;
    case DType::f32:
      return MPI_FLOAT;
    case DType::i64:
      return MPI_INT64_T;
    default:
      return MPI_INT32_T;
  }
}

// Max and min where a NaN on any rank wins, as in the threads communicator: MPI_MAX and MPI_MIN
// on floating point compare with < and >, so a NaN survives only where it is the first operand
// and a rank's NaN would vanish on its peers. Defined for f64 and f32, whose datatypes are the
// only ones these ops are used with.
template <class T, bool kMax>
void nan_winning_extremum(void* in, void* inout, int* length, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *length; ++i) {
    if (b[i] != b[i]) continue;
    if (a[i] != a[i] || (kMax ? a[i] > b[i] : a[i] < b[i])) b[i] = a[i];
  }
}

struct FloatingExtremumOps {
  MPI_Op max_f64 = MPI_OP_NULL, min_f64 = MPI_OP_NULL;
  MPI_Op max_f32 = MPI_OP_NULL, min_f32 = MPI_OP_NULL;
};

// Created once, after MPI_Init; MPI_Finalize frees them.
const FloatingExtremumOps& floating_extremum_ops() {
  static const FloatingExtremumOps ops = [] {
    FloatingExtremumOps o;
    MPI_Op_create(&nan_winning_extremum<double, true>, 1, &o.max_f64);
    MPI_Op_create(&nan_winning_extremum<double, false>, 1, &o.min_f64);
    MPI_Op_create(&nan_winning_extremum<float, true>, 1, &o.max_f32);
    MPI_Op_create(&nan_winning_extremum<float, false>, 1, &o.min_f32);
    return o;
  }();
  return ops;
}

MPI_Op mpi_op(ReduceOp op, DType dtype) {
  const bool floating = dtype == DType::f64 || dtype == DType::f32;
  const bool f64 = dtype == DType::f64;
  switch (op) {
    case ReduceOp::sum:
      return MPI_SUM;
    case ReduceOp::max:
      if (!floating) return MPI_MAX;
      return f64 ? floating_extremum_ops().max_f64 : floating_extremum_ops().max_f32;
    case ReduceOp::min:
      if (!floating) return MPI_MIN;
      return f64 ? floating_extremum_ops().min_f64 : floating_extremum_ops().min_f32;
  }
  return MPI_SUM;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

// What a rank that timed out tells its peers, on the diagnostic communicator.
struct Arrival {
  std::int64_t rank;
  std::uint64_t sequence;
  std::int64_t step;
};
constexpr int kArrivalTag = 7001;
constexpr int kGatherTag = 7002;
// Gathers up to this size per rank, on up to this many ranks, go point to point.
constexpr std::size_t kSmallGatherBytes = 4096;
constexpr int kSmallGatherRanks = 32;
// Messages above this many bytes (or elements) are split: MPI counts are ints.
constexpr std::size_t kChunk = std::size_t{1} << 30;

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(CommOptions options) : Communicator(options) {
    initialise_mpi();
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &diagnostics_), "MPI_Comm_dup");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &gathers_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(gathers_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(diagnostics_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm local;
    if (MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local) ==
        MPI_SUCCESS) {
      MPI_Comm_rank(local, &local_rank_);
      MPI_Comm_free(&local);
    } else {
      local_rank_ = rank_;
    }
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    cuda_aware_ = MPIX_Query_cuda_support() == 1;
#endif
  }

  ~MpiCommunicator() override {
    // Freeing a communicator is collective in spirit; after an abort it is left to the exit.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!aborted() && !finalized) {
      try {
        if (!pending_sends_.empty()) {
          std::vector<MPI_Request> requests;
          for (PendingSend& p : pending_sends_) requests.push_back(p.request);
          wait_all(Call{"send (at exit)", sequence(), step()}, requests);
        }
      } catch (const Error& e) {
        std::fprintf(stderr, "tenax [rank %d]: %s\n", rank_, e.what());
        any_aborted.store(true);
        return;
      }
      MPI_Comm_free(&gathers_);
      MPI_Comm_free(&diagnostics_);
      MPI_Comm_free(&comm_);
    }
  }

  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return size_; }
  [[nodiscard]] int local_rank() const noexcept override { return local_rank_; }
  [[nodiscard]] std::string_view name() const noexcept override { return "mpi"; }

 private:
  [[nodiscard]] bool accepts(Device device) const noexcept override {
    return device.is_cpu() || cuda_aware_;
  }

  void check(int code, const char* what) const {
    if (code != MPI_SUCCESS) {
      throw CommFaultError(
          std::string(what) + " failed on rank " + std::to_string(rank_) + ": " + mpi_error(code),
          "the job exits with the restart code (75) and restarts from its "
          "checkpoint; if it recurs, check the network and `tenax doctor`");
    }
  }
  void check(int code, const Call& call) const {
    if (code != MPI_SUCCESS) {
      throw CommFaultError(describe(call) + " failed: " + mpi_error(code),
                           "the job exits with the restart code (75) and restarts from its "
                           "checkpoint; if it recurs, check the network and `tenax doctor`");
    }
  }

  // Waits for every request until the deadline: spins first (a collective of ranks that arrive
  // together completes in microseconds), then yields, then sleeps, so a rank waiting minutes for a
  // slow peer leaves the core to the ranks that work. `peer`: the one rank a receive waits for
  // (-1 for a collective, which waits for all).
  void wait_all(const Call& call, std::vector<MPI_Request>& requests,
                MPI_Status* statuses = MPI_STATUSES_IGNORE, int peer = -1) {
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options().timeout_seconds));
    for (long polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, statuses), call);
      if (done) return;
      const auto now = Clock::now();
      if (now >= deadline) {
        timed_out(call, requests, peer);
      }
      // Progress of a non-blocking collective happens inside MPI_Test*, so the first tens of
      // milliseconds (a large all-reduce) are polled without pause; past them the peer is late
      // (a slow step), and the wait yields, then sleeps, leaving the core to ranks that work.
      const auto waited = now - start;
      if (waited < std::chrono::milliseconds(50)) continue;
      if (waited < std::chrono::seconds(1)) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }

  // A timed-out collective: find who did not arrive (the ranks not heard from on the
  // diagnostic communicator within a short grace), then throw. A timed-out receive names its
  // peer: the other ranks have no part in it, and asking them would name every rank that is busy
  // elsewhere.
  [[noreturn]] void timed_out(const Call& call, std::vector<MPI_Request>& requests, int peer) {
    // The pending requests stay posted (a non-blocking collective cannot be freed or
    // cancelled); the process exits for a restart without touching them again.
    (void)requests;
    if (peer >= 0) throw_timed_out(call, std::to_string(peer), "");
    const Arrival mine{rank_, call.sequence, call.step};
    std::vector<Arrival> heard(static_cast<std::size_t>(size_), Arrival{-1, 0, 0});
    std::vector<MPI_Request> sends, receives;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      MPI_Request send = MPI_REQUEST_NULL;
      MPI_Isend(&mine, sizeof(mine), MPI_BYTE, peer, kArrivalTag, diagnostics_, &send);
      sends.push_back(send);
      MPI_Request receive = MPI_REQUEST_NULL;
      MPI_Irecv(&heard[static_cast<std::size_t>(peer)], sizeof(Arrival), MPI_BYTE, peer,
                kArrivalTag, diagnostics_, &receive);
      receives.push_back(receive);
    }
    const double grace = std::min(2.0, std::max(0.2, options().timeout_seconds / 2));
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(grace));
    while (Clock::now() < until) {
      int all = 0;
      MPI_Testall(static_cast<int>(receives.size()), receives.data(), &all, MPI_STATUSES_IGNORE);
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::string missing, elsewhere;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      const Arrival& a = heard[static_cast<std::size_t>(peer)];
      if (a.rank < 0) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(peer);
      } else if (a.sequence != call.sequence) {
        elsewhere += "; rank " + std::to_string(peer) + " waits in its collective #" +
                     std::to_string(a.sequence) + " at step " + std::to_string(a.step) +
                     " (a desync)";
      }
    }
    // The requests of peers that never answered stay posted; the process exits for a restart.
    throw_timed_out(call, missing, elsewhere);
  }

  [[noreturn]] void throw_timed_out(const Call& call, const std::string& missing,
                                    const std::string& elsewhere) const {
    throw CommFaultError(
        describe(call) + " timed out after " + seconds_text(options().timeout_seconds) + " s" +
            (missing.empty() ? std::string() : "; rank(s) " + missing + " did not arrive") +
            elsewhere,
        "a rank is hung or dead: the job exits with the restart code (75) and `tenax run` "
        "restarts it from its checkpoint; raise --comm-timeout if steps are legitimately this "
        "slow");
  }

  void do_all_reduce(const Call& call, void* data, std::int64_t count, DType dtype,
                     ReduceOp op) override {
    const std::size_t element = size_of(dtype);
    auto* bytes = static_cast<std::byte*>(data);
    std::vector<MPI_Request> requests;
    for (std::int64_t done = 0; done < count;) {
      const std::int64_t n = std::min<std::int64_t>(count - done, INT_MAX);
      MPI_Request request = MPI_REQUEST_NULL;
      check(
          MPI_Iallreduce(MPI_IN_PLACE, bytes + static_cast<std::size_t>(done) * element,
                         static_cast<int>(n), mpi_type(dtype), mpi_op(op, dtype), comm_, &request),
          call);
      requests.push_back(request);
      done += n;
    }
    if (!requests.empty()) wait_all(call, requests);
  }

  void do_all_gather(const Call& call, const void* send, std::size_t bytes, void* out) override {
    std::memcpy(static_cast<std::byte*>(out) + static_cast<std::size_t>(rank_) * bytes, send,
                bytes);
    if (bytes <= kSmallGatherBytes && size_ <= kSmallGatherRanks) {
      // The step agreement's size: a message to and from every peer on a communicator of its
      // own. OpenMPI's non-blocking gather pays a schedule per call that costs twice a blocking
      // 8-byte all-reduce; these point-to-point messages cost about one.
      std::vector<MPI_Request> requests;
      requests.reserve(2 * static_cast<std::size_t>(size_));
      for (int peer = 0; peer < size_; ++peer) {
        if (peer == rank_) continue;
        MPI_Request receive = MPI_REQUEST_NULL;
        check(MPI_Irecv(static_cast<std::byte*>(out) + static_cast<std::size_t>(peer) * bytes,
                        static_cast<int>(bytes), MPI_BYTE, peer, kGatherTag, gathers_, &receive),
              call);
        requests.push_back(receive);
      }
      for (int peer = 0; peer < size_; ++peer) {
        if (peer == rank_) continue;
        MPI_Request request = MPI_REQUEST_NULL;
        check(MPI_Isend(send, static_cast<int>(bytes), MPI_BYTE, peer, kGatherTag, gathers_,
                        &request),
              call);
        requests.push_back(request);
      }
      wait_all(call, requests);
      return;
    }
    std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
    if (bytes <= kChunk) {
      check(MPI_Iallgather(send, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                           MPI_BYTE, comm_, &requests[0]),
            call);
      wait_all(call, requests);
      return;
    }
    // Large gathers: every rank broadcasts its part in turn.
    for (int root = 0; root < size_; ++root) {
      auto* part = static_cast<std::byte*>(out) + static_cast<std::size_t>(root) * bytes;
      if (root == rank_) std::memcpy(part, send, bytes);
      do_broadcast(call, part, bytes, root);
    }
  }

  void do_broadcast(const Call& call, void* data, std::size_t bytes, int root) override {
    std::vector<MPI_Request> requests;
    for (std::size_t done = 0; done < bytes;) {
      const std::size_t n = std::min(bytes - done, kChunk);
      MPI_Request request = MPI_REQUEST_NULL;
      check(MPI_Ibcast(static_cast<std::byte*>(data) + done, static_cast<int>(n), MPI_BYTE, root,
                       comm_, &request),
            call);
      requests.push_back(request);
      done += n;
    }
    if (!requests.empty()) wait_all(call, requests);
  }

  // Buffered, as the contract says: the bytes are copied and the send is left in flight, so two
  // ranks that both send before they receive (a halo exchange) never wait on each other. Sends
  // still in flight are completed by later calls, and waited for (under the deadline) at
  // destruction.
  void do_send(const Call& call, const void* data, std::size_t bytes, int peer, int tag) override {
    reap_sends(call);
    std::size_t done = 0;
    do {
      const std::size_t n = std::min(bytes - done, kChunk);
      PendingSend pending;
      pending.bytes.assign(static_cast<const std::byte*>(data) + done,
                           static_cast<const std::byte*>(data) + done + n);
      check(MPI_Isend(pending.bytes.data(), static_cast<int>(n), MPI_BYTE, peer, tag, comm_,
                      &pending.request),
            call);
      pending_sends_.push_back(std::move(pending));
      done += n;
    } while (done < bytes);
  }

  void reap_sends(const Call& call) {
    for (auto it = pending_sends_.begin(); it != pending_sends_.end();) {
      int done = 0;
      check(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), call);
      it = done ? pending_sends_.erase(it) : std::next(it);
    }
  }

  void do_receive(const Call& call, void* data, std::size_t bytes, int peer, int tag) override {
    std::size_t done = 0;
    do {
      const std::size_t n = std::min(bytes - done, kChunk);
      std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
      check(MPI_Irecv(static_cast<std::byte*>(data) + done, static_cast<int>(n), MPI_BYTE, peer,
                      tag, comm_, &requests[0]),
            call);
      MPI_Status status;
      wait_all(call, requests, &status, peer);
      int received = 0;
      MPI_Get_count(&status, MPI_BYTE, &received);
      if (static_cast<std::size_t>(received) != n) {
        throw CommFaultError(describe(call) + " expected " + std::to_string(n) +
                                 " bytes from rank " + std::to_string(peer) + " and got " +
                                 std::to_string(received),
                             "send and receive tensors of the same size with matching tags");
      }
      done += n;
    } while (done < bytes);
  }

  void do_barrier(const Call& call) override {
    std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
    check(MPI_Ibarrier(comm_, &requests[0]), call);
    wait_all(call, requests);
  }

  void do_abort(std::string_view) noexcept override { any_aborted.store(true); }

  struct PendingSend {
    std::vector<std::byte> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::list<PendingSend> pending_sends_;  // a list: MPI holds pointers into each buffer
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm diagnostics_ = MPI_COMM_NULL;
  // Small gathers' messages, apart from the user's send/receive tags.
  MPI_Comm gathers_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  bool cuda_aware_ = false;
};

}  // namespace

}  // namespace tenax::runtime::detail

// The plugin's entry points (runtime/src/comm_plugins.cpp loads them).
extern "C" __attribute__((visibility("default"))) void tenax_comm_mpi_make(
    const tenax::runtime::CommOptions* options,
    std::shared_ptr<tenax::runtime::Communicator>* made) {
  *made = std::make_shared<tenax::runtime::detail::MpiCommunicator>(*options);
}

// The library's name and version and the MPI standard it implements; both queries are allowed
// before MPI_Init, so this starts no MPI job.
extern "C" __attribute__((visibility("default"))) void tenax_comm_mpi_version(std::string* text) {
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(library, &length);
  int version = 0;
  int subversion = 0;
  MPI_Get_version(&version, &subversion);
  std::string name(library, static_cast<std::size_t>(length > 0 ? length : 0));
  const std::size_t cut = name.find_first_of(",\n");
  if (cut != std::string::npos) name.resize(cut);
  while (!name.empty() && (name.back() == ' ' || name.back() == '\0')) name.pop_back();
  *text = (name.empty() ? std::string("unknown library") : name) + " (MPI standard " +
          std::to_string(version) + "." + std::to_string(subversion) + ")";
}
