#include "tenax/io/checksum.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "tenax/core/error.hpp"

namespace tenax::io {
namespace {

// The buffer of xxHash's own sanity check (xsum_sanity_check.c): byte i is the top byte of
// PRIME32 * PRIME64^i.
std::vector<unsigned char> sanity_buffer(std::size_t size) {
  std::vector<unsigned char> buffer(size);
  std::uint64_t generator = 2654435761u;
  for (auto& byte : buffer) {
    byte = static_cast<unsigned char>(generator >> 56);
    generator *= 11400714785074694797ull;
  }
  return buffer;
}

struct Vector {
  std::size_t length;
  std::uint64_t seed;
  std::uint64_t expected;
};

// The published XXH64 test vectors.
constexpr Vector kVectors[] = {
    {0, 0, 0xEF46DB3751D8E999ull},
    {0, 2654435761u, 0xAC75FDA2929B17EFull},
    {1, 0, 0xE934A84ADB052768ull},
    {1, 2654435761u, 0x5014607643A9B4C3ull},
    {4, 0, 0x9136A0DCA57457EEull},
    {14, 0, 0x8282DCC4994E35C8ull},
    {14, 2654435761u, 0xC3BD6BF63DEB6DF0ull},
    {222, 0, 0xB641AE8CB691C174ull},
    {222, 2654435761u, 0x20CB8AB7AE10C14Aull},
};

TEST(Xxh64, MatchesThePublishedVectors) {
  const auto buffer = sanity_buffer(222);
  for (const Vector& v : kVectors) {
    EXPECT_EQ(xxh64(buffer.data(), v.length, v.seed), v.expected)
        << "length " << v.length << " seed " << v.seed;
  }
}

TEST(Xxh64, IncrementalEqualsOneShotForEverySplit) {
  const auto buffer = sanity_buffer(300);
  for (const std::size_t length : {0u, 1u, 31u, 32u, 33u, 64u, 100u, 222u, 300u}) {
    const std::uint64_t expected = xxh64(buffer.data(), length, 7);
    for (std::size_t piece = 1; piece <= 70; piece += 3) {
      Xxh64 hash(7);
      for (std::size_t at = 0; at < length; at += piece) {
        hash.update(buffer.data() + at, std::min(piece, length - at));
      }
      EXPECT_EQ(hash.digest(), expected) << "length " << length << " piece " << piece;
    }
  }
  Xxh64 hash;
  hash.update(sanity_buffer(222).data(), 222);
  EXPECT_EQ(hash.digest(), 0xB641AE8CB691C174ull);
}

TEST(Xxh64, HexRoundTripsAndRejectsJunk) {
  EXPECT_EQ(to_hex64(0xEF46DB3751D8E999ull), "ef46db3751d8e999");
  EXPECT_EQ(to_hex64(1), "0000000000000001");
  std::uint64_t value = 0;
  EXPECT_TRUE(parse_hex64("ef46db3751d8e999", value));
  EXPECT_EQ(value, 0xEF46DB3751D8E999ull);
  EXPECT_FALSE(parse_hex64("ef46db3751d8e99", value));
  EXPECT_FALSE(parse_hex64("EF46DB3751D8E999", value));
  EXPECT_FALSE(parse_hex64("ef46db3751d8e99g", value));
}

TEST(Xxh64, OfAFileIsOfItsBytesAndAMissingFileIsAnIoError) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tenax-xxh64-file-" + std::to_string(::getpid()));
  const std::vector<unsigned char> bytes = sanity_buffer(100000);
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  EXPECT_EQ(xxh64_file(file), xxh64(bytes.data(), bytes.size()));
  std::filesystem::remove(file);
  EXPECT_THROW((void)xxh64_file(file), IoError);
}

}  // namespace
}  // namespace tenax::io
