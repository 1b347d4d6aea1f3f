// SampleOrder: an epoch's permutation, drawn with Philox keyed by the seed and counted by
// (index, epoch), so it is a function of (seed, epoch) alone.
#include "tenax/train/sample_order.hpp"

#include <algorithm>

#include <limits>
#include <string>
#include <utility>

#include "tenax/core/error.hpp"
#include "tenax/core/philox.hpp"

namespace tenax::train {
namespace {

// More samples than this would take a permutation of 8 TiB.
constexpr std::int64_t kMaxSamples = std::int64_t{1} << 40;

}  // namespace

SampleOrder::SampleOrder(std::int64_t samples, std::uint64_t seed, bool shuffle)
    : n_(samples), seed_(seed), shuffle_(shuffle) {
  TENAX_EXPECTS(samples >= 1 && samples <= kMaxSamples, UsageError,
                "a sample order over " + std::to_string(samples) + " samples",
                "give a data set of 1 to 2^40 samples");
}

std::int64_t SampleOrder::sample(std::int64_t position) {
  TENAX_EXPECTS(position >= 0, UsageError,
                "the sample at stream position " + std::to_string(position),
                "ask for positions >= 0 (step k, row r of a batch of B: k B + r)");
  const std::int64_t epoch = position / n_;
  const std::int64_t index = position % n_;
  if (!shuffle_) return index;
  if (epoch != epoch_) permute(epoch);
  return order_[static_cast<std::size_t>(index)];
}

std::vector<std::int64_t> SampleOrder::samples(std::int64_t first, std::int64_t count) {
  TENAX_EXPECTS(
      count >= 0 && first >= 0 && first <= std::numeric_limits<std::int64_t>::max() - count,
      UsageError, std::to_string(count) + " samples from stream position " + std::to_string(first),
      "ask for a count >= 0 from a position >= 0");
  std::vector<std::int64_t> out(static_cast<std::size_t>(count));
  for (std::int64_t r = 0; r < count; ++r) out[static_cast<std::size_t>(r)] = sample(first + r);
  return out;
}

std::string SampleOrder::describe(std::int64_t first, std::int64_t count) {
  const std::vector<std::int64_t> rows = samples(first, std::min<std::int64_t>(count, 32));
  std::string text = "samples " + std::to_string(first) + ".." + std::to_string(first + count - 1) +
                     " of the data order: rows";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    text += (r == 0 ? " " : ", ") + std::to_string(rows[r]);
  }
  return static_cast<std::int64_t>(rows.size()) < count ? text + ", ..." : text;
}

void SampleOrder::permute(std::int64_t epoch) {
  order_.resize(static_cast<std::size_t>(n_));
  for (std::int64_t i = 0; i < n_; ++i) order_[static_cast<std::size_t>(i)] = i;
  const Uint32x2 key{static_cast<std::uint32_t>(seed_ ^ 0x5eed5eedu),
                     static_cast<std::uint32_t>(seed_ >> 32)};
  for (std::int64_t i = n_ - 1; i > 0; --i) {
    const Uint32x4 counter{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32),
                           static_cast<std::uint32_t>(epoch), 0x7a1e7a1eu};
    const Uint32x4 r = philox4x32_10(counter, key);
    const std::uint64_t bits = (std::uint64_t{r.v[0]} << 32) | r.v[1];
    const auto j = static_cast<std::int64_t>(bits % static_cast<std::uint64_t>(i + 1));
    std::swap(order_[static_cast<std::size_t>(i)], order_[static_cast<std::size_t>(j)]);
  }
  epoch_ = epoch;
}

}  // namespace tenax::train
