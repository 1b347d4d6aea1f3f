/// Communicator: how the N processes (ranks) of one job talk to each other.
/// @file
/// Contract shared by every implementation (single rank, in-process threads, MPI, NCCL):
///  - Every call except rank()/size()/local_rank()/name() is collective (or, for send/receive,
///    matched with the peer's call) and carries a sequence number: the n-th collective of a rank
///    must be the n-th collective of every other rank (send/receive are not counted). The
///    communicator counts them (sequence()), and implementations that can see the peers' calls
///    (threads, and the step agreement everywhere, whose record carries the sequence) detect a
///    mismatch (a desync) and throw CommFaultError naming both ranks' calls.
///  - Every call runs under a deadline (CommOptions::timeout_seconds). A call that does not
///    complete in time throws CommFaultError naming the call, its sequence number, this rank's
///    step (set_step) and, where it can be known, the ranks that did not arrive. A peer's failure
///    therefore reaches every rank as an error within the deadline, never as a hang.
///  - After any CommFaultError, or after abort(), the communicator is unusable: every later call
///    throws CommFaultError at once, without touching the network again. The job then exits with
///    the restart code (75) and the supervisor restarts all of it from the newest checkpoint
///    every rank committed.
///  - Tensors: all_reduce, all_gather, broadcast, send and receive take contiguous tensors on any
///    device; an implementation that cannot use a device's memory directly (MPI without CUDA
///    support) stages it through host buffers (pinned for CUDA). dtype, shape and device must
///    match the peers' (checked where cheap: locally always, across ranks by the threads one).
///
/// Thread-safety: a communicator belongs to one thread of its rank at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenax/core/tensor.hpp"

