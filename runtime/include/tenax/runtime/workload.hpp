/// Workload: the user's job as the Runner drives it. The Runner owns the step loop, checkpoints,
/// resume and every fault policy; the workload only knows how to start, how to take one step, and
/// how to save and load its state. @file
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tenax/core/device.hpp"
#include "tenax/core/state_dict.hpp"
#include "tenax/io/shard_layout.hpp"

namespace tenax::runtime {

/// How a workload's state is split across the ranks (Workload::state_layout).
struct StateLayout {
  /// The tensors of save_state() split across the ranks, each with this rank's slab or box in the
  /// current world (names as in save_state()).
  std::vector<io::TensorShard> shards;
  /// Entries of save_state() that may differ between ranks without changing any result (a rank's
  /// own timings). On an elastic resume rank r takes them from the file of old rank r % (old
  /// world size).
  std::vector<std::string> rank_local;
};

/// One figure of a committed step (Workload::step_metrics).
struct StepMetric {
  std::string name;    ///< `[a-z0-9_]`, at most 32 characters (step_metrics())
  double value = 0.0;  ///< the figure, in the workload's own unit
};

/// The interface a job implements for the Runner (see the file). The Runner holds it by
/// reference and calls it from the thread that runs Runner::run() only, on every rank in the
/// same order.
class Workload {
 public:
  virtual ~Workload() = default;

  /// Builds the initial state. Called once when no checkpoint exists to resume from.
  virtual void init() = 0;

  /// Work units in one step (rows of a grid, samples of a batch). The Runner starts with
  /// micro-batches of this size and halves them when memory runs out; must be >= 1.
  [[nodiscard]] virtual std::int64_t work_units() const = 0;

  /// A step is a transaction across ranks. Its phases, in the order the Runner calls them on
  /// every rank:
  ///  1. step() -- ACQUIRE and stage: take everything that can fail for a reason the Runner
  ///     retries (memory above all) and compute what may be computed before the ranks agree;
  ///  2. the agreement (the Runner's: one collective) -- every rank's step() succeeded, or all
  ///     act on the most severe fault any rank met;
  ///  3. combine_step() -- COMBINE the staged results across ranks (data parallel: gradients);
  ///  4. commit_step() -- APPLY: make the staged result the state; the compute and the
  ///     communication that cannot fail for a retryable reason may run here (a halo exchange and
  ///     the stencil after it, a solver's iterations in memory step() reserved).
  /// The step time the Runner reports (events, telemetry, `tenax watch`, the report) covers all
  /// of it, and the Runner's own work inside it (the agreement, the NaN scan, check()); the
  /// slow-rank warning compares the ranks' compute: that time less their waits in the
  /// communicator's calls. So a workload may put its work in either computing phase.
  ///
  /// step() computes step `step` -> `step + 1` and STAGES the result: the state that
  /// save_state() shows must not change yet. It processes the step's work in micro-batches of at
  /// most `micro_batch` units. Contract:
  ///  - the result must not depend on `micro_batch` (bit for bit), so that a backoff after an
  ///    out-of-memory error changes nothing but speed;
  ///  - everything that can fail for a reason the Runner retries (memory above all) is acquired
  ///    here, so that commit_step() cannot fail that way;
  ///  - if it throws, the staged result is dropped and the state is as it was (strong guarantee).
  ///    OutOfMemoryError drives the out-of-memory policy, AnomalyError (a NaN/Inf the step cannot
  ///    go on with) the anomaly policy, OverflowError the overflow stop, device and communication
  ///    faults the restart; anything else ends the run.
  /// Collectives in step() are allowed: every rank reaches them, or a rank's failure reaches its
  /// peers as a timeout, never as a hang.
  virtual void step(std::int64_t step, std::int64_t micro_batch) = 0;

  /// Combines the staged result with the other ranks' (data parallel: the gradients), after every
  /// rank's step() succeeded and all agreed to go on, before commit_step(); called on every rank
  /// in the same order, so its collectives meet. It must not fail for a retryable reason:
  /// acquire what it needs (memory) in step(). It returns why the combined step must not be
  /// taken (an anomaly found in the combined data, hence alike on every rank: the Runner rolls
  /// back without another agreement), or nothing. An OverflowError it throws (found in the
  /// combined gradients, so alike on every rank) stops the run as one from step() does, with a
  /// checkpoint of the last committed step. The default combines nothing.
  [[nodiscard]] virtual std::optional<std::string> combine_step() { return std::nullopt; }

