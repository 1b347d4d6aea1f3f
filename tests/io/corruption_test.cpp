// The corruption campaign: random damage to a valid state file is either detected (IoError) or
// lands in bytes the reader never uses, in which case the loaded state is bitwise identical to
// the original. Nothing else (a wrong value, a crash, another exception) may happen.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "io/io_test_helpers.hpp"
#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/state_file.hpp"

// HDF5 1.10 leaks a few hundred bytes inside its metadata cache when it rejects an object
// header whose checksum fails (the allocation and the leak are both within libhdf5). That is
// bounded per rejected file and not tenax's to fix, so LeakSanitizer ignores leaks allocated in
// libhdf5 in this test; leaks from tenax's own code are still reported.
extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5\n"; }

namespace tenax::io {
namespace {

using testing::bitwise_equal;
using testing::sample_state;
using testing::ScratchDir;

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

TEST(Corruption, RandomDamageIsDetectedOrHarmless) {
  ScratchDir dir;
  const StateDict original = sample_state(3);
  const std::filesystem::path good = dir.path() / "good.h5";
  write_state_file(good, original, {.step = 3, .config = R"({"seed": 3})"});
  const std::string pristine = read_bytes(good);
  const std::filesystem::path path = dir.path() / "bad.h5";

  std::mt19937_64 rng(20240531);
  constexpr int kTrials = 1500;
  int detected = 0;
  int identical = 0;
  int kinds[3] = {};
  ReadOptions limits;
  limits.max_bytes = std::uint64_t{1} << 20;  // far above the sample, far below the machine
  for (int trial = 0; trial < kTrials; ++trial) {
    std::string bytes = pristine;
    const int kind = static_cast<int>(rng() % 3);
    ++kinds[kind];
    std::string what;
    if (kind == 0) {  // 1 to 4 bit flips at random offsets
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < flips; ++i) {
        const std::size_t at = rng() % bytes.size();
        bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
        what += " flip@" + std::to_string(at);
      }
    } else if (kind == 1) {  // truncation at a random offset
      bytes.resize(rng() % bytes.size());
      what = " truncate@" + std::to_string(bytes.size());
    } else {  // a zeroed 512-byte block at a random offset
      const std::size_t at = rng() % bytes.size();
      for (std::size_t i = at; i < std::min(bytes.size(), at + 512); ++i) bytes[i] = 0;
      what = " zero@" + std::to_string(at);
    }
    write_bytes(path, bytes);
    try {
      FileMetadata meta;
      const StateDict loaded = read_state_file(path, &meta, limits);
      ASSERT_TRUE(bitwise_equal(loaded, original)) << "trial " << trial << what;
      ASSERT_EQ(meta.step, 3) << "trial " << trial << what;
      ASSERT_EQ(meta.config, R"({"seed": 3})") << "trial " << trial << what;
      ++identical;
    } catch (const IoError& e) {
      ASSERT_NE(std::string(e.what()).find("bad.h5"), std::string::npos) << e.what();
      ++detected;
    }
    // Any other exception type escapes and fails the test; a crash ends it.
  }
  EXPECT_EQ(detected + identical, kTrials);
  EXPECT_GT(detected, kTrials / 2);
  std::printf("%d trials (%d flips, %d truncations, %d zeroed blocks): %d detected, %d harmless\n",
              kTrials, kinds[0], kinds[1], kinds[2], detected, identical);
}

TEST(Corruption, CheckpointStoreNeverLoadsADamagedFile) {
  ScratchDir dir;
  FaultPlan plan;
  CheckpointOptions options;
  options.fault_plan = &plan;
  CheckpointStore store(dir.path(), options);
  store.write(1, sample_state(1), {});
  store.write(2, sample_state(2), {});
  const std::filesystem::path file = store.step_dir(2) / "rank-0.h5";
  const std::string pristine = read_bytes(file);
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes = pristine;
    const std::size_t at = rng() % bytes.size();
    bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
    write_bytes(file, bytes);
    // The whole-file digest catches every change, even in bytes HDF5 never reads.
    const LoadedCheckpoint loaded = store.load_latest();
    ASSERT_EQ(loaded.step, 1) << "flip at " << at;
    ASSERT_EQ(loaded.skipped.size(), 1u);
    ASSERT_NE(loaded.skipped[0].reason.find("digest mismatch"), std::string::npos);
    ASSERT_TRUE(bitwise_equal(loaded.state, sample_state(1)));
  }
}

}  // namespace
}  // namespace tenax::io
