// The CPU context: a persistent pool of num_threads - 1 workers plus the calling thread.
//
// One parallel_for runs at a time (later callers wait for the pool). A job is published by
// bumping a generation counter; worker w runs chunk w, the caller runs chunk 0, so the split and
// the thread that runs each chunk never depend on timing.
//
// Waiting spins briefly before it sleeps: a worker watches the generation, and the caller the
// count of chunks still running, for up to kSpinTime, then blocks on the condition variable (whose
// predicate, checked under the mutex, stays the rule). A training step or a solver iteration runs
// its ops microseconds apart, and a wake-up through the kernel costs tens of microseconds on a
// virtual machine: spinning keeps the workers ready for the next op (bench/RESULTS.md).
#include "tenax/core/context.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"

namespace tenax {

namespace {

constexpr int kMaxThreads = 4096;

// True on pool workers and on a caller while it runs its own chunk: parallel_for from there
// runs serially instead of waiting for a pool that is busy with the enclosing call.
thread_local bool inside_parallel_region = false;

int hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(std::min<unsigned>(n, kMaxThreads));
}

int threads_from_environment() {
  const char* value = std::getenv("TENAX_NUM_THREADS");
  if (value == nullptr) return hardware_threads();
  const std::string text(value);
  const int threads = parse_whole<int>(text).value_or(0);
  if (threads < 1 || threads > kMaxThreads) {
    throw UsageError("TENAX_NUM_THREADS is '" + text + "', not a whole number of threads in [1, " +
                         std::to_string(kMaxThreads) + "]",
                     "set TENAX_NUM_THREADS to a positive integer such as 8, or unset it to use "
                     "all " +
                         std::to_string(hardware_threads()) + " hardware threads");
  }
  return threads;
}

// How long a waiting thread spins before it sleeps.
constexpr std::chrono::microseconds kSpinTime{50};

// A hint to the core that this thread is spinning (frees the pipeline for its sibling).
inline void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() or kSpinTime passes; whether done() turned true.
template <class Done>
bool spin_until(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

struct Chunking {
  std::int64_t begin = 0;
  std::int64_t count = 0;  // number of chunks
  std::int64_t base = 0;   // indices per chunk ...
  std::int64_t extra = 0;  // ... plus one for the first `extra` chunks

  [[nodiscard]] std::int64_t chunk_begin(std::int64_t chunk) const {
    return begin + chunk * base + std::min(chunk, extra);
  }
  [[nodiscard]] std::int64_t chunk_end(std::int64_t chunk) const {
    return chunk_begin(chunk) + base + (chunk < extra ? 1 : 0);
  }
};

Chunking split(std::int64_t begin, std::int64_t end, std::int64_t min_chunk, int threads) {
  const std::int64_t n = end - begin;
  const std::int64_t grain = std::max<std::int64_t>(min_chunk, 1);
  const std::int64_t count = std::clamp<std::int64_t>(n / grain, 1, threads);
  return {begin, count, n / count, n % count};
}

}  // namespace

struct CpuContext::Impl {
  explicit Impl(int num_threads) : threads(num_threads) {
    workers.reserve(static_cast<std::size_t>(num_threads - 1));
    for (int w = 1; w < num_threads; ++w) workers.emplace_back([this, w] { work(w); });
  }