  /// Makes the staged result of the last successful step() the state, computing what remains of
  /// the step (see the phases above). The Runner calls it once every rank's step() succeeded and
  /// all agreed to go on; it must not throw OutOfMemoryError or AnomalyError (a device fault may
  /// still escape: the job then restarts from its checkpoint). The rule is checked: while it
  /// runs, the memory pool refuses every allocation of this thread with a UsageError naming
  /// commit_step() (NoAllocationScope); take the memory in step().
  virtual void commit_step() = 0;

  /// Drops the staged result: a peer's step failed, so this rank's successful step is not applied
  /// (it will be computed again, with the same bits, when the step is retried). The default does
  /// nothing, for workloads whose next step() overwrites what is staged.
  virtual void discard_step() {}

  /// The complete state needed to continue the run (tensors may be views of the live state: the
  /// Runner writes them out before the next step changes them, or snapshots them first).
  [[nodiscard]] virtual StateDict save_state() const = 0;
  /// Restores a state produced by save_state() (possibly in an earlier process).
  virtual void load_state(const StateDict& state) = 0;

  /// An optional health check after a step: a description of what is wrong, or nothing. The
  /// Runner also scans every floating tensor of the state for NaN/Inf.
  [[nodiscard]] virtual std::optional<std::string> check() const { return std::nullopt; }

  /// Skips step `step` (counted from 0) for good: the step failed again after a rollback, with
  /// the same inputs, and the run's policy is to skip it (RunnerOptions::repeated_anomaly). The
  /// state stays that of the step before, and the next step() is `step` + 1. Return true when
  /// done; false (the default) when the workload cannot go on without the step, and the run stops
  /// as if the policy were stop. Called on every rank alike, between steps (the staged step was
  /// discarded).
  [[nodiscard]] virtual bool skip_step(std::int64_t /*step*/) { return false; }

  /// What step `step` (counted from 0) computes from, for the messages about it (a training
  /// step: its samples, "samples 2048..2111 of the data order"); "" (the default) when there is
  /// nothing to name.
  [[nodiscard]] virtual std::string describe_step(std::int64_t /*step*/) const { return {}; }

  /// Whether the job reached its goal before RunnerOptions::total_steps (a solve that converged):
  /// the Runner then stops taking steps, checkpoints and reports completion. Checked before every
  /// step, including the first after a resume.
  [[nodiscard]] virtual bool finished() const { return false; }

  /// Whether every rank's state is the same (data-parallel training: the model and optimizer are
  /// replicated). Then a checkpoint written by another number of ranks resumes here, each rank
  /// reading one of the identical rank files. False (the default) for sharded states, which must
  /// resume on the number of ranks that wrote them.
  [[nodiscard]] virtual bool replicated_state() const { return false; }

  /// How the state is split across the ranks; known from construction on (the Runner asks before
  /// init() or load_state()). With shards, a checkpoint written by another number of ranks
  /// resumes here (elastic resume): the checkpoint stores every rank's slabs; each rank rebuilds
  /// its own from the files of the ranks that held them (it reads only those files) and takes
  /// every other entry from one file, after checking it equal in every other file it read
  /// (entries listed as rank_local excepted). Every entry that is neither sharded nor rank-local
  /// must be the same on every rank. Without shards (the default) a state that is not
  /// replicated_state() resumes only on the number of ranks that wrote it.
  [[nodiscard]] virtual StateLayout state_layout() const { return {}; }

  /// Figures of the step just committed that a run report plots beside the step time and memory
  /// (a loss, a residual, a loss scale, the simulated time): each a name (`[a-z0-9_]`, at most 32
  /// characters) and a value. The Runner writes them into the step's line of the event log as
  /// `metric_<name>` (tenax report reads them back). Called after every committed step on every
  /// rank; return values the step already computed: no collectives, nothing slow. Names that
  /// break the rule are refused with a UsageError. The default reports none.
  [[nodiscard]] virtual std::vector<StepMetric> step_metrics() const { return {}; }

  /// The device the state lives on (for memory statistics and empty_cache on out-of-memory).
  [[nodiscard]] virtual Device device() const { return Device::cpu(); }
};

}  // namespace tenax::runtime
