// Checkpoint I/O against plain POSIX I/O of the same bytes on the same filesystem.
//
// The state is a StateDict of four f64 tensors of different sizes (1/2, 1/4, 1/8 and 1/8 of the
// total, random values) plus an integer, like a model and its optimizer moments. Arguments:
// total tensor bytes in MiB and, for reads, whether the page cache is dropped before each read
// (1: cold, from the disk; 0: warm, from the page cache).
//  - CheckpointWrite: CheckpointStore::write (HDF5 file, fsync, rename, directory fsync, digest,
//    commit record, read-back verification, retention with keep_last = 1), with the time of
//    each segment of the commit protocol as counters (from CheckpointOptions::on_phase).
//  - PosixWrite: the minimum a crash-consistent write of the same bytes needs: write() of each
//    tensor into one temporary file, fsync, rename over the previous file, directory fsync.
//  - CheckpointLoad: CheckpointStore::load_latest (commit record, file digest, every dataset
//    checksum) into fresh tensors.
//  - PosixRead: open, read() of the whole file into a buffer whose pages are already mapped,
//    close (the loader's tensors come from the warm memory pool, so neither pays page faults).
//  - PosixWriteUnsynced / StateFileWrite / StateFileRead / CheckpointDigest / Xxh64: parts of the
//    above, to see where the time goes (the two writes without fsync; digest is
//    CheckpointStore::verify without the deep check: commit record, file size, XXH64 of the file).
// Throughput counts the tensor bytes (the payload), the same number for every row of a size.
//
// Files go under $TENAX_BENCH_DIR (default /tmp/tenax-bench), removed at exit. Dropping the page
// cache needs root (writes /proc/sys/vm/drop_caches); the cold rows are skipped without it.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tenax/core/state_dict.hpp"
#include "tenax/core/tensor.hpp"
#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/state_file.hpp"

