#include "tenax/io/checksum.hpp"

#include <cstring>

#include "durable_file.hpp"

// XXH64 as specified in xxHash's doc/xxhash_spec.md: four 64-bit accumulator lanes over 32-byte
// stripes, then the remainder in 8-, 4- and 1-byte steps, then an avalanche. Reads are
// little-endian; every platform tenax builds on is little-endian, so memcpy loads suffice.
namespace tenax::io {
namespace {

constexpr std::uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t kPrime3 = 0x165667B19E3779F9ULL;
constexpr std::uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
constexpr std::uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;

constexpr std::uint64_t rotl(std::uint64_t x, int r) noexcept { return (x << r) | (x >> (64 - r)); }

std::uint64_t load64(const unsigned char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
std::uint32_t load32(const unsigned char* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

constexpr std::uint64_t round(std::uint64_t acc, std::uint64_t input) noexcept {
  acc += input * kPrime2;
  acc = rotl(acc, 31);
  return acc * kPrime1;
}

constexpr std::uint64_t merge_round(std::uint64_t acc, std::uint64_t lane) noexcept {
  acc ^= round(0, lane);
  return acc * kPrime1 + kPrime4;
}

void consume_stripes(std::uint64_t (&lanes)[4], const unsigned char* p, std::size_t stripes) {
  for (std::size_t s = 0; s < stripes; ++s, p += 32) {
    lanes[0] = round(lanes[0], load64(p));
    lanes[1] = round(lanes[1], load64(p + 8));
    lanes[2] = round(lanes[2], load64(p + 16));
    lanes[3] = round(lanes[3], load64(p + 24));
  }
}

std::uint64_t finish(std::uint64_t acc, const unsigned char* p, std::size_t size) noexcept {
  while (size >= 8) {
    acc ^= round(0, load64(p));
    acc = rotl(acc, 27) * kPrime1 + kPrime4;
    p += 8;
    size -= 8;
  }
  if (size >= 4) {
    acc ^= static_cast<std::uint64_t>(load32(p)) * kPrime1;
    acc = rotl(acc, 23) * kPrime2 + kPrime3;
    p += 4;
    size -= 4;
  }
  while (size > 0) {
    acc ^= static_cast<std::uint64_t>(*p) * kPrime5;
    acc = rotl(acc, 11) * kPrime1;
    ++p;
    --size;
  }
  acc ^= acc >> 33;
  acc *= kPrime2;
  acc ^= acc >> 29;
  acc *= kPrime3;
  acc ^= acc >> 32;
  return acc;
}

std::uint64_t converge(const std::uint64_t (&lanes)[4]) noexcept {
  std::uint64_t acc =
      rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) + rotl(lanes[3], 18);
  for (const std::uint64_t lane : lanes) acc = merge_round(acc, lane);
  return acc;
}

}  // namespace

Xxh64::Xxh64(std::uint64_t seed) noexcept
    : lanes_{seed + kPrime1 + kPrime2, seed + kPrime2, seed, seed - kPrime1}, seed_(seed) {}

void Xxh64::update(const void* data, std::size_t size) noexcept {
  if (size == 0) return;
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += size;
  if (pending_size_ + size < 32) {
    std::memcpy(pending_ + pending_size_, p, size);
    pending_size_ += size;
    return;
  }
  if (pending_size_ > 0) {
    const std::size_t fill = 32 - pending_size_;
    std::memcpy(pending_ + pending_size_, p, fill);
    consume_stripes(lanes_, pending_, 1);
    p += fill;
    size -= fill;
    pending_size_ = 0;
  }
  const std::size_t stripes = size / 32;
  consume_stripes(lanes_, p, stripes);
  p += stripes * 32;
  size -= stripes * 32;
  std::memcpy(pending_, p, size);
  pending_size_ = size;
}

std::uint64_t Xxh64::digest() const noexcept {
  const std::uint64_t acc = total_ >= 32 ? converge(lanes_) : seed_ + kPrime5;
  return finish(acc + total_, pending_, pending_size_);
}

std::uint64_t xxh64(const void* data, std::size_t size, std::uint64_t seed) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t acc;
  if (size >= 32) {
    std::uint64_t lanes[4] = {seed + kPrime1 + kPrime2, seed + kPrime2, seed, seed - kPrime1};
    const std::size_t stripes = size / 32;
    consume_stripes(lanes, p, stripes);
    acc = converge(lanes);
    p += stripes * 32;
  } else {
    acc = seed + kPrime5;
  }
  return finish(acc + size, p, size % 32);
}

std::string to_hex64(std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<std::size_t>(i)] = kDigits[value & 15];
  return out;
}

bool parse_hex64(std::string_view text, std::uint64_t& value) noexcept {
  if (text.size() != 16) return false;
  std::uint64_t v = 0;
  for (const char c : text) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return false;
    }
    v = (v << 4) | static_cast<std::uint64_t>(digit);
  }
  value = v;
  return true;
}

std::uint64_t xxh64_file(const std::filesystem::path& path) {
  return detail::digest_file(path).digest;
}

}  // namespace tenax::io
