// N ranks as N threads: a rendezvous per collective on one mutex. Each rank posts its buffers in
// its slot; once all have, each computes its own result from every slot (sums in rank order,
// so the result is deterministic and the same on every rank), then all leave together, so no
// buffer is released while a peer still reads it. The slots also tell each rank exactly which
// peers did not arrive, and which collective each peer called.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/runtime/communicator.hpp"

namespace tenax::runtime {
namespace {

using Clock = std::chrono::steady_clock;

struct Slot {
  bool arrived = false;
  std::string_view name;
  std::uint64_t sequence = 0;
  std::int64_t step = 0;
  const void* send = nullptr;
  void* data = nullptr;
  std::size_t bytes = 0;
  std::int64_t count = 0;
  DType dtype = DType::f64;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
};

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : slots_(static_cast<std::size_t>(size)) {}

  // Posts `mine` for `rank` and runs `compute(slots)` once every rank has posted; returns after
  // every rank has computed. Throws CommFaultError on a timeout, a peer's abort or a desync.
  template <class F>
  void rendezvous(int rank, const Slot& mine, Clock::time_point deadline,
                  const std::string& description, F&& compute) {
    std::unique_lock lock(mutex_);
    throw_if_aborted(description);
    const int size = static_cast<int>(slots_.size());
    // A previous round may still be draining (a fast rank came back before slow ones left).
    wait(lock, deadline, description, [&] { return leaving_ == 0; });
    slots_[static_cast<std::size_t>(rank)] = mine;
    slots_[static_cast<std::size_t>(rank)].arrived = true;
    const std::uint64_t round = round_;
    if (++arrived_ == size) {
      cv_.notify_all();
    } else {
      wait(lock, deadline, description, [&] { return arrived_ == size || round_ != round; });
    }
    // Every rank checks what every peer called, so all of them report a desync.
    for (int r = 0; r < size; ++r) {
      const Slot& peer = slots_[static_cast<std::size_t>(r)];
      if (peer.name != mine.name || peer.sequence != mine.sequence) {
        const std::string what = "rank " + std::to_string(r) + " called " + std::string(peer.name) +
                                 " #" + std::to_string(peer.sequence) + " at step " +
                                 std::to_string(peer.step) + " while " + description +
                                 " waited for it (a desync)";
        abort_locked(what);
        throw CommFaultError(what,
                             "the ranks of a job must call the same collectives in the same "
                             "order; the job restarts from its checkpoint");
      }
    }
    lock.unlock();
    compute(slots_);  // reads the peers' buffers, writes only this rank's
    lock.lock();
    if (++done_ == size) {
      arrived_ = 0;
      done_ = 0;
      leaving_ = size - 1;
      ++round_;
      for (Slot& slot : slots_) slot.arrived = false;
      cv_.notify_all();
    } else {
      wait(lock, deadline, description, [&] { return round_ != round; });
      if (--leaving_ == 0) cv_.notify_all();
    }
  }

  void post(int from, int to, int tag, const void* data, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    throw_if_aborted("send");
    const auto* begin = static_cast<const std::byte*>(data);
    mailboxes_[{from, to, tag}].emplace_back(begin, begin + bytes);
    cv_.notify_all();
  }

  void take(int from, int to, int tag, void* data, std::size_t bytes, Clock::time_point deadline,
            const std::string& description) {
    std::unique_lock lock(mutex_);
    auto& box = mailboxes_[{from, to, tag}];
    wait(
        lock, deadline, description, [&] { return !box.empty(); }, from);
    std::vector<std::byte> message = std::move(box.front());
    box.pop_front();
    if (message.size() != bytes) {
      throw CommFaultError(description + " expected " + std::to_string(bytes) +
                               " bytes from rank " + std::to_string(from) + " and got " +
                               std::to_string(message.size()),
                           "send and receive tensors of the same size with matching tags");
    }
    if (bytes > 0) std::memcpy(data, message.data(), bytes);
  }

  void abort(std::string_view reason) noexcept {
    std::lock_guard lock(mutex_);
    abort_locked(reason);
  }

