/// SampleOrder: which sample a training run takes at each position of its stream of batches, as a
/// function of the position alone, so that the samples of optimizer step k are the same for any
/// number of ranks, any micro-batch, and after a resume (nothing to save but the step).
/// @file
/// Position p = k B + r is row r of the batch of B samples of optimizer step k. Epoch e = p / N
/// visits every one of the N samples once: in file order, or (shuffled) in a permutation keyed by
/// (seed, e) — a Fisher-Yates shuffle drawing from the counter-based Philox generator, so an
/// epoch's order is the same on every rank and in every process. Each rank asks for the positions
/// of its own rows; no rank needs another's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tenax::train {

/// The order of N samples over the epochs (see the file). Not thread-safe: sample() caches the
/// current epoch's permutation (8 N bytes).
class SampleOrder {
 public:
  /// N = `samples` (>= 1), shuffled per epoch by `seed` or not. UsageError for N < 1 or N > 2^40.
  SampleOrder(std::int64_t samples, std::uint64_t seed, bool shuffle);

  /// The sample at stream position `position` (>= 0; UsageError otherwise).
  [[nodiscard]] std::int64_t sample(std::int64_t position);
  /// The samples of `count` consecutive positions from `first` (a batch: first = k B, count = B).
  [[nodiscard]] std::vector<std::int64_t> samples(std::int64_t first, std::int64_t count);
  /// The samples of those positions in words, for a message about a batch (a bad one skipped):
  /// "samples 640..703 of the data order: rows 17, 933, ..." (every row up to 32 of them).
  [[nodiscard]] std::string describe(std::int64_t first, std::int64_t count);
  /// N.
  [[nodiscard]] std::int64_t size() const noexcept { return n_; }
  /// Whether the epochs are shuffled.
  [[nodiscard]] bool shuffled() const noexcept { return shuffle_; }

 private:
  void permute(std::int64_t epoch);

  std::int64_t n_;
  std::uint64_t seed_;
  bool shuffle_;
  std::int64_t epoch_ = -1;
  std::vector<std::int64_t> order_;
};

}  // namespace tenax::train
