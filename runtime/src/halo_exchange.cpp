// HaloExchange (halo_exchange.hpp): who needs which entries, found once; the entries, per call.
#include "tenax/runtime/halo_exchange.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <utility>

#include "tenax/core/error.hpp"

namespace tenax::runtime {
namespace {

// Message tags of the setup (the indices a rank needs) and of every exchange (the entries).
constexpr int kGhostIndexTag = 7101;
constexpr int kGhostValueTag = 7102;

int owner_of(const std::vector<kernels::ShardRange>& ranges, std::int64_t index) {
  // The last rank whose range starts at or before the index (empty ranges never own one).
  int owner = 0;
  for (int r = 0; r < static_cast<int>(ranges.size()); ++r) {
    const kernels::ShardRange& range = ranges[static_cast<std::size_t>(r)];
    if (range.count > 0 && range.first <= index) owner = r;
  }
  return owner;
}

template <class T>
void gather_entries(const T* from, const std::vector<std::int64_t>& indices, T* to) {
  for (std::size_t k = 0; k < indices.size(); ++k) to[k] = from[indices[k]];
}

}  // namespace

std::vector<kernels::ShardRange> gather_ranges(Communicator& comm, const kernels::ShardRange& mine,
                                               const char* who) {
  std::vector<kernels::ShardRange> ranges(static_cast<std::size_t>(comm.size()));
  comm.all_gather_bytes(std::as_bytes(std::span(&mine, 1)),
                        std::as_writable_bytes(std::span(ranges)));
  std::int64_t next = 0;
  for (int r = 0; r < comm.size(); ++r) {
    const kernels::ShardRange& range = ranges[static_cast<std::size_t>(r)];
    TENAX_EXPECTS(range.total == mine.total && range.first == next && range.count >= 0, UsageError,
                  std::string(who) + ": rank " + std::to_string(r) + " holds entries [" +
                      std::to_string(range.first) + ", +" + std::to_string(range.count) + ") of " +
                      std::to_string(range.total) + " where entries from " + std::to_string(next) +
                      " of " + std::to_string(mine.total) + " were expected",
                  "give the ranks consecutive ranges of the same vector, in rank order "
                  "(kernels::block_aligned_range)");
    next = range.first + range.count;
  }
  TENAX_EXPECTS(next == mine.total, UsageError,
                std::string(who) + ": the ranks hold " + std::to_string(next) + " of " +
                    std::to_string(mine.total) + " entries",
                "give the ranks ranges that cover every entry (kernels::block_aligned_range)");
  return ranges;
}

HaloExchange::HaloExchange(Communicator& comm, const kernels::ShardRange& range,
                           std::vector<std::int64_t> ghosts, DType dtype, const char* who)
    : comm_(&comm), range_(range), dtype_(dtype), ghosts_(std::move(ghosts)) {
  TENAX_EXPECTS(dtype == DType::f64 || dtype == DType::f32, UsageError,
                std::string(who) + ": a halo exchange of " + std::string(to_string(dtype)),
                "exchange f64 or f32 vectors");
  const std::vector<kernels::ShardRange> ranges = gather_ranges(comm, range, who);
  const int size = comm.size();
  const int me = comm.rank();
  // Each rank checks its own ghosts; the ranks learn together whether all are valid, so that a
  // rank with a bad list does not leave its peers waiting for it in the collectives below.
  std::string bad;
  for (std::size_t k = 0; k < ghosts_.size() && bad.empty(); ++k) {
    const std::int64_t g = ghosts_[k];
    if (!(g >= 0 && g < range.total && (g < range.first || g >= range.first + range.count) &&
          (k == 0 || g > ghosts_[k - 1]))) {
      bad = std::string(who) + ": ghost " + std::to_string(g) + " (entry " + std::to_string(k) +
            ") of rank " + std::to_string(me) + " holding [" + std::to_string(range.first) + ", +" +
            std::to_string(range.count) + ") of " + std::to_string(range.total);
    }
  }
  std::vector<std::byte> valid(static_cast<std::size_t>(size));
  const std::byte mine{static_cast<unsigned char>(bad.empty() ? 1 : 0)};
  comm.all_gather_bytes(std::span<const std::byte>(&mine, 1), valid);
  constexpr const char* kGhostFix =
      "name ghosts outside the rank's own range, ascending, without repeats";
  TENAX_EXPECTS(bad.empty(), UsageError, bad, kGhostFix);
  for (int r = 0; r < size; ++r) {
    TENAX_EXPECTS(valid[static_cast<std::size_t>(r)] == std::byte{1}, UsageError,
                  std::string(who) + ": rank " + std::to_string(r) +
                      " named invalid ghosts (its error says which); this rank stops with it",
                  kGhostFix);
  }

  below_ = std::lower_bound(ghosts_.begin(), ghosts_.end(), range.first) - ghosts_.begin();

  // Who needs how many of whose entries: counts[q * size + p] = ghosts rank q takes from p.
  std::vector<std::int64_t> needs(static_cast<std::size_t>(size), 0);
  for (const std::int64_t g : ghosts_) ++needs[static_cast<std::size_t>(owner_of(ranges, g))];
  std::vector<std::int64_t> counts(static_cast<std::size_t>(size) * static_cast<std::size_t>(size));
  comm.all_gather_bytes(std::as_bytes(std::span(needs)), std::as_writable_bytes(std::span(counts)));

  // Sorted ghosts are grouped by owner in rank order.
  std::int64_t offset = 0;
  for (int p = 0; p < size; ++p) {
    const std::int64_t count = needs[static_cast<std::size_t>(p)];
    if (count == 0) continue;
    Tensor wanted = Tensor::empty({count}, DType::i64);
    std::copy(ghosts_.begin() + offset, ghosts_.begin() + offset + count,
              wanted.data_as<std::int64_t>());
    comm.send(wanted, p, kGhostIndexTag);
    receives_.push_back(
        Neighbour{.rank = p, .indices = {}, .offset = offset, .count = count, .buffer = {}});
    offset += count;
  }
  for (int q = 0; q < size; ++q) {
    const std::int64_t count = counts[static_cast<std::size_t>(q) * static_cast<std::size_t>(size) +
                                      static_cast<std::size_t>(me)];
    if (q == me || count == 0) continue;
    Tensor wanted = Tensor::empty({count}, DType::i64);
    comm.receive(wanted, q, kGhostIndexTag);
    Neighbour n{.rank = q, .indices = {}, .offset = 0, .count = count, .buffer = {}};
    n.indices.resize(static_cast<std::size_t>(count));
    for (std::int64_t k = 0; k < count; ++k) {
      const std::int64_t g = wanted.data_as<std::int64_t>()[k];
      TENAX_EXPECTS(g >= range.first && g < range.first + range.count, UsageError,
                    std::string(who) + ": rank " + std::to_string(q) + " asks rank " +
                        std::to_string(me) + " for entry " + std::to_string(g) +
                        ", which it does not hold",
                    "every rank must describe the same vector and operator");
      n.indices[static_cast<std::size_t>(k)] = g - range.first;
    }
    n.buffer = Tensor::empty({count}, dtype);
    sends_.push_back(std::move(n));
  }
}

void HaloExchange::exchange(const Tensor& x, const Tensor& ghosts) const {
  TENAX_EXPECTS(ghosts.numel() == ghost_count(), UsageError,
                "halo exchange: ghosts " + ghosts.describe() + " for " +
                    std::to_string(ghost_count()) + " ghosts",
                "pass a tensor of ghost_count() entries");
  exchange(x, ghosts.slice(0, below_), ghosts.slice(below_, ghost_count()));
}

void HaloExchange::exchange(const Tensor& x, const Tensor& below, const Tensor& above) const {
  const auto fits = [&](const Tensor& t, std::int64_t count) {
    return t.device().is_cpu() && t.dtype() == dtype_ && t.numel() == count;
  };
  TENAX_EXPECTS(fits(x, range_.count) && fits(below, below_) && fits(above, ghost_count() - below_),
                UsageError,
                "halo exchange: x " + x.describe() + ", ghosts below " + below.describe() +
                    " and above " + above.describe() + " for a rank holding " +
                    std::to_string(range_.count) + " entries with " + std::to_string(below_) +
                    " ghosts below and " + std::to_string(ghost_count() - below_) + " above",
                "pass CPU tensors of the exchange's dtype and sizes");
  for (const Neighbour& n : sends_) {
    if (dtype_ == DType::f64) {
      gather_entries(x.data_as<const double>(), n.indices, n.buffer.data_as<double>());
    } else {
      gather_entries(x.data_as<const float>(), n.indices, n.buffer.data_as<float>());
    }
    comm_->send(n.buffer, n.rank, kGhostValueTag);
  }
  // A lower rank's entries all lie below the range, a higher rank's above it.
  for (const Neighbour& n : receives_) {
    const Tensor into = n.offset < below_
                            ? below.slice(n.offset, n.offset + n.count)
                            : above.slice(n.offset - below_, n.offset - below_ + n.count);
    comm_->receive(into, n.rank, kGhostValueTag);
  }
}

}  // namespace tenax::runtime
