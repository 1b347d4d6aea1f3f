#include "tenax/runtime/communicator.hpp"

#include "tenax/io/state_digest.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "comm_backends.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/io/state_digest.hpp"
#include "tenax/kernels/ops.hpp"
#include "tenax/runtime/launch_environment.hpp"

namespace tenax::runtime {

std::string_view to_string(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "unknown";
}

std::string_view to_string(StepDecision decision) noexcept {
  switch (decision) {
    case StepDecision::proceed:
      return "proceed";
    case StepDecision::retry:
      return "retry";
    case StepDecision::backoff:
      return "backoff";
    case StepDecision::rollback:
      return "rollback";
    case StepDecision::stop:
      return "stop";
    case StepDecision::restart:
      return "restart";
  }
  return "unknown";
}

std::string_view to_string(StepReason reason) noexcept {
  switch (reason) {
    case StepReason::none:
      return "none";
    case StepReason::out_of_memory:
      return "out of memory";
    case StepReason::anomaly:
      return "anomaly";
    case StepReason::overflow:
      return "overflow";
    case StepReason::device_fault:
      return "device fault";
    case StepReason::comm_fault:
      return "communication fault";
    case StepReason::usage:
      return "error";
  }
  return "unknown";
}

namespace {

// The state digests, when every rank sent its parts: the vote of io/state_digest.hpp.
void settle_digests(std::span<const StepProposal> proposals, StepAgreement& agreement) {
  const bool all = std::all_of(proposals.begin(), proposals.end(),
                               [](const StepProposal& p) { return p.digested; });
  if (!all) return;
  std::vector<io::DigestParts> parts;
  parts.reserve(proposals.size());
  for (const StepProposal& p : proposals) parts.push_back({p.digest_common, p.digest_partial});
  io::DigestVote voted = io::vote(parts);
  agreement.digested = true;
  agreement.state_digest = voted.digest;
  agreement.digest_suspects = std::move(voted.suspects);
}

}  // namespace

StepAgreement settle(std::span<const StepProposal> proposals) {
  StepAgreement agreement;
  if (proposals.empty()) return agreement;
  agreement.step = proposals[0].step;
  for (std::size_t r = 0; r < proposals.size(); ++r) {
    const StepProposal& p = proposals[r];
    const int rank = static_cast<int>(r);
    if (p.step != agreement.step) {
      throw CommFaultError("ranks disagree on the step (a desync): rank 0 is at step " +
                               std::to_string(agreement.step) + " and rank " +
                               std::to_string(rank) + " at step " + std::to_string(p.step),
                           "the ranks of a job must take the same steps; a resume or a rollback "
                           "that diverged is a bug in the job: restart it from its checkpoint");
    }
    if (p.decision > agreement.decision) {
      agreement.decision = p.decision;
      agreement.reason = p.reason;
      agreement.asking_rank = rank;
    }
    if (p.signal != 0 && agreement.signal == 0) {
      agreement.signal = p.signal;
      agreement.signal_rank = rank;
    }
    agreement.checkpoint_due = agreement.checkpoint_due || p.checkpoint_due;
    agreement.finished = agreement.finished || p.finished;
    agreement.digest_every = std::max(agreement.digest_every, p.digest_every);
    if (p.seconds > agreement.slowest_seconds) {
      agreement.slowest_seconds = p.seconds;
      agreement.slowest_rank = rank;
    }
  }
  settle_digests(proposals, agreement);
  return agreement;
}

namespace {

// The proposal as it travels: fixed width, no padding left undefined, the sequence number of the
// agreement inside so that a rank that called another collective is told apart.
struct WireProposal {
  std::int64_t step;
  std::uint64_t sequence;
  double seconds;
  std::uint64_t digest_common;
  std::uint64_t digest_partial;
  std::int32_t signal;
  std::int32_t digest_every;
  std::uint8_t decision;
  std::uint8_t reason;
  std::uint8_t checkpoint_due;
  std::uint8_t finished;
  std::uint8_t digested;
  std::uint8_t unused[3];  // zero: the record has no undefined bytes
};
static_assert(sizeof(WireProposal) == 56);

void check_contiguous_tensor(const Tensor& tensor, std::string_view call) {
  TENAX_EXPECTS(tensor.defined(), UsageError, std::string(call) + " was given an undefined tensor",
                "pass an allocated tensor (Tensor::empty)");
}

std::size_t checked_bytes(std::int64_t numel, DType dtype) {
  return static_cast<std::size_t>(numel) * size_of(dtype);
}

}  // namespace

Communicator::Communicator(CommOptions options) : options_(options) {
  TENAX_EXPECTS(
      options_.timeout_seconds > 0 && options_.timeout_seconds <= 7 * 86400.0, UsageError,
      "the communication timeout is " + std::to_string(options_.timeout_seconds) + " seconds",
      "use a positive number of seconds up to a week (--comm-timeout)");
}

std::string Communicator::describe(const Call& call) const {
  return std::string(call.name) + " #" + std::to_string(call.sequence) + " at step " +
         std::to_string(call.step) + " on rank " + std::to_string(rank()) + " of " +
         std::to_string(size());
}

Communicator::Call Communicator::next_call(std::string_view name, bool counted) {
  if (aborted()) {
    throw CommFaultError("the communicator of rank " + std::to_string(rank()) + " was aborted (" +
                             abort_reason_ + "); " + std::string(name) + " is not attempted",
                         "exit with the restart code (75): the job restarts from its checkpoint");
  }
  return Call{name, counted ? ++sequence_ : sequence_, step_};
}

namespace {

// Adds the time of one communicator call to a rank's total (Communicator::seconds_communicating),
// however the call ends.
class CommunicationTimer {
 public:
  explicit CommunicationTimer(double& total) noexcept
      : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~CommunicationTimer() {
    total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  CommunicationTimer(const CommunicationTimer&) = delete;
  CommunicationTimer& operator=(const CommunicationTimer&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

template <class F>
void Communicator::collective(std::string_view name, F&& body) {
  const Call call = next_call(name, /*counted=*/true);
  const CommunicationTimer timer(seconds_communicating_);
  try {
    body(call);
  } catch (const CommFaultError& e) {
    abort(e.what());
    throw;
  }
}

template <class F>
void Communicator::point_to_point(std::string_view name, F&& body) {
  const Call call = next_call(name, /*counted=*/false);
  const CommunicationTimer timer(seconds_communicating_);
  try {
    body(call);
  } catch (const CommFaultError& e) {
    abort(e.what());
    throw;
  }
}

StepAgreement Communicator::agree(const StepProposal& proposal) {
  std::vector<WireProposal> gathered(static_cast<std::size_t>(size()));
  StepAgreement agreement;
  collective("agree", [&](const Call& call) {
    WireProposal mine{};
    mine.step = proposal.step;
    mine.sequence = call.sequence;
    mine.seconds = proposal.seconds;
    mine.signal = proposal.signal;
    mine.decision = static_cast<std::uint8_t>(proposal.decision);
    mine.reason = static_cast<std::uint8_t>(proposal.reason);
    mine.checkpoint_due = proposal.checkpoint_due ? 1 : 0;
    mine.finished = proposal.finished ? 1 : 0;
    mine.digested = proposal.digested ? 1 : 0;
    mine.digest_every = proposal.digest_every;
    mine.digest_common = proposal.digest_common;
    mine.digest_partial = proposal.digest_partial;
    do_all_gather(call, &mine, sizeof(mine), gathered.data());
    std::vector<StepProposal> proposals(gathered.size());
    for (std::size_t r = 0; r < gathered.size(); ++r) {
      const WireProposal& w = gathered[r];
      if (w.sequence != call.sequence) {
        throw CommFaultError(
            "rank " + std::to_string(r) + " answered " + describe(call) +
                " with the record of its collective #" + std::to_string(w.sequence) + " (step " +
                std::to_string(w.step) + "): the ranks called different collectives",
            "a desync is a bug in the job's control flow; the job restarts from its checkpoint");
      }
      if (w.decision > static_cast<std::uint8_t>(StepDecision::restart) ||
          w.reason > static_cast<std::uint8_t>(StepReason::usage)) {
        throw CommFaultError(
            "rank " + std::to_string(r) + " sent a malformed step proposal in " + describe(call),
            "the ranks run different builds of the program: launch one build");
      }
      proposals[r] = StepProposal{w.step,
                                  static_cast<StepDecision>(w.decision),
                                  static_cast<StepReason>(w.reason),
                                  w.signal,
                                  w.checkpoint_due != 0,
                                  w.finished != 0,
                                  w.seconds,
                                  w.digested != 0,
                                  w.digest_common,
                                  w.digest_partial,
                                  w.digest_every};
    }
    agreement = settle(proposals);
  });
  return agreement;
}

namespace {

// Runs `body` on host memory holding the tensor's data: the tensor itself when the
// implementation accepts its device, else a host copy (copied back when `writes`).
template <class F>
void on_host(const Tensor& tensor, bool accepted, bool reads, bool writes, F&& body) {
  if (accepted) {
    body(tensor.data());
    return;
  }
  Tensor staged = tensor.device().is_cuda()
                      ? Tensor::empty(tensor.shape(), tensor.dtype(), pinned_host_pool())
                      : Tensor::empty(tensor.shape(), tensor.dtype());
  if (reads) ops::copy(staged, tensor);
  body(staged.data());
  if (writes) ops::copy(tensor, staged);
}

}  // namespace

void Communicator::all_reduce(const Tensor& tensor, ReduceOp op) {
  check_contiguous_tensor(tensor, "all_reduce");
  const DType dtype = tensor.dtype();
  TENAX_EXPECTS(
      dtype == DType::f64 || dtype == DType::f32 || dtype == DType::i64 || dtype == DType::i32,
      UsageError, "all_reduce of a " + std::string(to_string(dtype)) + " tensor",
      "reduce f64, f32, i64 or i32 (cast 16-bit values to f32 first: a 16-bit sum "
      "over ranks loses the low bits)");
  collective("all_reduce", [&](const Call& call) {
    on_host(tensor, accepts(tensor.device()), true, true,
            [&](void* data) { do_all_reduce(call, data, tensor.numel(), dtype, op); });
  });
}

void Communicator::all_gather(const Tensor& send, const Tensor& out) {
  check_contiguous_tensor(send, "all_gather");
  check_contiguous_tensor(out, "all_gather");
  TENAX_EXPECTS(out.dtype() == send.dtype() && out.device() == send.device() &&
                    out.numel() == send.numel() * size(),
                UsageError,
                "all_gather of " + send.describe() + " into " + out.describe() + " on " +
                    std::to_string(size()) + " ranks",
                "pass an output of the same dtype and device with size() times the elements");
  collective("all_gather", [&](const Call& call) {
    const bool accepted = accepts(send.device());
    on_host(send, accepted, true, false, [&](void* send_data) {
      on_host(out, accepted, false, true, [&](void* out_data) {
        do_all_gather(call, send_data, checked_bytes(send.numel(), send.dtype()), out_data);
      });
    });
  });
}

void Communicator::broadcast(const Tensor& tensor, int root) {
  check_contiguous_tensor(tensor, "broadcast");
  TENAX_EXPECTS(
      root >= 0 && root < size(), UsageError,
      "broadcast from root " + std::to_string(root) + " on " + std::to_string(size()) + " ranks",
      "pass a root in [0, size())");
  collective("broadcast", [&](const Call& call) {
    on_host(tensor, accepts(tensor.device()), rank() == root, rank() != root,
            [&](void* data) { do_broadcast(call, data, tensor.nbytes(), root); });
  });
}

void Communicator::send(const Tensor& tensor, int peer, int tag) {
  check_contiguous_tensor(tensor, "send");
  TENAX_EXPECTS(peer >= 0 && peer < size() && peer != rank() && tag >= 0, UsageError,
                "send to rank " + std::to_string(peer) + " with tag " + std::to_string(tag) +
                    " from rank " + std::to_string(rank()) + " of " + std::to_string(size()),
                "pass another rank in [0, size()) and a tag >= 0");
  point_to_point("send", [&](const Call& call) {
    on_host(tensor, accepts(tensor.device()), true, false,
            [&](void* data) { do_send(call, data, tensor.nbytes(), peer, tag); });
  });
}

void Communicator::receive(const Tensor& tensor, int peer, int tag) {
  check_contiguous_tensor(tensor, "receive");
  TENAX_EXPECTS(peer >= 0 && peer < size() && peer != rank() && tag >= 0, UsageError,
                "receive from rank " + std::to_string(peer) + " with tag " + std::to_string(tag) +
                    " on rank " + std::to_string(rank()) + " of " + std::to_string(size()),
                "pass another rank in [0, size()) and a tag >= 0");
  point_to_point("receive", [&](const Call& call) {
    on_host(tensor, accepts(tensor.device()), false, true,
            [&](void* data) { do_receive(call, data, tensor.nbytes(), peer, tag); });
  });
}

void Communicator::all_gather_bytes(std::span<const std::byte> send, std::span<std::byte> out) {
  TENAX_EXPECTS(out.size() == send.size() * static_cast<std::size_t>(size()), UsageError,
                "all_gather_bytes of " + std::to_string(send.size()) + " bytes into " +
                    std::to_string(out.size()),
                "pass an output of size() times the bytes");
  collective("all_gather_bytes",
             [&](const Call& call) { do_all_gather(call, send.data(), send.size(), out.data()); });
}

void Communicator::barrier() {
  collective("barrier", [&](const Call& call) { do_barrier(call); });
}

void Communicator::abort(std::string_view reason) noexcept {
  if (aborted()) return;
  try {
    abort_reason_ = reason.empty() ? std::string("aborted") : std::string(reason);
  } catch (...) {
    abort_reason_ = "aborted";
  }
  do_abort(abort_reason_);
}

void SingleRankCommunicator::do_all_gather(const Call&, const void* send, std::size_t bytes,
                                           void* out) {
  if (bytes > 0 && send != out) std::memmove(out, send, bytes);
}

void SingleRankCommunicator::do_broadcast(const Call&, void*, std::size_t, int) {}

void SingleRankCommunicator::do_send(const Call& call, const void*, std::size_t, int, int) {
  throw UsageError(describe(call) + ": a single rank has no peer", "send only between ranks");
}

void SingleRankCommunicator::do_receive(const Call& call, void*, std::size_t, int, int) {
  throw UsageError(describe(call) + ": a single rank has no peer", "receive only between ranks");
}

CommKind parse_comm_kind(std::string_view text) {
  if (text == "auto") return CommKind::automatic;
  if (text == "single") return CommKind::single;
  if (text == "mpi") return CommKind::mpi;
  if (text == "nccl") return CommKind::nccl;
  throw UsageError("--comm " + std::string(text) + " is not a communicator",
                   "use auto (MPI under mpirun or srun, else one rank), single, mpi or nccl");
}

std::string_view to_string(CommKind kind) noexcept {
  switch (kind) {
    case CommKind::automatic:
      return "auto";
    case CommKind::single:
      return "single";
    case CommKind::threads:
      return "threads";
    case CommKind::mpi:
      return "mpi";
    case CommKind::nccl:
      return "nccl";
  }
  return "unknown";
}

bool launched_by_mpi_launcher() { return read_launch_environment().parallel; }

namespace {

// The launcher's world size when it started several processes (0 otherwise).
int launched_world_size(const LaunchEnvironment& launch) {
  return launch.parallel && launch.world_size.value && *launch.world_size.value > 1
             ? *launch.world_size.value
             : 0;
}

// MPI made a communicator of one process where the launcher (`launch`, read before MPI started:
// a singleton MPI sets variables of its own) started several: the processes were not wired
// together (srun without PMI, an MPI without the launcher's support), and each would run the
// whole job alone.
std::shared_ptr<Communicator> checked_mpi(const LaunchEnvironment& launch,
                                          std::shared_ptr<Communicator> comm) {
  const int launched = launched_world_size(launch);
  if (launched > 1 && comm->size() == 1) {
    throw UsageError(std::string(to_string(launch.launcher)) + " started " +
                         std::to_string(launched) + " processes (" + launch.world_size.name + "=" +
                         launch.world_size.text +
                         "), but MPI sees one in this one: they were not wired together, and "
                         "each would run the whole job alone",
                     "give srun the MPI wiring (srun --mpi=pmix, or pmi2; `srun --mpi=list` shows "
                     "what this Slurm offers), or start the job with mpirun");
  }
  return comm;
}

}  // namespace

std::shared_ptr<Communicator> make_communicator(CommKind kind, CommOptions options) {
  const LaunchEnvironment launch = read_launch_environment();
  switch (kind) {
    case CommKind::automatic:
      if (launch.parallel) return checked_mpi(launch, detail::make_mpi_communicator(options));
      return std::make_shared<SingleRankCommunicator>(options);
    case CommKind::single: {
      const int launched = launched_world_size(launch);
      TENAX_EXPECTS(launched == 0, UsageError,
                    "--comm single under a launcher of " + std::to_string(launched) +
                        " processes (" + std::string(to_string(launch.launcher)) +
                        "): each would run the whole job alone in one run directory",
                    "use --comm auto or mpi, or launch one process");
      return std::make_shared<SingleRankCommunicator>(options);
    }
    case CommKind::mpi:
      return checked_mpi(launch, detail::make_mpi_communicator(options));
    case CommKind::nccl: {
      // NCCL bootstraps (the ncclUniqueId) and carries host data through a host communicator:
      // MPI under a launcher, and outside one a single rank, which needs no MPI installed (a GPU
      // machine may have none, and MPI_Init without one aborts the process).
      std::shared_ptr<Communicator> host =
          launch.parallel ? checked_mpi(launch, detail::make_mpi_communicator(options))
                          : std::make_shared<SingleRankCommunicator>(options);
      return detail::make_nccl_communicator(std::move(host), options);
    }
    case CommKind::threads:
      break;
  }
  throw UsageError("make_communicator cannot make a threads communicator",
                   "use make_thread_communicators(size) for N ranks in one process");
}

}  // namespace tenax::runtime