namespace tenax::runtime {

/// The element-wise operation of Communicator::all_reduce: `sum`, `max` or `min` over the ranks.
enum class ReduceOp : std::uint8_t { sum, max, min };
/// `"sum"`, `"max"` or `"min"` (`"unknown"` for a value outside the enumeration).
[[nodiscard]] std::string_view to_string(ReduceOp op) noexcept;

/// What a rank asks all ranks to do with the step just computed, ordered by severity: the
/// agreement takes the most severe proposal.
enum class StepDecision : std::uint8_t {
  proceed = 0,   ///< commit the step
  retry = 1,     ///< out of memory: discard, empty the cache, compute the step again
  backoff = 2,   ///< out of memory again: discard, halve the micro-batch, compute again
  rollback = 3,  ///< anomaly: discard, reload the last checkpoint
  stop = 4,      ///< a policy is exhausted (OOM at the floor, overflow): checkpoint and stop
  restart = 5,   ///< device or communication fault: exit for a restart at once
};
/// The enumerator's name (`"proceed"`, `"retry"`, ...; `"unknown"` outside the enumeration).
[[nodiscard]] std::string_view to_string(StepDecision decision) noexcept;

/// Why a decision was proposed. It travels with the decision, so every rank reports the cause
/// the asking rank saw.
enum class StepReason : std::uint8_t {
  none = 0,       ///< nothing to report (goes with StepDecision::proceed)
  out_of_memory,  ///< the step ran out of device or host memory (retry, backoff or stop)
  anomaly,        ///< a NaN/Inf in the step or in the state after it (rollback)
  overflow,       ///< the loss scaler cannot go lower (stop)
  device_fault,   ///< the device failed (restart)
  comm_fault,     ///< a collective failed or timed out (restart)
  usage,          ///< an error outside the policies (bad input) on some rank: every rank stops
};
/// A phrase for messages: `"none"`, `"out of memory"`, `"anomaly"`, `"overflow"`,
/// `"device fault"`, `"communication fault"`, or `"error"` for usage.
[[nodiscard]] std::string_view to_string(StepReason reason) noexcept;

/// One rank's proposal: a small fixed record, settled with every rank's in one collective.
struct StepProposal {
  std::int64_t step = 0;  ///< the step this proposal is about (ranks must agree on it)
  StepDecision decision = StepDecision::proceed;  ///< what this rank asks for
  StepReason reason = StepReason::none;           ///< why (StepReason::none with proceed)
  int signal = 0;               ///< a stop signal this rank received (SIGTERM...), 0: none
  bool checkpoint_due = false;  ///< this rank's checkpoint trigger (steps or time) fired
  bool finished = false;        ///< the workload reached its goal (Workload::finished)
  /// This rank's compute time for the step: the step's wall-clock time less the time spent in
  /// communicator calls (waiting for peers, moving data), so that the slowest rank is the one
  /// that computes longest, not the one that waited longest.
  double seconds = 0;
  /// Whether this rank sends its parts of the state digest (io::digest_parts) below.
  bool digested = false;
  std::uint64_t digest_common = 0;   ///< the part every healthy rank has alike
  std::uint64_t digest_partial = 0;  ///< the part the ranks sum
  /// Steps between digests this rank asks for (its measure of their cost; 0: no wish).
  std::int32_t digest_every = 0;
};

/// The settled outcome, the same on every rank.
struct StepAgreement {
  std::int64_t step = 0;                          ///< the step every proposal named
  StepDecision decision = StepDecision::proceed;  ///< the most severe decision proposed
  StepReason reason = StepReason::none;           ///< the reason `asking_rank` gave for it
  int asking_rank = -1;         ///< lowest rank that proposed `decision` (-1 when it is proceed)
  int signal = 0;               ///< the first stop signal in rank order, 0: none
  int signal_rank = -1;         ///< the rank that saw it
  bool checkpoint_due = false;  ///< any rank's trigger fired
  bool finished = false;        ///< any rank's workload reached its goal
  double slowest_seconds = 0;   ///< the largest StepProposal::seconds (compute) of any rank
  int slowest_rank = 0;         ///< the lowest rank that took `slowest_seconds` (0 if all are 0)
  /// Whether every rank sent its digest parts; then the two fields below hold.
  bool digested = false;
  /// io::combine_digest of the common part most ranks sent and the sum of every rank's partial.
  std::uint64_t state_digest = 0;
  /// The ranks whose common part differs from that of a strict majority of the ranks; every rank
  /// when the ranks disagree and no value has a strict majority (two ranks that differ). Empty
  /// when they all agree.
  std::vector<int> digest_suspects;
  /// The largest StepProposal::digest_every of any rank.
  std::int32_t digest_every = 0;
};

/// The rule every communicator applies to the gathered proposals (index = rank), written once.
/// Throws CommFaultError when ranks disagree on the step (a desync), naming two ranks' steps. The
/// digests are compared only when every rank sent one.
[[nodiscard]] StepAgreement settle(std::span<const StepProposal> proposals);

/// Settings shared by every communicator implementation.
struct CommOptions {
  /// Seconds a collective may take before it is declared hung. NCCL collectives of big tensors
  /// and a slow peer's step both count against it, so the default is generous; tests use seconds.
  /// In (0, 604800] (a week); the communicator's constructor refuses other values.
  double timeout_seconds = 300;
};

/// The abstract communicator of one rank; the file's contract applies to every implementation.
/// The public calls check their arguments (UsageError), count collectives, stage device memory
/// through host buffers when accepts() refuses it, and turn a CommFaultError into an aborted
/// communicator; an implementation overrides rank(), size(), name() and the `do_*` hooks.
/// Non-copyable; shared as `std::shared_ptr<Communicator>` by make_communicator().
class Communicator {
 public:
  /// Throws UsageError unless `options.timeout_seconds` is in (0, 604800] (up to a week).
  explicit Communicator(CommOptions options = {});
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// This process's rank, in [0, size()).
  [[nodiscard]] virtual int rank() const noexcept = 0;
  /// The number of ranks in the job (1 for SingleRankCommunicator).
  [[nodiscard]] virtual int size() const noexcept = 0;
  /// Rank among the ranks on this host (picks the GPU); rank() when unknown.
  [[nodiscard]] virtual int local_rank() const noexcept { return rank(); }
  /// The implementation: `"single"`, `"threads"`, `"mpi"` or `"nccl"`.
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;

