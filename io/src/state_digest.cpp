#include "tenax/io/state_digest.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string_view>
#include <variant>

#include "tenax/core/context.hpp"
#include "tenax/core/error.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/runner_entries.hpp"

namespace tenax::io {
namespace {

// The finaliser of MurmurHash3: a bijection of 64-bit words that spreads every input bit.
constexpr std::uint64_t fmix64(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

constexpr std::uint64_t kIndexStep = 0x9e3779b97f4a7c15ULL;

// Sum of the contributions of `count` elements of `Word` at `data` whose global indices are
// `first`, first + 1, ...: fmix64(bits ^ (seed + index * kIndexStep)), a bijection of the bits.
template <class Word>
std::uint64_t sum_run(const unsigned char* data, std::int64_t count, std::uint64_t first,
                      std::uint64_t seed) noexcept {
  std::uint64_t sum = 0;
  std::uint64_t key = seed + first * kIndexStep;
  for (std::int64_t k = 0; k < count; ++k) {
    Word bits;
    std::memcpy(&bits, data + k * static_cast<std::int64_t>(sizeof(Word)), sizeof(Word));
    sum += fmix64(static_cast<std::uint64_t>(bits) ^ key);
    key += kIndexStep;
  }
  return sum;
}

// sum_run over the context's threads: the sum is taken mod 2^64, so the parts add up to the
// same value in any order (a digest of a large model's state took 2 % of a training step on one
// thread while the others waited).
template <class Word>
std::uint64_t sum_run_parallel(const unsigned char* data, std::int64_t count, std::uint64_t first,
                               std::uint64_t seed) {
  constexpr std::int64_t kMinChunk = std::int64_t{1} << 16;
  if (count < 2 * kMinChunk) return sum_run<Word>(data, count, first, seed);
  std::atomic<std::uint64_t> sum{0};
  CpuContext::instance().parallel_for(0, count, kMinChunk, [&](std::int64_t b, std::int64_t e) {
    const std::uint64_t part = sum_run<Word>(data + b * static_cast<std::int64_t>(sizeof(Word)),
                                             e - b, first + static_cast<std::uint64_t>(b), seed);
    sum.fetch_add(part, std::memory_order_relaxed);
  });
  return sum.load(std::memory_order_relaxed);
}

// The element sum of a contiguous CPU tensor holding the part `split` says of a global tensor:
// along each split axis the range [begin, begin + local extent) of its `extent`, every other axis
// whole (no split: the whole tensor). Each element contributes by its global row-major index.
std::uint64_t element_sum(const Tensor& tensor, const std::vector<AxisRange>& split,
                          std::uint64_t seed) {
  const Shape& shape = tensor.shape();
  if (tensor.numel() == 0) return 0;
  const int rank = shape.rank();
  // The global extents and this part's offsets in them; the last split axis `last` (-1: none).
  std::vector<std::uint64_t> offset(static_cast<std::size_t>(rank), 0);
  std::vector<std::uint64_t> global(static_cast<std::size_t>(rank), 0);
  for (int d = 0; d < rank; ++d) global[static_cast<std::size_t>(d)] = shape[d];
  int last = -1;
  for (const AxisRange& r : split) {
    offset[static_cast<std::size_t>(r.axis)] = static_cast<std::uint64_t>(r.begin);
    global[static_cast<std::size_t>(r.axis)] = static_cast<std::uint64_t>(r.extent);
    last = std::max(last, r.axis);
  }
  // Global row-major strides (mod 2^64, as the indices are mixed).
  std::vector<std::uint64_t> stride(static_cast<std::size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) {
    stride[static_cast<std::size_t>(d)] =
        stride[static_cast<std::size_t>(d) + 1] * global[static_cast<std::size_t>(d) + 1];
  }
  // From the last split axis on, the part's elements are contiguous in the global order too: one
  // run per index of the axes before it.
  const int first_run_axis = std::max(last, 0);
  std::int64_t count = 1;
  for (int d = first_run_axis; d < rank; ++d) count *= shape[d];
  std::vector<std::int64_t> index(static_cast<std::size_t>(first_run_axis), 0);
  const std::size_t width = size_of(tensor.dtype());
  const auto* bytes = static_cast<const unsigned char*>(tensor.data());
  const std::int64_t runs = tensor.numel() / count;
  std::uint64_t sum = 0;
  for (std::int64_t o = 0; o < runs; ++o) {
    std::uint64_t first = rank == 0 ? 0
                                    : offset[static_cast<std::size_t>(first_run_axis)] *
                                          stride[static_cast<std::size_t>(first_run_axis)];
    for (std::size_t d = 0; d < index.size(); ++d) {
      first += (static_cast<std::uint64_t>(index[d]) + offset[d]) * stride[d];
    }
    const unsigned char* run = bytes + static_cast<std::size_t>(o * count) * width;
    switch (width) {
      case 1:
        sum += sum_run_parallel<std::uint8_t>(run, count, first, seed);
        break;
      case 2:
        sum += sum_run_parallel<std::uint16_t>(run, count, first, seed);
        break;
      case 4:
        sum += sum_run_parallel<std::uint32_t>(run, count, first, seed);
        break;
      default:
        sum += sum_run_parallel<std::uint64_t>(run, count, first, seed);
        break;
    }
    // The odometer over the axes before the run, in row-major order.
    for (std::size_t d = index.size(); d > 0; --d) {
      if (++index[d - 1] < shape[static_cast<int>(d - 1)]) break;
      index[d - 1] = 0;
    }
  }
  return sum;
}

Tensor on_host(const Tensor& tensor) {
  return tensor.device().is_cpu() ? tensor : tensor.to(Device::cpu());
}

template <class T>
void put(Xxh64& hash, const T& value) {
  hash.update(&value, sizeof(value));
}

void put_text(Xxh64& hash, std::string_view text) {
  put(hash, static_cast<std::uint64_t>(text.size()));
  hash.update(text.data(), text.size());
}

// The global shape of a part: `shape` with each split axis' extent in place of its own.
void put_shape(Xxh64& hash, const Shape& shape, const std::vector<AxisRange>& split) {
  put(hash, static_cast<std::int32_t>(shape.rank()));
  for (int d = 0; d < shape.rank(); ++d) {
    std::int64_t extent = shape[d];
    for (const AxisRange& r : split) {
      if (r.axis == d) extent = r.extent;
    }
    put(hash, extent);
  }
}

// A scalar entry's value as one word (a string's through XXH64).
std::uint64_t scalar_word(const StateDict::Value& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) {
    return static_cast<std::uint64_t>(*integer);
  }
  if (const auto* real = std::get_if<double>(&value)) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, real, sizeof(bits));
    return bits;
  }
  const auto& text = std::get<std::string>(value);
  return xxh64(text.data(), text.size());
}

}  // namespace

