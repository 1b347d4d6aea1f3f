/// AsyncCheckpointer: checkpoints without stalling the step loop. save() snapshots the state
/// (device tensors into pinned host buffers from pinned_host_pool(), host tensors into copies
/// from the host pool) and returns; a background thread then writes and commits the snapshot
/// through a CheckpointStore. The caller may change its tensors as soon as save() returns: the
/// snapshot is independent of them.
/// @file
/// At most one write is in flight: save() first waits for the previous write (try_save() instead
/// returns false without taking a snapshot). A write that fails is reported by the next call to
/// save(), try_save() or wait(), which rethrows its error once; the failed checkpoint was never
/// committed and the previous one is intact (the store's protocol). A process killed while a
/// write is in flight likewise leaves the previous checkpoint valid.
///
/// Thread-safety: the methods may be called from one thread at a time (the step loop's).
#pragma once

#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>

#include "tenax/io/checkpoint_store.hpp"

namespace tenax::io {

/// Writes checkpoints of a world of one (CheckpointStore::write) on a background thread, from
/// snapshots taken on the caller's thread. Neither copyable nor movable (the thread refers to it).
class AsyncCheckpointer {
 public:
  /// Writes through `store`, which must outlive this object and must not be used by another
  /// thread while a write is in flight.
  explicit AsyncCheckpointer(CheckpointStore& store);
  AsyncCheckpointer(const AsyncCheckpointer&) = delete;             ///< not copyable
  AsyncCheckpointer& operator=(const AsyncCheckpointer&) = delete;  ///< not copyable
  /// Waits for the write in flight. An error it raised is dropped here: call wait() first to
  /// see it.
  ~AsyncCheckpointer();

  /// Waits for the previous write (rethrowing its error, in which case nothing new starts),
  /// snapshots `state` and starts writing it as checkpoint `step`. Throws what the snapshot
  /// throws (OutOfMemoryError when the host copy does not fit).
  void save(std::int64_t step, const StateDict& state, const FileMetadata& metadata = {});
  /// As save(), but returns false at once, without a snapshot, while a write is in flight.
  [[nodiscard]] bool try_save(std::int64_t step, const StateDict& state,
                              const FileMetadata& metadata = {});
  /// Blocks until no write is in flight; rethrows the error of the last write if it failed.
  void wait();
  /// Whether a write is in flight (started and not yet finished, successfully or not).
  [[nodiscard]] bool busy() const;

  /// A copy of `state` that shares no storage with it: every tensor copied to host memory
  /// (pinned, from pinned_host_pool(), when it lives on a CUDA device; from the CPU's current
  /// resource otherwise), scalars and strings copied as values, undefined tensors kept as they
  /// are (the write rejects them). Throws OutOfMemoryError when a copy does not fit. Exposed for
  /// tests and synchronous callers.
  [[nodiscard]] StateDict snapshot(const StateDict& state);

 private:
  void join_and_rethrow();
  void start(std::int64_t step, const StateDict& state, const FileMetadata& metadata);

  CheckpointStore& store_;
  std::thread worker_;
  mutable std::mutex mutex_;
  bool running_ = false;
  std::exception_ptr error_;
};

}  // namespace tenax::io