  /// The step agreement (collective): every rank's proposal is gathered and settled (settle()),
  /// so every rank returns the same StepAgreement. Throws CommFaultError on a desync (a rank
  /// answered with the record of another collective, or ranks disagree on the step), on a
  /// malformed record (ranks running different builds), or as any collective.
  [[nodiscard]] StepAgreement agree(const StepProposal& proposal);

  /// In place (collective): every rank's `tensor` becomes the element-wise op over all ranks
  /// (f64, f32, i64, i32; sum in rank order where the implementation sums itself, else the
  /// library's order). UsageError for an undefined tensor or another dtype (cast 16-bit values to
  /// f32 first).
  void all_reduce(const Tensor& tensor, ReduceOp op);
  /// Collective: `out` (size() * send.numel() elements, same dtype and device) gets every rank's
  /// `send` in rank order. UsageError when `out` does not have that dtype, device or size.
  void all_gather(const Tensor& send, const Tensor& out);
  /// Collective: every rank's `tensor` becomes root's. UsageError unless `root` is in
  /// [0, size()).
  void broadcast(const Tensor& tensor, int root);
  /// Point to point (halo exchange), not counted in sequence(): `tensor` to `peer`, matched by
  /// the peer's receive() with the same `tag`; may return before the peer receives (buffered).
  /// UsageError unless `peer` is another rank in [0, size()) and `tag` >= 0 (so always on a
  /// single rank); CommFaultError, leaving the communicator aborted, on a failure or timeout.
  void send(const Tensor& tensor, int peer, int tag);
  /// The matching end of send(): waits for `peer`'s send with the same `tag` and fills
  /// `tensor` (same byte count). Same errors as send().
  void receive(const Tensor& tensor, int peer, int tag);
  /// Collective: host bytes, the same count on every rank (checkpoint digests, small records);
  /// `out` (size() * send.size() bytes, else UsageError) gets every rank's `send` in rank order.
  void all_gather_bytes(std::span<const std::byte> send, std::span<std::byte> out);
  /// Collective: returns once every rank has called it.
  void barrier();

  /// Tears the communicator down after a fault (or to leave a hung collective behind); later
  /// calls throw. Peers blocked in a collective with this rank time out (MPI, NCCL) or are woken
  /// with the reason (threads). Never throws, never blocks for long.
  void abort(std::string_view reason) noexcept;
  /// Whether abort() was called on this rank, directly or after a CommFaultError: every later
  /// call throws CommFaultError.
  [[nodiscard]] bool aborted() const noexcept { return !abort_reason_.empty(); }
  /// Whether this rank or, where it can be seen without communicating (threads), a peer aborted:
  /// a rank stuck in its own work (an injected hang) polls it to leave.
  [[nodiscard]] virtual bool abort_seen() const noexcept { return aborted(); }

  /// The step this rank is taking, quoted by timeout and desync reports.
  void set_step(std::int64_t step) noexcept { step_ = step; }
  /// The step last given to set_step() (0 before the first).
  [[nodiscard]] std::int64_t step() const noexcept { return step_; }
  /// Collectives started so far on this rank.
  [[nodiscard]] std::uint64_t sequence() const noexcept { return sequence_; }
  /// Seconds this rank spent inside this communicator's calls (collectives, agreements and
  /// point-to-point transfers) since it was made: time waiting for peers or moving data. The
  /// Runner subtracts it from a step's time to compare the ranks' compute. A GPU communicator
  /// whose calls only enqueue work counts the enqueueing.
  [[nodiscard]] double seconds_communicating() const noexcept { return seconds_communicating_; }
  /// The options given at construction.
  [[nodiscard]] const CommOptions& options() const noexcept { return options_; }

