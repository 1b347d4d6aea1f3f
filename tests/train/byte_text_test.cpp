// ByteText: the split at floor(len F) from the end, windows of T + 1 bytes from either part as
// i64 tokens, the sequential formula (position T) mod (size - T - 1) without overflow, shuffled
// windows through SampleOrder, and the refusals.
#include "tenax/train/byte_text.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "tenax/core/error.hpp"
#include "tenax/train/sample_order.hpp"

namespace tenax::train {
namespace {

namespace fs = std::filesystem;

class ByteTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tenax-byte-text-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A file of `n` bytes, byte i = (7 i + 3) mod 256 (every value, none zero-terminated).
  fs::path text(const std::string& name, std::int64_t n) {
    const fs::path path = dir_ / name;
    std::ofstream out(path, std::ios::binary);
    for (std::int64_t i = 0; i < n; ++i) out.put(static_cast<char>((7 * i + 3) % 256));
    return path;
  }
  static std::int64_t byte(std::int64_t i) { return (7 * i + 3) % 256; }

  template <class Error = UsageError, class Call>
  static void refused(Call call, const std::string& words) {
    try {
      call();
      ADD_FAILURE() << "accepted: " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  }

  fs::path dir_;
};

TEST_F(ByteTextTest, TheTailIsHeldOutAndWindowsComeFromTheirPart) {
  const ByteText data(text("a.txt", 1000), 16, 0.1);
  EXPECT_EQ(data.context(), 16);
  EXPECT_EQ(data.size(TextPart::training), 900);
  EXPECT_EQ(data.size(TextPart::validation), 100);
  EXPECT_EQ(data.validation_begin(), 900);
  EXPECT_EQ(data.windows(TextPart::training), 884);
  EXPECT_EQ(data.windows(TextPart::validation), 84);
  const Tensor tokens = data.batch(TextPart::training, {0, 883, 5});
  ASSERT_EQ(tokens.shape(), (Shape{3, 17}));
  ASSERT_EQ(tokens.dtype(), DType::i64);
  for (std::int64_t t = 0; t < 17; ++t) {
    EXPECT_EQ(tokens.data_as<std::int64_t>()[t], byte(t));
    EXPECT_EQ(tokens.data_as<std::int64_t>()[17 + t], byte(883 + t));  // ends at byte 899
    EXPECT_EQ(tokens.data_as<std::int64_t>()[34 + t], byte(5 + t));
  }
  const Tensor held = data.batch(TextPart::validation, {83});
  EXPECT_EQ(held.data_as<std::int64_t>()[16], byte(999));
  EXPECT_EQ(held.data_as<std::int64_t>()[0], byte(983));
  // floor: 0.1 of 1005 bytes holds out 100.
  EXPECT_EQ(ByteText(text("b.txt", 1005), 16, 0.1).size(TextPart::validation), 100);
  // Nothing held out.
  const ByteText all(text("c.txt", 40), 8, 0.0);
  EXPECT_EQ(all.size(TextPart::validation), 0);
  EXPECT_EQ(all.windows(TextPart::validation), 0);
}

TEST_F(ByteTextTest, SequentialOffsetsFollowTheFormulaWithoutOverflow) {
  const ByteText data(text("a.txt", 1000), 16, 0.1);  // training 900: modulus 900 - 17 = 883
  for (const std::int64_t p : {0, 1, 55, 56, 1000, 123456}) {
    EXPECT_EQ(data.sequential_offset(p), p * 16 % 883) << "position " << p;
  }
  // p T overflows 64 bits; the offset is still (p T) mod 883.
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  const auto exact = static_cast<std::int64_t>(static_cast<unsigned __int128>(huge) * 16 % 883);
  EXPECT_EQ(data.sequential_offset(huge), exact);
  // Every sequential window is a training window.
  for (std::int64_t p = 0; p < 2000; ++p) {
    ASSERT_LT(data.sequential_offset(p), data.windows(TextPart::training));
  }
}

TEST_F(ByteTextTest, ShuffledWindowsThroughASampleOrderCoverTheTrainingPart) {
  const ByteText data(text("a.txt", 300), 8, 0.0);
  SampleOrder order(data.windows(TextPart::training), 5, true);
  const std::vector<std::int64_t> offsets = order.samples(0, 292);  // one epoch
  const Tensor tokens = data.batch(TextPart::training, offsets);
  std::vector<int> starts(292, 0);
  for (std::int64_t r = 0; r < 292; ++r) {
    const std::int64_t offset = offsets[static_cast<std::size_t>(r)];
    ++starts[static_cast<std::size_t>(offset)];
    for (std::int64_t t = 0; t < 9; ++t) {
      ASSERT_EQ(tokens.data_as<std::int64_t>()[r * 9 + t], byte(offset + t)) << "row " << r;
    }
  }
  for (const int s : starts) EXPECT_EQ(s, 1);
}

TEST_F(ByteTextTest, BadSettingsFilesAndOffsetsAreRefusedNamingThem) {
  const fs::path small = text("small.txt", 20);
  refused([&] { ByteText(small, 0); }, "a context of 0 bytes");
  refused([&] { ByteText(small, 4, 1.0); }, "a validation fraction of 1");
  refused([&] { ByteText(small, 4, -0.5); }, "a validation fraction of -0.5");
  refused([&] { ByteText(small, 4, std::nan("")); }, "a validation fraction of nan");
  refused([&] { ByteText(small, 19, 0.0); },
          "holds 20 bytes, 20 for training, with a context of 19");
  refused([&] { ByteText(small, 4, 0.2); },
          "validation part (its last 4 bytes) is shorter than one "
          "window of 5");
  refused([&] { ByteText(text("empty.txt", 0), 1, 0.0); }, "holds 0 bytes");
  refused<IoError>([&] { ByteText(dir_ / "absent.txt", 4); }, "absent.txt");
  const ByteText data(text("a.txt", 100), 8, 0.0);
  refused([&] { (void)data.batch(TextPart::training, {92}); },
          "window offset 92 of the training "
          "part, which has 92 windows");
  refused([&] { (void)data.batch(TextPart::validation, {0}); }, "which has 0 windows");
  refused([&] { (void)data.sequential_offset(-1); }, "sequential stream position -1");
}

}  // namespace
}  // namespace tenax::train