  ~Impl() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
      stop_requested.store(true, std::memory_order_release);
    }
    wake.notify_all();
    for (std::thread& worker : workers) worker.join();
  }

  void work(int worker) {
    inside_parallel_region = true;
    std::uint64_t seen = 0;
    for (;;) {
      (void)spin_until([&] {
        return published.load(std::memory_order_acquire) != seen ||
               stop_requested.load(std::memory_order_acquire);
      });
      std::unique_lock lock(mutex);
      wake.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping) return;
      seen = generation;
      if (worker >= chunks.count) continue;
      const Chunking job = chunks;
      const auto* job_body = body;
      lock.unlock();
      std::exception_ptr error;
      try {
        (*job_body)(job.chunk_begin(worker), job.chunk_end(worker));
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error) record(worker, std::move(error));
      if (--pending == 0) {
        running.store(0, std::memory_order_release);
        done.notify_one();
      }
    }
  }

  // Keeps the error of the lowest failing chunk so the rethrown exception is deterministic.
  // Called with `mutex` held.
  void record(std::int64_t chunk, std::exception_ptr error) {
    if (!first_error || chunk < first_error_chunk) {
      first_error = std::move(error);
      first_error_chunk = chunk;
    }
  }

  const int threads;
  std::vector<std::thread> workers;
  std::mutex submit;  // one parallel_for at a time

  std::mutex mutex;  // guards everything below
  std::condition_variable wake;
  std::condition_variable done;
  bool stopping = false;
  std::uint64_t generation = 0;
  Chunking chunks;
  const std::function<void(std::int64_t, std::int64_t)>* body = nullptr;
  std::int64_t pending = 0;
  // Copies of generation, stopping and pending != 0 for the spinning waits (written under the
  // mutex, read without it).
  std::atomic<std::uint64_t> published{0};
  std::atomic<bool> stop_requested{false};
  std::atomic<std::int64_t> running{0};
  std::exception_ptr first_error;
  std::int64_t first_error_chunk = 0;
};

CpuContext& CpuContext::instance() {
  static CpuContext context(threads_from_environment());
  return context;
}

CpuContext::CpuContext(int num_threads) {
  TENAX_EXPECTS(num_threads >= 1 && num_threads <= kMaxThreads, UsageError,
                "a CPU context was asked for " + std::to_string(num_threads) + " threads",
                "pass a thread count in [1, " + std::to_string(kMaxThreads) + "]");
  impl_ = std::make_unique<Impl>(num_threads);
}

CpuContext::~CpuContext() = default;

int CpuContext::num_threads() const noexcept { return impl_->threads; }

void CpuContext::parallel_for(std::int64_t begin, std::int64_t end, std::int64_t min_chunk,
                              const std::function<void(std::int64_t, std::int64_t)>& body) {
  if (end <= begin) return;
  const Chunking chunks = split(begin, end, min_chunk, impl_->threads);

  if (inside_parallel_region) {
    // Same split as the parallel path, run in order; the first failing chunk stops the rest.
    for (std::int64_t c = 0; c < chunks.count; ++c)
      body(chunks.chunk_begin(c), chunks.chunk_end(c));
    return;
  }
  if (chunks.count == 1) {
    body(begin, end);  // too small to share; nested calls may still use the idle pool
    return;
  }

  Impl& pool = *impl_;
  std::lock_guard submit_lock(pool.submit);
  {
    std::lock_guard lock(pool.mutex);
    pool.chunks = chunks;
    pool.body = &body;
    pool.pending = chunks.count - 1;
    pool.running.store(pool.pending, std::memory_order_relaxed);
    pool.first_error = nullptr;
    ++pool.generation;
    pool.published.store(pool.generation, std::memory_order_release);
  }
  pool.wake.notify_all();

  std::exception_ptr own_error;
  inside_parallel_region = true;
  try {
    body(chunks.chunk_begin(0), chunks.chunk_end(0));
  } catch (...) {
    own_error = std::current_exception();
  }
  inside_parallel_region = false;

  (void)spin_until([&] { return pool.running.load(std::memory_order_acquire) == 0; });
  std::unique_lock lock(pool.mutex);
  pool.done.wait(lock, [&] { return pool.pending == 0; });
  if (own_error) pool.record(0, std::move(own_error));
  pool.body = nullptr;
  if (pool.first_error) {
    std::exception_ptr error = std::exchange(pool.first_error, nullptr);
    lock.unlock();
    std::rethrow_exception(error);
  }
}

}  // namespace tenax