 protected:
  /// What the implementation is asked to do: a description for reports.
  struct Call {
    std::string_view name;  ///< the public call: `"agree"`, `"all_reduce"`, ...
    /// The collective's number on this rank (1 for the first); send/receive carry the current
    /// count without advancing it.
    std::uint64_t sequence = 0;
    std::int64_t step = 0;  ///< this rank's step() when the call started
  };
  /// `"all_reduce #12 at step 40 on rank 1 of 4"`: for messages.
  [[nodiscard]] std::string describe(const Call& call) const;
  /// Whether do_* may be handed memory of this device directly; otherwise the base stages
  /// through host buffers.
  [[nodiscard]] virtual bool accepts(Device device) const noexcept { return device.is_cpu(); }

  /// @name Implementation hooks
  ///@{

  /// What an implementation provides, called by the public method of the same name once the
  /// arguments are checked and the call is counted. Pointers are to accepts()-able memory;
  /// `count` is in elements of `dtype`, `bytes` in bytes (per rank for do_all_gather(), whose
  /// `out` holds size() times as many). Each throws CommFaultError (naming describe(call)) on
  /// failure or after the deadline. do_abort() must not throw nor block for long; it tears the
  /// connection down and wakes the peers where it can.
  virtual void do_all_reduce(const Call& call, void* data, std::int64_t count, DType dtype,
                             ReduceOp op) = 0;
  virtual void do_all_gather(const Call& call, const void* send, std::size_t bytes, void* out) = 0;
  virtual void do_broadcast(const Call& call, void* data, std::size_t bytes, int root) = 0;
  virtual void do_send(const Call& call, const void* data, std::size_t bytes, int peer,
                       int tag) = 0;
  virtual void do_receive(const Call& call, void* data, std::size_t bytes, int peer, int tag) = 0;
  virtual void do_barrier(const Call& call) = 0;
  virtual void do_abort(std::string_view reason) noexcept = 0;
  ///@}

  /// @name Routing to another communicator
  ///@{

  /// For a communicator that routes some memory through another of the same ranks (NCCL: host
  /// memory through MPI): runs `to`'s hook of the same name with this call's description (a
  /// derived class cannot call the protected hooks of another object). `to`'s sequence() is
  /// not advanced and its aborted() state is not checked.
  static void route_all_reduce(Communicator& to, const Call& call, void* data, std::int64_t count,
                               DType dtype, ReduceOp op) {
    to.do_all_reduce(call, data, count, dtype, op);
  }
  static void route_all_gather(Communicator& to, const Call& call, const void* send,
                               std::size_t bytes, void* out) {
    to.do_all_gather(call, send, bytes, out);
  }
  static void route_broadcast(Communicator& to, const Call& call, void* data, std::size_t bytes,
                              int root) {
    to.do_broadcast(call, data, bytes, root);
  }
  static void route_send(Communicator& to, const Call& call, const void* data, std::size_t bytes,
                         int peer, int tag) {
    to.do_send(call, data, bytes, peer, tag);
  }
  static void route_receive(Communicator& to, const Call& call, void* data, std::size_t bytes,
                            int peer, int tag) {
    to.do_receive(call, data, bytes, peer, tag);
  }
  static void route_barrier(Communicator& to, const Call& call) { to.do_barrier(call); }
  ///@}

 private:
  /// Checks usability, counts the call, and wraps it: an exception from it leaves the
  /// communicator aborted.
  template <class F>
  void collective(std::string_view name, F&& body);
  /// The same for send/receive, which do not advance the sequence: ranks exchange with different
  /// numbers of neighbours, so only collectives can be matched by count.
  template <class F>
  void point_to_point(std::string_view name, F&& body);
  [[nodiscard]] Call next_call(std::string_view name, bool counted);

  CommOptions options_;
  std::uint64_t sequence_ = 0;
  std::int64_t step_ = 0;
  std::string abort_reason_;
  double seconds_communicating_ = 0;
};

/// One rank: collectives return the rank's own data, and accepts() takes memory of any device,
/// so nothing is staged. send() and receive() throw UsageError (there is no peer).
class SingleRankCommunicator final : public Communicator {
 public:
  /// Throws UsageError for a timeout outside (0, 604800] seconds, as Communicator.
  explicit SingleRankCommunicator(CommOptions options = {}) : Communicator(options) {}
  /// Always 0.
  [[nodiscard]] int rank() const noexcept override { return 0; }
  /// Always 1.
  [[nodiscard]] int size() const noexcept override { return 1; }
  /// `"single"`.
  [[nodiscard]] std::string_view name() const noexcept override { return "single"; }