DigestParts digest_parts(const StateDict& state, const DigestLayout& layout, int rank) {
  Xxh64 common;
  std::uint64_t partial = 0;
  const std::uint64_t rank_seed = fmix64(static_cast<std::uint64_t>(rank) + 1);
  for (const auto& [name, value] : state.entries()) {
    if (std::find(layout.rank_local.begin(), layout.rank_local.end(), name) !=
        layout.rank_local.end()) {
      continue;
    }
    const auto shard = std::find_if(layout.shards.begin(), layout.shards.end(),
                                    [&](const TensorShard& s) { return s.name == name; });
    const bool sharded = shard != layout.shards.end();
    const bool own = !sharded && layout.per_rank;
    std::uint64_t seed = xxh64(name.data(), name.size());
    if (own) seed ^= rank_seed;
    // The entry's description (and, unless it is sharded or this rank's own, its value) goes to
    // the common part; a sharded entry's global shape is the same on every rank.
    Xxh64 own_about(rank_seed);
    Xxh64& described = own ? own_about : common;
    put_text(described, name);
    put(described, static_cast<std::uint8_t>(value.index()));
    if (const auto* tensor = std::get_if<Tensor>(&value)) {
      put(described, static_cast<std::uint8_t>(tensor->dtype()));
      const Tensor host = on_host(*tensor);
      if (sharded) {
        TENAX_EXPECTS(shard->holds(tensor->shape()), UsageError,
                      "the shard of '" + name + "' does not fit its tensor of shape " +
                          to_string(tensor->shape()),
                      "describe the rank's slab or box of that tensor in "
                      "Workload::state_layout()");
        const std::vector<AxisRange> split = shard->ranges();
        put_shape(described, tensor->shape(), split);
        partial += element_sum(host, split, seed);
        continue;
      }
      put_shape(described, tensor->shape(), {});
      const std::uint64_t sum = element_sum(host, {}, seed);
      if (own) {
        partial += fmix64(own_about.digest() ^ sum);
      } else {
        put(described, sum);
      }
      continue;
    }
    TENAX_EXPECTS(!sharded, UsageError,
                  "the state entry '" + name + "' is sharded but holds no tensor",
                  "shard only tensors in Workload::state_layout()");
    const std::uint64_t word = scalar_word(value);
    if (own) {
      partial += fmix64(own_about.digest() ^ fmix64(word ^ seed));
    } else {
      put(described, word);
    }
  }
  return {common.digest(), partial};
}