  [[nodiscard]] bool aborted() const noexcept {
    std::lock_guard lock(mutex_);
    return !abort_reason_.empty();
  }

 private:
  void abort_locked(std::string_view reason) noexcept {
    if (abort_reason_.empty()) {
      try {
        abort_reason_ = std::string(reason);
      } catch (...) {
        abort_reason_ = "aborted";
      }
    }
    cv_.notify_all();
  }

  void throw_if_aborted(const std::string& description) const {
    if (!abort_reason_.empty()) {
      throw CommFaultError(
          description + " ended: a rank aborted the communicator (" + abort_reason_ + ")",
          "exit with the restart code (75): the job restarts from its checkpoint");
    }
  }

  // Waits for `ready` until the deadline; on a timeout names the ranks that did not arrive (or
  // `peer` for a receive) and aborts the group so that every other waiting rank leaves too.
  template <class Ready>
  void wait(std::unique_lock<std::mutex>& lock, Clock::time_point deadline,
            const std::string& description, Ready ready, int peer = -1) {
    while (!ready()) {
      throw_if_aborted(description);
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !ready()) {
        throw_if_aborted(description);
        std::string missing;
        if (peer >= 0) {
          missing = std::to_string(peer);
        } else {
          for (std::size_t r = 0; r < slots_.size(); ++r) {
            if (!slots_[r].arrived) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
          }
        }
        const std::string what =
            description + " timed out" +
            (missing.empty() ? std::string() : "; rank(s) " + missing + " did not arrive");
        abort_locked(what);
        throw CommFaultError(what,
                             "a rank is hung or dead: the job exits with the restart code (75) "
                             "and restarts from its checkpoint; raise --comm-timeout if steps are "
                             "legitimately this slow");
      }
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  int arrived_ = 0;
  int done_ = 0;
  int leaving_ = 0;
  std::uint64_t round_ = 0;
  std::string abort_reason_;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<std::byte>>> mailboxes_;
};

template <class T>
void reduce_into(T* out, const std::vector<Slot>& slots, std::int64_t count, ReduceOp op) {
  // Rank order, starting from rank 0's values: every rank computes the same bits.
  std::vector<T> result(static_cast<const T*>(slots[0].data),
                        static_cast<const T*>(slots[0].data) + count);
  for (std::size_t r = 1; r < slots.size(); ++r) {
    const T* in = static_cast<const T*>(slots[r].data);
    for (std::int64_t i = 0; i < count; ++i) {
      switch (op) {
        case ReduceOp::sum:
          result[i] = result[i] + in[i];
          break;
        case ReduceOp::max:
          // NaN wins, so a NaN on any rank is seen by all.
          result[i] = (in[i] > result[i] || in[i] != in[i]) ? in[i] : result[i];
          break;
        case ReduceOp::min:
          result[i] = (in[i] < result[i] || in[i] != in[i]) ? in[i] : result[i];
          break;
      }
    }
  }
  std::copy(result.begin(), result.end(), out);
}

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank, int size, CommOptions options)
      : Communicator(options), group_(std::move(group)), rank_(rank), size_(size) {}

  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return size_; }
  [[nodiscard]] std::string_view name() const noexcept override { return "threads"; }
  [[nodiscard]] bool abort_seen() const noexcept override { return aborted() || group_->aborted(); }

 private:
  [[nodiscard]] Clock::time_point deadline() const {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(options().timeout_seconds));
  }
  [[nodiscard]] Slot slot(const Call& call) const {
    Slot s;
    s.name = call.name;
    s.sequence = call.sequence;
    s.step = call.step;
    return s;
  }

  void do_all_reduce(const Call& call, void* data, std::int64_t count, DType dtype,
                     ReduceOp op) override {
    Slot mine = slot(call);
    mine.data = data;
    mine.count = count;
    mine.dtype = dtype;
    mine.op = op;
    // Results go to a private copy first: peers still read this rank's input while it computes.
    std::vector<std::byte> result(static_cast<std::size_t>(count) * size_of(dtype));
    group_->rendezvous(rank_, mine, deadline(), describe(call), [&](const std::vector<Slot>& all) {
      for (const Slot& peer : all) {
        if (peer.count != count || peer.dtype != dtype || peer.op != op) {
          throw CommFaultError(describe(call) + ": ranks reduce different tensors or operations",
                               "call all_reduce with the same shape, dtype and op on every rank");
        }
      }
      switch (dtype) {
        case DType::f64:
          reduce_into(reinterpret_cast<double*>(result.data()), all, count, op);
          break;
        case DType::f32:
          reduce_into(reinterpret_cast<float*>(result.data()), all, count, op);
          break;
        case DType::i64:
          reduce_into(reinterpret_cast<std::int64_t*>(result.data()), all, count, op);
          break;
        default:
          reduce_into(reinterpret_cast<std::int32_t*>(result.data()), all, count, op);
          break;
      }
    });
    if (!result.empty()) std::memcpy(data, result.data(), result.size());
  }

  void do_all_gather(const Call& call, const void* send, std::size_t bytes, void* out) override {
    Slot mine = slot(call);
    mine.send = send;
    mine.bytes = bytes;
    group_->rendezvous(rank_, mine, deadline(), describe(call), [&](const std::vector<Slot>& all) {
      // Every slot is checked before any is read: then every rank finds a mismatch and leaves
      // without reading, and none frees its buffer while a peer still copies from it.
      for (std::size_t r = 0; r < all.size(); ++r) {
        if (all[r].bytes != bytes) {
          throw CommFaultError(describe(call) + ": rank " + std::to_string(r) + " gathers " +
                                   std::to_string(all[r].bytes) + " bytes, this rank " +
                                   std::to_string(bytes),
                               "gather the same size on every rank");
        }
      }
      for (std::size_t r = 0; r < all.size(); ++r) {
        if (bytes > 0) std::memcpy(static_cast<std::byte*>(out) + r * bytes, all[r].send, bytes);
      }
    });
  }

  void do_broadcast(const Call& call, void* data, std::size_t bytes, int root) override {
    Slot mine = slot(call);
    mine.data = data;
    mine.bytes = bytes;
    mine.root = root;
    group_->rendezvous(rank_, mine, deadline(), describe(call), [&](const std::vector<Slot>& all) {
      // Every slot, not only the root's: then every rank finds a mismatch and leaves without
      // reading, and the root does not free its buffer while a rank that saw none copies it.
      for (const Slot& peer : all) {
        if (peer.bytes != bytes || peer.root != root) {
          throw CommFaultError(describe(call) + ": ranks broadcast different sizes or roots",
                               "broadcast the same tensor shape from the same root on every rank");
        }
      }
      const Slot& source = all[static_cast<std::size_t>(root)];
      if (rank_ != root && bytes > 0) std::memcpy(data, source.data, bytes);
    });
  }

  void do_send(const Call&, const void* data, std::size_t bytes, int peer, int tag) override {
    group_->post(rank_, peer, tag, data, bytes);
  }

  void do_receive(const Call& call, void* data, std::size_t bytes, int peer, int tag) override {
    group_->take(peer, rank_, tag, data, bytes, deadline(), describe(call));
  }

  void do_barrier(const Call& call) override {
    group_->rendezvous(rank_, slot(call), deadline(), describe(call),
                       [](const std::vector<Slot>&) {});
  }

  void do_abort(std::string_view reason) noexcept override {
    group_->abort("rank " + std::to_string(rank_) + ": " + std::string(reason));
  }

  std::shared_ptr<ThreadGroup> group_;
  int rank_;
  int size_;
};

}  // namespace

std::vector<std::shared_ptr<Communicator>> make_thread_communicators(int size,
                                                                     CommOptions options) {
  TENAX_EXPECTS(size >= 1 && size <= 1024, UsageError,
                "a threads communicator of " + std::to_string(size) + " ranks",
                "use 1 to 1024 ranks (threads of one process)");
  auto group = std::make_shared<ThreadGroup>(size);
  std::vector<std::shared_ptr<Communicator>> ranks;
  ranks.reserve(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    ranks.push_back(std::make_shared<ThreadCommunicator>(group, r, size, options));
  }
  return ranks;
}

}  // namespace tenax::runtime