 private:
  [[nodiscard]] bool accepts(Device) const noexcept override { return true; }
  void do_all_reduce(const Call&, void*, std::int64_t, DType, ReduceOp) override {}
  void do_all_gather(const Call& call, const void* send, std::size_t bytes, void* out) override;
  void do_broadcast(const Call& call, void* data, std::size_t bytes, int root) override;
  void do_send(const Call& call, const void* data, std::size_t bytes, int peer, int tag) override;
  void do_receive(const Call& call, void* data, std::size_t bytes, int peer, int tag) override;
  void do_barrier(const Call&) override {}
  void do_abort(std::string_view) noexcept override {}
};

/// N ranks as N threads of one process (tests of every multi-rank policy without a launcher).
/// Returns one communicator per rank, index = rank; each must be used by its own thread.
/// Sums run in rank order, so results are deterministic. A rank that does not arrive within the
/// deadline is named by the others' timeout errors. UsageError unless 1 <= `size` <= 1024.
[[nodiscard]] std::vector<std::shared_ptr<Communicator>> make_thread_communicators(
    int size, CommOptions options = {});

/// Which communicator make_communicator() makes (the `--comm` flag): `automatic`, `single`,
/// `threads` (make_thread_communicators() only), `mpi` or `nccl`.
enum class CommKind : std::uint8_t { automatic, single, threads, mpi, nccl };
/// `"auto"`, `"single"`, `"mpi"` or `"nccl"` (a `--comm` flag); UsageError naming them otherwise.
[[nodiscard]] CommKind parse_comm_kind(std::string_view text);
/// The `--comm` spelling: `"auto"`, `"single"`, `"threads"`, `"mpi"` or `"nccl"` (`"threads"`
/// is not accepted by parse_comm_kind()).
[[nodiscard]] std::string_view to_string(CommKind kind) noexcept;

/// Whether this process was started by a parallel launcher (mpirun/mpiexec, srun): their
/// environment variables (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK, SLURM_NTASKS > 1...).
/// The rule is read_launch_environment().parallel (launch_environment.hpp).
[[nodiscard]] bool launched_by_mpi_launcher();

/// The MPI and NCCL communicators are plugins loaded when a job asks for several ranks: a
/// single-rank run never loads libmpi or libnccl. What `tenax doctor` reports of the MPI one.
struct CommLibraryReport {
  bool compiled = false;  ///< this build has the communicator
  std::string path;       ///< the plugin file loaded (empty when MPI is linked into the program)
  std::string version;    ///< the library's version, e.g. "Open MPI v4.1.4 (MPI standard 3.1)"
  std::string cause;      ///< why it could not be loaded (empty when it was)
  std::string fix;        ///< what to do about `cause` (empty when it was loaded)
};
/// Loads the MPI plugin if that was not done yet (MPI is not initialised); never throws: a
/// failure is reported in CommLibraryReport::cause and CommLibraryReport::fix.
[[nodiscard]] CommLibraryReport mpi_library_report() noexcept;

/// The communicator a program asked for with `--comm`: automatic is MPI under a launcher and a
/// single rank otherwise; mpi is the MPI one (NotCompiledError with the fix in a build without
/// MPI); nccl is NCCL for device tensors with MPI for the agreement and host data under a
/// launcher, and a single rank outside one, which loads no MPI (a CUDA build with NCCL). threads is
/// refused here (it makes several ranks in one process; use make_thread_communicators). single
/// under a launcher of several Open MPI processes is refused (UsageError). Throws EnvironmentError
/// when MPI cannot start.
[[nodiscard]] std::shared_ptr<Communicator> make_communicator(CommKind kind,
                                                              CommOptions options = {});

}  // namespace tenax::runtime