std::uint64_t combine_digest(std::uint64_t common, std::uint64_t partial_sum) noexcept {
  const std::uint64_t words[2] = {common, partial_sum};
  return xxh64(words, sizeof(words));
}

DigestVote vote(std::span<const DigestParts> ranks) {
  DigestVote result;
  if (ranks.empty()) return result;
  std::uint64_t partial_sum = 0;
  std::uint64_t majority = ranks[0].common;
  std::size_t majority_count = 0;
  for (const DigestParts& p : ranks) {
    partial_sum += p.partial;
    const auto count = static_cast<std::size_t>(std::count_if(
        ranks.begin(), ranks.end(), [&](const DigestParts& q) { return q.common == p.common; }));
    if (count > majority_count) {
      majority = p.common;
      majority_count = count;
    }
  }
  result.digest = combine_digest(majority, partial_sum);
  if (majority_count == ranks.size()) return result;
  const bool strict = 2 * majority_count > ranks.size();
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!strict || ranks[r].common != majority) result.suspects.push_back(static_cast<int>(r));
  }
  return result;
}

namespace {

IoError damaged(std::string_view where, const std::string& what) {
  return IoError(std::string(where) + ": " + what,
                 "the checkpoint's runner entries are damaged; `tenax ckpt verify` names the file");
}

template <class T>
const T& entry_of(const StateDict& state, std::string_view name, std::string_view where,
                  const char* what) {
  const auto* value = std::get_if<T>(&state.at(name));
  if (value == nullptr) throw damaged(where, std::string(what) + " ('" + std::string(name) + "')");
  return *value;
}

}  // namespace

std::optional<RecordedDigest> recorded_digest(const StateDict& rank_file, int rank,
                                              std::string_view where) {
  if (!rank_file.contains(runner_entry::state_digest)) return std::nullopt;
  RecordedDigest result;
  const auto& text = entry_of<std::string>(rank_file, runner_entry::state_digest, where,
                                           "the recorded state digest is not text");
  if (!parse_hex64(text, result.digest)) {
    throw damaged(where, "the recorded state digest '" + text + "' is not 16 hex digits");
  }
  if (rank_file.contains(runner_entry::shards)) {
    const ShardTable table =
        parse_shard_table(entry_of<std::string>(rank_file, runner_entry::shards, where,
                                                "the shard table is not text"),
                          where);
    if (rank < 0 || static_cast<std::size_t>(rank) >= table.ranks.size()) {
      throw damaged(where, "the shard table lists " + std::to_string(table.ranks.size()) +
                               " ranks, not rank " + std::to_string(rank));
    }
    constexpr std::string_view kPrefix = "workload/";
    for (TensorShard shard : table.ranks[static_cast<std::size_t>(rank)]) {
      if (shard.name.starts_with(kPrefix)) shard.name.erase(0, kPrefix.size());
      result.layout.shards.push_back(std::move(shard));
    }
  }
  if (rank_file.contains(runner_entry::digest_rank_local)) {
    std::string_view rest =
        entry_of<std::string>(rank_file, runner_entry::digest_rank_local, where,
                              "the list of entries left out of the digest is not text");
    while (!rest.empty()) {
      const std::size_t end = rest.find('\n');
      result.layout.rank_local.emplace_back(rest.substr(0, end));
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    }
  }
  if (rank_file.contains(runner_entry::digest_per_rank)) {
    result.layout.per_rank =
        entry_of<std::int64_t>(rank_file, runner_entry::digest_per_rank, where,
                               "the digest's per-rank flag is not an integer") != 0;
  }
  return result;
}

std::optional<CheckpointDigest> checkpoint_digest(std::span<const StateDict> ranks,
                                                  std::string_view where) {
  if (ranks.empty()) return std::nullopt;
  const std::optional<RecordedDigest> first = recorded_digest(ranks[0], 0, where);
  if (!first) return std::nullopt;
  std::vector<DigestParts> parts;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const int rank = static_cast<int>(r);
    const std::optional<RecordedDigest> recorded = recorded_digest(ranks[r], rank, where);
    if (!recorded) throw damaged(where, "rank " + std::to_string(r) + " records no digest");
    try {
      parts.push_back(digest_parts(ranks[r].scope("workload"), recorded->layout, rank));
    } catch (const UsageError& e) {
      throw damaged(where,
                    "rank " + std::to_string(r) + "'s state does not fit its shards: " + e.cause());
    }
  }
  DigestVote voted = vote(parts);
  return CheckpointDigest{first->digest, voted.digest, std::move(voted.suspects)};
}

}  // namespace tenax::io