namespace {

namespace fs = std::filesystem;
using tenax::DType;
using tenax::StateDict;
using tenax::Tensor;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kColumns = 1024;  // tensors are [rows, 1024] f64

fs::path bench_dir() {
  static const fs::path dir = [] {
    const char* env = std::getenv("TENAX_BENCH_DIR");
    fs::path path = env != nullptr && *env != '\0' ? fs::path(env) : fs::path("/tmp/tenax-bench");
    path /= "checkpoint-" + std::to_string(::getpid());
    fs::create_directories(path);
    return path;
  }();
  return dir;
}

// The tensors of a state of `mib` MiB and their total size in bytes.
struct Payload {
  StateDict state;
  std::int64_t bytes = 0;
};

const Payload& payload(std::int64_t mib) {
  static std::map<std::int64_t, Payload> cache;
  auto it = cache.find(mib);
  if (it != cache.end()) return it->second;
  Payload p;
  std::mt19937_64 random(42);
  const std::int64_t total = mib * kMiB;
  const std::pair<const char*, std::int64_t> parts[] = {{"model/weights", total / 2},
                                                        {"model/bias", total / 4},
                                                        {"optimizer/m", total / 8},
                                                        {"optimizer/v", total / 8}};
  for (const auto& [name, bytes] : parts) {
    const std::int64_t rows = bytes / (kColumns * 8);
    Tensor tensor = Tensor::empty({rows, kColumns}, DType::f64);
    auto* values = tensor.data_as<double>();
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (std::int64_t i = 0; i < rows * kColumns; ++i) values[i] = uniform(random);
    p.bytes += static_cast<std::int64_t>(tensor.nbytes());
    p.state.set(name, std::move(tensor));
  }
  p.state.set("optimizer/step", std::int64_t{1000});
  return cache.emplace(mib, std::move(p)).first->second;
}

[[noreturn]] void fail(const std::string& what, const fs::path& path) {
  throw std::runtime_error(what + " " + path.string() + ": " + std::strerror(errno));
}

void fsync_or_throw(int fd, const fs::path& path) {
  if (::fsync(fd) != 0) fail("fsync", path);
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("open", dir);
  fsync_or_throw(fd, dir);
  ::close(fd);
}

// Writes the payload's tensors back to back into `final_path`, crash-consistently (or, when
// `durable` is false, only write() into the temporary file and rename it).
void posix_write(const StateDict& state, const fs::path& final_path, bool durable = true) {
  const fs::path temp = final_path.string() + ".tmp";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("open", temp);
  for (const auto& [name, value] : state.entries()) {
    const auto* tensor = std::get_if<Tensor>(&value);
    if (tensor == nullptr) continue;
    const auto* bytes = static_cast<const char*>(tensor->data());
    std::size_t left = tensor->nbytes();
    while (left > 0) {
      const ssize_t n = ::write(fd, bytes, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("write", temp);
      bytes += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  if (durable) fsync_or_throw(fd, temp);
  if (::close(fd) != 0) fail("close", temp);
  if (std::rename(temp.c_str(), final_path.c_str()) != 0) fail("rename", temp);
  if (durable) fsync_dir(final_path.parent_path());
}

// Reads the whole file into `buffer` (resized to the file, pages touched once before the timing
// so that the baseline pays no page faults: the loader's tensors come from the warm pool too).
void posix_read(const fs::path& path, std::vector<char>& buffer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("open", path);
  const auto size = static_cast<std::size_t>(::lseek(fd, 0, SEEK_END));
  buffer.resize(size);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, buffer.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("read", path);
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

// Writes back dirty pages and drops the page cache; false when not permitted.
bool drop_page_cache() {
  ::sync();
  FILE* f = std::fopen("/proc/sys/vm/drop_caches", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("3\n", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// Called between iterations of a read: drops the cache when the row is cold. Skips the row
// (returns false) when that is not permitted.
bool prepare_read(benchmark::State& state, bool cold) {
  if (!cold) return true;
  state.PauseTiming();
  const bool dropped = drop_page_cache();
  state.ResumeTiming();
  if (!dropped) state.SkipWithError("cannot drop the page cache (needs root)");
  return dropped;
}

void set_throughput(benchmark::State& state, std::int64_t bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * bytes);
  state.counters["MiB"] = static_cast<double>(bytes) / static_cast<double>(kMiB);
}

void BM_CheckpointWrite(benchmark::State& state) {
  const Payload& p = payload(state.range(0));
  // Where a write's time goes, from the store's phase callbacks: seconds from the previous
  // mark to each phase (and from the last phase to the end of write(): digest re-read and
  // retention), summed over the timed iterations and reported per iteration.
  using Clock = std::chrono::steady_clock;
  Clock::time_point mark;
  bool timing = false;
  std::map<std::string, double> seconds;
  auto lap = [&](const std::string& name) {
    const Clock::time_point now = Clock::now();
    if (timing) seconds[name] += std::chrono::duration<double>(now - mark).count();
    mark = now;
  };
  tenax::io::CheckpointOptions options;
  options.keep_last = 1;
  options.on_phase = [&](tenax::io::CheckpointPhase phase, std::int64_t) {
    lap(std::string(tenax::io::to_string(phase)));
  };
  tenax::io::CheckpointStore store(bench_dir() / "tenax-write", options);
  std::int64_t step = 0;
  store.write(step++, p.state);  // creates the directories, outside the timing
  timing = true;
  for (auto _ : state) {
    mark = Clock::now();
    store.write(step++, p.state);
    lap("to_end");
  }
  set_throughput(state, p.bytes);
  // Short names: the phase that ends each segment.
  const std::pair<const char*, const char*> names[] = {{"after_data_write", "1_h5write_ms"},
                                                       {"after_data_fsync", "2_fsync_ms"},
                                                       {"after_rename", "3_rename_ms"},
                                                       {"after_dir_fsync", "4_dirsync_ms"},
                                                       {"after_commit_write", "5_digest+commit_ms"},
                                                       {"after_commit_rename", "6_rename_ms"},
                                                       {"after_commit_dir_fsync", "7_dirsync_ms"},
                                                       {"to_end", "8_verify+retain_ms"}};
  for (const auto& [phase, counter] : names) {
    state.counters[counter] =
        seconds[phase] * 1e3 / static_cast<double>(std::max<std::int64_t>(state.iterations(), 1));
  }
}

void BM_PosixWrite(benchmark::State& state) {
  const Payload& p = payload(state.range(0));
  const fs::path dir = bench_dir() / "posix-write";
  fs::create_directories(dir);
  posix_write(p.state, dir / "state.bin");
  for (auto _ : state) posix_write(p.state, dir / "state.bin");
  set_throughput(state, p.bytes);
}

void BM_CheckpointLoad(benchmark::State& state) {
  const Payload& p = payload(state.range(0));
  tenax::io::CheckpointStore store(bench_dir() / ("tenax-read-" + std::to_string(state.range(0))));
  if (store.committed_steps().empty()) store.write(1, p.state);
  for (auto _ : state) {
    if (!prepare_read(state, state.range(1) != 0)) break;
    tenax::io::LoadedCheckpoint loaded = store.load_latest();
    if (!loaded.found) {
      state.SkipWithError("the checkpoint did not load");
      break;
    }
    benchmark::DoNotOptimize(loaded.state.tensor("model/weights").data());
  }
  set_throughput(state, p.bytes);
}

void BM_PosixRead(benchmark::State& state) {
  const Payload& p = payload(state.range(0));
  const fs::path dir = bench_dir() / "posix-read";
  const fs::path path = dir / ("state-" + std::to_string(state.range(0)) + ".bin");
  if (!fs::exists(path)) {
    fs::create_directories(dir);
    posix_write(p.state, path);
  }
  std::vector<char> buffer;
  posix_read(path, buffer);
  for (auto _ : state) {
    if (!prepare_read(state, state.range(1) != 0)) break;
    posix_read(path, buffer);
    benchmark::DoNotOptimize(buffer.data());
  }
  set_throughput(state, p.bytes);
}

void BM_PosixWriteUnsynced(benchmark::State& state) {
  const Payload& p = payload(state.range(0));
  const fs::path path = bench_dir() / "unsynced.bin";
  for (auto _ : state) posix_write(p.state, path, /*durable=*/false);
  set_throughput(state, p.bytes);
}

void BM_StateFileWrite(benchmark::State& state) {
  const Payload& p = payload(state.range(0));
  const fs::path path = bench_dir() / "state-file.h5";
  for (auto _ : state) tenax::io::write_state_file(path, p.state, {});
  set_throughput(state, p.bytes);
}

void BM_StateFileRead(benchmark::State& state) {
  const Payload& p = payload(state.range(0));
  const fs::path path = bench_dir() / "state-file.h5";
  tenax::io::write_state_file(path, p.state, {});
  for (auto _ : state) {
    StateDict loaded = tenax::io::read_state_file(path);
    benchmark::DoNotOptimize(loaded.tensor("model/weights").data());
  }
  set_throughput(state, p.bytes);
}

void BM_CheckpointDigest(benchmark::State& state) {
  const Payload& p = payload(state.range(0));
  tenax::io::CheckpointStore store(bench_dir() / ("tenax-read-" + std::to_string(state.range(0))));
  if (store.committed_steps().empty()) store.write(1, p.state);
  for (auto _ : state) {
    if (store.verify(1, 0, /*deep=*/false)) {
      state.SkipWithError("the checkpoint did not verify");
      break;
    }
  }
  set_throughput(state, p.bytes);
}

void BM_Xxh64(benchmark::State& state) {
  const Payload& p = payload(state.range(0));
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (const auto& [name, value] : p.state.entries()) {
      if (const auto* tensor = std::get_if<Tensor>(&value)) {
        sum ^= tenax::io::xxh64(tensor->data(), tensor->nbytes());
      }
    }
    benchmark::DoNotOptimize(sum);
  }
  set_throughput(state, p.bytes);
}

// Most rows wait on the disk: wall-clock time, milliseconds.
#define TENAX_IO_BENCH(name) BENCHMARK(name)->UseRealTime()->Unit(benchmark::kMillisecond)

// A write takes 0.1-2 s and varies with the disk's other traffic: each repetition averages
// several.
TENAX_IO_BENCH(BM_CheckpointWrite)->Arg(256)->Arg(1024)->MinTime(3.0);
TENAX_IO_BENCH(BM_PosixWrite)->Arg(256)->Arg(1024)->MinTime(3.0);
TENAX_IO_BENCH(BM_CheckpointLoad)->Args({256, 0})->Args({256, 1})->Args({1024, 0})->Args({1024, 1});
TENAX_IO_BENCH(BM_PosixRead)->Args({256, 0})->Args({256, 1})->Args({1024, 0})->Args({1024, 1});
TENAX_IO_BENCH(BM_PosixWriteUnsynced)->Arg(256)->Arg(1024)->MinTime(3.0);
TENAX_IO_BENCH(BM_StateFileWrite)->Arg(256)->Arg(1024)->MinTime(3.0);
TENAX_IO_BENCH(BM_StateFileRead)->Arg(256);
TENAX_IO_BENCH(BM_CheckpointDigest)->Arg(256)->Arg(1024);
TENAX_IO_BENCH(BM_Xxh64)->Arg(256)->Arg(1024);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ignored;
  fs::remove_all(bench_dir(), ignored);
  return 0;
}
