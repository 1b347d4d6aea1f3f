// STREAM triad a[i] = b[i] + s * c[i] over OpenMP threads: the bandwidth ceiling that
// bench/peers/run.py divides every row's modelled bytes by. Measured in the same run as the
// solvers so that the fraction compares like with like on a shared, noisy machine.
//
// Counting follows STREAM: 24 bytes per element (read b, read c, write a). With ordinary stores
// the CPU also reads each line of a before writing it (write-allocate), so the memory traffic
// is 32 bytes per element; the solver bytes models do not count that read either. A second
// loop with non-temporal stores, which skip the write-allocate, is timed and reported for
// reference (same 24-byte counting); it is not the denominator, because the solvers' kernels
// use ordinary stores.
//
// Usage: peer_stream_triad [--elements N] [--reps R] [--threads T]
// Prints one JSON object on the last line of stdout.
#include <omp.h>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "peer_stream_triad: %s\nusage: peer_stream_triad [--elements N] [--reps R] "
               "[--threads T]\n",
               why);
  std::exit(2);
}

long long parse_count(const char* flag, const char* text) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0) {
    usage((std::string(flag) + " needs a positive integer, got '" + text + "'").c_str());
  }
  return value;
}

struct Timing {
  double best_s = 0.0;
  double median_s = 0.0;
};

// The first repetition is a warm-up (frequency ramp, TLB); best and median use the rest.
Timing summarise(std::vector<double> seconds) {
  if (seconds.size() > 1) seconds.erase(seconds.begin());
  std::sort(seconds.begin(), seconds.end());
  const std::size_t m = seconds.size() / 2;
  return {seconds.front(),
          seconds.size() % 2 == 1 ? seconds[m] : 0.5 * (seconds[m - 1] + seconds[m])};
}

template <class Body>
Timing time_reps(int reps, Body body) {
  std::vector<double> seconds;
  seconds.reserve(reps);
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return summarise(std::move(seconds));
}

}  // namespace

int main(int argc, char** argv) {
  // 2^25 doubles = 256 MiB per array, 8x the 32 MiB L3 of the development VM: every repetition
  // streams from memory, none from cache.
  long long elements = 1LL << 25;
  int reps = 20;
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
    if (arg == "--elements") {
      elements = parse_count("--elements", argv[++i]);
    } else if (arg == "--reps") {
      reps = static_cast<int>(parse_count("--reps", argv[++i]));
    } else if (arg == "--threads") {
      threads = static_cast<int>(parse_count("--threads", argv[++i]));
    } else {
      usage(("unknown argument " + arg).c_str());
    }
  }
  if (threads > 0) omp_set_num_threads(threads);
  const int used_threads = omp_get_max_threads();

  // 64-byte alignment for the non-temporal stores. aligned_alloc leaves the pages untouched;
  // the parallel first touch below maps each page on the thread that will stream it, as
  // STREAM does.
  const auto n = static_cast<std::int64_t>(elements);
  const std::size_t bytes_each = (static_cast<std::size_t>(n) * sizeof(double) + 63) / 64 * 64;
  auto* a = static_cast<double*>(std::aligned_alloc(64, bytes_each));
  auto* b = static_cast<double*>(std::aligned_alloc(64, bytes_each));
  auto* c = static_cast<double*>(std::aligned_alloc(64, bytes_each));
  if (a == nullptr || b == nullptr || c == nullptr) usage("out of memory for the arrays");
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }

  const double s = 3.0;
  const Timing plain = time_reps(reps, [&] {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
  });

  // A check that the loop ran (and was not discarded): every a[i] must be 1 + 3 * 2.
  double checksum = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : checksum)
  for (std::int64_t i = 0; i < n; ++i) checksum += a[i];
  const bool ok = checksum == 7.0 * static_cast<double>(n);

  Timing streaming{};
  bool have_streaming = false;
#if defined(__AVX__)
  if (n % 4 == 0) {
    have_streaming = true;
    const __m256d vs = _mm256_set1_pd(s);
    streaming = time_reps(reps, [&] {
#pragma omp parallel for schedule(static)
      for (std::int64_t i = 0; i < n; i += 4) {
        const __m256d v =
            _mm256_add_pd(_mm256_load_pd(b + i), _mm256_mul_pd(vs, _mm256_load_pd(c + i)));
        _mm256_stream_pd(a + i, v);
      }
      _mm_sfence();
    });
  }
#endif

  const double bytes = 24.0 * static_cast<double>(n);
  auto gbps = [&](double seconds) { return seconds > 0.0 ? bytes / seconds * 1e-9 : 0.0; };
  std::printf("stream triad: %lld elements x 3 arrays (%.0f MiB each), %d threads, %d reps\n",
              elements, 8.0 * static_cast<double>(n) / (1 << 20), used_threads, reps);
  std::printf(
      "{\"code\": \"stream_triad\", \"elements\": %lld, \"threads\": %d, \"reps\": %d, "
      "\"bytes_per_rep\": %.0f, \"best_s\": %.6e, \"median_s\": %.6e, \"best_gbps\": %.3f, "
      "\"median_gbps\": %.3f, \"nontemporal_best_gbps\": %s, "
      "\"nontemporal_median_gbps\": %s, \"check\": %s}\n",
      elements, used_threads, reps, bytes, plain.best_s, plain.median_s, gbps(plain.best_s),
      gbps(plain.median_s),
      have_streaming ? std::to_string(gbps(streaming.best_s)).c_str() : "null",
      have_streaming ? std::to_string(gbps(streaming.median_s)).c_str() : "null",
      ok ? "true" : "false");
  std::free(a);
  std::free(b);
  std::free(c);
  return ok ? 0 : 1;
}
